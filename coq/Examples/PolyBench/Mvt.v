(** * PolyBench's mvt: [x1 := x1 + A y1] and [x2 := x2 + A^T y2].

    Two outputs: until programs may return a tuple (issue 13, not done), each is
    its own program and kernel.  [x1]'s product reads [A] row by row already;
    [x2]'s reads it down a column, so [mvt_x2_rows] applies Gemm.v's change:
    [fission i] over the sum, [reorder j i]: one scaled row of [A] added per
    [j]. *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Mvt.
  Context {S : Type} `{ScalarLaws S}.
  Variable n : Z.
  Variable A : Z -> Z -> S.
  Variables (x1 x2 y1 y2 : Z -> S).
  Hypotheses (HA : shaped [n; n] A) (Hx1 : shaped [n] x1) (Hx2 : shaped [n] x2)
             (Hy1 : shaped [n] y1) (Hy2 : shaped [n] y2).

  Definition mvt_x1 := GEN [ i < n ] x1 _[i] <+> SUM [ j < n ] A _[i] _[j] * y1 _[j].
  Definition mvt_x2 := GEN [ i < n ] x2 _[i] <+> SUM [ j < n ] A _[j] _[i] * y2 _[j].

  Derive mvt_x1_rows SuchThat (mvt_x1 = mvt_x1_rows) As mvt_x1_rows_correct.
  Proof. reschedule. check_safe. done. Qed.

  Derive mvt_x2_rows SuchThat (mvt_x2 = mvt_x2_rows) As mvt_x2_rows_correct.
  Proof.
    reschedule.
    fission i.
    reorder j i.
    check_safe.
    done.
  Qed.
End Mvt.
