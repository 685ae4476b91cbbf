(** * Guard rewrites: merging, lifting and elimination (Sec. 4.2, 6.1). *)

From Coq Require Import ZArith Bool Lia.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum.
Open Scope Z_scope.

Section Guards.
  Context {X : Type} `{TensorLaws X}.

  (** [ [true] · e = e ] (Sec. 6.1), and its conditional form used by
      [simpl_guard]: a guard whose predicate is provable disappears. *)
  Lemma iverson_true (e : X) : iverson true e = e.
  Proof. reflexivity. Qed.

  Lemma iverson_false (e : X) : iverson false e = tzero.
  Proof. reflexivity. Qed.

  Lemma guard_elim p (e : X) : p = true -> iverson p e = e.
  Proof. intros ->; reflexivity. Qed.

  Lemma guard_zero p (e : X) : p = false -> iverson p e = tzero.
  Proof. intros ->; reflexivity. Qed.

  Lemma guard_and_l p q (e : X) : p = true -> iverson (p && q) e = iverson q e.
  Proof. intros ->; reflexivity. Qed.

  Lemma guard_and_r p q (e : X) : q = true -> iverson (p && q) e = iverson p e.
  Proof. intros ->; rewrite andb_true_r; reflexivity. Qed.

  (** Replace a predicate by an equivalent one (decided by [solve_idx]). *)
  Lemma guard_equiv p q (e : X) : p = q -> iverson p e = iverson q e.
  Proof. intros ->; reflexivity. Qed.

  (** Merging nested guards, and splitting them again. *)
  Lemma guard_merge p q (e : X) : iverson p (iverson q e) = iverson (p && q) e.
  Proof. destruct p, q; reflexivity. Qed.

  Lemma guard_split p q (e : X) : iverson (p && q) e = iverson p (iverson q e).
  Proof. destruct p, q; reflexivity. Qed.

  Lemma guard_comm p q (e : X) : iverson p (iverson q e) = iverson q (iverson p e).
  Proof. destruct p, q; reflexivity. Qed.

  (** Lifting a guard out of [⊕], generation and summation. *)
  Lemma guard_tadd p (a b : X) : tadd (iverson p a) (iverson p b) = iverson p (tadd a b).
  Proof. destruct p; cbn; [reflexivity | apply tadd_0_l]. Qed.

  Lemma tadd_guard p (a b : X) : iverson p (tadd a b) = tadd (iverson p a) (iverson p b).
  Proof. symmetry; apply guard_tadd. Qed.

  Lemma guard_gen lo hi p (f : Z -> X) :
    genr lo hi (fun i => iverson p (f i)) = iverson p (genr lo hi f).
  Proof. apply genr_iverson. Qed.

  Lemma guard_sum lo hi p (f : Z -> X) :
    sumr lo hi (fun i => iverson p (f i)) = iverson p (sumr lo hi f).
  Proof. apply sumr_iverson. Qed.

  Lemma tadd_0_l' (a : X) : tadd tzero a = a.
  Proof. apply tadd_0_l. Qed.

  Lemma tadd_0_r' (a : X) : tadd a tzero = a.
  Proof. apply tadd_0_r. Qed.

  Lemma guard_of_zero p : iverson p (@tzero X _) = tzero.
  Proof. destruct p; reflexivity. Qed.
End Guards.

Section ScalarGuards.
  Context {S : Type} `{ScalarLaws S}.

  (** Guards and products: [gp_iverson] in the paper's scripts. *)
  Lemma gp_iverson p (a b : S) : smul (iverson p a) b = iverson p (smul a b).
  Proof. destruct p; cbn; [reflexivity | apply smul_0_l]. Qed.

  Lemma pg_iverson p (a b : S) : smul a (iverson p b) = iverson p (smul a b).
  Proof. destruct p; cbn; [reflexivity | apply smul_0_r]. Qed.

  Lemma guard_sdiv p (a b : S) : sdiv (iverson p a) b = iverson p (sdiv a b).
  Proof. destruct p; cbn; [reflexivity | apply sdiv_0_l]. Qed.

  Lemma smul_zero_l (a : S) : smul (@tzero S _) a = tzero.
  Proof. apply smul_0_l. Qed.

  Lemma smul_zero_r (a : S) : smul a (@tzero S _) = tzero.
  Proof. apply smul_0_r. Qed.
End ScalarGuards.
