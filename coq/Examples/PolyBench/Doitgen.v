(** * PolyBench's doitgen: [sum[r][q][p] = SUM s A[r][q][s] * C4[s][p]].

    PolyBench/C computes each [(r, q)] row of the result into a buffer in the
    order p, s, which reads [C4] down a column, then copies it back into [A].
    [doitgen_rows]: [reorder s p] puts the reduction outside the [p] loop: one
    scaled row of [C4] added per [s], contiguous.  (The suite overwrites [A]
    in place; here the result is a new tensor.) *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Doitgen.
  Context {S : Type} `{ScalarLaws S}.
  Variables (nr nq np : Z).
  Variable A : Z -> Z -> Z -> S.
  Variable C4 : Z -> Z -> S.
  Hypotheses (HA : shaped [nr; nq; np] A) (HC : shaped [np; np] C4).

  Definition doitgen :=
    GEN [ r < nr ] GEN [ q < nq ] GEN [ p < np ] SUM [ s < np ] A _[r] _[q] _[s] * C4 _[s] _[p].

  Derive doitgen_rows SuchThat (doitgen = doitgen_rows) As doitgen_rows_correct.
  Proof.
    reschedule.
    reorder s p.
    check_safe.
    done.
  Qed.
End Doitgen.
