(** * Gemmini's convolution loop unroller [gemmini_loop_conv_ws] as a
    specification (issue 16, item 2), at stride 1 without padding and with
    a stride and a padding ([gemmini_loop_conv_ws_strided]).

    [gemmini_loop_conv_ws] is one command (seven RoCC instructions: six
    configuration commands and [LOOP_CONV_WS]; 53 arguments in Gemmini's
    [gemmini.h]) after which the accelerator itself (LoopConv.scala) issues
    the moves, preloads, computes and stores of one tile of a
    weight-stationary convolution: the bias broadcast into the accumulator,
    every input pixel of the tile moved once into the scratchpad (one row
    per pixel, its channels in the columns: the on-chip im2col, no im2col
    matrix in DRAM), the weights of every kernel offset, then for every
    16 output channels, kernel offset [(s, r)] and 16 input channels a
    preload of the weights and a compute per 16 output pixels whose [A]
    operand is the scratchpad rows of the pixels those outputs read (rows
    [stride] apart; 1 in [gemmini_loop_conv_ws]), accumulated in the
    accumulator, and an [mvout] of every output block through the output
    path.  The simulator implements it in
    [src/verisched/targets/gemmini/include/gemmini_loop_conv.h] by issuing
    exactly those single instructions (tests/test_gemmini_loop_conv.py).

    As for [gemmini_loop_ws] (Targets/GemminiLoop.v), the specification
    is the program of single instructions the loop stands for, written with
    [gemmini_mvin], [gemmini_mvin_acc], [gemmini_matmul] and
    [gemmini_mvout]: for every image [n] and output row [q], every block of
    16 output pixels [io] and 16 output channels [jo], the accumulator
    block starts from the bias ([gemmini_mvin_acc] of the bias row
    broadcast over the pixels) and accumulates, over the kernel rows [s],
    columns [r] and blocks of 16 input channels [co], the product of

    - the [A] block [gemmini_mvin (x _[ n ] _[ q + s ]) (io * 16 + r)
      (co * 16) (OW + r) C]: the 16 pixels [io * 16 + r + i] of input row
      [q + s] (the outputs [io * 16 + i] at kernel column [r]), clipped at
      the last output pixel: a window of the image row itself, which is
      what the hardware reads from its copy of the pixels, and
    - the [B] block [gemmini_mvin (w _[ s ] _[ r ]) (co * 16) (jo * 16) C KO],

    then the block leaves through [gemmini_mvout].  Stride 1 and no
    padding (the layer of Examples/GemminiConv.v, whose input is given
    padded); the output is [NB x (H - KH + 1) x (W - KW + 1) x KO], NHWC.
    The loop order of the hardware (channel blocks outermost, pixels
    innermost) is a reordering of these sums that the lowering and the
    simulator perform; the value is the same.

    [gemmini_loop_conv_ws_strided] (below) is the same loop with a stride
    [st >= 1] and a zero padding [pd >= 0] (the macro's [stride] and
    [padding]; ResNet-50's downsampling layers: stride 2, padding 1).  The
    output is [NB x OH x OW x KO] with [OH = (H + 2 pd - KH) / st + 1],
    [OW = (W + 2 pd - KW) / st + 1], and the [A] block of output pixels
    [io * 16 .. io * 16 + 15] of row [q] at kernel offset [(s, r)] is what
    LoopConv.scala's execute unit reads from the padded window it moved
    (gemmini.h [sp_tiled_conv]: the rows [stride] apart, config_ex's
    [A_stride]; the padding moved in as zeros): row [i] the input pixel
    [(q st + s - pd, (io * 16 + i) st + r - pd)], zero outside the image.
    It is written as [gemmini_mvin] of that strided, padded view of the
    image row, [GEN [ p < OW ] GEN [ ch < C ] |[ inside ]| x _[ n ] _[ .. ]
    _[ .. ] _[ ch ]], clipped at the last output pixel as before.  The
    stride-1 loop keeps its own definition, so the programs derived with it
    print as before (docs/decisions.md #97); on a layer's sizes,
    [gemmini_loop_conv_ws_strided ... 1 0] is that loop
    ([gemmini_loop_conv_ws_strided_1_0] in Examples/GemminiConv.v).

    That the convolution layers equal these specifications is
    [qconv_loop_conv_ws] and [qconv_strided_loop_conv_ws] in
    Examples/GemminiConv.v. *)

From Coq Require Import ZArith Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Scalar Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape.
From Verisched Require Import Rewrites.Gen Reshape.Reshape Reshape.Access.
From Verisched Require Import Targets.Instr Targets.Gemmini.
Open Scope Z_scope. Open Scope atl_scope.

(** The quantized convolution [act(scale(bias + x * w))] (stride 1, no
    padding) as [gemmini_loop_conv_ws] calls. *)
Definition gemmini_loop_conv_ws (sm se : Z) (act : bool) (x w : Z -> Z -> Z -> Z -> gint)
  (bias : Z -> gint) (NB H W C KO KH KW : Z) : Z -> Z -> Z -> Z -> gint :=
  GEN [ n < NB ] GEN [ q < H - KH + 1 ]
    trunc_r (W - KW + 1) (flatten (cdiv (W - KW + 1) 16) 16
      (GEN [ io < cdiv (W - KW + 1) 16 ]
        transpose KO 16 (trunc_r KO (flatten (cdiv KO 16) 16 (GEN [ jo < cdiv KO 16 ]
          transpose 16 16
            (tlet c := in_mem GEMMINI_ACC
               (gemmini_mvin_acc (GEN [ p < W - KW + 1 ] bias) (io * 16) (jo * 16)
                  (W - KW + 1) KO <+>
                SUM [ s < KH ] SUM [ r < KW ] SUM [ co < cdiv C 16 ]
                  tlet a := in_mem GEMMINI_SPAD
                    (gemmini_mvin (x _[ n ] _[ q + s ]) (io * 16 + r) (co * 16)
                       (W - KW + 1 + r) C) in
                  tlet b := in_mem GEMMINI_SPAD
                    (gemmini_mvin (w _[ s ] _[ r ]) (co * 16) (jo * 16) C KO) in
                  gemmini_matmul a b) in
             gemmini_mvout sm se act c (io * 16) (jo * 16) (W - KW + 1) KO)))))).

#[global] Instance AtlInstr_gemmini_loop_conv_ws : AtlInstr (@gemmini_loop_conv_ws) := {}.

(** The loop is its unrolling (definitional; the right-hand side is the
    definition's body, unfolded rather than retyped). *)
Lemma gemmini_loop_conv_ws_unroll sm se act x w bias NB H W C KO KH KW :
  ltac:(let b := eval cbv beta delta [gemmini_loop_conv_ws]
                in (gemmini_loop_conv_ws sm se act x w bias NB H W C KO KH KW) in
        exact (gemmini_loop_conv_ws sm se act x w bias NB H W C KO KH KW = b)).
Proof. reflexivity. Qed.

(** The quantized convolution with stride [st] and zero padding [pd] as
    [gemmini_loop_conv_ws] calls (module comment): the [A] operand of each
    product is the image row's pixels [st] apart, zero in the padding. *)
Definition gemmini_loop_conv_ws_strided (sm se : Z) (act : bool)
  (x w : Z -> Z -> Z -> Z -> gint) (bias : Z -> gint) (NB H W C KO KH KW st pd : Z)
  : Z -> Z -> Z -> Z -> gint :=
  GEN [ n < NB ] GEN [ q < (H + 2 * pd - KH) / st + 1 ]
    trunc_r ((W + 2 * pd - KW) / st + 1)
      (flatten (cdiv ((W + 2 * pd - KW) / st + 1) 16) 16
        (GEN [ io < cdiv ((W + 2 * pd - KW) / st + 1) 16 ]
          transpose KO 16 (trunc_r KO (flatten (cdiv KO 16) 16 (GEN [ jo < cdiv KO 16 ]
            transpose 16 16
              (tlet c := in_mem GEMMINI_ACC
                 (gemmini_mvin_acc (GEN [ p < (W + 2 * pd - KW) / st + 1 ] bias)
                    (io * 16) (jo * 16) ((W + 2 * pd - KW) / st + 1) KO <+>
                  SUM [ s < KH ] SUM [ r < KW ] SUM [ co < cdiv C 16 ]
                    tlet a := in_mem GEMMINI_SPAD
                      (gemmini_mvin
                         (GEN [ p < (W + 2 * pd - KW) / st + 1 ] GEN [ ch < C ]
                            |[ ((0 <=? q * st + s - pd) && (q * st + s - pd <? H)) &&
                               ((0 <=? p * st + r - pd) && (p * st + r - pd <? W)) ]|
                              x _[ n ] _[ q * st + s - pd ] _[ p * st + r - pd ] _[ ch ])
                         (io * 16) (co * 16) ((W + 2 * pd - KW) / st + 1) C) in
                    tlet b := in_mem GEMMINI_SPAD
                      (gemmini_mvin (w _[ s ] _[ r ]) (co * 16) (jo * 16) C KO) in
                    gemmini_matmul a b) in
               gemmini_mvout sm se act c (io * 16) (jo * 16) ((W + 2 * pd - KW) / st + 1)
                 KO)))))).

#[global] Instance AtlInstr_gemmini_loop_conv_ws_strided :
  AtlInstr (@gemmini_loop_conv_ws_strided) := {}.

(** Its unrolling, as [gemmini_loop_conv_ws_unroll]. *)
Lemma gemmini_loop_conv_strided_unroll sm se act x w bias NB H W C KO KH KW st pd :
  ltac:(let b := eval cbv beta delta [gemmini_loop_conv_ws_strided]
                in (gemmini_loop_conv_ws_strided sm se act x w bias NB H W C KO KH KW st pd) in
        exact (gemmini_loop_conv_ws_strided sm se act x w bias NB H W C KO KH KW st pd = b)).
Proof. reflexivity. Qed.

(** The reshapes around the output blocks read block [(p / 16, k / 16)]
    at [(p mod 16, k mod 16)]: the [M x N] matrix of 16 x 16 blocks. *)
Lemma gemmini_tiles_gen M N (F : Z -> Z -> Z -> Z -> gint) :
  0 <= M -> 0 <= N ->
  trunc_r M (flatten (cdiv M 16) 16 (GEN [ io < cdiv M 16 ]
    transpose N 16 (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jo < cdiv N 16 ]
      transpose 16 16 (F io jo))))))
  = GEN [ p < M ] GEN [ k < N ] (F (p / 16)%Z (k / 16)%Z) _[ p mod 16 ] _[ k mod 16 ].
Proof.
  intros HM HN.
  pose proof (cdiv_mul_ge M 16) as HcM; pose proof (cdiv_mul_ge N 16) as HcN.
  unfold trunc_r; apply genr_ext_ctx; intros p Hp.
  assert (Hp16 : 0 <= p / 16 < cdiv M 16)
    by (split; [apply Z.div_pos; lia | apply cdiv_lt_iff; Z.div_mod_to_equations; lia]).
  rewrite get_flatten by (try lia; nia).
  rewrite get_gen by lia.
  rewrite get_transpose by (Z.div_mod_to_equations; lia).
  apply genr_ext_ctx; intros k Hk.
  assert (Hk16 : 0 <= k / 16 < cdiv N 16)
    by (split; [apply Z.div_pos; lia | apply cdiv_lt_iff; Z.div_mod_to_equations; lia]).
  rewrite get_gen by lia.
  rewrite get_flatten by (try lia; nia).
  rewrite get_gen by lia.
  rewrite get_get_transpose by (Z.div_mod_to_equations; lia).
  reflexivity.
Qed.
