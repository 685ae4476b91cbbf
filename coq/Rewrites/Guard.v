(** * Guard rewrites: merging, lifting and elimination (Sec. 4.2, 6.1). *)

From Coq Require Import ZArith Bool Lia.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape.
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

  (** Conjunction in a guard commutes. *)
  Lemma guard_andb_comm p q (e : X) : iverson (p && q) e = iverson (q && p) e.
  Proof. rewrite andb_comm; reflexivity. Qed.

  (** Solving an index equation for the other variable:
      [[r = i - p]] becomes [[i = p + r]] (Fig. 11, second-to-last lines). *)
  Lemma guard_eqb_sub a b c (e : X) : iverson (a =? b - c) e = iverson (b =? c + a) e.
  Proof.
    destruct (Z.eqb_spec a (b - c)), (Z.eqb_spec b (c + a)); try reflexivity; lia.
  Qed.

  (** Tiles and vector lanes (written for the SGEMM and convolution
      derivations, Examples/Sgemm.v and Conv.v): a guard implied by another
      one added outside it, and the guard rewrites of micro-tiles and
      masked stores. *)
  Lemma guard_weaken_lt a b n (e : X) :
    (b < n -> a < n) -> iverson (b <? n) e = iverson (a <? n) (iverson (b <? n) e).
  Proof.
    intros Hab; destruct (Z.ltb_spec b n), (Z.ltb_spec a n); cbn [iverson]; try reflexivity; lia.
  Qed.

  (** A micro-tile whose first row is past the end is skipped whole:
      the row guard [a + (b k + c) < n] implies the tile guard
      [a + b k < n]. *)
  Lemma guard_tile_skip a b k c n (e : X) :
    0 <= c ->
    iverson (a + (b * k + c) <? n) e = iverson (a + b * k <? n) (iverson (a + (b * k + c) <? n) e).
  Proof.
    intros Hc; destruct (Z.ltb_spec (a + (b * k + c)) n), (Z.ltb_spec (a + b * k) n);
      cbn [iverson]; try reflexivity; lia.
  Qed.

  (** A column guard on lane [l] of vector [b] as a lane count: the form
      of a masked store. *)
  Lemma guard_lanes a b k l n (e : X) :
    iverson (a + (b * k + l) <? n) e = iverson (l <? n - (a + b * k)) e.
  Proof.
    destruct (Z.ltb_spec (a + (b * k + l)) n), (Z.ltb_spec l (n - (a + b * k)));
      cbn [iverson]; try reflexivity; lia.
  Qed.
End Guards.

Section BoundGuard.
  Context {X : Type} `{TensorLaws X} `{!Shaped X}.

  (** An access guarded by its own bounds: the guard is free in ATL (out
      of range the access is zero anyway) but lets the lowering, and
      [check_safe] (Sec. 7.2), see that the read stays in the array.  Used
      when a program relies on zero reads past an input's end, as the
      paper's 1-D convolution does. *)
  Lemma get_bound_guard n s (v : Z -> X) i :
    shaped (n :: s) v -> get v i = iverson ((0 <=? i) && (i <? n)) (get v i).
  Proof.
    intros Hv; destruct ((0 <=? i) && (i <? n)) eqn:E; [reflexivity|]; cbn [iverson].
    unfold get; eapply shaped_out; [exact Hv|].
    intros Hi; destruct Hi as [Hi1 Hi2]; apply Z.leb_le in Hi1; apply Z.ltb_lt in Hi2.
    rewrite Hi1, Hi2 in E; discriminate.
  Qed.
End BoundGuard.

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

  (** Guards copied onto the operands of a reduction's product (so that
      packed operands are zero-padded and the product needs no guard). *)
  Lemma guard2_sum_prod q p lo hi (r : Z -> bool) (a b : Z -> S) :
    iverson q (iverson p (sumr lo hi (fun kk => iverson (r kk) (smul (a kk) (b kk))))) =
    iverson q (iverson p (sumr lo hi (fun kk =>
      smul (iverson (p && r kk) (a kk)) (iverson (q && r kk) (b kk))))).
  Proof.
    destruct q, p; cbn [iverson andb]; try reflexivity.
    apply sumr_ext_ctx; intros k _; destruct (r k); cbn [iverson]; [reflexivity|].
    symmetry; apply smul_zero_l.
  Qed.

  (** The same for a triple reduction without a depth guard, the outer
      guard going to the left operand (Conv.v: the pixel guard to the
      input, the channel guard to the weights). *)
  Lemma guard2_sum3_prod_l q p n1 n2 n3 (a b : Z -> Z -> Z -> S) :
    iverson q (iverson p (sumr 0 n1 (fun r => sumr 0 n2 (fun s => sumr 0 n3 (fun c =>
      smul (a r s c) (b r s c)))))) =
    iverson q (iverson p (sumr 0 n1 (fun r => sumr 0 n2 (fun s => sumr 0 n3 (fun c =>
      smul (iverson q (a r s c)) (iverson p (b r s c))))))).
  Proof. destruct q, p; cbn [iverson]; reflexivity. Qed.
End ScalarGuards.
