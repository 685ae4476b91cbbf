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
    code.  The last section gives the same layer as one
    [gemmini_loop_conv_ws] (Targets/GemminiLoopConv.v, issue 16), where the
    hardware moves the pixels itself and broadcasts the bias row (an
    [mvin] with DRAM stride 0): no [col], [wm] or [dm] buffer at all. *)

From Coq Require Import ZArith List Lia.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATL Rewrites.Safety Reshape.Defs Reshape.Commute
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
    (* Loop names (outer before inner, so no name is shadowed when matched). *)
    rename_loop i into m.
    rename_loop j into k.
    rename_loop i into j.
    rename_loop i into j.
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
    apply genr_ext_ctx; intros n Hn; apply genr_ext_ctx; intros q Hq.
    match goal with
    | |- _ = trunc_r ?M (flatten _ 16 (genr 0 _ (fun io => transpose ?N 16 (trunc_r _
               (flatten _ 16 (genr 0 _ (fun jo => transpose 16 16 (@?F io jo)))))))) =>
        rewrite (gemmini_tiles_gen M N F) by lia
    end.
    apply genr_ext_ctx; intros p Hp; apply genr_ext_ctx; intros k Hk; cbv beta.
    assert (Ep : (p / 16 * 16 + p mod 16 = p)%Z) by (Z.div_mod_to_equations; lia).
    assert (Ek : (k / 16 * 16 + k mod 16 = k)%Z) by (Z.div_mod_to_equations; lia).
    assert (Hpm : (0 <= p mod 16 < 16)%Z) by (apply Z.mod_pos_bound; lia).
    assert (Hkm : (0 <= k mod 16 < 16)%Z) by (apply Z.mod_pos_bound; lia).
    unfold atl_let, in_mem, gemmini_mvout.
    rewrite get_gen, get_gen by lia.
    rewrite Ep, Ek.
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
