(** * PolyBench's syrk: [C := alpha A A^T + beta C] on the lower triangle.

    PolyBench/C updates only [C[i][j]] with [j <= i]: it scales the row's
    triangle by [beta = 1.2], then adds [alpha * A[i][k] * A[j][k]] for each
    [k] in the loop order i, k, j (the upper triangle keeps its input value).
    Here the triangle is a guard, the constants are literals, and the rest of
    the matrix is [C] itself.

    [syrk_ikj]: [fission j] separates the row's new [C] (the kept upper
    triangle and the scaled lower one) from the product, and [reorder k j]
    puts the reduction outside the [j] loop, so each step of [k] adds a
    scaled column of [A] to the row's triangle: the suite's i, k, j order.
    On row-major [A] that order reads [A _[j] _[k]] with a stride of [m],
    and it is slower than the definition's own order (a dot product of two
    rows of [A] per element): `verisched bench polybench` measures both, and
    says so.  The derivation is here for the triangular guard, which every
    directive keeps. *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Syrk.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z).
  Variables (C A : Z -> Z -> S).
  Hypotheses (HC : shaped [n; n] C) (HA : shaped [n; m] A).

  Definition syrk :=
    GEN [ i < n ] GEN [ j < n ]
      |[ i <? j ]| C _[i] _[j]
      <+> |[ j <=? i ]| slit 6 5 * C _[i] _[j]
      <+> |[ j <=? i ]| SUM [ k < m ] slit 3 2 * A _[i] _[k] * A _[j] _[k].

  Derive syrk_ikj SuchThat (syrk = syrk_ikj) As syrk_ikj_correct.
  Proof.
    reschedule.
    fission j.
    reorder k j.
    check_safe.
    done.
  Qed.
End Syrk.
