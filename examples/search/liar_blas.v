(* LIAR's Table II kernels that target BLAS (issue 14), written from the PolyBench
   definitions and the LIAR paper's descriptions, as ATL programs for
   `verisched search`.  Each is a plain definition over symbolic sizes; the search
   reads the sizes and inputs from the Variables below and infers each input's
   shape from the loops that index it, unless a `shaped` hypothesis states it.
   Single-output ATL: where PolyBench updates several arrays, the program is the
   last one (gemver: w) or the concatenation (mvt: x1 and x2).
   coqc checks that every definition is well typed. *)
From Coq Require Import ZArith List.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Liar.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m ni nj nk nl nr nq np : Z).
  Variables (alpha beta : S).
  Variables (A B C D : Z -> Z -> S).
  Variables (x y y1 y2 x1 x2 u1 v1 u2 v2 z : Z -> S).
  Variable A3 : Z -> Z -> Z -> S.
  Variables (C4 : Z -> Z -> S).

  (* custom gemv: y := alpha A x + beta y *)
  Definition gemv :=
    GEN [ i < n ] alpha * (SUM [ j < m ] A _[ i ] _[ j ] * x _[ j ]) + beta * y _[ i ].

  (* slim-2mm: two plain matrix products, (A B) C *)
  Definition slim_2mm :=
    tlet tmp := GEN [ i < ni ] GEN [ j < nj ] SUM [ k < nk ] A _[ i ] _[ k ] * B _[ k ] _[ j ] in
    GEN [ i < ni ] GEN [ l < nl ] SUM [ j < nj ] tmp _[ i ] _[ j ] * C _[ j ] _[ l ].

  (* PolyBench gemm: C := alpha A B + beta C *)
  Definition gemm :=
    GEN [ i < ni ] GEN [ j < nj ]
      alpha * (SUM [ k < nk ] A _[ i ] _[ k ] * B _[ k ] _[ j ]) + beta * C _[ i ] _[ j ].

  (* PolyBench 2mm: tmp := alpha A B; D := tmp C + beta D *)
  Definition two_mm :=
    tlet tmp := GEN [ i < ni ] GEN [ j < nj ] alpha * (SUM [ k < nk ] A _[ i ] _[ k ] * B _[ k ] _[ j ]) in
    GEN [ i < ni ] GEN [ l < nl ]
      (SUM [ j < nj ] tmp _[ i ] _[ j ] * C _[ j ] _[ l ]) + beta * D _[ i ] _[ l ].

  (* PolyBench atax: tmp := A x; y := A^T tmp *)
  Definition atax :=
    tlet tmp := GEN [ i < m ] SUM [ j < n ] A _[ i ] _[ j ] * x _[ j ] in
    GEN [ j < n ] SUM [ i < m ] A _[ i ] _[ j ] * tmp _[ i ].

  (* PolyBench mvt: x1 := x1 + A y1; x2 := x2 + A^T y2 (both, concatenated) *)
  Definition mvt :=
    concat n n
      (GEN [ i < n ] x1 _[ i ] + SUM [ j < n ] A _[ i ] _[ j ] * y1 _[ j ])
      (GEN [ i < n ] x2 _[ i ] + SUM [ j < n ] A _[ j ] _[ i ] * y2 _[ j ]).

  (* PolyBench gesummv: y := alpha A x + beta B x *)
  Definition gesummv :=
    GEN [ i < n ] alpha * (SUM [ j < n ] A _[ i ] _[ j ] * x _[ j ])
                  + beta * (SUM [ j < n ] B _[ i ] _[ j ] * x _[ j ]).

  (* PolyBench gemver: A' := A + u1 v1^T + u2 v2^T; x := x + beta A'^T y + z;
     w := alpha A' x (the program is w) *)
  Definition gemver :=
    tlet Ah := GEN [ i < n ] GEN [ j < n ]
                 A _[ i ] _[ j ] + u1 _[ i ] * v1 _[ j ] + u2 _[ i ] * v2 _[ j ] in
    tlet xx := GEN [ i < n ] x _[ i ] + beta * (SUM [ j < n ] Ah _[ j ] _[ i ] * y _[ j ])
                 + z _[ i ] in
    GEN [ i < n ] alpha * (SUM [ j < n ] Ah _[ i ] _[ j ] * xx _[ j ]).

  (* PolyBench doitgen: sum[r][q][p] := SUM s A[r][q][s] * C4[s][p] *)
  Definition doitgen :=
    GEN [ r < nr ] GEN [ q < nq ] GEN [ p < np ]
      SUM [ s < np ] A3 _[ r ] _[ q ] _[ s ] * C4 _[ s ] _[ p ].
  (* LIAR's custom kernels: 1mm (one plain product), axpy, memset (every element set to
     a scalar c), vsum (a vector's sum) *)
  Variable c : S.
  Definition one_mm :=
    GEN [ i < ni ] GEN [ j < nj ] SUM [ k < nk ] A _[ i ] _[ k ] * B _[ k ] _[ j ].
  Definition axpy :=
    GEN [ i < n ] alpha * x _[ i ] + y _[ i ].
  Definition memset :=
    GEN [ i < n ] c.
  Definition vsum :=
    SUM [ i < n ] x _[ i ].
End Liar.

(* LIAR's stencils, which contain no idiom as written: the latent rules
   (search/latent.py, Targets/BlasLatent.v) find LIAR's gemv + memset, over a window
   view of the input (jacobi1d, blur1d) or, per row of outputs, over a gather view of
   the cross's five reads with a vector of ones (stencil2d).  jacobi-1d: one sweep of
   PolyBench's time loop, written from 0 (B[i] for PolyBench's i = 1 .. n-2).  blur1d
   and stencil2d from LIAR's descriptions. *)
Section Stencils.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z).
  Variables (third : S).
  Variables (a : Z -> S).
  Variables (img : Z -> Z -> S).
  Hypothesis Hshape_a : shaped [n + 2] a.
  Hypothesis Hshape_img : shaped [n + 2; m + 2] img.
  Definition jacobi1d :=
    GEN [ i < n ] third * (a _[ i ] + a _[ i + 1 ] + a _[ i + 2 ]).
  Definition blur1d :=
    GEN [ i < n ] (a _[ i ] + a _[ i + 1 ] + a _[ i + 2 ]) * third.
  Definition stencil2d :=
    GEN [ i < n ] GEN [ j < m ]
      img _[ i ] _[ j + 1 ] + img _[ i + 1 ] _[ j ] + img _[ i + 1 ] _[ j + 1 ]
      + img _[ i + 1 ] _[ j + 2 ] + img _[ i + 2 ] _[ j + 1 ].
End Stencils.
