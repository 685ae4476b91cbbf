(** * The two-stage pipeline of the ATL paper, Sec. 3-4, fused by let
    inlining and two accesses into a generation (Sec. 4.1-4.2). *)

From Coq Require Import ZArith List.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section TwoStage.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (f : Z -> S).
  Hypothesis Hf : shaped [n] f.

  Definition pipeline :=
    tlet buf := GEN [ j < n ] f _[ j ] in
    GEN [ i < n ] |[ 0 <=? i - 1 ]| buf _[ i - 1 ] <+> buf _[ i ].

  Derive fused SuchThat (pipeline = fused) As fused_correct.
  Proof.
    reschedule.
    inline.
    rw get_gen.
    rw get_gen.
    check_safe.   (* Sec. 7.2: every access in bounds, so the C needs no checks *)
    done.
  Qed.

  (** The derived program: one loop, the first stage computed in place. *)
  Lemma fused_is :
    fused = GEN [ i < n ] |[ 0 <=? i - 1 ]| f _[ i - 1 ] <+> f _[ i ].
  Proof. same_program. Qed.
End TwoStage.
