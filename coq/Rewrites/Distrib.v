(** * Distributivity and arithmetic laws for scalar products. *)

From Coq Require Import ZArith Bool.
From Verisched Require Import Tensor.Core Tensor.Sum.
Open Scope Z_scope.

Section Distrib.
  Context {S : Type} `{ScalarLaws S}.

  Lemma smul_tadd_l (a b c : S) : smul a (tadd b c) = tadd (smul a b) (smul a c).
  Proof. apply smul_add_distr_l. Qed.

  Lemma smul_tadd_r (a b c : S) : smul (tadd a b) c = tadd (smul a c) (smul b c).
  Proof. apply smul_add_distr_r. Qed.

  Lemma smul_comm' (a b : S) : smul a b = smul b a.
  Proof. apply smul_comm. Qed.

  Lemma smul_assoc' (a b c : S) : smul a (smul b c) = smul (smul a b) c.
  Proof. apply smul_assoc. Qed.

  Lemma tadd_comm' (a b : S) : tadd a b = tadd b a.
  Proof. apply tadd_comm. Qed.

  (** A factor independent of the summation index moves in and out. *)
  Lemma smul_sum_l lo hi (a : S) (f : Z -> S) :
    smul a (sumr lo hi f) = sumr lo hi (fun i => smul a (f i)).
  Proof.
    unfold sumr; generalize (Z.to_nat (hi - lo)); intros k; revert lo.
    induction k as [|k IH]; intros; cbn [sum_nat]; [apply smul_0_r|].
    cbn [tadd TensorElem_scalar]; rewrite smul_add_distr_l, IH; reflexivity.
  Qed.

  (** Indicator introduction around a product (ATL paper, Fig. 11, line 3:
      [x * [lo <= k < hi] v[k] = SUM r [r = k] (x * v[r])]).  The general
      form, around any body, needs higher-order unification; this one,
      for a factor times a guarded access, is first-order, and its sum is
      named [r] (the fresh offset loop of the gather). *)
  Lemma smul_sum_indicator_get lo hi k (a : S) (v : Z -> S) :
    smul a (iverson ((lo <=? k) && (k <? hi)) (get v k)) =
    sumr lo hi (fun r => iverson (r =? k) (smul a (get v r))).
  Proof.
    rewrite <- (sumr_indicator lo hi k (fun r => get v r)), smul_sum_l.
    apply sumr_ext_ctx; intros r _; destruct (r =? k); cbn [iverson];
      [reflexivity | apply smul_0_r].
  Qed.

  Lemma smul_sum_r lo hi (a : S) (f : Z -> S) :
    smul (sumr lo hi f) a = sumr lo hi (fun i => smul (f i) a).
  Proof.
    rewrite smul_comm, smul_sum_l; apply sumr_ext_ctx; intros; apply smul_comm.
  Qed.

  Lemma sum_smul_l lo hi (a : S) (f : Z -> S) :
    sumr lo hi (fun i => smul a (f i)) = smul a (sumr lo hi f).
  Proof. symmetry; apply smul_sum_l. Qed.

  Lemma sum_smul_r lo hi (a : S) (f : Z -> S) :
    sumr lo hi (fun i => smul (f i) a) = smul (sumr lo hi f) a.
  Proof. symmetry; apply smul_sum_r. Qed.

  Lemma sadd_tadd (a b : S) : sadd a b = tadd a b.
  Proof. reflexivity. Qed.
End Distrib.

Section Tensor.
  Context {X : Type} `{TensorLaws X}.

  Lemma tadd_comm_t (a b : X) : tadd a b = tadd b a.
  Proof. apply tadd_comm. Qed.

  Lemma tadd_assoc_t (a b c : X) : tadd a (tadd b c) = tadd (tadd a b) c.
  Proof. apply tadd_assoc. Qed.
End Tensor.
