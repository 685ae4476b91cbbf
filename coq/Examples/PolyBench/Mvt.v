(** * PolyBench's mvt: [x1 := x1 + A y1] and [x2 := x2 + A^T y2], one program.

    Two outputs: the program is a pair, and one kernel writes both (the C takes
    one output pointer per component).  [x1]'s product reads [A] row by row
    already; [x2]'s reads it down a column, so [mvt_rows] applies Gemm.v's
    change to the second component only: [fission i2] over the sum and
    [reorder j2 i2], one scaled row of [A] added per [j2].

    [mvt_sweep] then fuses the two sweeps over [A] into one
    ([fuse_outputs], Rewrites/Outputs.v): a sum over the rows [i] of pairs,
    row [i] adding [x1]'s element [i] (a one-hot slice, which the lowering
    stores once) and [A]'s row scaled by [y2 _[i]] into [x2].

    Both split [x1]'s row dot product by 16 and [rfactor] it into 16
    accumulators, as in Atax.v ([mvt_sweep] before [fuse_outputs]; decision
    #152). *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Mvt.
  Context {S : Type} `{ScalarLaws S}.
  Variable n : Z.
  Variable A : Z -> Z -> S.
  Variables (x1 x2 y1 y2 : Z -> S).
  Hypotheses (HA : shaped [n; n] A) (Hx1 : shaped [n] x1) (Hx2 : shaped [n] x2)
             (Hy1 : shaped [n] y1) (Hy2 : shaped [n] y2) (Hn : 0 <= n).

  Definition mvt :=
    (GEN [ i < n ] x1 _[i] <+> SUM [ j < n ] A _[i] _[j] * y1 _[j],
     GEN [ i2 < n ] x2 _[i2] <+> SUM [ j2 < n ] A _[j2] _[i2] * y2 _[j2]).

  Derive mvt_rows SuchThat (mvt = mvt_rows) As mvt_rows_correct.
  Proof.
    reschedule.
    fission i2.
    reorder j2 i2.
    split j by 16 into jo ji peel.
    rfactor ji into u as t.
    check_safe.
    done.
  Qed.
  Derive mvt_sweep SuchThat (mvt = mvt_sweep) As mvt_sweep_correct.
  Proof.
    reschedule.
    fission i2.
    reorder j2 i2.
    split j by 16 into jo ji peel.
    rfactor ji into u as t.
    fuse_outputs.
    check_safe.
    done.
  Qed.
End Mvt.
