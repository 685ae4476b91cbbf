(** * Generation and summation rewrites (Sec. 4.1, 5.1, 8.2). *)

From Coq Require Import ZArith List Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape.
Import ListNotations.
Open Scope Z_scope.

Section GenRewrites.
  Context {X : Type} `{TensorLaws X}.

  (** Access into a generation (Sec. 4.1): [(GEN[i<n] e)[k] = e[k/i]]. *)
  Lemma get_gen n (f : Z -> X) k : 0 <= k < n -> get (genr 0 n f) k = f k.
  Proof. intros; rewrite get_genr by lia; f_equal; lia. Qed.

  Lemma get_genr_lo lo hi (f : Z -> X) k :
    0 <= k < hi - lo -> get (genr lo hi f) k = f (lo + k).
  Proof. apply get_genr. Qed.

  (** Unconditional form: the bounds check becomes a guard. *)
  Lemma get_gen_some n (f : Z -> X) k :
    get (genr 0 n f) k = iverson ((0 <=? k) && (k <? n)) (f k).
  Proof.
    rewrite get_genr_some; replace (n - 0) with n by lia; rewrite Z.add_0_l; reflexivity.
  Qed.

  (** gen/sum and sum/sum interchange. *)
  Lemma sum_gen_swap lo hi a b (f : Z -> Z -> X) :
    sumr lo hi (fun j => genr a b (fun i => f i j)) =
    genr a b (fun i => sumr lo hi (fun j => f i j)).
  Proof. apply sumr_genr. Qed.

  Lemma gen_sum_swap lo hi a b (f : Z -> Z -> X) :
    genr a b (fun i => sumr lo hi (fun j => f i j)) =
    sumr lo hi (fun j => genr a b (fun i => f i j)).
  Proof. symmetry; apply sumr_genr. Qed.

  Lemma sum_swap a b c d (f : Z -> Z -> X) :
    sumr a b (fun i => sumr c d (fun j => f i j)) =
    sumr c d (fun j => sumr a b (fun i => f i j)).
  Proof. apply sumr_swap. Qed.

  (** Indicator-sum elimination: the scatter-to-gather step (Fig. 11). *)
  Lemma sum_indicator lo hi k (f : Z -> X) :
    sumr lo hi (fun i => iverson (i =? k) (f i)) =
    iverson ((lo <=? k) && (k <? hi)) (f k).
  Proof. apply sumr_indicator. Qed.

  Lemma sum_indicator_r lo hi k (f : Z -> X) :
    sumr lo hi (fun i => iverson (k =? i) (f i)) =
    iverson ((lo <=? k) && (k <? hi)) (f k).
  Proof.
    rewrite <- sumr_indicator; apply sumr_ext_ctx; intros; rewrite Z.eqb_sym; reflexivity.
  Qed.

  (** The indicator sum collapsed where its guard fixes the index through
      an offset: [SUM i [a = i - c] f i = [lo <= c + a < hi] f (c + a)]
      (ATL paper, Fig. 11, lines 11-12 in one step: the scattered index
      [i] is the gather's [p + r]).  First-order in [a] and [c], so [rw]
      finds both. *)
  Lemma sum_indicator_sub lo hi a c (f : Z -> X) :
    sumr lo hi (fun i => iverson (a =? i - c) (f i)) =
    iverson ((lo <=? c + a) && (c + a <? hi)) (f (c + a)).
  Proof.
    rewrite <- (sumr_indicator lo hi (c + a) f); apply sumr_ext_ctx; intros i _.
    destruct (Z.eqb_spec a (i - c)), (Z.eqb_spec i (c + a)); try reflexivity; lia.
  Qed.

  Lemma sum_split lo mid hi (f : Z -> X) :
    lo <= mid <= hi -> sumr lo hi f = tadd (sumr lo mid f) (sumr mid hi f).
  Proof. apply sumr_split. Qed.

  Lemma sum_tile n k (f : Z -> X) :
    0 < k -> 0 <= n ->
    sumr 0 n f =
    sumr 0 (cdiv n k) (fun io => sumr 0 k (fun ii =>
      iverson (io * k + ii <? n) (f (io * k + ii)))).
  Proof. apply sumr_tile. Qed.

  Lemma sum_empty lo hi (f : Z -> X) : hi <= lo -> sumr lo hi f = tzero.
  Proof. apply sumr_empty. Qed.

  Lemma sum_zero lo hi : sumr lo hi (fun _ => @tzero X _) = tzero.
  Proof. apply sumr_zero. Qed.

  Lemma gen_zero lo hi : genr lo hi (fun _ => @tzero X _) = tzero.
  Proof. apply genr_zero. Qed.

  Lemma sum_tadd lo hi (f g : Z -> X) :
    sumr lo hi (fun i => tadd (f i) (g i)) = tadd (sumr lo hi f) (sumr lo hi g).
  Proof. apply sumr_tadd. Qed.

  Lemma tadd_sum lo hi (f g : Z -> X) :
    tadd (sumr lo hi f) (sumr lo hi g) = sumr lo hi (fun i => tadd (f i) (g i)).
  Proof. symmetry; apply sumr_tadd. Qed.

  Lemma tadd_gen lo hi (f g : Z -> X) :
    tadd (genr lo hi f) (genr lo hi g) = genr lo hi (fun i => tadd (f i) (g i)).
  Proof. apply tadd_genr. Qed.

  Lemma gen_shift lo hi (f : Z -> X) :
    genr lo hi f = genr 0 (hi - lo) (fun i => f (lo + i)).
  Proof. apply genr_shift. Qed.

  Lemma sum_shift lo hi (f : Z -> X) :
    sumr lo hi f = sumr 0 (hi - lo) (fun i => f (i + lo)).
  Proof.
    rewrite (sumr_shift lo hi (- lo)); replace (lo + - lo) with 0 by lia;
      replace (hi + - lo) with (hi - lo) by lia.
    apply sumr_ext_ctx; intros; f_equal; lia.
  Qed.

  (** Accesses distribute over the other constructs. *)
  Lemma get_tadd (a b : Z -> X) k : get (tadd a b) k = tadd (get a k) (get b k).
  Proof. reflexivity. Qed.

  Lemma get_iverson p (e : Z -> X) k : get (iverson p e) k = iverson p (get e k).
  Proof. destruct p; reflexivity. Qed.

  Lemma get_sum lo hi (f : Z -> Z -> X) k :
    get (sumr lo hi f) k = sumr lo hi (fun i => get (f i) k).
  Proof. apply sumr_apply. Qed.


  (** Indicator introduction at an access (Fig. 11, third line read right to
      left): a guarded access at a computed index [k] equals a sum over the
      guard's range of accesses at a fresh index [r] guarded by [r = k].
      Stated for an access, so [rw] finds [v] and [k] by first-order
      unification; the general form [sum_indicator] would need [f] to be
      found by higher-order unification. *)
  Lemma sum_indicator_get lo hi k (v : Z -> X) :
    iverson ((lo <=? k) && (k <? hi)) (get v k) =
    sumr lo hi (fun r => iverson (r =? k) (get v r)).
  Proof. symmetry; apply (sumr_indicator lo hi k (fun r => get v r)). Qed.

  (** [sum_tile] under the binder names of the derived program (a rewrite
      takes the names of the binders it creates from its lemma; written
      for Examples/Sgemm.v and Conv.v). *)
  Lemma sum_tile_k n k (f : Z -> X) :
    0 < k -> 0 <= n ->
    sumr 0 n f =
    sumr 0 (cdiv n k) (fun ko => sumr 0 k (fun kk =>
      iverson (ko * k + kk <? n) (f (ko * k + kk)))).
  Proof. apply sum_tile. Qed.

  (** [gen_sum_swap] with the binder names of the derived program, which
      a rewrite takes from the lemma. *)
  Lemma gen_sum_swap_ko lo hi a b (f : Z -> Z -> X) :
    genr a b (fun i => sumr lo hi (fun ko => f i ko)) =
    sumr lo hi (fun ko => genr a b (fun i => f i ko)).
  Proof. apply gen_sum_swap. Qed.

  (** Flattening nested reductions into one, row-major (the reduction dual
      of [flatten], Fig. 5; [sumr_blocks] read right to left): used to turn
      a convolution's [(c, s, r)] reduction into the single inner dimension
      of a matrix multiply. *)
  Lemma sum_flatten n m (f : Z -> Z -> X) :
    0 < m ->
    sumr 0 n (fun a => sumr 0 m (fun b => f a b)) =
    sumr 0 (n * m) (fun j => f (j / m) (j mod m)).
  Proof.
    intros Hm; destruct (Z.le_gt_cases n 0) as [Hn|Hn].
    - rewrite !sumr_empty by nia; reflexivity.
    - rewrite (sumr_blocks n m (fun j => f (j / m) (j mod m))) by lia.
      apply sumr_ext_ctx; intros a Ha; apply sumr_ext_ctx; intros b Hb.
      cbv beta.
      rewrite Z.div_add_l, Z.div_small, Z.add_0_r by lia.
      rewrite Z.add_comm, Z.mod_add, Z.mod_small by lia; reflexivity.
  Qed.

  Lemma sum_flatten3 n m l (f : Z -> Z -> Z -> X) :
    0 < m -> 0 < l ->
    sumr 0 n (fun a => sumr 0 m (fun b => sumr 0 l (fun c => f a b c))) =
    sumr 0 (n * (m * l)) (fun j => f (j / (m * l)) ((j / l) mod m) (j mod l)).
  Proof.
    intros Hm Hl.
    rewrite (sumr_ext_ctx 0 n _ (fun a => sumr 0 (m * l) (fun t => f a (t / l) (t mod l))))
      by (intros; apply sum_flatten; lia).
    rewrite (sum_flatten n (m * l) (fun a t => f a (t / l) (t mod l))) by nia.
    apply sumr_ext_ctx; intros j _.
    assert (E : j mod (m * l) = j mod l + l * ((j / l) mod m))
      by (rewrite (Z.mul_comm m l); apply Z.rem_mul_r; lia).
    assert (Bl : 0 <= j mod l < l) by (apply Z.mod_pos_bound; lia).
    rewrite E; f_equal.
    - rewrite Z.add_comm, (Z.mul_comm l), Z.div_add_l, (Z.div_small (j mod l)) by lia.
      apply Z.add_0_r.
    - rewrite (Z.mul_comm l), Z.mod_add, Z.mod_mod by lia; reflexivity.
  Qed.
End GenRewrites.

Section Normalize.
  Context {X : Type} `{TensorLaws X} `{!Shaped X}.

  (** ** Normalization lemmas (Sec. 5.1) *)

  (** Eta-expansion of a tensor. *)
  Lemma eta n s (v : Z -> X) : shaped (n :: s) v -> v = genr 0 n (fun i => get v i).
  Proof.
    intros Hv; apply functional_extensionality; intros k; unfold genr, get.
    destruct (_ && _) eqn:E; bool_hyp_cases; bool_hyps.
    - f_equal; lia.
    - eapply shaped_out; eauto; lia.
    - eapply shaped_out; eauto; lia.
  Qed.

  (** Tensor addition expanded to a generation. *)
  Lemma tadd_expand n s (v w : Z -> X) :
    shaped (n :: s) v -> shaped (n :: s) w ->
    tadd v w = genr 0 n (fun i => tadd (get v i) (get w i)).
  Proof.
    intros Hv Hw; rewrite (eta n s v), (eta n s w) at 1 by auto.
    apply tadd_genr.
  Qed.
End Normalize.
