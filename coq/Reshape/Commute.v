(** * Reshape operators commute with the core constructs (paper Sec. 6).

    For each operator of Reshape/Defs.v:
    - [op_gen]: the operator applied to a generation of the right shape
      is again a generation (e.g. [transpose_gen] swaps the two loops,
      [trunc_r_gen] shortens the loop, [split_gen] tiles it);
    - [op_tzero], [op_tadd]: every operator is linear, hence
    - [op_sum]: a summation moves out of it, and [guard_op]: so does a
      guard (cf. [guard_gen], [guard_sum] in Rewrites/Guard.v);
    - [ll_op]: a let moves out of it (the [ll_*] family of Rewrites/Let.v).
    Concatenation, being binary, lifts a guard or a let from both sides
    ([guard_concat]) or from either side ([ll_concat_l], [ll_concat_r]). *)

From Coq Require Import ZArith Bool Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Rewrites.Gen.
From Verisched Require Import Reshape.Defs Reshape.Access.
Open Scope Z_scope.

(** Pointwise proof of an equation between tensors: extensionality at
    every rank, unfold generations and accesses, split on every test. *)
Ltac reshape_pointwise :=
  repeat (apply functional_extensionality; intro);
  unfold genr, get, iverson; cbn [tadd tzero TensorElem_fun];
  reshape_cases.

(** A linear map commutes with summation. *)
Lemma linear_sumr {X Y} `{TensorLaws X} `{TensorLaws Y} (F : X -> Y) :
  F tzero = tzero -> (forall a b, F (tadd a b) = tadd (F a) (F b)) ->
  forall lo hi f, F (sumr lo hi f) = sumr lo hi (fun i => F (f i)).
Proof.
  intros F0 Fadd lo hi f; unfold sumr; generalize (Z.to_nat (hi - lo)) as k.
  intros k; revert lo; induction k as [|k IH]; intros; cbn [sum_nat]; auto.
  rewrite Fadd, IH; reflexivity.
Qed.

Lemma linear_iverson {X Y} `{TensorElem X} `{TensorElem Y} (F : X -> Y) :
  F tzero = tzero -> forall p e, F (iverson p e) = iverson p (F e).
Proof. intros F0 [|] e; cbn [iverson]; auto. Qed.

Section Commute.
  Context {X : Type} `{TensorLaws X}.

  Local Ltac finish := rewrite ?tadd_0_l, ?tadd_0_r; first [ reflexivity | lia ].

  (** ** Linearity *)

  Lemma concat_tzero n1 n2 : concat n1 n2 (@tzero (Z -> X) _) tzero = tzero.
  Proof. unfold concat; reshape_pointwise; finish. Qed.

  Lemma concat_tadd n1 n2 (a b c d : Z -> X) :
    concat n1 n2 (tadd a c) (tadd b d) = tadd (concat n1 n2 a b) (concat n1 n2 c d).
  Proof.
    unfold concat; reshape_pointwise; finish.
  Qed.

  Lemma transpose_tzero n m : transpose n m (@tzero (Z -> Z -> X) _) = tzero.
  Proof. unfold transpose; reshape_pointwise; finish. Qed.

  Lemma transpose_tadd n m (a b : Z -> Z -> X) :
    transpose n m (tadd a b) = tadd (transpose n m a) (transpose n m b).
  Proof. unfold transpose; reshape_pointwise; finish. Qed.

  Lemma flatten_tzero n m : flatten n m (@tzero (Z -> Z -> X) _) = tzero.
  Proof.
    unfold flatten; reshape_pointwise; try finish.
    rewrite (sumr_ext_ctx _ _ _ (fun _ => tzero)); [apply sumr_zero|].
    intros; rewrite (sumr_ext_ctx _ _ _ (fun _ => tzero)); [apply sumr_zero|].
    intros; destruct (_ =? _); reflexivity.
  Qed.

  Lemma flatten_tadd n m (a b : Z -> Z -> X) :
    flatten n m (tadd a b) = tadd (flatten n m a) (flatten n m b).
  Proof.
    unfold flatten; reshape_pointwise; try finish.
    rewrite <- sumr_tadd; apply sumr_ext_ctx; intros.
    rewrite <- sumr_tadd; apply sumr_ext_ctx; intros.
    destruct (_ =? _); cbn; finish.
  Qed.

  Lemma split_tzero k n : split k n (@tzero (Z -> X) _) = tzero.
  Proof. unfold split; reshape_pointwise; finish. Qed.

  Lemma split_tadd k n (a b : Z -> X) :
    split k n (tadd a b) = tadd (split k n a) (split k n b).
  Proof. unfold split; reshape_pointwise; finish. Qed.

  Lemma pad_r_tzero k n : pad_r k n (@tzero (Z -> X) _) = tzero.
  Proof. unfold pad_r; reshape_pointwise; finish. Qed.

  Lemma pad_r_tadd k n (a b : Z -> X) :
    pad_r k n (tadd a b) = tadd (pad_r k n a) (pad_r k n b).
  Proof. unfold pad_r; reshape_pointwise; finish. Qed.

  Lemma pad_l_tzero k n : pad_l k n (@tzero (Z -> X) _) = tzero.
  Proof. unfold pad_l; reshape_pointwise; finish. Qed.

  Lemma pad_l_tadd k n (a b : Z -> X) :
    pad_l k n (tadd a b) = tadd (pad_l k n a) (pad_l k n b).
  Proof. unfold pad_l; reshape_pointwise; finish. Qed.

  Lemma trunc_r_tzero k : trunc_r k (@tzero (Z -> X) _) = tzero.
  Proof. unfold trunc_r; reshape_pointwise; finish. Qed.

  Lemma trunc_r_tadd k (a b : Z -> X) :
    trunc_r k (tadd a b) = tadd (trunc_r k a) (trunc_r k b).
  Proof. unfold trunc_r; reshape_pointwise; finish. Qed.

  Lemma trunc_l_tzero k n : trunc_l k n (@tzero (Z -> X) _) = tzero.
  Proof. unfold trunc_l; reshape_pointwise; finish. Qed.

  Lemma trunc_l_tadd k n (a b : Z -> X) :
    trunc_l k n (tadd a b) = tadd (trunc_l k n a) (trunc_l k n b).
  Proof. unfold trunc_l; reshape_pointwise; finish. Qed.

  (** ** Summations move out *)

  Lemma concat_sum n1 n2 lo hi (f g : Z -> Z -> X) :
    concat n1 n2 (sumr lo hi f) (sumr lo hi g) =
    sumr lo hi (fun j => concat n1 n2 (f j) (g j)).
  Proof.
    unfold sumr; generalize (Z.to_nat (hi - lo)) as c.
    intros c; revert lo; induction c as [|c IH]; intros; cbn [sum_nat].
    - apply concat_tzero.
    - rewrite concat_tadd, IH; reflexivity.
  Qed.

  Lemma transpose_sum n m lo hi (f : Z -> Z -> Z -> X) :
    transpose n m (sumr lo hi f) = sumr lo hi (fun j => transpose n m (f j)).
  Proof. apply linear_sumr; [apply transpose_tzero | apply transpose_tadd]. Qed.

  Lemma flatten_sum n m lo hi (f : Z -> Z -> Z -> X) :
    flatten n m (sumr lo hi f) = sumr lo hi (fun j => flatten n m (f j)).
  Proof. apply linear_sumr; [apply flatten_tzero | apply flatten_tadd]. Qed.

  Lemma split_sum k n lo hi (f : Z -> Z -> X) :
    split k n (sumr lo hi f) = sumr lo hi (fun j => split k n (f j)).
  Proof. apply linear_sumr; [apply split_tzero | apply split_tadd]. Qed.

  Lemma pad_r_sum k n lo hi (f : Z -> Z -> X) :
    pad_r k n (sumr lo hi f) = sumr lo hi (fun j => pad_r k n (f j)).
  Proof. apply linear_sumr; [apply pad_r_tzero | apply pad_r_tadd]. Qed.

  Lemma pad_l_sum k n lo hi (f : Z -> Z -> X) :
    pad_l k n (sumr lo hi f) = sumr lo hi (fun j => pad_l k n (f j)).
  Proof. apply linear_sumr; [apply pad_l_tzero | apply pad_l_tadd]. Qed.

  Lemma trunc_r_sum k lo hi (f : Z -> Z -> X) :
    trunc_r k (sumr lo hi f) = sumr lo hi (fun j => trunc_r k (f j)).
  Proof. apply linear_sumr; [apply trunc_r_tzero | apply trunc_r_tadd]. Qed.

  Lemma trunc_l_sum k n lo hi (f : Z -> Z -> X) :
    trunc_l k n (sumr lo hi f) = sumr lo hi (fun j => trunc_l k n (f j)).
  Proof. apply linear_sumr; [apply trunc_l_tzero | apply trunc_l_tadd]. Qed.

  (** ** Guards move out *)

  Lemma guard_concat n1 n2 p (a b : Z -> X) :
    concat n1 n2 (iverson p a) (iverson p b) = iverson p (concat n1 n2 a b).
  Proof. destruct p; cbn [iverson]; [reflexivity | apply concat_tzero]. Qed.

  Lemma guard_transpose n m p (e : Z -> Z -> X) :
    transpose n m (iverson p e) = iverson p (transpose n m e).
  Proof. apply linear_iverson, transpose_tzero. Qed.

  Lemma guard_flatten n m p (e : Z -> Z -> X) :
    flatten n m (iverson p e) = iverson p (flatten n m e).
  Proof. apply linear_iverson, flatten_tzero. Qed.

  Lemma guard_split k n p (e : Z -> X) : split k n (iverson p e) = iverson p (split k n e).
  Proof. apply linear_iverson, split_tzero. Qed.

  Lemma guard_pad_r k n p (e : Z -> X) : pad_r k n (iverson p e) = iverson p (pad_r k n e).
  Proof. apply linear_iverson, pad_r_tzero. Qed.

  Lemma guard_pad_l k n p (e : Z -> X) : pad_l k n (iverson p e) = iverson p (pad_l k n e).
  Proof. apply linear_iverson, pad_l_tzero. Qed.

  Lemma guard_trunc_r k p (e : Z -> X) : trunc_r k (iverson p e) = iverson p (trunc_r k e).
  Proof. apply linear_iverson, trunc_r_tzero. Qed.

  Lemma guard_trunc_l k n p (e : Z -> X) :
    trunc_l k n (iverson p e) = iverson p (trunc_l k n e).
  Proof. apply linear_iverson, trunc_l_tzero. Qed.

  (** ** Generations pass through *)

  Lemma concat_gen n1 n2 (f g : Z -> X) :
    concat n1 n2 (genr 0 n1 f) (genr 0 n2 g) =
    genr 0 (n1 + n2) (fun i => tadd (iverson (i <? n1) (f i)) (iverson (n1 <=? i) (g (i - n1)))).
  Proof.
    unfold concat; apply genr_ext_ctx; intros i Hi.
    destruct (Z.ltb_spec i n1), (Z.leb_spec n1 i); cbn [iverson];
      rewrite ?get_gen by lia; reflexivity.
  Qed.

  (** Transposing a nest of two generations swaps the loops. *)
  Lemma transpose_gen n m (f : Z -> Z -> X) :
    transpose n m (genr 0 n (fun i => genr 0 m (fun j => f i j))) =
    genr 0 m (fun j => genr 0 n (fun i => f i j)).
  Proof.
    unfold transpose; apply genr_ext_ctx; intros j Hj; apply genr_ext_ctx; intros i Hi.
    rewrite !get_gen by lia; reflexivity.
  Qed.

  (** Flattening a nest of two generations fuses the loops. *)
  Lemma flatten_gen n m (f : Z -> Z -> X) :
    0 < m ->
    flatten n m (genr 0 n (fun i => genr 0 m (fun j => f i j))) =
    genr 0 (n * m) (fun k => f (k / m) (k mod m)).
  Proof.
    intros; rewrite flatten_div_mod by lia; apply genr_ext_ctx; intros k Hk.
    rewrite !get_gen; [reflexivity | |]; Z.div_mod_to_equations; nia.
  Qed.

  (** Splitting a generation tiles its loop (the body of Sec. 6.3's
      tiling, once [split] is unfolded and accessed through). *)
  Lemma split_gen k n (f : Z -> X) :
    split k n (genr 0 n f) =
    genr 0 (cdiv n k) (fun io => genr 0 k (fun ii =>
      iverson (io * k + ii <? n) (f (io * k + ii)))).
  Proof.
    unfold split; apply genr_ext_ctx; intros io Hio; apply genr_ext_ctx; intros ii Hii.
    destruct (Z.ltb_spec (io * k + ii) n); cbn [iverson]; [|reflexivity].
    rewrite get_gen by nia; reflexivity.
  Qed.

  Lemma pad_r_gen k n (f : Z -> X) :
    pad_r k n (genr 0 n f) = genr 0 (n + k) (fun i => iverson (i <? n) (f i)).
  Proof.
    unfold pad_r; apply genr_ext_ctx; intros i Hi.
    destruct (Z.ltb_spec i n); cbn [iverson]; [|reflexivity].
    rewrite get_gen by lia; reflexivity.
  Qed.

  Lemma pad_l_gen k n (f : Z -> X) :
    pad_l k n (genr 0 n f) = genr 0 (n + k) (fun i => iverson (k <=? i) (f (i - k))).
  Proof.
    unfold pad_l; apply genr_ext_ctx; intros i Hi.
    destruct (Z.leb_spec k i); cbn [iverson]; [|reflexivity].
    rewrite get_gen by lia; reflexivity.
  Qed.

  (** Truncating a generation shortens its loop. *)
  Lemma trunc_r_gen k n (f : Z -> X) :
    k <= n -> trunc_r k (genr 0 n f) = genr 0 k f.
  Proof.
    intros; unfold trunc_r; apply genr_ext_ctx; intros i Hi.
    rewrite get_gen by lia; reflexivity.
  Qed.

  Lemma trunc_l_gen k n (f : Z -> X) :
    k <= n -> trunc_l k n (genr 0 n f) = genr 0 k (fun i => f (i + n - k)).
  Proof.
    intros; unfold trunc_l; apply genr_ext_ctx; intros i Hi.
    rewrite get_gen by lia; reflexivity.
  Qed.

  (** The same, as a generation over the kept range of the original index. *)
  Lemma trunc_l_genr k n (f : Z -> X) :
    k <= n -> trunc_l k n (genr 0 n f) = genr (n - k) n f.
  Proof.
    intros; rewrite trunc_l_gen by lia; rewrite (genr_shift (n - k) n).
    replace (n - (n - k)) with k by lia.
    apply genr_ext_ctx; intros; f_equal; lia.
  Qed.

  (** [transpose_gen] (right to left) with the binder names of the derived
      program, which a rewrite takes from the lemma (Examples/Sgemm.v). *)
  Lemma gen_swap_cols n m (f : Z -> Z -> X) :
    genr 0 m (fun ii => genr 0 n (fun j => f ii j)) =
    transpose n m (genr 0 n (fun j => genr 0 m (fun ii => f ii j))).
  Proof. symmetry; apply transpose_gen. Qed.

  Lemma gen_swap_rows n m (f : Z -> Z -> X) :
    genr 0 m (fun jr => genr 0 n (fun ii => f jr ii)) =
    transpose n m (genr 0 n (fun ii => genr 0 m (fun jr => f jr ii))).
  Proof. symmetry; apply transpose_gen. Qed.
End Commute.

(** ** Lets move out (no laws needed: [atl_let] is application) *)
Section LetLift.
  Context {X Y : Type} `{TensorElem X}.

  Lemma ll_concat_l n1 n2 (e1 : Y) (f : Y -> Z -> X) (b : Z -> X) :
    concat n1 n2 (atl_let e1 f) b = atl_let e1 (fun x => concat n1 n2 (f x) b).
  Proof. reflexivity. Qed.

  Lemma ll_concat_r n1 n2 (a : Z -> X) (e1 : Y) (f : Y -> Z -> X) :
    concat n1 n2 a (atl_let e1 f) = atl_let e1 (fun x => concat n1 n2 a (f x)).
  Proof. reflexivity. Qed.

  Lemma ll_transpose n m (e1 : Y) (f : Y -> Z -> Z -> X) :
    transpose n m (atl_let e1 f) = atl_let e1 (fun x => transpose n m (f x)).
  Proof. reflexivity. Qed.

  Lemma ll_flatten n m (e1 : Y) (f : Y -> Z -> Z -> X) :
    flatten n m (atl_let e1 f) = atl_let e1 (fun x => flatten n m (f x)).
  Proof. reflexivity. Qed.

  Lemma ll_split k n (e1 : Y) (f : Y -> Z -> X) :
    split k n (atl_let e1 f) = atl_let e1 (fun x => split k n (f x)).
  Proof. reflexivity. Qed.

  Lemma ll_pad_r k n (e1 : Y) (f : Y -> Z -> X) :
    pad_r k n (atl_let e1 f) = atl_let e1 (fun x => pad_r k n (f x)).
  Proof. reflexivity. Qed.

  Lemma ll_pad_l k n (e1 : Y) (f : Y -> Z -> X) :
    pad_l k n (atl_let e1 f) = atl_let e1 (fun x => pad_l k n (f x)).
  Proof. reflexivity. Qed.

  Lemma ll_trunc_r k (e1 : Y) (f : Y -> Z -> X) :
    trunc_r k (atl_let e1 f) = atl_let e1 (fun x => trunc_r k (f x)).
  Proof. reflexivity. Qed.

  Lemma ll_trunc_l k n (e1 : Y) (f : Y -> Z -> X) :
    trunc_l k n (atl_let e1 f) = atl_let e1 (fun x => trunc_l k n (f x)).
  Proof. reflexivity. Qed.
End LetLift.
