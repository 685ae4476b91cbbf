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
    On row-major [A] that column is strided, so the read [A _[j] _[k]] is
    named [At] and hoisted out of every loop ([name_buffer], [hoist],
    [compute_root]): [At] is [A]'s transpose, packed once, and the inner
    loop runs along a row of [At] and of [C], contiguous, like gemm's.
    (The product is written [A _[j] _[k] * alpha * A _[i] _[k], the same
    value, so that [name_buffer]'s first match is the strided read.) *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
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
      <+> |[ j <=? i ]| SUM [ k < m ] A _[j] _[k] * slit 3 2 * A _[i] _[k].

  Derive syrk_ikj SuchThat (syrk = syrk_ikj) As syrk_ikj_correct.
  Proof.
    reschedule.
    fission j.
    reorder k j.
    name_buffer (A _[_] _[_]) as At.
    hoist At past (genr 0 n _).
    hoist At past (sumr 0 m _).
    compute_root At.
    check_safe.
    done.
  Qed.
End Syrk.
