(* Pinned behaviour of [stage A at i as Ap] and [stage_let] (Rewrites/Stage.v;
   Exo's stage_mem in the packed layout) and [merge_guards]: each working and
   refusing with its message. *)
From Coq Require Import ZArith List Lia derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Stage.
  Context {S : Type} `{ScalarLaws S}.
  Variables (M N K : Z) (A B : Z -> Z -> S) (f idx : Z -> S) (g : Z -> Z).
  Hypotheses (HA : shaped [M; K] A) (HB : shaped [K; N] B) (Hf : shaped [N] f).

  Definition mm := GEN [ i < M ] GEN [ j < N ] SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ].

  (* The row of A that one iteration of i reads: a buffer over k, just
     inside loop i. *)
  Derive d1 SuchThat (mm = d1) As d1_ok.
  Proof. reschedule. stage A at i as Ar. check_safe. done. Qed.
  Print d1.

  (* B at i: the whole of B, indexed by the loops j and k that read it
     (outermost first), recomputed per i (stage places, it does not hoist
     further: compute_root Bp would). *)
  Derive d2 SuchThat (mm = d2) As d2_ok.
  Proof. reschedule. stage B at i as Bp. done. Qed.
  Print d2.

  (* Partial blocks: after split, the edge guard k < K mentions only loops
     the read of A uses, so it is copied onto the buffer (zero padding,
     safe); the guard i < M too. *)
  Derive d3 SuchThat (mm = d3) As d3_ok.
  Proof.
    reschedule.
    split k by 4 into ko kk.
    split i by 8 into io ii.
    stage A at io as Ap.
    check_safe.
    done.
  Qed.
  Print d3.

  (* A guard that mentions a loop the read does not use (j) stays where it
     is and is not copied; merge_guards then joins the remaining stack. *)
  Definition mm_g := GEN [ i < M ] GEN [ j < N ] |[ j <? i ]| |[ 0 <? i ]|
                       SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ].
  Derive d4 SuchThat (mm_g = d4) As d4_ok.
  Proof. reschedule. stage A at i as Ar. merge_guards. done. Qed.
  Print d4.

  (* Refusals. *)
  Derive d5 SuchThat (mm = d5) As d5_ok.
  Proof.
    reschedule.
    Fail stage A at q as Ap.        (* no loop q *)
    Fail stage f at i as fp.        (* loop i does not read f *)
    Fail merge_guards.              (* no stacked guards *)
    done.
  Qed.

  (* Not affine: a product of two loop variables, a data-dependent index. *)
  Definition p6 := GEN [ i < N ] GEN [ j < N ] f _[ i * j ].
  Derive d6 SuchThat (p6 = d6) As d6_ok.
  Proof. reschedule. Fail stage f at i as fp. done. Qed.

  Definition p7 := GEN [ i < N ] SUM [ j < N ] B _[ g j ] _[ i ].
  Derive d7 SuchThat (p7 = d7) As d7_ok.
  Proof. reschedule. Fail stage B at i as Bp. done. Qed.

  (* Two distinct accesses (a stencil): one window over both is not
     implemented. *)
  Definition p8 := GEN [ i < N ] SUM [ j < 3 ] f _[ i + j ] * f _[ j ].
  Derive d8 SuchThat (p8 = d8) As d8_ok.
  Proof. reschedule. Fail stage f at i as fp. done. Qed.

  (* The read's index uses a let-bound value: it cannot leave the let. *)
  Definition p9 := GEN [ i < N ] tlet c := i + 1 in GEN [ j < N ] B _[ c ] _[ j ].
  Derive d9 SuchThat (p9 = d9) As d9_ok.
  Proof. reschedule. Fail stage B at i as Bp. done. Qed.

  (* [stage_let]: a let-bound buffer (an intermediate result), named as the
     program names it, its row packed inside the consumer's loop i (decision
     #155); a name no let binds at that loop is refused as a loop that does
     not read it. *)
  Definition p10 := tlet P := GEN [ r < M ] GEN [ c < K ] A _[ r ] _[ c ] + A _[ r ] _[ c ] in
    GEN [ i < M ] GEN [ j < N ] SUM [ k < K ] P _[ i ] _[ k ] * B _[ k ] _[ j ].
  Derive d10 SuchThat (p10 = d10) As d10_ok.
  Proof. reschedule. stage_let P at i as Pr. check_safe. done. Qed.
  Print d10.
  Derive d11 SuchThat (p10 = d11) As d11_ok.
  Proof. reschedule. Fail stage_let Q at i as Qr. done. Qed.
End Stage.
