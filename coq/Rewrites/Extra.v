(** * Extra rewrites used by the Sec. 8 derivations (scatter-to-gather,
    im2col, packed matrix multiply): small general lemmas the core library
    lacks.  Each one is a plain equation whose sides unify first-order (or
    by Miller patterns) with the programs, so a rewrite step can select
    its site without lemma arguments (which cannot mention the program's
    loop variables). *)

From Coq Require Import ZArith Bool Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape Rewrites.Gen Rewrites.Let.
From Verisched Require Import Rewrites.Tactics Rewrites.Guard.
From Verisched Require Import Reshape.Defs Reshape.Access Reshape.Commute Reshape.Duals.
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

(** ** Tiling for register blocks (written for the SGEMM and convolution
    derivations, Examples/Sgemm.v and Conv.v)

    [gen_tile] and [sum_tile] under the binder names of the derived
    program (a rewrite takes the names of the binders it creates from its
    lemma); exact tiling when the extent is a multiple of the tile; the
    guard rewrites of micro-tiles and masked stores; let reordering. *)
Section TensorHelpers.
  Context {X : Type} `{TensorLaws X}.

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

  Lemma sum_tile_k n k (f : Z -> X) :
    0 < k -> 0 <= n ->
    sumr 0 n f =
    sumr 0 (cdiv n k) (fun ko => sumr 0 k (fun kk =>
      iverson (ko * k + kk <? n) (f (ko * k + kk)))).
  Proof. apply sum_tile. Qed.

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

  Lemma guard_weaken_lt a b n (e : X) :
    (b < n -> a < n) -> iverson (b <? n) e = iverson (a <? n) (iverson (b <? n) e).
  Proof.
    intros Hab; destruct (Z.ltb_spec b n), (Z.ltb_spec a n); cbn [iverson]; try reflexivity; lia.
  Qed.

  (** [gen_sum_swap] and [transpose_gen] (right to left) with the binder
      names of the derived program, which a rewrite takes from the lemma. *)
  Lemma gen_sum_swap_ko lo hi a b (f : Z -> Z -> X) :
    genr a b (fun i => sumr lo hi (fun ko => f i ko)) =
    sumr lo hi (fun ko => genr a b (fun i => f i ko)).
  Proof. apply gen_sum_swap. Qed.

  Lemma gen_swap_cols n m (f : Z -> Z -> X) :
    genr 0 m (fun ii => genr 0 n (fun j => f ii j)) =
    transpose n m (genr 0 n (fun j => genr 0 m (fun ii => f ii j))).
  Proof. symmetry; apply transpose_gen. Qed.

  Lemma gen_swap_rows n m (f : Z -> Z -> X) :
    genr 0 m (fun jr => genr 0 n (fun ii => f jr ii)) =
    transpose n m (genr 0 n (fun ii => genr 0 m (fun jr => f jr ii))).
  Proof. symmetry; apply transpose_gen. Qed.

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

  (** A let out of the body of another let whose value it does not use. *)
  Lemma ll_let_body {Y W} (e1 : Y) (e2 : W) (f : Y -> W -> X) :
    atl_let e1 (fun x => atl_let e2 (fun y => f x y)) =
    atl_let e2 (fun y => atl_let e1 (fun x => f x y)).
  Proof. reflexivity. Qed.

  Lemma ll_let_value {Y W} (e1 : Y) (f : Y -> W) (g : W -> X) :
    atl_let (atl_let e1 f) g = atl_let e1 (fun x => atl_let (f x) g).
  Proof. reflexivity. Qed.
End TensorHelpers.

(** ** Guards copied onto the operands of a reduction's product (so that
    packed operands are zero-padded and the product needs no guard). *)
Section ScalarHelpers.
  Context {S : Type} `{ScalarLaws S}.

  Lemma sadd_tadd (a b : S) : sadd a b = tadd a b.
  Proof. reflexivity. Qed.

  (** The same for a triple reduction without a depth guard, the outer
      guard going to the left operand (Conv.v: the pixel guard to the
      input, the channel guard to the weights). *)
  Lemma guard2_sum3_prod_l q p n1 n2 n3 (a b : Z -> Z -> Z -> S) :
    iverson q (iverson p (sumr 0 n1 (fun r => sumr 0 n2 (fun s => sumr 0 n3 (fun c =>
      smul (a r s c) (b r s c)))))) =
    iverson q (iverson p (sumr 0 n1 (fun r => sumr 0 n2 (fun s => sumr 0 n3 (fun c =>
      smul (iverson q (a r s c)) (iverson p (b r s c))))))).
  Proof. destruct q, p; cbn [iverson]; reflexivity. Qed.

  Lemma guard2_sum_prod q p lo hi (r : Z -> bool) (a b : Z -> S) :
    iverson q (iverson p (sumr lo hi (fun kk => iverson (r kk) (smul (a kk) (b kk))))) =
    iverson q (iverson p (sumr lo hi (fun kk =>
      smul (iverson (p && r kk) (a kk)) (iverson (q && r kk) (b kk))))).
  Proof.
    destruct q, p; cbn [iverson andb]; try reflexivity.
    apply sumr_ext_ctx; intros k _; destruct (r k); cbn [iverson]; [reflexivity|].
    symmetry; apply smul_zero_l.
  Qed.
End ScalarHelpers.
