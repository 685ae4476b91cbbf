(** * PolyBench's atax: [y := A^T (A x)].

    PolyBench/C computes [tmp = A x] row by row and, in the same sweep, adds
    [A[i][j] * tmp[i]] into [y[j]].  Written as gathers: [tmp] is a let, and
    [y[j] = SUM i A[i][j] * tmp[i]] reads [A] down a column.

    [atax_rows]: [reorder i j] in the second product puts the reduction
    outside, so [y] accumulates one scaled row of [A] per [i]: both passes
    read [A] row by row.

    [rfactor] (decision #152): each row's dot product is split by 16 (the
    tail peeled, which needs the extent nonnegative: a hypothesis) and its 16
    lanes [rfactor]ed into a buffer [t] of partial sums inside the depth
    loop, summed once a row: 16 independent accumulators, which the C
    compiler vectorizes (the scalar [c] target's float64 kernels; the
    sequential sum was one dependent add per element).  Then [compute_at tmp
    i] computes [tmp]'s element [i] inside the loop over the rows [i] that
    uses it, as the suite's C does: one sweep over [A], each row read for its
    dot product and again, from the cache, for its scaled add. *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Atax.
  Context {S : Type} `{ScalarLaws S}.
  Variables (m n : Z).
  Variable A : Z -> Z -> S.
  Variable x : Z -> S.
  Hypotheses (HA : shaped [m; n] A) (Hx : shaped [n] x) (Hn : 0 <= n).

  Definition atax :=
    tlet tmp := GEN [ r < m ] SUM [ c < n ] A _[r] _[c] * x _[c] in
    GEN [ j < n ] SUM [ i < m ] A _[i] _[j] * tmp _[i].

  Derive atax_rows SuchThat (atax = atax_rows) As atax_rows_correct.
  Proof.
    reschedule.
    reorder i j.
    split c by 16 into co ci peel.
    rfactor ci into u as t.
    compute_at tmp i.
    check_safe.
    done.
  Qed.
End Atax.
