From Coq Require Import ZArith.
From Coq Require Import derive.Derive.
From Verisched Require Import ATL.
Open Scope Z_scope. Open Scope atl_scope.

Section TwoStage.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (f : Z -> S).

  Definition pipeline :=
    tlet buf := GEN [ j < n ] f _[ j ] in
    GEN [ i < n ] |[ 0 <=? i - 1 ]| buf _[ i - 1 ] <+> buf _[ i ].

  Derive fused SuchThat (pipeline = fused) As fused_correct.
  Proof.
    reschedule.
    inline.
    rw get_gen.
    rw get_gen.
    done.
  Qed.

End TwoStage.
