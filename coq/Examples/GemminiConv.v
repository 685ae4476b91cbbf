(** * A quantized convolution layer on Gemmini, through im2col (issue 6).

    The 2-D convolution layer of the Exo thesis's Gemmini case study
    (Sec. 7.1, Fig. 7-4: "a standard 2D convolutional layer with ReLU
    activation"), in NHWC layout: input [x : NB x H x W x C] (int8),
    weights [w : KH x KW x C x KO] (int8), a bias per output channel
    [bias : KO] (int32), stride 1, no padding, output
    [NB x OH x OW x KO] with [OH = H - KH + 1], [OW = W - KW + 1]:
    [out[n][q][p][k] = acc_out(bias[k] + SUM s r c x[n][q+s][p+r][c] * w[s][r][c][k])].

    Mapping (the im2col of the ATL paper's Sec. 8.3 / Im2col.v's
    [conv2d_gemm], and Glenside's im2col rewrite): the output pixels
    [(n, q, p)] become one row index [m < NB OH OW] (two [split]s
    view the matrix as the 4-D output, [gen_split2]), the reduction
    [(s, r, c)] one column index [j < KH KW C] ([sum_flatten3]); the
    im2col buffer [a : (NB OH OW) x (KH KW C)] and the weights as a matrix
    [wm : (KH KW C) x KO] and the bias broadcast to a matrix
    [dm : (NB OH OW) x KO] are let-bound DRAM buffers.  What remains is
    exactly the matmul layer of GemminiMatmul.v, [qmatmul (NB OH OW) KO
    (KH KW C) a wm dm sm se act], and the derivation REUSES its schedule:
    it rewrites with that derivation's correctness theorem
    [qmatmul_gemmini_spec], so the Gemmini mapping is proved once.

    Why the weights go through a transpose: a buffer lifted out of loops
    gets its dimensions in the order the loops are crossed, and the read
    of [w] sits under [k] (outer) and [j] (inner, the reduction), with the
    output function and the bias between them; lifted, it is
    [GEN k GEN j]; [transpose_gen] turns its value into
    [transpose (GEN j GEN k ...)], the transpose moves to the uses
    ([let_transpose_out]) and resolves there ([get_get_transpose]), which
    leaves the buffer in the [K x N] orientation [gemmini_mvin] loads.

    The im2col and weight buffers live in DRAM and are filled by scalar
    code.  A later section gives the same layer as one
    [gemmini_loop_conv_ws] (Targets/GemminiLoopConv.v, issue 16), where the
    hardware moves the pixels itself and broadcasts the bias row (an
    [mvin] with DRAM stride 0): no [col], [wm] or [dm] buffer at all.  The
    last one ([qconv_im2col]) keeps the im2col on chip with single
    instructions, 16 output pixels per tile across output-row ends, so the
    products are exactly [cdiv M 16 * cdiv N 16 * cdiv K 16] when [C] is a
    multiple of 16 (the conv loop's tiles stop at each row's end). *)

From Coq Require Import ZArith List Lia Bool.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety Reshape.Defs Reshape.Commute
  Reshape.Duals Reshape.Access.
From Verisched Require Import Targets.Gemmini Examples.GemminiMatmul.
Open Scope Z_scope. Open Scope atl_scope.

(** ** Rewrites *)

Section Rewrites.
  Context {X : Type} `{TensorLaws X}.

  (** Two nested generations as one, viewed back through [split]: the
      dual of [flatten] on generations ([split_flatten], Fig. 7, read on
      a generated tensor). *)
  Lemma gen_split2 n m (f : Z -> Z -> X) :
    (0 < m -> 0 <= n ->
    genr 0 n (fun i => genr 0 m (fun j => f i j)) =
    split m (n * m) (genr 0 (n * m) (fun t => f (t / m) (t mod m))))%Z.
  Proof.
    intros Hm Hn; unfold split; rewrite cdiv_mul by lia.
    apply genr_ext_ctx; intros i Hi; apply genr_ext_ctx; intros j Hj.
    replace (i * m + j <? n * m) with true by (symmetry; apply Z.ltb_lt; nia).
    cbn [iverson]; rewrite get_gen by nia.
    rewrite tile_div, tile_mod by lia; reflexivity.
  Qed.

  (** A transposed let value: the transpose moves to the uses. *)
  Lemma let_transpose_out {Y} n m (e : Z -> Z -> X) (f : (Z -> Z -> X) -> Y) :
    atl_let (transpose n m e) f = atl_let e (fun y => f (transpose n m y)).
  Proof. reflexivity. Qed.
End Rewrites.

Section BoundGuard4.
  Context {X : Type} `{TensorLaws X} `{!Shaped X}.

  Lemma get_out_of_range {Y} `{TensorLaws Y} `{!Shaped Y} n s (u : Z -> Y) k :
    shaped (n :: s) u -> ((0 <=? k) && (k <? n))%Z = false -> get u k = tzero.
  Proof. intros Hu E; rewrite (get_bound_guard n s u k Hu), E; reflexivity. Qed.

  (** A 4-D access guarded by its bounds ([get_bound_guard] for every
      index): free in ATL, and it hands [check_safe] the bounds of the
      im2col indices ([i / OW / OH < NB], ...), which are nonlinear and
      slow or impossible for [nia] to rediscover.  The guard is evaluated
      only in the packing loops. *)
  Lemma get4_bound_guard n1 n2 n3 n4 (v : Z -> Z -> Z -> Z -> X) i1 i2 i3 i4 :
    shaped [n1; n2; n3; n4] v ->
    v _[ i1 ] _[ i2 ] _[ i3 ] _[ i4 ] =
    |[ ((0 <=? i1) && (i1 <? n1)) && ((0 <=? i2) && (i2 <? n2)) &&
       ((0 <=? i3) && (i3 <? n3)) && ((0 <=? i4) && (i4 <? n4)) ]|
      v _[ i1 ] _[ i2 ] _[ i3 ] _[ i4 ].
  Proof.
    intros Hv.
    pose proof (shaped_get _ _ _ i1 Hv) as H2.
    pose proof (shaped_get _ _ _ i2 H2) as H3.
    pose proof (shaped_get _ _ _ i3 H3) as H4.
    destruct ((0 <=? i1) && (i1 <? n1))%Z eqn:E1;
      [| rewrite (get_out_of_range _ _ v i1 Hv E1); reflexivity ].
    destruct ((0 <=? i2) && (i2 <? n2))%Z eqn:E2;
      [| rewrite (get_out_of_range _ _ _ i2 H2 E2); reflexivity ].
    destruct ((0 <=? i3) && (i3 <? n3))%Z eqn:E3;
      [| rewrite (get_out_of_range _ _ _ i3 H3 E3); reflexivity ].
    destruct ((0 <=? i4) && (i4 <? n4))%Z eqn:E4;
      [| rewrite (get_out_of_range _ _ _ i4 H4 E4); reflexivity ].
    reflexivity.
  Qed.
End BoundGuard4.

(** Lifting a let out of the output function. *)
Lemma ll_acc_out {Y} sm se act (e1 : Y) (f : Y -> gint) :
  gemmini_acc_out sm se act (atl_let e1 f) = atl_let e1 (fun x => gemmini_acc_out sm se act (f x)).
Proof. reflexivity. Qed.

(** Folding the matmul layer's definition (to rewrite with its schedule). *)
Lemma qmatmul_fold M N K (A B D : Z -> Z -> gint) sm se act :
  (GEN [ i < M ] GEN [ j < N ]
     gemmini_acc_out sm se act (D _[ i ] _[ j ] <+> SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ]))
  = qmatmul M N K A B D sm se act.
Proof. reflexivity. Qed.

Section GemminiConv.
  Variables (NB H W C KO KH KW : Z).
  Hypotheses (HNB : 0 <= NB) (HC : 0 < C) (HKO : 0 <= KO) (HKH : 0 < KH) (HKW : 0 < KW)
             (HH : KH <= H) (HW : KW <= W).
  Variables (x w : Z -> Z -> Z -> Z -> gint) (bias : Z -> gint).
  Hypotheses (Hx : shaped [NB; H; W; C] x) (Hw : shaped [KH; KW; C; KO] w)
             (Hbias : shaped [KO] bias).
  Variables (sm se : Z) (act : bool).

  Definition qconv :=
    GEN [ n < NB ] GEN [ q < H - KH + 1 ] GEN [ p < W - KW + 1 ] GEN [ k < KO ]
      gemmini_acc_out sm se act
        (bias _[ k ] <+> SUM [ s < KH ] SUM [ r < KW ] SUM [ c < C ]
           x _[ n ] _[ q + s ] _[ p + r ] _[ c ] * w _[ s ] _[ r ] _[ c ] _[ k ]).

  Derive qconv_gemmini SuchThat (qconv = qconv_gemmini) As qconv_gemmini_correct.
  Proof.
    reschedule.
    (* One reduction index j for (s, r, c); one row index m for (n, q, p). *)
    rw sum_flatten3.
    rw gen_split2.
    rw gen_split2.
    (* Both reads guarded by their bounds (for check_safe). *)
    rw get4_bound_guard at (x _[ _ ] _[ _ ] _[ _ ] _[ _ ]).
    rw get4_bound_guard at (w _[ _ ] _[ _ ] _[ _ ] _[ _ ]).
    (* The im2col buffer: the read of x, out of j, k (independent), m. *)
    name_buffer (|[ _ ]| x _[ _ ] _[ _ ] _[ _ ] _[ _ ]) as a.
    rw let_sum_lift0.
    rw ll_tadd_r.
    rw ll_acc_out.
    rw ll_gen.
    rw let_gen_lift0.
    rw ll_split.
    rw ll_split.
    (* The weights as a matrix: out of j, k, past m; transposed back. *)
    name_buffer (|[ _ ]| w _[ _ ] _[ _ ] _[ _ ] _[ _ ]) as wm.
    rw let_sum_lift0.
    rw ll_tadd_r.
    rw ll_acc_out.
    rw let_gen_lift0.
    rw ll_gen.
    rw ll_split.
    rw ll_split.
    rw <- transpose_gen at (genr 0 KO _).
    rw let_transpose_out.
    rw get_get_transpose.
    (* The bias broadcast to a matrix. *)
    name_buffer (bias _[ _ ]) as dm.
    rw ll_acc_out.
    rw let_gen_lift0.
    rw let_gen_lift0.
    rw ll_split.
    rw ll_split.
    (* What remains is the matmul layer: use its Gemmini schedule. *)
    rw qmatmul_fold.
    rw qmatmul_gemmini_spec.
    inline qmatmul_gemmini_expected.
    rename_buffer x0 into col.
    rename_buffer y into wm.
    rename_buffer x1 into dm.
    (* Loop names (outer before inner, so no name is shadowed when matched);
       the bias broadcast's row loop, whose index its body does not use, is
       matched by its name [i] too (Coq prints it [_]). *)
    rename_loop i into m.
    rename_loop j into k.
    rename_loop i into j.
    rename_loop i into j.
    rename_loop i into m.
    rename_loop i into k.
    gemmini_check_fit.
    check_safe.
    done.
  Qed.

  (** The derived program: the three DRAM buffers (im2col [col], weight
      matrix [wm], broadcast bias [dm]), then the Gemmini matmul schedule
      of GemminiMatmul.v on them, its [M x N] result viewed as the
      [NB x OH x OW x KO] output by the two [split]s. *)
  Definition qconv_gemmini_expected :=
    tlet col :=
      GEN [ m < NB * (H - KH + 1) * (W - KW + 1) ] GEN [ j < KH * (KW * C) ]
        |[ ((0 <=? m / (W - KW + 1) / (H - KH + 1)) &&
            (m / (W - KW + 1) / (H - KH + 1) <? NB)) &&
           ((0 <=? (m / (W - KW + 1)) mod (H - KH + 1) + j / (KW * C)) &&
            ((m / (W - KW + 1)) mod (H - KH + 1) + j / (KW * C) <? H)) &&
           ((0 <=? m mod (W - KW + 1) + (j / C) mod KW) &&
            (m mod (W - KW + 1) + (j / C) mod KW <? W)) &&
           ((0 <=? j mod C) && (j mod C <? C)) ]|
          x _[ m / (W - KW + 1) / (H - KH + 1) ]
            _[ (m / (W - KW + 1)) mod (H - KH + 1) + j / (KW * C) ]
            _[ m mod (W - KW + 1) + (j / C) mod KW ] _[ j mod C ] in
    tlet wm :=
      GEN [ j < KH * (KW * C) ] GEN [ k < KO ]
        |[ ((0 <=? j / (KW * C)) && (j / (KW * C) <? KH)) &&
           ((0 <=? (j / C) mod KW) && ((j / C) mod KW <? KW)) &&
           ((0 <=? j mod C) && (j mod C <? C)) &&
           ((0 <=? k) && (k <? KO)) ]|
          w _[ j / (KW * C) ] _[ (j / C) mod KW ] _[ j mod C ] _[ k ] in
    tlet dm := GEN [ m < NB * (H - KH + 1) * (W - KW + 1) ] GEN [ k < KO ] bias _[ k ] in
    split (H - KH + 1) (NB * (H - KH + 1))
      (split (W - KW + 1) (NB * (H - KH + 1) * (W - KW + 1))
        (trunc_r (NB * (H - KH + 1) * (W - KW + 1))
          (flatten (cdiv (NB * (H - KH + 1) * (W - KW + 1)) 16) 16
            (GEN [ io < cdiv (NB * (H - KH + 1) * (W - KW + 1)) 16 ]
              transpose KO 16 (trunc_r KO (flatten (cdiv KO 16) 16 (GEN [ jo < cdiv KO 16 ]
                transpose 16 16
                  (tlet c := in_mem GEMMINI_ACC
                     (gemmini_mvin_acc dm (io * 16) (jo * 16)
                        (NB * (H - KH + 1) * (W - KW + 1)) KO <+>
                      SUM [ ko < cdiv (KH * (KW * C)) 16 ]
                        tlet a := in_mem GEMMINI_SPAD
                          (gemmini_mvin col (io * 16) (ko * 16)
                             (NB * (H - KH + 1) * (W - KW + 1)) (KH * (KW * C))) in
                        tlet b := in_mem GEMMINI_SPAD
                          (gemmini_mvin wm (ko * 16) (jo * 16) (KH * (KW * C)) KO) in
                        gemmini_matmul a b) in
                   gemmini_mvout sm se act c (io * 16) (jo * 16)
                     (NB * (H - KH + 1) * (W - KW + 1)) KO)))))))).

  Lemma qconv_gemmini_is_expected : qconv_gemmini = qconv_gemmini_expected.
  Proof. same_program. Qed.

  Lemma qconv_gemmini_spec : qconv = qconv_gemmini_expected.
  Proof. rewrite qconv_gemmini_correct; apply qconv_gemmini_is_expected. Qed.
End GemminiConv.

(** ** The layer as Gemmini's convolution loop (Targets/GemminiLoopConv.v, issue 16)

    The same layer is one [gemmini_loop_conv_ws]: the hardware moves every
    input pixel once and reads the pixels of each output block from the
    scratchpad (the on-chip im2col), so no im2col matrix is built in DRAM.
    The proof reads both sides element by element: an output block of the
    loop at [(p / 16, k / 16)], element [(p mod 16, k mod 16)], is the bias
    plus, over [s], [r] and the 16-channel blocks [co], the products of the
    clipped windows, which [sumr_tile] turns back into the sum over the
    [C] channels. *)
(** The opening of both conv-loop proofs ([qconv_loop_conv_ws],
    [qconv_strided_loop_conv_ws]): into output pixel row [n], [q], through
    [gemmini_tiles_gen] to element [p], [k] of the loop's output, with the
    tile arithmetic ([Ep], [Ek], [Hpm], [Hkm]) and the output move unfolded. *)
Ltac conv_loop_to_element :=
  apply genr_ext_ctx; intros n Hn; apply genr_ext_ctx; intros q Hq;
  match goal with
  | |- _ = trunc_r ?M (flatten _ 16 (genr 0 _ (fun io => transpose ?N 16 (trunc_r _
             (flatten _ 16 (genr 0 _ (fun jo => transpose 16 16 (@?F io jo)))))))) =>
      rewrite (gemmini_tiles_gen M N F) by lia
  end;
  apply genr_ext_ctx; intros p Hp; apply genr_ext_ctx; intros k Hk; cbv beta;
  assert (Ep : (p / 16 * 16 + p mod 16 = p)%Z) by (pose proof (Z.div_mod p 16); lia);
  assert (Ek : (k / 16 * 16 + k mod 16 = k)%Z) by (pose proof (Z.div_mod k 16); lia);
  assert (Hpm : (0 <= p mod 16 < 16)%Z) by (apply Z.mod_pos_bound; lia);
  assert (Hkm : (0 <= k mod 16 < 16)%Z) by (apply Z.mod_pos_bound; lia);
  unfold atl_let, in_mem, gemmini_mvout;
  rewrite get_gen, get_gen by lia;
  rewrite Ep, Ek.

Section GemminiConvLoop.
  Variables (NB H W C KO KH KW : Z).
  Hypotheses (HNB : 0 <= NB) (HC : 0 < C) (HKO : 0 <= KO) (HKH : 0 < KH) (HKW : 0 < KW)
             (HH : KH <= H) (HW : KW <= W).
  Variables (x w : Z -> Z -> Z -> Z -> gint) (bias : Z -> gint).
  Hypotheses (Hx : shaped [NB; H; W; C] x) (Hw : shaped [KH; KW; C; KO] w)
             (Hbias : shaped [KO] bias).
  Variables (sm se : Z) (act : bool).

  Lemma qconv_loop_conv_ws :
    qconv NB H W C KO KH KW x w bias sm se act =
    gemmini_loop_conv_ws sm se act x w bias NB H W C KO KH KW.
  Proof.
    unfold qconv, gemmini_loop_conv_ws.
    conv_loop_to_element.
    assert (Lp : (p <? W - KW + 1)%Z = true) by (apply Z.ltb_lt; lia).
    assert (Lk : (k <? KO)%Z = true) by (apply Z.ltb_lt; lia).
    rewrite Lp, Lk; cbn [iverson andb]; f_equal.
    rewrite !get_tadd; f_equal.
    - unfold gemmini_mvin_acc; rewrite get_gen, get_gen by lia.
      rewrite Ep, Ek.
      rewrite Lp, Lk; cbn [iverson andb]; rewrite get_gen by lia; reflexivity.
    - rewrite get_sum, get_sum; apply sumr_ext_ctx; intros s Hs.
      rewrite get_sum, get_sum; apply sumr_ext_ctx; intros r Hr.
      rewrite get_sum, get_sum.
      rewrite (sumr_tile C 16) by lia.
      apply sumr_ext_ctx; intros co Hco.
      unfold gemmini_matmul; rewrite get_gen, get_gen by lia.
      apply sumr_ext_ctx; intros kk Hkk.
      unfold gemmini_mvin; rewrite !get_gen by lia.
      replace ((p / 16 * 16 + r + p mod 16)%Z) with ((p + r)%Z) by lia.
      rewrite Ek.
      rewrite <- guard_mul_split.
      replace ((p + r <? W - KW + 1 + r)%Z) with true by (symmetry; apply Z.ltb_lt; lia).
      rewrite Lk.
      destruct ((co * 16 + kk <? C)%Z); reflexivity.
  Qed.

  (** The same, stated on the layer's program and the loop's unrolling, so
      that a derivation rewrites to the per-tile program of single
      instructions and then recognises it as the loop with [use_instr].  Both
      sides are the two definitions unfolded (not retyped: the layer is
      [qconv]'s body, the unrolling [gemmini_loop_conv_ws]'s, binder names
      included). *)
  Lemma qconv_is_loop_conv_ws_unrolled :
    ltac:(let l := eval cbv beta delta [qconv]
                  in (qconv NB H W C KO KH KW x w bias sm se act) in
          let r := eval cbv beta delta [gemmini_loop_conv_ws]
                  in (gemmini_loop_conv_ws sm se act x w bias NB H W C KO KH KW) in
          exact (l = r)).
  Proof. exact qconv_loop_conv_ws. Qed.

  (** The layer as one [gemmini_loop_conv_ws] (no im2col matrix in DRAM),
      for the bridge and the gemmini target's lowering
      (targets/gemmini/conv_loop.py). *)
  Derive qconv_loop SuchThat (qconv NB H W C KO KH KW x w bias sm se act = qconv_loop)
    As qconv_loop_correct.
  Proof.
    reschedule.
    rw qconv_is_loop_conv_ws_unrolled.
    use_instr gemmini_loop_conv_ws.
    check_safe.
    done.
  Qed.
End GemminiConvLoop.

(** ** A strided, padded layer as one conv loop (issue 16, item 2)

    The layer with a stride [st >= 1] and a zero padding [pd >= 0] (ResNet-50's
    downsampling 3x3 layers: stride 2, padding 1): output
    [NB x OH x OW x KO] with [OH = (H + 2 pd - KH) / st + 1] and [OW] likewise,
    output [(n, q, p, k)] reading input pixel [(q st + s - pd, p st + r - pd)]
    at kernel offset [(s, r)], zero outside the image (the guard: a user's
    padded read).  [qconv] is kept as it is (stride 1, no padding): three
    derivations start from it (examples/search/glenside_conv.v states the
    same layer), and their derived programs print as before
    (docs/decisions.md #97);
    [gemmini_loop_conv_ws_strided_1_0] below proves the two loops equal at
    [st = 1], [pd = 0].

    The proof is [qconv_loop_conv_ws]'s, element by element: the output
    blocks read once by [gemmini_tiles_gen], the bias, and per kernel offset
    the channel sum cut into 16-channel blocks by [sumr_tile]; the [A] block
    at output pixel [p] and channel [co * 16 + kk] is the guarded read itself.

    [pd < KH] and [pd < KW] are not used by the proofs: they are the
    hardware library's restriction (Gemmini's [tiled_conv] needs
    [kernel_dim > padding], so that no output row's window lies in the
    padding alone; tests/test_gemmini_loop_conv.py), which the kernel checks
    before every call as a precondition. *)
Section GemminiConvStrided.
  Variables (NB H W C KO KH KW st pd : Z).
  Hypotheses (HNB : 0 <= NB) (HC : 0 < C) (HKO : 0 <= KO) (HKH : 0 < KH) (HKW : 0 < KW)
             (Hst : 0 < st) (Hpd : 0 <= pd) (HH : KH <= H + 2 * pd) (HW : KW <= W + 2 * pd)
             (HpdH : pd < KH) (HpdW : pd < KW).
  Variables (x w : Z -> Z -> Z -> Z -> gint) (bias : Z -> gint).
  Hypotheses (Hx : shaped [NB; H; W; C] x) (Hw : shaped [KH; KW; C; KO] w)
             (Hbias : shaped [KO] bias).
  Variables (sm se : Z) (act : bool).

  Definition qconv_strided :=
    GEN [ n < NB ] GEN [ q < (H + 2 * pd - KH) / st + 1 ]
      GEN [ p < (W + 2 * pd - KW) / st + 1 ] GEN [ k < KO ]
        gemmini_acc_out sm se act
          (bias _[ k ] <+> SUM [ s < KH ] SUM [ r < KW ] SUM [ c < C ]
             (|[ ((0 <=? q * st + s - pd) && (q * st + s - pd <? H)) &&
                 ((0 <=? p * st + r - pd) && (p * st + r - pd <? W)) ]|
                x _[ n ] _[ q * st + s - pd ] _[ p * st + r - pd ] _[ c ]) *
             w _[ s ] _[ r ] _[ c ] _[ k ]).

  Lemma qconv_strided_loop_conv_ws :
    qconv_strided = gemmini_loop_conv_ws_strided sm se act x w bias NB H W C KO KH KW st pd.
  Proof.
    unfold qconv_strided, gemmini_loop_conv_ws_strided.
    assert (HOW : (0 <= (W + 2 * pd - KW) / st + 1)%Z)
      by (pose proof (Z.div_pos (W + 2 * pd - KW) st); lia).
    conv_loop_to_element.
    assert (Lp : (p <? (W + 2 * pd - KW) / st + 1)%Z = true) by (apply Z.ltb_lt; lia).
    assert (Lk : (k <? KO)%Z = true) by (apply Z.ltb_lt; lia).
    rewrite Lp, Lk; cbn [iverson andb]; f_equal.
    rewrite !get_tadd; f_equal.
    - unfold gemmini_mvin_acc; rewrite get_gen, get_gen by lia.
      rewrite Ep, Ek, Lp, Lk; cbn [iverson andb]; rewrite get_gen by lia; reflexivity.
    - rewrite get_sum, get_sum; apply sumr_ext_ctx; intros s Hs.
      rewrite get_sum, get_sum; apply sumr_ext_ctx; intros r Hr.
      rewrite get_sum, get_sum.
      rewrite (sumr_tile C 16) by lia.
      apply sumr_ext_ctx; intros co Hco.
      unfold gemmini_matmul; rewrite get_gen, get_gen by lia.
      apply sumr_ext_ctx; intros kk Hkk.
      unfold gemmini_mvin; rewrite !(get_gen 16) by lia.
      rewrite Ep, Ek, Lp, Lk.
      destruct (co * 16 + kk <? C)%Z eqn:Ec; cbn [iverson andb];
        [| cbn [tzero TensorElem_scalar]; rewrite smul_0_l; reflexivity].
      apply Z.ltb_lt in Ec.
      rewrite get_gen, get_gen by lia; reflexivity.
  Qed.

  (** The same, on the two definitions unfolded (as [qconv_is_loop_conv_ws_unrolled]). *)
  Lemma qconv_strided_is_loop_unrolled :
    ltac:(let l := eval cbv beta delta [qconv_strided] in qconv_strided in
          let r := eval cbv beta delta [gemmini_loop_conv_ws_strided]
                  in (gemmini_loop_conv_ws_strided sm se act x w bias NB H W C KO KH KW st pd)
          in exact (l = r)).
  Proof. exact qconv_strided_loop_conv_ws. Qed.

  (** The strided, padded layer as one [gemmini_loop_conv_ws_strided], for the
      bridge and the gemmini target (targets/gemmini/conv_loop.py passes the
      stride and the padding to the hardware loop). *)
  Derive qconv_strided_loop SuchThat (qconv_strided = qconv_strided_loop)
    As qconv_strided_loop_correct.
  Proof.
    reschedule.
    rw qconv_strided_is_loop_unrolled.
    use_instr gemmini_loop_conv_ws_strided.
    check_safe.
    done.
  Qed.
End GemminiConvStrided.

(** At stride 1 without padding, the strided layer is [qconv], and so the
    strided loop is the stride-1 loop: the old names are the special case. *)
Lemma qconv_strided_1_0 NB H W C KO KH KW x w bias sm se act :
  (0 < KH <= H -> 0 < KW <= W ->
   qconv_strided NB H W C KO KH KW 1 0 x w bias sm se act =
   qconv NB H W C KO KH KW x w bias sm se act)%Z.
Proof.
  intros HH HW; unfold qconv_strided, qconv.
  replace ((H + 2 * 0 - KH) / 1 + 1)%Z with (H - KH + 1)%Z by (rewrite Z.div_1_r; lia).
  replace ((W + 2 * 0 - KW) / 1 + 1)%Z with (W - KW + 1)%Z by (rewrite Z.div_1_r; lia).
  apply genr_ext_ctx; intros n Hn; apply genr_ext_ctx; intros q Hq.
  apply genr_ext_ctx; intros p Hp; apply genr_ext_ctx; intros k Hk.
  f_equal; f_equal.
  apply sumr_ext_ctx; intros s Hs; apply sumr_ext_ctx; intros r Hr.
  apply sumr_ext_ctx; intros c Hc.
  replace (q * 1 + s - 0)%Z with (q + s)%Z by lia.
  replace (p * 1 + r - 0)%Z with (p + r)%Z by lia.
  replace (((0 <=? q + s) && (q + s <? H)) && ((0 <=? p + r) && (p + r <? W)))%Z with true
    by (symmetry; rewrite !andb_true_iff, !Z.leb_le, !Z.ltb_lt; lia).
  reflexivity.
Qed.

Lemma gemmini_loop_conv_ws_strided_1_0 sm se act x w bias NB H W C KO KH KW :
  (0 <= NB -> 0 < C -> 0 <= KO -> 0 < KH <= H -> 0 < KW <= W ->
   gemmini_loop_conv_ws_strided sm se act x w bias NB H W C KO KH KW 1 0 =
   gemmini_loop_conv_ws sm se act x w bias NB H W C KO KH KW)%Z.
Proof.
  intros.
  rewrite <- qconv_strided_loop_conv_ws, <- qconv_loop_conv_ws by lia.
  apply qconv_strided_1_0; lia.
Qed.

(** ** The on-chip im2col with single instructions (issue 16)

    [gemmini_loop_conv_ws]'s compute tile never crosses the end of an output
    row, so with output rows of 56, 28, 14 or 7 pixels (ResNet-50) it
    computes 1.14x to 2.15x the products of the bound.  Here the [A] tiles
    are 16 consecutive output pixels of the flattened [(n, oh, ow)] order
    (every tile full but the last), moved straight from the input by
    [gemmini_mvin_im2col] (Targets/Gemmini.v; the lowering issues one [mvin]
    per run of consecutive pixels, 64 channels at a time), and the weights
    are staged once per block of [NJ] column tiles and reused by every pixel
    tile: for each block [jb], [b] holds the weights of every kernel offset,
    channel tile and column tile of the block; for each pixel tile [io], the
    accumulator [c] holds the block's [NJ] output tiles, starts from the
    bias (broadcast by a stride-0 move) and accumulates, per kernel offset
    [(s, r)] and group of four channel tiles [cg], the products of the
    staged pixels [a] with every column tile's weights.  The output is the
    [M x KO] matrix ([M = NB OH OW]) viewed as [NB x OH x OW x KO] by the two
    [split]s of [qconv_gemmini].  [KH KW cdiv C 16 NJ <= 1020] makes [b] and
    [a] fit the scratchpad, [NJ <= 64] makes [c] fit the accumulator;
    [gemmini_check_fit] proves both.

    As for [qconv_loop], the equality is proved by hand, element by element
    ([qconv_im2col_tiles_ok]: the reshapes around the output tiles read once
    and for all by [gemmini_tiles_nblocks_gen], the channel sum cut into
    groups of tiles by [sumr_tile] twice), and the derivation is that
    lemma, [gemmini_check_fit] and [check_safe] (build time: a rewrite
    derivation would re-prove the tiling at every step, issue 16). *)

(** A column index in blocks of [NJ] tiles of 16: block [k / 16 / NJ], tile
    [k / 16 mod NJ] in the block. *)
Lemma blocks16_div_mod NJ k : (0 < NJ ->
  k / (NJ * 16) = k / 16 / NJ /\ k mod (NJ * 16) = k / 16 mod NJ * 16 + k mod 16)%Z.
Proof.
  intros HNJ.
  pose proof (Z.div_mod k 16) as E1; pose proof (Z.mod_pos_bound k 16) as B1;
  pose proof (Z.div_mod (k / 16) NJ) as E2; pose proof (Z.mod_pos_bound (k / 16) NJ) as B2.
  assert (Hr : (0 <= k / 16 mod NJ * 16 + k mod 16 < NJ * 16)%Z) by lia.
  assert (Hk : (k = NJ * 16 * (k / 16 / NJ) + (k / 16 mod NJ * 16 + k mod 16))%Z) by lia.
  split; symmetry; [ apply (Z.div_unique _ _ _ _ (or_introl Hr) Hk)
                   | apply (Z.mod_unique _ _ _ _ (or_introl Hr) Hk) ].
Qed.

(** The reshapes around the output tiles of [qconv_im2col_tiles] (column
    blocks of [NJ] tiles outermost, then row tiles, then the block's column
    tiles) read tile [(jb, io, jj)] at [(m mod 16, k mod 16)]. *)
Lemma gemmini_tiles_nblocks_gen M N NJ (F : Z -> Z -> Z -> Z -> Z -> gint) :
  (0 <= M -> 0 <= N -> 0 < NJ ->
  transpose N M (trunc_r N (flatten (cdiv N (NJ * 16)) (NJ * 16)
    (GEN [ jb < cdiv N (NJ * 16) ]
      transpose M (NJ * 16) (trunc_r M (flatten (cdiv M 16) 16
        (GEN [ io < cdiv M 16 ]
          transpose (NJ * 16) 16 (flatten NJ 16
            (GEN [ jj < NJ ] transpose 16 16 (F jb io jj)))))))))
  = GEN [ m < M ] GEN [ k < N ]
      (F (k / 16 / NJ) (m / 16) (k / 16 mod NJ)) _[ m mod 16 ] _[ k mod 16 ])%Z.
Proof.
  intros HM HN HNJ.
  pose proof (cdiv_mul_ge M 16) as HcM; pose proof (cdiv_mul_ge N (NJ * 16)) as HcN.
  unfold transpose at 1.
  apply genr_ext_ctx; intros m Hm; apply genr_ext_ctx; intros k Hk.
  destruct (blocks16_div_mod NJ k HNJ) as [Ed Em].
  pose proof (Z.mod_pos_bound k (NJ * 16)) as Bk; pose proof (Z.mod_pos_bound m 16) as Bm.
  pose proof (Z.mod_pos_bound k 16) as Bk16; pose proof (Z.mod_pos_bound (k / 16) NJ) as Bj.
  assert (Hb : (0 <= k / (NJ * 16) < cdiv N (NJ * 16))%Z).
  { split; [apply Z.div_pos; lia|]. apply cdiv_lt_iff; [lia|].
    pose proof (Z.mul_div_le k (NJ * 16)); lia. }
  assert (Hi : (0 <= m / 16 < cdiv M 16)%Z).
  { split; [apply Z.div_pos; lia|]. apply cdiv_lt_iff; [lia|].
    pose proof (Z.mul_div_le m 16); lia. }
  rewrite get_trunc_r by lia.
  rewrite get_flatten by (try lia; nia).
  rewrite get_gen by lia.
  rewrite get_get_transpose by lia.
  rewrite get_trunc_r by lia.
  rewrite get_flatten by (try lia; nia).
  rewrite get_gen by lia.
  rewrite get_get_transpose by lia.
  rewrite get_flatten by lia.
  rewrite Em, tile_div, tile_mod, Ed by lia.
  rewrite get_gen by lia.
  rewrite get_get_transpose by lia.
  reflexivity.
Qed.

Lemma cdiv_64 C : (0 <= C -> cdiv C 64 = cdiv (cdiv C 16) 4)%Z.
Proof.
  intros; unfold cdiv.
  replace (C + 16 - 1)%Z with (C + 15)%Z by lia.
  replace (C + 64 - 1)%Z with (C + 15 + 3 * 16)%Z by lia.
  rewrite <- (Z.div_div _ 16 4), Z.div_add by lia.
  f_equal; lia.
Qed.

(** The common part of the two im2col schedules' proofs ([qconv_im2col_tiles_ok],
    [qconv_strided_im2col_tiles_ok]), from the output grid as an [M x KO] matrix to one
    product of an A tile's element [(m, kk)] at kernel offset [(s, r)] and channel
    group [(cg, cq)] with the staged weight: the output tiles read by
    [gemmini_tiles_nblocks_gen], the bias, and the channel sum cut twice by
    [sumr_tile].  What is left is the move's own element (the caller unfolds it). *)
Ltac im2col_tiles_to_element M C KO NJ :=
  match goal with
  | |- _ = transpose ?N ?M' (trunc_r _ (flatten _ _ (genr 0 _ (fun jb => transpose _ _
             (trunc_r _ (flatten _ 16 (genr 0 _ (fun io => transpose _ 16 (flatten _ 16
               (genr 0 _ (fun jj => transpose 16 16 (@?F jb io jj)))))))))))) =>
      rewrite (gemmini_tiles_nblocks_gen M' N NJ F) by lia
  end;
  apply genr_ext_ctx; intros m Hm; apply genr_ext_ctx; intros k Hk; cbv beta;
  pose proof (Z.mod_pos_bound m 16) as Bm; pose proof (Z.mod_pos_bound k 16) as Bk;
  pose proof (Z.mod_pos_bound (k / 16) NJ) as Bj;
  assert (Ep : (m / 16 * 16 + m mod 16 = m)%Z) by (pose proof (Z.div_mod m 16); lia);
  assert (Ek : ((k / 16 / NJ * NJ + (k / 16) mod NJ) * 16 + k mod 16 = k)%Z)
    by (pose proof (Z.div_mod k 16); pose proof (Z.div_mod (k / 16) NJ); lia);
  assert (Lm : (m <? M)%Z = true) by (apply Z.ltb_lt; lia);
  assert (Lk : (k <? KO)%Z = true) by (apply Z.ltb_lt; lia);
  unfold gemmini_mvout; rewrite get_gen, get_gen by lia;
  rewrite Ep, Ek, Lm, Lk; cbn [iverson andb]; f_equal;
  rewrite !get_tadd; f_equal;
  [ (* The bias. *)
    rewrite get_gen by lia; unfold gemmini_mvin_acc; rewrite get_gen, get_gen by lia;
    rewrite Ep, Ek, Lm, Lk; cbn [iverson andb]; rewrite get_gen by lia; reflexivity
  | (* The products: the channel sum in groups of four tiles of 16. *)
    rewrite !get_sum; apply sumr_ext_ctx; intros s Hs;
    rewrite !get_sum; apply sumr_ext_ctx; intros r Hr;
    rewrite !get_sum;
    rewrite (sumr_tile C 16), (sumr_tile (cdiv C 16) 4), cdiv_64
      by (try apply cdiv_nonneg; lia);
    apply sumr_ext_ctx; intros cg Hcg;
    rewrite get_gen by lia;
    rewrite !get_sum; apply sumr_ext_ctx; intros cq Hcq;
    rewrite !get_iverson;
    destruct (cg * 4 + cq <? cdiv C 16)%Z eqn:Ec; cbn [iverson]; [|reflexivity];
    apply Z.ltb_lt in Ec;
    unfold gemmini_matmul; rewrite get_gen, get_gen by lia;
    apply sumr_ext_ctx; intros kk Hkk;
    rewrite get_gen by lia;
    rewrite get_gen, get_gen, get_gen, get_gen by lia ].

(** The bounds half of [gemmini_mvin_im2col]'s guard holds on every output
    pixel. *)
Lemma im2col_in_bounds NB H W KH KW s r t :
  (0 < KH <= H -> 0 < KW <= W -> 0 <= s < KH -> 0 <= r < KW ->
  0 <= t < NB * (H - KH + 1) * (W - KW + 1) ->
  (((0 <=? t / (W - KW + 1) / (H - KH + 1)) && (t / (W - KW + 1) / (H - KH + 1) <? NB)) &&
   ((0 <=? t / (W - KW + 1) mod (H - KH + 1) + s) &&
    (t / (W - KW + 1) mod (H - KH + 1) + s <? H)) &&
   ((0 <=? t mod (W - KW + 1) + r) && (t mod (W - KW + 1) + r <? W))) = true)%Z.
Proof.
  intros HH HW Hs Hr Ht.
  assert (H1 : (0 <= t / (W - KW + 1) < NB * (H - KH + 1))%Z).
  { split; [apply Z.div_pos; lia|]. apply Z.div_lt_upper_bound; lia. }
  assert (H2 : (0 <= t / (W - KW + 1) / (H - KH + 1) < NB)%Z).
  { split; [apply Z.div_pos; lia|]. apply Z.div_lt_upper_bound; lia. }
  pose proof (Z.mod_pos_bound (t / (W - KW + 1)) (H - KH + 1)).
  pose proof (Z.mod_pos_bound t (W - KW + 1)).
  rewrite !andb_true_iff, !Z.leb_le, !Z.ltb_lt; lia.
Qed.

Section GemminiConvIm2col.
  Variables (NB H W C KO KH KW NJ : Z).
  Hypotheses (HNB : 0 <= NB) (HC : 0 < C) (HKO : 0 <= KO) (HKH : 0 < KH) (HKW : 0 < KW)
             (HH : KH <= H) (HW : KW <= W) (HNJ : 0 < NJ) (HNJacc : NJ <= 64)
             (Hfit : KH * KW * cdiv C 16 * NJ <= 1020).
  Variables (x w : Z -> Z -> Z -> Z -> gint) (bias : Z -> gint).
  Hypotheses (Hx : shaped [NB; H; W; C] x) (Hw : shaped [KH; KW; C; KO] w)
             (Hbias : shaped [KO] bias).
  Variables (sm se : Z) (act : bool).

  (** The schedule (module comment above): per column block [jb] the
      weights [b], per pixel tile [io] the accumulator [c]. *)
  Definition qconv_im2col_tiles :=
    split (H - KH + 1) (NB * (H - KH + 1))
      (split (W - KW + 1) (NB * (H - KH + 1) * (W - KW + 1))
        (transpose KO (NB * (H - KH + 1) * (W - KW + 1))
          (trunc_r KO (flatten (cdiv KO (NJ * 16)) (NJ * 16)
            (GEN [ jb < cdiv KO (NJ * 16) ]
              tlet b := in_mem GEMMINI_SPAD
                (GEN [ s < KH ] GEN [ r < KW ] GEN [ co < cdiv C 16 ] GEN [ jj < NJ ]
                   gemmini_mvin (w _[ s ] _[ r ]) (co * 16) ((jb * NJ + jj) * 16) C KO) in
              transpose (NB * (H - KH + 1) * (W - KW + 1)) (NJ * 16)
                (trunc_r (NB * (H - KH + 1) * (W - KW + 1))
                  (flatten (cdiv (NB * (H - KH + 1) * (W - KW + 1)) 16) 16
                    (GEN [ io < cdiv (NB * (H - KH + 1) * (W - KW + 1)) 16 ]
                      tlet c := in_mem GEMMINI_ACC
                        ((GEN [ jj < NJ ]
                            gemmini_mvin_acc
                              (GEN [ p < NB * (H - KH + 1) * (W - KW + 1) ] bias)
                              (io * 16) ((jb * NJ + jj) * 16)
                              (NB * (H - KH + 1) * (W - KW + 1)) KO) <+>
                         SUM [ s < KH ] SUM [ r < KW ] SUM [ cg < cdiv C 64 ]
                           tlet a := in_mem GEMMINI_SPAD
                             (GEN [ cq < 4 ]
                                gemmini_mvin_im2col x NB H W C (H - KH + 1) (W - KW + 1) s r
                                  (io * 16) ((cg * 4 + cq) * 16)) in
                           GEN [ jj < NJ ] SUM [ cq < 4 ]
                             |[ cg * 4 + cq <? cdiv C 16 ]|
                               gemmini_matmul (a _[ cq ])
                                 (b _[ s ] _[ r ] _[ cg * 4 + cq ] _[ jj ])) in
                      transpose (NJ * 16) 16 (flatten NJ 16 (GEN [ jj < NJ ]
                        transpose 16 16
                          (gemmini_mvout sm se act (c _[ jj ]) (io * 16) ((jb * NJ + jj) * 16)
                             (NB * (H - KH + 1) * (W - KW + 1)) KO))))))))))).

  Lemma qconv_im2col_tiles_ok :
    qconv NB H W C KO KH KW x w bias sm se act = qconv_im2col_tiles.
  Proof.
    assert (HM1 : (0 <= NB * (H - KH + 1))%Z) by (apply Z.mul_nonneg_nonneg; lia).
    assert (HM : (0 <= NB * (H - KH + 1) * (W - KW + 1))%Z)
      by (apply Z.mul_nonneg_nonneg; lia).
    unfold qconv, qconv_im2col_tiles.
    (* The output grid as the M x KO matrix, as in [qconv_gemmini]. *)
    rewrite (gen_split2 NB (H - KH + 1)) by lia.
    rewrite (gen_split2 (NB * (H - KH + 1)) (W - KW + 1)) by lia.
    f_equal; f_equal.
    unfold atl_let, in_mem; cbv beta.
    im2col_tiles_to_element (NB * (H - KH + 1) * (W - KW + 1))%Z C KO NJ.
    unfold gemmini_mvin_im2col, gemmini_mvin; rewrite !get_gen by lia.
    rewrite Ep, Ek, Lm, Lk, (im2col_in_bounds NB H W KH KW s r m) by lia.
    destruct ((cg * 4 + cq) * 16 + kk <? C)%Z; cbn [iverson andb tzero TensorElem_scalar];
      rewrite ?smul_0_l; reflexivity.
  Qed.

  (** The same, stated on the two definitions unfolded, for [rw]. *)
  Lemma qconv_is_im2col_unrolled :
    ltac:(let l := eval cbv beta delta [qconv]
                  in (qconv NB H W C KO KH KW x w bias sm se act) in
          let r := eval cbv beta delta [qconv_im2col_tiles] in qconv_im2col_tiles in
          exact (l = r)).
  Proof. exact qconv_im2col_tiles_ok. Qed.

  (** The layer with the on-chip im2col (no im2col matrix in DRAM), for the
      bridge and the gemmini target (targets/gemmini/im2col.py lowers the
      moves; [C], [KH], [KW] and [NJ] are fixed at compile time, so the
      staged weights have static rows). *)
  Derive qconv_im2col SuchThat (qconv NB H W C KO KH KW x w bias sm se act = qconv_im2col)
    As qconv_im2col_correct.
  Proof.
    reschedule.
    rw qconv_is_im2col_unrolled.
    gemmini_check_fit.
    check_safe.
    done.
  Qed.
End GemminiConvIm2col.

(** ** The on-chip im2col of a strided, padded layer, with single instructions (issue 16)

    [qconv_im2col]'s schedule for [qconv_strided] (ResNet-50's downsampling
    3x3 layers, stride 2, padding 1): the [A] tiles are 16 consecutive output
    pixels of the flattened [(n, oh, ow)] order, moved from the input by
    [gemmini_mvin_im2col_strided] (Targets/Gemmini.v: zero in the padding;
    the lowering moves each run of pixels inside the image with DRAM stride
    [st C] and zero-fills each run in the padding from DRAM address 0), the
    weights staged once per block of [NJ] column tiles.  The strided conv
    loop ([qconv_strided_loop]) computes 1.14x the products of the bound on
    res3's 28-pixel output rows, since its compute tile stops at each
    output row's end; these tiles cross row ends, so the products are the
    bound's.  The proof is [qconv_im2col_tiles_ok]'s, with the padding's
    guard carried through: the specification's guard is the user's guarded
    read once its batch conjunct (always true) is dropped. *)

(** The batch conjunct of [gemmini_mvin_im2col_strided]'s guard holds on
    every output pixel. *)
Lemma im2col_batch_in_bounds NB OH OW t :
  (0 < OH -> 0 < OW -> 0 <= t < NB * OH * OW ->
   ((0 <=? t / OW / OH) && (t / OW / OH <? NB)) = true)%Z.
Proof.
  intros HOH HOW Ht.
  assert (H1 : (0 <= t / OW < NB * OH)%Z).
  { split; [apply Z.div_pos; lia|]. apply Z.div_lt_upper_bound; lia. }
  assert (H2 : (0 <= t / OW / OH < NB)%Z).
  { split; [apply Z.div_pos; lia|]. apply Z.div_lt_upper_bound; lia. }
  rewrite andb_true_iff, Z.leb_le, Z.ltb_lt; lia.
Qed.

Section GemminiConvStridedIm2col.
  Variables (NB H W C KO KH KW st pd NJ : Z).
  Hypotheses (HNB : 0 <= NB) (HC : 0 < C) (HKO : 0 <= KO) (HKH : 0 < KH) (HKW : 0 < KW)
             (Hst : 0 < st) (Hpd : 0 <= pd) (HH : KH <= H + 2 * pd) (HW : KW <= W + 2 * pd)
             (HNJ : 0 < NJ) (HNJacc : NJ <= 64)
             (Hfit : KH * KW * cdiv C 16 * NJ <= 1020).
  Variables (x w : Z -> Z -> Z -> Z -> gint) (bias : Z -> gint).
  Hypotheses (Hx : shaped [NB; H; W; C] x) (Hw : shaped [KH; KW; C; KO] w)
             (Hbias : shaped [KO] bias).
  Variables (sm se : Z) (act : bool).

  (** [qconv_im2col_tiles] with the output grid [OH = (H + 2 pd - KH) / st + 1]
      by [OW = (W + 2 pd - KW) / st + 1] and the strided move. *)
  Definition qconv_strided_im2col_tiles :=
    split ((H + 2 * pd - KH) / st + 1) (NB * ((H + 2 * pd - KH) / st + 1))
      (split ((W + 2 * pd - KW) / st + 1)
         (NB * ((H + 2 * pd - KH) / st + 1) * ((W + 2 * pd - KW) / st + 1))
        (transpose KO (NB * ((H + 2 * pd - KH) / st + 1) * ((W + 2 * pd - KW) / st + 1))
          (trunc_r KO (flatten (cdiv KO (NJ * 16)) (NJ * 16)
            (GEN [ jb < cdiv KO (NJ * 16) ]
              tlet b := in_mem GEMMINI_SPAD
                (GEN [ s < KH ] GEN [ r < KW ] GEN [ co < cdiv C 16 ] GEN [ jj < NJ ]
                   gemmini_mvin (w _[ s ] _[ r ]) (co * 16) ((jb * NJ + jj) * 16) C KO) in
              transpose (NB * ((H + 2 * pd - KH) / st + 1) * ((W + 2 * pd - KW) / st + 1))
                (NJ * 16)
                (trunc_r (NB * ((H + 2 * pd - KH) / st + 1) * ((W + 2 * pd - KW) / st + 1))
                  (flatten (cdiv (NB * ((H + 2 * pd - KH) / st + 1) *
                                  ((W + 2 * pd - KW) / st + 1)) 16) 16
                    (GEN [ io < cdiv (NB * ((H + 2 * pd - KH) / st + 1) *
                                      ((W + 2 * pd - KW) / st + 1)) 16 ]
                      tlet c := in_mem GEMMINI_ACC
                        ((GEN [ jj < NJ ]
                            gemmini_mvin_acc
                              (GEN [ p < NB * ((H + 2 * pd - KH) / st + 1) *
                                         ((W + 2 * pd - KW) / st + 1) ] bias)
                              (io * 16) ((jb * NJ + jj) * 16)
                              (NB * ((H + 2 * pd - KH) / st + 1) * ((W + 2 * pd - KW) / st + 1))
                              KO) <+>
                         SUM [ s < KH ] SUM [ r < KW ] SUM [ cg < cdiv C 64 ]
                           tlet a := in_mem GEMMINI_SPAD
                             (GEN [ cq < 4 ]
                                gemmini_mvin_im2col_strided x NB H W C
                                  ((H + 2 * pd - KH) / st + 1) ((W + 2 * pd - KW) / st + 1)
                                  st pd s r (io * 16) ((cg * 4 + cq) * 16)) in
                           GEN [ jj < NJ ] SUM [ cq < 4 ]
                             |[ cg * 4 + cq <? cdiv C 16 ]|
                               gemmini_matmul (a _[ cq ])
                                 (b _[ s ] _[ r ] _[ cg * 4 + cq ] _[ jj ])) in
                      transpose (NJ * 16) 16 (flatten NJ 16 (GEN [ jj < NJ ]
                        transpose 16 16
                          (gemmini_mvout sm se act (c _[ jj ]) (io * 16) ((jb * NJ + jj) * 16)
                             (NB * ((H + 2 * pd - KH) / st + 1) * ((W + 2 * pd - KW) / st + 1))
                             KO))))))))))).

  Lemma qconv_strided_im2col_tiles_ok :
    qconv_strided NB H W C KO KH KW st pd x w bias sm se act = qconv_strided_im2col_tiles.
  Proof.
    assert (HOH : (0 < (H + 2 * pd - KH) / st + 1)%Z)
      by (pose proof (Z.div_pos (H + 2 * pd - KH) st); lia).
    assert (HOW : (0 < (W + 2 * pd - KW) / st + 1)%Z)
      by (pose proof (Z.div_pos (W + 2 * pd - KW) st); lia).
    set (OH := ((H + 2 * pd - KH) / st + 1)%Z) in *.
    set (OW := ((W + 2 * pd - KW) / st + 1)%Z) in *.
    assert (HM1 : (0 <= NB * OH)%Z) by (apply Z.mul_nonneg_nonneg; lia).
    assert (HM : (0 <= NB * OH * OW)%Z) by (apply Z.mul_nonneg_nonneg; lia).
    unfold qconv_strided, qconv_strided_im2col_tiles; fold OH OW.
    rewrite (gen_split2 NB OH) by lia.
    rewrite (gen_split2 (NB * OH) OW) by lia.
    f_equal; f_equal.
    unfold atl_let, in_mem; cbv beta.
    im2col_tiles_to_element (NB * OH * OW)%Z C KO NJ.
    unfold gemmini_mvin_im2col_strided, gemmini_mvin; rewrite !get_gen by lia.
    rewrite Ep, Ek, Lm, Lk, (im2col_batch_in_bounds NB OH OW m) by lia.
    destruct ((cg * 4 + cq) * 16 + kk <? C)%Z; cbn [iverson andb tzero TensorElem_scalar];
      rewrite ?smul_0_l; reflexivity.
  Qed.

  (** The same, stated on the two definitions unfolded, for [rw]. *)
  Lemma qconv_strided_is_im2col_unrolled :
    ltac:(let l := eval cbv beta delta [qconv_strided]
                  in (qconv_strided NB H W C KO KH KW st pd x w bias sm se act) in
          let r := eval cbv beta delta [qconv_strided_im2col_tiles]
                  in qconv_strided_im2col_tiles in
          exact (l = r)).
  Proof. exact qconv_strided_im2col_tiles_ok. Qed.

  (** The strided, padded layer with the on-chip im2col, for the bridge and
      the gemmini target ([C], [KH], [KW] and [NJ] fixed at compile time, as
      for [qconv_im2col]; the stride and the padding stay kernel arguments). *)
  Derive qconv_strided_im2col SuchThat
    (qconv_strided NB H W C KO KH KW st pd x w bias sm se act = qconv_strided_im2col)
    As qconv_strided_im2col_correct.
  Proof.
    reschedule.
    rw qconv_strided_is_im2col_unrolled.
    gemmini_check_fit.
    check_safe.
    done.
  Qed.
End GemminiConvStridedIm2col.
