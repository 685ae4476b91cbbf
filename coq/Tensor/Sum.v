(** * Laws of [sumr] and [genr]: the algebra behind the sum rewrites.

    These need only [TensorLaws] (a commutative monoid on elements); the
    scalar-multiplication laws live in Rewrites/Distrib.v. *)

From Coq Require Import ZArith Bool Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Core Tensor.Arith.
Open Scope Z_scope.

Section SumLaws.
  Context {X : Type} `{TensorLaws X}.

  Lemma tadd_0_r (a : X) : tadd a tzero = a.
  Proof. rewrite tadd_comm; apply tadd_0_l. Qed.

  Lemma tadd_swap_inner (a b c d : X) :
    tadd (tadd a b) (tadd c d) = tadd (tadd a c) (tadd b d).
  Proof.
    rewrite <- !tadd_assoc; f_equal; rewrite !tadd_assoc; f_equal; apply tadd_comm.
  Qed.

  Lemma sum_nat_ext k lo (f g : Z -> X) :
    (forall i, lo <= i < lo + Z.of_nat k -> f i = g i) ->
    sum_nat k lo f = sum_nat k lo g.
  Proof.
    revert lo; induction k; intros lo Hfg; cbn [sum_nat]; auto.
    rewrite Hfg by lia; f_equal; apply IHk; intros; apply Hfg; lia.
  Qed.

  Lemma sumr_ext_ctx lo hi (f g : Z -> X) :
    (forall i, lo <= i < hi -> f i = g i) -> sumr lo hi f = sumr lo hi g.
  Proof.
    intros; unfold sumr; apply sum_nat_ext; intros; apply H1; lia.
  Qed.

  Lemma sumr_empty lo hi (f : Z -> X) : hi <= lo -> sumr lo hi f = tzero.
  Proof. intros; unfold sumr; replace (Z.to_nat (hi - lo)) with O by lia; reflexivity. Qed.

  Lemma sumr_step_l lo hi (f : Z -> X) :
    lo < hi -> sumr lo hi f = tadd (f lo) (sumr (lo + 1) hi f).
  Proof.
    intros; unfold sumr.
    replace (Z.to_nat (hi - lo)) with (S (Z.to_nat (hi - (lo + 1)))) by lia.
    reflexivity.
  Qed.

  Lemma sum_nat_add k lo (f g : Z -> X) :
    sum_nat k lo (fun i => tadd (f i) (g i)) = tadd (sum_nat k lo f) (sum_nat k lo g).
  Proof.
    revert lo; induction k; intros; cbn [sum_nat].
    - symmetry; apply tadd_0_l.
    - rewrite IHk; apply tadd_swap_inner.
  Qed.

  Lemma sumr_tadd lo hi (f g : Z -> X) :
    sumr lo hi (fun i => tadd (f i) (g i)) = tadd (sumr lo hi f) (sumr lo hi g).
  Proof. apply sum_nat_add. Qed.

  Lemma sumr_zero lo hi : sumr lo hi (fun _ => @tzero X _) = tzero.
  Proof.
    unfold sumr; generalize (Z.to_nat (hi - lo)); intros k; revert lo.
    induction k as [|k IH]; intros; cbn [sum_nat]; [reflexivity | rewrite IH; apply tadd_0_l].
  Qed.

  Lemma sum_nat_app m n lo (f : Z -> X) :
    sum_nat (m + n) lo f = tadd (sum_nat m lo f) (sum_nat n (lo + Z.of_nat m) f).
  Proof.
    revert lo; induction m as [|m IH]; intros; cbn [sum_nat Nat.add].
    - rewrite Z.add_0_r, tadd_0_l; reflexivity.
    - rewrite IH, tadd_assoc; f_equal; f_equal; lia.
  Qed.

  Lemma sumr_split lo mid hi (f : Z -> X) :
    lo <= mid <= hi -> sumr lo hi f = tadd (sumr lo mid f) (sumr mid hi f).
  Proof.
    intros Hm; unfold sumr.
    replace (Z.to_nat (hi - lo)) with (Z.to_nat (mid - lo) + Z.to_nat (hi - mid))%nat by lia.
    rewrite sum_nat_app; do 2 f_equal; lia.
  Qed.

  Lemma sumr_step_r lo hi (f : Z -> X) :
    lo < hi -> sumr lo hi f = tadd (sumr lo (hi - 1) f) (f (hi - 1)).
  Proof.
    intros; rewrite (sumr_split lo (hi - 1) hi) by lia; f_equal.
    rewrite sumr_step_l, sumr_empty by lia; apply tadd_0_r.
  Qed.

  Lemma sumr_shift lo hi c (f : Z -> X) :
    sumr lo hi f = sumr (lo + c) (hi + c) (fun i => f (i - c)).
  Proof.
    unfold sumr; replace (hi + c - (lo + c)) with (hi - lo) by lia.
    generalize (Z.to_nat (hi - lo)); intros k; revert lo.
    induction k as [|k IH]; intros; cbn [sum_nat]; [reflexivity|].
    rewrite IH; f_equal; [f_equal; lia | f_equal; lia].
  Qed.

  Lemma sum_nat_sumr k lo c d (f : Z -> Z -> X) :
    sum_nat k lo (fun i => sumr c d (fun j => f i j)) =
    sumr c d (fun j => sum_nat k lo (fun i => f i j)).
  Proof.
    revert lo; induction k as [|k IH]; intros; cbn [sum_nat].
    - symmetry; apply sumr_zero.
    - rewrite IH, <- sumr_tadd; reflexivity.
  Qed.

  Lemma sumr_swap a b c d (f : Z -> Z -> X) :
    sumr a b (fun i => sumr c d (fun j => f i j)) =
    sumr c d (fun j => sumr a b (fun i => f i j)).
  Proof. unfold sumr at 1; apply sum_nat_sumr. Qed.

  (** Iverson guards inside sums. *)
  Lemma sumr_iverson lo hi p (f : Z -> X) :
    sumr lo hi (fun i => iverson p (f i)) = iverson p (sumr lo hi f).
  Proof. destruct p; cbn [iverson]; [reflexivity | apply sumr_zero]. Qed.

  (** The indicator-sum elimination behind scatter-to-gather (Fig. 11). *)
  Lemma sumr_indicator lo hi k (f : Z -> X) :
    sumr lo hi (fun i => iverson (i =? k) (f i)) =
    iverson ((lo <=? k) && (k <? hi)) (f k).
  Proof.
    destruct ((lo <=? k) && (k <? hi)) eqn:Hk; cbn [iverson]; bool_hyps; bool_hyp_cases; bool_hyps.
    - rewrite (sumr_split lo k hi), (sumr_step_l k hi) by lia.
      rewrite Z.eqb_refl; cbn [iverson].
      rewrite (sumr_ext_ctx lo k _ (fun _ => tzero)), (sumr_ext_ctx (k+1) hi _ (fun _ => tzero)).
      + rewrite !sumr_zero, tadd_0_l, tadd_0_r; reflexivity.
      + intros; destruct (Z.eqb_spec i k); [lia | reflexivity].
      + intros; destruct (Z.eqb_spec i k); [lia | reflexivity].
    - rewrite (sumr_ext_ctx lo hi _ (fun _ => tzero)); [apply sumr_zero|].
      intros; destruct (Z.eqb_spec i k); [lia | reflexivity].
    - rewrite (sumr_ext_ctx lo hi _ (fun _ => tzero)); [apply sumr_zero|].
      intros; destruct (Z.eqb_spec i k); [lia | reflexivity].
  Qed.

  (** Blocking a reduction: [q*k] terms as [q] blocks of [k]. *)
  Lemma sumr_blocks q k (f : Z -> X) :
    0 <= q -> 0 <= k ->
    sumr 0 (q * k) f = sumr 0 q (fun io => sumr 0 k (fun ii => f (io * k + ii))).
  Proof.
    intros Hq Hk; pattern q; apply natlike_ind; cbv beta; [|intros x Hx IH|auto].
    - rewrite !sumr_empty by lia; reflexivity.
    -
      rewrite (sumr_split 0 (x * k) (Z.succ x * k)) by nia.
      rewrite (sumr_split 0 x (Z.succ x)) by lia.
      rewrite IH; f_equal.
      rewrite (sumr_step_l x), (sumr_empty (x + 1)), tadd_0_r by lia.
      rewrite (sumr_shift (x * k) (Z.succ x * k) (- (x * k))).
      replace (x * k + - (x * k)) with 0 by lia.
      replace (Z.succ x * k + - (x * k)) with k by lia.
      apply sumr_ext_ctx; intros; f_equal; lia.
  Qed.

  (** Extending a sum with terms that are zero. *)
  Lemma sumr_extend_guard n m (f : Z -> X) :
    0 <= n <= m ->
    sumr 0 n f = sumr 0 m (fun i => iverson (i <? n) (f i)).
  Proof.
    intros; rewrite (sumr_split 0 n m) by lia.
    rewrite (sumr_ext_ctx n m _ (fun _ => tzero)), sumr_zero, tadd_0_r.
    - apply sumr_ext_ctx; intros; destruct (Z.ltb_spec i n); [reflexivity | lia].
    - intros; destruct (Z.ltb_spec i n); [lia | reflexivity].
  Qed.

  (** Tiling a reduction by [k] (Sec. 6.3 applied to a sum). *)
  Lemma sumr_tile n k (f : Z -> X) :
    0 < k -> 0 <= n ->
    sumr 0 n f =
    sumr 0 (cdiv n k) (fun io => sumr 0 k (fun ii =>
      iverson (io * k + ii <? n) (f (io * k + ii)))).
  Proof.
    intros Hk Hn.
    rewrite (sumr_extend_guard n (cdiv n k * k)).
    - apply sumr_blocks; [apply cdiv_nonneg|]; lia.
    - split; [lia | apply cdiv_mul_ge; lia].
  Qed.

  (** ** Generation *)

  Lemma genr_ext_ctx lo hi (f g : Z -> X) :
    (forall i, lo <= i < hi -> f i = g i) -> genr lo hi f = genr lo hi g.
  Proof.
    intros Hfg; apply functional_extensionality; intros k; unfold genr.
    destruct ((0 <=? k) && (k <? hi - lo)) eqn:E; auto; bool_hyps; apply Hfg; lia.
  Qed.

  Lemma get_genr lo hi (f : Z -> X) k :
    0 <= k < hi - lo -> get (genr lo hi f) k = f (lo + k).
  Proof.
    intros; unfold get, genr.
    destruct ((0 <=? k) && (k <? hi - lo)) eqn:E; auto; bool_hyp_cases; bool_hyps; lia.
  Qed.

  Lemma get_genr_some lo hi (f : Z -> X) k :
    get (genr lo hi f) k = iverson ((0 <=? k) && (k <? hi - lo)) (f (lo + k)).
  Proof. reflexivity. Qed.

  Lemma genr_zero lo hi : genr lo hi (fun _ => @tzero X _) = tzero.
  Proof.
    apply functional_extensionality; intros; unfold genr; cbn [tzero TensorElem_fun].
    destruct (_ && _); reflexivity.
  Qed.

  Lemma tadd_genr lo hi (f g : Z -> X) :
    tadd (genr lo hi f) (genr lo hi g) = genr lo hi (fun i => tadd (f i) (g i)).
  Proof.
    apply functional_extensionality; intros k; cbn [tadd TensorElem_fun]; unfold genr.
    destruct (_ && _); [reflexivity | apply tadd_0_l].
  Qed.

  Lemma genr_iverson lo hi p (f : Z -> X) :
    genr lo hi (fun i => iverson p (f i)) = iverson p (genr lo hi f).
  Proof. destruct p; cbn [iverson]; [reflexivity | apply genr_zero]. Qed.

  Lemma sumr_apply lo hi (f : Z -> Z -> X) k :
    sumr lo hi f k = sumr lo hi (fun i => f i k).
  Proof.
    unfold sumr; generalize (Z.to_nat (hi - lo)); intros n; revert lo.
    induction n as [|n IH]; intros; cbn [sum_nat]; [reflexivity|].
    cbn [tadd TensorElem_fun]; rewrite IH; reflexivity.
  Qed.

  (** Sum/generation interchange: unconditional in this model. *)
  Lemma sumr_genr lo hi a b (f : Z -> Z -> X) :
    sumr lo hi (fun j => genr a b (fun i => f i j)) =
    genr a b (fun i => sumr lo hi (fun j => f i j)).
  Proof.
    apply functional_extensionality; intros k; rewrite sumr_apply; unfold genr.
    destruct (_ && _); [reflexivity | apply sumr_zero].
  Qed.

  Lemma genr_shift lo hi (f : Z -> X) :
    genr lo hi f = genr 0 (hi - lo) (fun i => f (lo + i)).
  Proof.
    apply functional_extensionality; intros k; unfold genr.
    replace (hi - lo - 0) with (hi - lo) by lia; rewrite Z.add_0_l; reflexivity.
  Qed.
End SumLaws.
