(* Pinned behaviour of the producer directives (Rewrites/Producers.v):
   inline p, sink p into i, compute_root p, compute_at p i (also at a
   split's tile loop), each working and refusing with its message. *)
From Coq Require Import ZArith List Lia derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Producers.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (f : Z -> S) (v : Z -> Z -> S).
  Hypothesis Hf : shaped [n] f.

  (* A producer p read by a 3-point stencil. *)
  Definition p1 := tlet p := GEN [ j < n ] f _[ j ] * f _[ j ] in
                   GEN [ i < n ] p _[ i - 1 ] <+> p _[ i ] <+> p _[ i + 1 ].

  (* inline p: the let named p, at each use. *)
  Derive d1 SuchThat (p1 = d1) As d1_ok.
  Proof. reschedule. inline p. done. Qed.
  Print d1.

  (* sink p into i: recomputed whole in every iteration of i; the reads at
     i - 1 and i + 1 leave p at the ends (zero in ATL, not safe in C). *)
  Derive d2 SuchThat (p1 = d2) As d2_ok.
  Proof. reschedule. sink p into i. Fail check_safe. done. Qed.
  Print d2.

  (* compute_at p i: only the window i - 1 .. i + 1 that iteration i reads,
     guarded by the producer's bounds. *)
  Derive d3 SuchThat (p1 = d3) As d3_ok.
  Proof. reschedule. compute_at p i. check_safe. done. Qed.
  Print d3.

  (* compute_root p undoes sink. *)
  Derive d4 SuchThat (p1 = d4) As d4_ok.
  Proof. reschedule. sink p into i. compute_root p. done. Qed.
  Print d4.

  (* compute_root lifts a let whose value mentions the loop variable into a
     buffer over that loop. *)
  Definition p5 := GEN [ i < n ] tlet q := f _[ i ] * f _[ i ] in q <+> q.
  Derive d5 SuchThat (p5 = d5) As d5_ok.
  Proof. reschedule. compute_root q. check_safe. done. Qed.
  Print d5.

  (* out of the value of a let whose body is a let too (3mm's pack of B inside
     E above tlet F, decision #155): both lets' cases are tried at that node. *)
  Definition p5b := tlet e := (GEN [ i < n ] tlet q := f _[ i ] * f _[ i ] in q <+> q) in
                    tlet g := GEN [ j < n ] e _[ j ] in GEN [ k < n ] g _[ k ] <+> e _[ k ].
  Derive d5b SuchThat (p5b = d5b) As d5b_ok.
  Proof. reschedule. compute_root q. check_safe. done. Qed.
  Print d5b.

  (* sink through a guard and an outer loop down to the inner loop x. *)
  Definition p6 := tlet r := GEN [ j < m ] f _[ j ] in
                   GEN [ y < n ] |[ 0 <=? y - 1 ]| GEN [ x < m ] r _[ x ] <+> v _[ y ] _[ x ].
  Derive d6 SuchThat (p6 = d6) As d6_ok.
  Proof. reschedule. sink r into x. done. Qed.
  Print d6.

  (* Refusals. *)
  Derive d7 SuchThat (p1 = d7) As d7_ok.
  Proof.
    reschedule.
    Fail inline nop.                 (* no let, no definition of that name *)
    Fail sink nop into i.            (* unknown buffer *)
    Fail sink p into k.              (* k is not a loop p's body reaches *)
    Fail compute_root p.             (* already at the root *)
    Fail compute_at nop i.           (* unknown buffer *)
    Fail compute_at p k.             (* the region is not available at k *)
    done.
  Qed.

  (* compute_at where the read is not at i plus a constant. *)
  Definition p8 := tlet p := GEN [ j < n ] f _[ j ] in GEN [ i < n ] p _[ n - 1 - i ].
  Derive d8 SuchThat (p8 = d8) As d8_ok.
  Proof. reschedule. Fail compute_at p i. sink p into i. done. Qed.
  Print d8.

  (* p is also used outside loop i: it cannot be sunk into it. *)
  Definition p9 := tlet p := GEN [ j < n ] f _[ j ] in
                   (GEN [ i < n ] p _[ i ]) <+> p.
  Derive d9 SuchThat (p9 = d9) As d9_ok.
  Proof. reschedule. Fail compute_at p i. Fail sink p into i. done. Qed.

  (* compute_root blocked: a generation that does not start at 0. *)
  Definition p10 := GENR [ 1 <= i < n ] tlet q := f _[ i ] in q.
  Derive d10 SuchThat (p10 = d10) As d10_ok.
  Proof. reschedule. Fail compute_root q. done. Qed.

  (* compute_at at the tile loop of a split (overlapped tiling): the window
     io * k - 1 .. io * k + k of k + 2 elements, read at ii, ii + 1, ii + 2;
     a numeral tile size gives a numeral window. *)
  Section Tile.
    Variable k : Z.
    Hypothesis Hk : 0 < k.
    Derive d11 SuchThat (p1 = d11) As d11_ok.
    Proof. reschedule. split i by k into io ii. compute_at p io. check_safe. done. Qed.
    Print d11.
    Derive d12 SuchThat (p1 = d12) As d12_ok.
    Proof. reschedule. split i by 4 into io ii. compute_at p io. check_safe. done. Qed.
    Print d12.
    (* a tile read not at io * k + ii plus a constant: refused *)
    Definition p13 := tlet p := GEN [ j < n ] f _[ j ] in GEN [ i < n ] p _[ 2 * i ].
    Derive d13 SuchThat (p13 = d13) As d13_ok.
    Proof. reschedule. split i by k into io ii. Fail compute_at p io. done. Qed.
  End Tile.
End Producers.
