(* Kernels written otherwise than the BLAS specifications (coq/Targets/Blas.v) state
   them.  Operands in another order: the search works up to the commutativity of *, +
   and <+>, and the certificate swaps operands with smul_comm', sadd_comm and
   tadd_comm_t.  No temporary: a reduction indexed by an inner loop only becomes a
   buffer (let_root: name_buffer, compute_root). *)
From Coq Require Import ZArith List.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section OperandOrder.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z).
  Variables (beta : S).
  Variables (A : Z -> Z -> S).
  Variables (x y : Z -> S).

  (* y + A x, the product written x[j] * A[i][j] and the sum y first *)
  Definition gemv_swapped :=
    GEN [ i < n ] y _[ i ] + SUM [ j < m ] x _[ j ] * A _[ i ] _[ j ].

  (* A^T x scaled on the right: (SUM ...) * beta *)
  Definition gemvT_scaled_right :=
    GEN [ j < m ] (SUM [ i < n ] x _[ i ] * A _[ i ] _[ j ]) * beta.
  (* atax without its temporary: y = A^T (A x) in one expression *)
  Definition atax_nolet :=
    GEN [ j < m ] SUM [ i < n ] A _[ i ] _[ j ] * (SUM [ k < m ] A _[ i ] _[ k ] * x _[ k ]).
End OperandOrder.
