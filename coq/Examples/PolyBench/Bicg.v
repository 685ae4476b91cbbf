(** * PolyBench's bicg: [s := A^T r] and [q := A p].

    Two outputs, each its own program (see Mvt.v).  [q] reads [A] row by row;
    [s[j] = SUM i r[i] * A[i][j]] reads it down a column: [bicg_s_rows]
    reorders it ([reorder i j]). *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Bicg.
  Context {S : Type} `{ScalarLaws S}.
  Variables (m n : Z).
  Variable A : Z -> Z -> S.
  Variables (r p : Z -> S).
  Hypotheses (HA : shaped [n; m] A) (Hr : shaped [n] r) (Hp : shaped [m] p).

  Definition bicg_s := GEN [ j < m ] SUM [ i < n ] r _[i] * A _[i] _[j].
  Definition bicg_q := GEN [ i < n ] SUM [ j < m ] A _[i] _[j] * p _[j].

  Derive bicg_s_rows SuchThat (bicg_s = bicg_s_rows) As bicg_s_rows_correct.
  Proof. reschedule. reorder i j. check_safe. done. Qed.

  Derive bicg_q_rows SuchThat (bicg_q = bicg_q_rows) As bicg_q_rows_correct.
  Proof. reschedule. check_safe. done. Qed.
End Bicg.
