(* Kernels for `verisched search --idioms avx2` (issue 14): lane-wise loops of eight
   lanes, rows of a [n; 8] layout, in which the search finds our AVX2 instruction
   specifications (coq/Targets/AVX.v) as idioms: a scalar factor becomes a broadcast
   vector (lanes_bcast_mul / lanes_bcast_fmadd, coq/Targets/BlasLatent.v), then the
   loop over the lanes is avx2_mul or avx2_fmadd of rows.  coqc checks that every
   definition is well typed. *)
From Coq Require Import ZArith List.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Vector.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z).
  Variables (alpha : S).
  Variables (x y z : Z -> Z -> S).
  Hypothesis Hshape_x : shaped [n; 8] x.
  Hypothesis Hshape_y : shaped [n; 8] y.
  Hypothesis Hshape_z : shaped [n; 8] z.
  (* y + alpha x, eight lanes at a time *)
  Definition vaxpy :=
    GEN [ i < n ] GEN [ l < 8 ] alpha * x _[ i ] _[ l ] + y _[ i ] _[ l ].
  (* alpha x *)
  Definition vscale :=
    GEN [ i < n ] GEN [ l < 8 ] alpha * x _[ i ] _[ l ].
  (* x * y + z, lane-wise *)
  Definition vfma :=
    GEN [ i < n ] GEN [ l < 8 ] x _[ i ] _[ l ] * y _[ i ] _[ l ] + z _[ i ] _[ l ].
  (* the same two written in the other operand orders (x alpha; y + x alpha): the
     certificate swaps them into the lane rule's orientation first *)
  Definition vscale_r :=
    GEN [ i < n ] GEN [ l < 8 ] x _[ i ] _[ l ] * alpha.
  Definition vaxpy_r :=
    GEN [ i < n ] GEN [ l < 8 ] y _[ i ] _[ l ] + x _[ i ] _[ l ] * alpha.
End Vector.
