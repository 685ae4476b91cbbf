(* Glenside's result (the seed `glenside-access-patterns.txt`, its im2col case
   study): a 2-D convolution, written naively, is rewritten automatically into im2col
   (a let-bound gathered matrix) followed by a matrix multiply, which the search maps
   onto our Gemmini matmul specification (`verisched search examples/search/glenside_conv.v
   --program conv2d --idioms gemmini`; docs/search.md).

   A quantized layer as Gemmini computes it (coq/Targets/Gemmini.v, "Data"): int8
   image [x : NB x H x W x C] (NHWC) and weights [w : KH x KW x C x KO], products
   accumulated in int32 (ATL's Z), then the accelerator's output path
   [gemmini_acc_out sm se act] (scale by the float sm * 2^se, round half to even,
   saturate to int8, ReLU if act), as GemminiConv.v's layer without its bias.  Stride
   1, no padding: the output is [NB x (H - KH + 1) x (W - KW + 1) x KO].  coqc checks
   that the definition is well typed. *)
From Coq Require Import ZArith List.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section GlensideConv.
  Variables (NB H W C KO KH KW : Z).
  Variables (sm se : Z).
  Variable act : bool.
  Variable x : Z -> Z -> Z -> Z -> gint.
  Variable w : Z -> Z -> Z -> Z -> gint.
  Hypothesis Hshape_x : shaped [NB; H; W; C] x.
  Hypothesis Hshape_w : shaped [KH; KW; C; KO] w.
  Hypothesis HC : 0 < C.
  Hypothesis HKH : 0 < KH.
  Hypothesis HKW : 0 < KW.
  Hypothesis HH : KH <= H.
  Hypothesis HW : KW <= W.

  Definition conv2d :=
    GEN [ n < NB ] GEN [ q < H - KH + 1 ] GEN [ p < W - KW + 1 ] GEN [ k < KO ]
      gemmini_acc_out sm se act
        (SUM [ s < KH ] SUM [ r < KW ] SUM [ c < C ]
           x _[ n ] _[ q + s ] _[ p + r ] _[ c ] * w _[ s ] _[ r ] _[ c ] _[ k ]).
  (* The same, the product written weights first: the rules tell the image's read from
     the weights' by their indices, and the certificate swaps the product back. *)
  Definition conv2d_wx :=
    GEN [ n < NB ] GEN [ q < H - KH + 1 ] GEN [ p < W - KW + 1 ] GEN [ k < KO ]
      gemmini_acc_out sm se act
        (SUM [ s < KH ] SUM [ r < KW ] SUM [ c < C ]
           w _[ s ] _[ r ] _[ c ] _[ k ] * x _[ n ] _[ q + s ] _[ p + r ] _[ c ]).

  (* With an int32 bias per output channel: GemminiConv.v's layer [qconv] exactly, whose
     derivation there is written by hand; the search finds it (im2col, the weight
     matrix, the bias broadcast to a matrix, then gemmini_loop_ws_bias). *)
  Variable bias : Z -> gint.
  Hypothesis Hshape_bias : shaped [KO] bias.
  Definition conv2d_bias :=
    GEN [ n < NB ] GEN [ q < H - KH + 1 ] GEN [ p < W - KW + 1 ] GEN [ k < KO ]
      gemmini_acc_out sm se act
        (bias _[ k ] <+> SUM [ s < KH ] SUM [ r < KW ] SUM [ c < C ]
           x _[ n ] _[ q + s ] _[ p + r ] _[ c ] * w _[ s ] _[ r ] _[ c ] _[ k ]).

  (* Glenside's own layouts: image NCHW, weights O C KH KW, output N O H' W' (the output
     channel is the second output loop).  Not mapped (docs/search.md, "Not done"): the
     search finds the flattened reduction only, and certifies that. *)
  Variable xc : Z -> Z -> Z -> Z -> gint.
  Variable wc : Z -> Z -> Z -> Z -> gint.
  Hypothesis Hshape_xc : shaped [NB; C; H; W] xc.
  Hypothesis Hshape_wc : shaped [KO; C; KH; KW] wc.
  Definition conv2d_nchw :=
    GEN [ n < NB ] GEN [ k < KO ] GEN [ q < H - KH + 1 ] GEN [ p < W - KW + 1 ]
      gemmini_acc_out sm se act
        (SUM [ c < C ] SUM [ s < KH ] SUM [ r < KW ]
           xc _[ n ] _[ c ] _[ q + s ] _[ p + r ] * wc _[ k ] _[ c ] _[ s ] _[ r ]).

  (* A quantized matmul layer written naively (GemminiMatmul.v's qmatmul_nobias): the
     idiom alone maps it onto the hardware loop, which the gemmini target lowers as
     the whole program. *)
  Variables (M N K : Z).
  Variable A : Z -> Z -> gint.
  Variable B : Z -> Z -> gint.
  Definition qmatmul :=
    GEN [ i < M ] GEN [ j < N ]
      gemmini_acc_out sm se act (SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ]).
End GlensideConv.
