(** * Dual introduction, loop splitting and tiling (paper Sec. 6.1, 6.3, Fig. 7).

    The dual-introduction identities of Fig. 7 say that a pair of reshape
    operators composes to the identity.  Rewriting one right to left
    wraps a subterm in the pair; its extents are not determined by the
    subterm, so they are given, as in [rw <- (flatten_trunc_tile_id 8 n)]
    (first site: the whole program) or [rw <- (...) at pat].  Unfolding
    the inner operator ([inline], or [split_gen] for [split]) and
    simplifying then changes the loop structure, while the outer one
    stays as a lowering directive (Sec. 6.3).

    Fig. 7 as printed pairs [trunc_r] with [pad_l] and [trunc_l] with
    [pad_r]; with the definitions of Fig. 5 the identities hold for the
    same side, so here: [trunc_r n (pad_r k n v) = v] and
    [trunc_l n (n + k) (pad_l k n v) = v].  Each identity needs [v] to
    vanish outside its extents, stated with [shaped] (Tensor/Shape.v),
    which [solve_shape] proves for generated terms.

    Then the two rewrites that use them:
    - [gen_concat], [genr_concat]: loop splitting into a concatenation
      (Sec. 6.1, the theorem after Fig. 6);
    - [gen_tile]: tiling a generation by [k], the result of Sec. 6.3's
      [flatten_trunc_tile_id] followed by unfolding [split]; no shape side
      condition, since a generation vanishes outside its range. *)

From Coq Require Import ZArith Bool List Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape Rewrites.Gen.
From Verisched Require Import Reshape.Defs Reshape.Access Reshape.Commute.
Import ListNotations.
Open Scope Z_scope.

Section Duals.
  Context {X : Type} `{TensorLaws X} `{!Shaped X}.

  (** Support facts read off a shape. *)
  Lemma shaped_out2 n m s (v : Z -> Z -> X) i j :
    shaped (n :: m :: s) v -> ~ (0 <= j < m) -> v i j = tzero.
  Proof.
    intros Hv Hj; destruct (Z.le_gt_cases 0 i), (Z.lt_ge_cases i n).
    - destruct Hv as (_ & Hin & _); eapply (shaped_out m s); [apply Hin; lia | exact Hj].
    - rewrite (shaped_out n (m :: s) v i Hv) by lia; reflexivity.
    - rewrite (shaped_out n (m :: s) v i Hv) by lia; reflexivity.
    - rewrite (shaped_out n (m :: s) v i Hv) by lia; reflexivity.
  Qed.

  (** Close [tzero = v i] or [tzero = v i j] where the index is outside
      the shape [Hv] of [v]. *)
  Local Ltac vanish Hv :=
    lazymatch goal with
    | |- _ = ?w ?a ?b =>
        first [ rewrite (shaped_out2 _ _ _ w a b Hv) by lia
              | rewrite (shaped_out _ _ w a Hv) by lia ]; reflexivity
    | |- _ = ?w ?a => rewrite (shaped_out _ _ w a Hv) by lia; reflexivity
    end.

  (** ** Fig. 7: pairs composing to the identity *)

  Lemma trunc_r_pad_r k n s (v : Z -> X) :
    0 <= k -> shaped (n :: s) v -> trunc_r n (pad_r k n v) = v.
  Proof.
    intros Hk Hv; unfold trunc_r, pad_r; reshape_pointwise; try (f_equal; lia); try lia;
      vanish Hv.
  Qed.

  Lemma trunc_l_pad_l k n s (v : Z -> X) :
    0 <= k -> shaped (n :: s) v -> trunc_l n (n + k) (pad_l k n v) = v.
  Proof.
    intros Hk Hv; unfold trunc_l, pad_l; reshape_pointwise; try (f_equal; lia); try lia;
      vanish Hv.
  Qed.

  Lemma transpose_transpose n m s (v : Z -> Z -> X) :
    shaped (n :: m :: s) v -> transpose m n (transpose n m v) = v.
  Proof.
    intros Hv; unfold transpose; reshape_pointwise; try (f_equal; lia); try lia;
      vanish Hv.
  Qed.

  Lemma split_flatten n m s (v : Z -> Z -> X) :
    0 < m -> shaped (n :: m :: s) v -> split m (n * m) (flatten n m v) = v.
  Proof.
    intros Hm Hv; unfold split; rewrite cdiv_mul by lia.
    apply functional_extensionality; intros i; apply functional_extensionality; intros j.
    unfold genr, iverson; cbv beta; cbn [tzero TensorElem_fun]; reshape_cases;
      try vanish Hv; try lia; try (exfalso; nia).
    rewrite !Z.add_0_l, get_flatten, tile_div, tile_mod by nia; reflexivity.
  Qed.

  (** The tiling identity, needing only that [v] vanishes outside [0, n). *)
  Lemma trunc_r_flatten_split k n (v : Z -> X) :
    0 < k -> (forall i, ~ (0 <= i < n) -> v i = tzero) ->
    trunc_r n (flatten (cdiv n k) k (split k n v)) = v.
  Proof.
    intros Hk Hv; apply functional_extensionality; intros i; unfold trunc_r, genr.
    destruct ((0 <=? i) && (i <? n - 0)) eqn:Ei; bool_hyp_cases; bool_hyps.
    - rewrite Z.add_0_l, get_flatten by (unfold cdiv; Z.div_mod_to_equations; nia).
      rewrite get_get_split by (unfold cdiv; Z.div_mod_to_equations; nia).
      replace (i / k * k + i mod k) with i by (Z.div_mod_to_equations; nia).
      destruct (Z.ltb_spec i n); [reflexivity | lia].
    - symmetry; apply Hv; lia.
    - symmetry; apply Hv; lia.
  Qed.

  (** Sec. 6.3: [v = trunc_r n (flatten (split k v))], used right to left
      to introduce tiling ([rw <- (flatten_trunc_tile_id 8 n) at pat]). *)
  Lemma flatten_trunc_tile_id k n s (v : Z -> X) :
    0 < k -> shaped (n :: s) v -> trunc_r n (flatten (cdiv n k) k (split k n v)) = v.
  Proof.
    intros Hk Hv; apply trunc_r_flatten_split; auto; intros; eapply shaped_out; eauto.
  Qed.
End Duals.

Section Split.
  Context {X : Type} `{TensorLaws X}.

  (** ** Loop splitting into a concatenation (Sec. 6.1) *)

  Lemma genr_concat lo mid hi (f : Z -> X) :
    lo <= mid <= hi ->
    genr lo hi f = concat (mid - lo) (hi - mid) (genr lo mid f) (genr mid hi f).
  Proof.
    intros Hm; unfold concat; replace (mid - lo + (hi - mid)) with (hi - lo) by lia.
    rewrite (genr_shift lo hi f); apply genr_ext_ctx; intros i Hi.
    destruct (Z.ltb_spec i (mid - lo)), (Z.leb_spec (mid - lo) i); cbn [iverson];
      rewrite ?get_genr by lia; rewrite ?tadd_0_l, ?tadd_0_r; try lia; f_equal; lia.
  Qed.

  Lemma gen_concat k n (f : Z -> X) :
    0 <= k <= n -> genr 0 n f = concat k (n - k) (genr 0 k f) (genr k n f).
  Proof.
    intros; rewrite (genr_concat 0 k n) by lia; rewrite Z.sub_0_r; reflexivity.
  Qed.

  (** ** Tiling (Sec. 6.3): [GEN [i < n] f i] as [ceil(n/k)] tiles of [k],
      the last one guarded, flattened and truncated back to [n]. *)
  Lemma gen_tile k n (f : Z -> X) :
    0 < k ->
    genr 0 n f =
    trunc_r n (flatten (cdiv n k) k
      (genr 0 (cdiv n k) (fun io => genr 0 k (fun ii =>
         iverson (io * k + ii <? n) (f (io * k + ii)))))).
  Proof.
    intros Hk; rewrite <- split_gen; symmetry; apply trunc_r_flatten_split; auto.
    intros i Hi; unfold genr; destruct (_ && _) eqn:E; [|reflexivity].
    bool_hyps; lia.
  Qed.

  (** [gen_tile] under the binder names of the derived program (a rewrite
      takes the names of the binders it creates from its lemma), and exact
      tiling when the extent is a multiple of the tile (written for
      Examples/Sgemm.v and Conv.v). *)
  Lemma gen_tile_cols k n (f : Z -> X) :
    0 < k ->
    genr 0 n f =
    trunc_r n (flatten (cdiv n k) k (genr 0 (cdiv n k) (fun jm => genr 0 k (fun jr =>
      iverson (jm * k + jr <? n) (f (jm * k + jr)))))).
  Proof. apply gen_tile. Qed.

  Lemma gen_tile_rows k n (f : Z -> X) :
    0 < k ->
    genr 0 n f =
    trunc_r n (flatten (cdiv n k) k (genr 0 (cdiv n k) (fun xo => genr 0 k (fun ir =>
      iverson (xo * k + ir <? n) (f (xo * k + ir)))))).
  Proof. apply gen_tile. Qed.

  Lemma gen_tile_exact q k (f : Z -> X) :
    0 < k -> 0 <= q ->
    genr 0 (q * k) f = flatten q k (genr 0 q (fun im => genr 0 k (fun ir => f (im * k + ir)))).
  Proof.
    intros Hk Hq; rewrite flatten_gen by lia; apply genr_ext_ctx; intros x Hx.
    cbv beta; f_equal; rewrite Z.mul_comm; apply Z.div_mod; lia.
  Qed.

  Lemma gen_split_lanes n q k (f : Z -> X) :
    n = q * k -> 0 < k -> 0 <= q ->
    genr 0 n f = flatten q k (genr 0 q (fun jv => genr 0 k (fun l => f (jv * k + l)))).
  Proof. intros -> Hk Hq; apply gen_tile_exact; lia. Qed.
End Split.
