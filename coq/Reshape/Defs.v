(** * Reshape operators (paper Sec. 6, Fig. 5), defined from core ATL.

    Each operator is a plain definition built from generation, summation,
    guards and access, exactly as in Fig. 5, so inlining it ([inline c])
    yields an ordinary ATL term.  Since our tensors are total functions
    (Tensor/Core.v), the extents the paper reads off the list model are
    explicit arguments here; all sizes are [Z] and come first:

    - [concat n1 n2 e1 e2]: [e1] (extent [n1]) followed by [e2] ([n2]);
    - [transpose n m e]: [e] of extents [n x m] becomes [m x n];
    - [flatten n m e]: [n x m] becomes [n*m], row-major;
    - [split k n e]: extent [n] becomes [cdiv n k x k] (the paper's
      split/tile), zero-padded at the end;
    - [pad_r k n e], [pad_l k n e]: [k] zeros to the right / left of [e]
      (extent [n]);
    - [trunc_r k e]: the first [k] elements; [trunc_l k n e]: the last [k]
      elements of [e] (extent [n]).

    They have no notation: they print as applications, which the Python
    bridge (src/verisched/pybridge/terms.py) parses by these names. *)

From Coq Require Import ZArith.
From Verisched Require Import Tensor.Core.
Open Scope Z_scope.
Open Scope atl_scope.

Section Defs.
  Context {X : Type} `{TensorElem X}.

  Definition concat (n1 n2 : Z) (e1 e2 : Z -> X) : Z -> X :=
    GEN [ i < n1 + n2 ] (|[ i <? n1 ]| e1 _[ i ]) <+> (|[ n1 <=? i ]| e2 _[ i - n1 ]).

  Definition transpose (n m : Z) (e : Z -> Z -> X) : Z -> Z -> X :=
    GEN [ x < m ] GEN [ y < n ] e _[ y ] _[ x ].

  Definition flatten (n m : Z) (e : Z -> Z -> X) : Z -> X :=
    GEN [ i < n * m ] SUM [ j < n ] SUM [ k < m ] |[ i =? j * m + k ]| e _[ j ] _[ k ].

  Definition split (k n : Z) (e : Z -> X) : Z -> Z -> X :=
    GEN [ i < cdiv n k ] GEN [ j < k ] |[ i * k + j <? n ]| e _[ i * k + j ].

  Definition pad_r (k n : Z) (e : Z -> X) : Z -> X :=
    GEN [ i < n + k ] |[ i <? n ]| e _[ i ].

  Definition pad_l (k n : Z) (e : Z -> X) : Z -> X :=
    GEN [ i < n + k ] |[ k <=? i ]| e _[ i - k ].

  Definition trunc_r (k : Z) (e : Z -> X) : Z -> X :=
    GEN [ i < k ] e _[ i ].

  Definition trunc_l (k n : Z) (e : Z -> X) : Z -> X :=
    GEN [ i < k ] e _[ i + n - k ].
End Defs.

Arguments concat {X _} (n1 n2)%Z (e1 e2)%atl_scope _%Z.
Arguments transpose {X _} (n m)%Z e%atl_scope _%Z _%Z.
Arguments flatten {X _} (n m)%Z e%atl_scope _%Z.
Arguments split {X _} (k n)%Z e%atl_scope _%Z _%Z.
Arguments pad_r {X _} (k n)%Z e%atl_scope _%Z.
Arguments pad_l {X _} (k n)%Z e%atl_scope _%Z.
Arguments trunc_r {X _} k%Z e%atl_scope _%Z.
Arguments trunc_l {X _} (k n)%Z e%atl_scope _%Z.
