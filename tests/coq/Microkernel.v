(* Pinned behaviour of the micro-kernel directives (Targets/Microkernel.v,
   output compared with Microkernel.ref): fission of a guarded nest;
   a 4 x 32 AVX-512 register tile of a plain matmul (no C, other sizes
   than Examples/Directives/Sgemm.v's 6 x 16 AVX2 one) in instruction
   form; refusals of each directive. *)
From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Microkernel.
  Context {S : Type} `{ScalarLaws S}.
  Variables (M N K n m mb kc : Z) (f g : Z -> Z -> S) (A B : Z -> Z -> S).
  Hypotheses (Hmb : 0 < mb) (Hkc : 0 < kc) (HK : 0 <= K).
  Hypotheses (HA : shaped [M; K] A) (HB : shaped [K; N] B).
  Hypotheses (Hf : shaped [n; m] f) (Hg : shaped [n; m] g).

  (* (a) fission: the <+> leaves the guard, then j, then i; both copies
     keep the names i and j. *)
  Definition p1 := GEN [ i < n ] |[ i <? m ]| GEN [ j < m ] f _[ i ] _[ j ] <+> g _[ i ] _[ j ].
  Derive q1 SuchThat (p1 = q1) As q1_ok.
  Proof. reschedule. fission i. done. Qed.
  Print q1.

  (* fission of an inner loop only *)
  Derive q1b SuchThat (p1 = q1b) As q1b_ok.
  Proof. reschedule. fission j. done. Qed.
  Print q1b.

  (* refusals: no <+> in the body; no such loop *)
  Definition p2 := GEN [ i < n ] GEN [ j < m ] f _[ i ] _[ j ] * g _[ i ] _[ j ].
  Derive q2 SuchThat (p2 = q2) As q2_ok.
  Proof. reschedule. Fail fission i. Fail fission z. done. Qed.

  (* refusal of register_tile: no reduction under the nest *)
  Derive q2b SuchThat (p2 = q2b) As q2b_ok.
  Proof. reschedule. Fail register_tile i j by 4 16 lanes 8 into im ir jm jv l as t. done. Qed.

  (* (b) a matmul: row blocks of 4 mb rows, depth blocks of kc, a 4 x 32
     register tile of 2 x 16 lanes, packed operands, AVX-512. *)
  Definition mm := GEN [ i < M ] GEN [ j < N ] SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ].
  Derive q3 SuchThat (mm = q3) As q3_ok.
  Proof.
    reschedule.
    split i by (mb * 4)%Z into io ii.
    split k by kc into ko kk.
    reorder ko ii j.
    register_tile ii j by 4 32 lanes 16 into im ir jm jv l as t.
    stage B at ko as Bp.
    stage A at ko as Ap.
    select_instr t with avx512.
    check_safe.
    done.
  Qed.
  Print q3.

  (* refusals of register_tile *)
  Derive q4 SuchThat (mm = q4) As q4_ok.
  Proof.
    reschedule.
    (* the extent M of loop i is not a multiple of 4 *)
    Fail register_tile i j by 4 32 lanes 16 into im ir jm jv l as t.
    split i by (mb * 4)%Z into io ii.
    (* the depth is not split: no depth guard to copy onto the operands *)
    Fail register_tile ii j by 4 32 lanes 16 into im ir jm jv l as t.
    split k by kc into ko kk.
    reorder ko ii j.
    (* 5 does not divide the row block mb * 4 *)
    Fail register_tile ii j by 5 32 lanes 16 into im ir jm jv l as t.
    (* 3 lanes do not divide 32 columns *)
    Fail register_tile ii j by 4 32 lanes 3 into im ir jm jv l as t.
    (* select_instr: no let named t yet *)
    Fail select_instr t with avx2.
    register_tile ii j by 4 16 lanes 8 into im ir jm jv l as t.
    (* the operands are not packed: the lanes of B are guarded reads, not
       contiguous loads *)
    Fail select_instr t with avx2.
    done.
  Qed.
End Microkernel.
