(** * Extra rewrites used by the Sec. 8 derivations (scatter-to-gather,
    im2col, packed matrix multiply): small general lemmas the core library
    lacks.  Each one is a plain equation whose sides unify first-order (or
    by Miller patterns) with the programs, so a rewrite step can select
    its site without lemma arguments (which cannot mention the program's
    loop variables). *)

From Coq Require Import ZArith Bool Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape Rewrites.Gen Rewrites.Let.
From Verisched Require Import Rewrites.Tactics.
Open Scope Z_scope.

Section Guards.
  Context {X : Type} `{TensorLaws X}.

  (** Conjunction in a guard commutes. *)
  Lemma guard_andb_comm p q (e : X) : iverson (p && q) e = iverson (q && p) e.
  Proof. rewrite andb_comm; reflexivity. Qed.

  (** Solving an index equation for the other variable:
      [[r = i - p]] becomes [[i = p + r]] (Fig. 11, second-to-last lines). *)
  Lemma guard_eqb_sub a b c (e : X) : iverson (a =? b - c) e = iverson (b =? c + a) e.
  Proof.
    destruct (Z.eqb_spec a (b - c)), (Z.eqb_spec b (c + a)); try reflexivity; lia.
  Qed.
End Guards.

Section Indicator.
  Context {X : Type} `{TensorLaws X}.

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
End Indicator.

Section LetLift0.
  Context {X Y : Type} `{TensorLaws X} `{TensorLaws Y}.

  (** [let_gen_lift] and [let_sum_lift] (Rewrites/Let.v) for loops from 0:
      the use becomes [a[i]] rather than [a[i - 0]] (Fig. 12's [a[r]],
      [a[c; r]], ...), which keeps the printed buffer accesses as in the
      paper and spares the lowering an index simplification. *)
  Lemma let_gen_lift0 n (e1 : Z -> Y) (f : Z -> Y -> X) :
    genr 0 n (fun i => atl_let (e1 i) (fun x => f i x)) =
    atl_let (genr 0 n e1) (fun a => genr 0 n (fun i => f i (get a i))).
  Proof.
    rewrite let_gen_lift; unfold atl_let; apply genr_ext_ctx; intros.
    rewrite Z.sub_0_r; reflexivity.
  Qed.

  Lemma let_sum_lift0 n (e1 : Z -> Y) (f : Z -> Y -> X) :
    sumr 0 n (fun i => atl_let (e1 i) (fun x => f i x)) =
    atl_let (genr 0 n e1) (fun a => sumr 0 n (fun i => f i (get a i))).
  Proof.
    rewrite let_sum_lift; unfold atl_let; apply sumr_ext_ctx; intros.
    rewrite Z.sub_0_r; reflexivity.
  Qed.
End LetLift0.

Section SumFlatten.
  Context {X : Type} `{TensorLaws X}.

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
End SumFlatten.

Section LetGuard.
  Context {X Y : Type} `{TensorLaws X} `{TensorElem Y}.

  (** Lifting a let out of a guard while keeping the guard on the bound
      value too.  [ll_guard] alone would compute the value unguarded, so a
      packing buffer lifted out of an edge guard would read its operand
      out of bounds in C (zero in ATL, but [check_safe] rejects it); with
      the guard copied the buffer is zero exactly where it is never used. *)
  Lemma ll_guard_dup p (e1 : Y) (f : Y -> X) :
    iverson p (atl_let e1 f) = atl_let (iverson p e1) (fun x => iverson p (f x)).
  Proof. destruct p; reflexivity. Qed.
End LetGuard.

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

