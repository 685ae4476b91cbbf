(** * PolyBench's bicg: [s := A^T r] and [q := A p], one program with two outputs.

    [q] reads [A] row by row; [s[j] = SUM i r[i] * A[i][j]] reads it down a
    column: [bicg_rows] reorders that component ([reorder i j]); one kernel
    writes both (see Mvt.v), in one sweep over [A] ([fuse_outputs], as
    [mvt_sweep]: row [i] adds its scaled copy into [s] and gives [q]'s element
    [i]).

    Each row's dot product is split by 16 and [rfactor]ed into 16
    accumulators, as in Atax.v (decision #152). *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Bicg.
  Context {S : Type} `{ScalarLaws S}.
  Variables (m n : Z).
  Variable A : Z -> Z -> S.
  Variables (r p : Z -> S).
  Hypotheses (HA : shaped [n; m] A) (Hr : shaped [n] r) (Hp : shaped [m] p) (Hm : 0 <= m).

  Definition bicg :=
    (GEN [ j < m ] SUM [ i < n ] r _[i] * A _[i] _[j],
     GEN [ i2 < n ] SUM [ j2 < m ] A _[i2] _[j2] * p _[j2]).

  Derive bicg_rows SuchThat (bicg = bicg_rows) As bicg_rows_correct.
  Proof.
    reschedule.
    reorder i j.
    split j2 by 16 into jo ji peel.
    rfactor ji into u as t.
    fuse_outputs.
    check_safe.
    done.
  Qed.
End Bicg.
