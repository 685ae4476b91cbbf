(** * Accessing through a reshape operator (paper Sec. 6, Fig. 5-6).

    [get (op ... e) i] in terms of accesses into [e], for each operator of
    Reshape/Defs.v.  Each comes in two forms, as [get_gen] and
    [get_gen_some] do for generation (Sec. 4.1):
    - [get_op]: for an in-range index (a side condition [rw] proves from
      the loop bounds in context), the access itself;
    - [get_op_some]: unconditional, the bounds check becomes a guard.
    Some operators also have a form that needs no guard because the
    operand is zero where it would matter ([get_concat_l], [get_pad_r_l]...).

    Also here: [flatten_div_mod], flatten as one generation, the form from
    which the flatten laws follow. *)

From Coq Require Import ZArith Bool Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Rewrites.Gen.
From Verisched Require Import Reshape.Defs.
Open Scope Z_scope.

(** Case analysis on every [if] in the goal, with the tested facts turned
    into arithmetic hypotheses. *)
Ltac reshape_cases :=
  repeat match goal with
  | |- context [if ?c then _ else _] =>
      let E := fresh "E" in destruct c eqn:E; bool_hyp_cases; bool_hyps
  end.

(** Index arithmetic of a tile: [(i * m + j) / m = i] and
    [(i * m + j) mod m = j] for [0 <= j < m]. *)
Lemma tile_div i j m : 0 <= j < m -> (i * m + j) / m = i.
Proof. intros; rewrite Z.div_add_l, Z.div_small by lia; lia. Qed.

Lemma tile_mod i j m : 0 <= j < m -> (i * m + j) mod m = j.
Proof. intros; rewrite Z.add_comm, Z.mod_add, Z.mod_small by lia; reflexivity. Qed.

Lemma cdiv_mul n m : 0 < m -> cdiv (n * m) m = n.
Proof.
  intros; unfold cdiv; replace (n * m + m - 1) with (m - 1 + n * m) by lia.
  rewrite Z.div_add, Z.div_small by lia; lia.
Qed.

Section Access.
  Context {X : Type} `{TensorLaws X}.

  (** ** Concatenation *)

  Lemma get_concat_some n1 n2 (a b : Z -> X) i :
    get (concat n1 n2 a b) i =
    iverson ((0 <=? i) && (i <? n1 + n2))
      (tadd (iverson (i <? n1) (get a i)) (iverson (n1 <=? i) (get b (i - n1)))).
  Proof. unfold concat; rewrite get_gen_some; reflexivity. Qed.

  Lemma get_concat n1 n2 (a b : Z -> X) i :
    0 <= i < n1 + n2 ->
    get (concat n1 n2 a b) i =
    tadd (iverson (i <? n1) (get a i)) (iverson (n1 <=? i) (get b (i - n1))).
  Proof. intros; unfold concat; rewrite get_gen by lia; reflexivity. Qed.

  (** Access into the first part, or into the second. *)
  Lemma get_concat_l n1 n2 (a b : Z -> X) i :
    0 <= i < n1 -> 0 <= n2 -> get (concat n1 n2 a b) i = get a i.
  Proof.
    intros; rewrite get_concat by lia.
    destruct (Z.ltb_spec i n1), (Z.leb_spec n1 i); try lia; cbn [iverson].
    apply tadd_0_r.
  Qed.

  Lemma get_concat_r n1 n2 (a b : Z -> X) i :
    n1 <= i < n1 + n2 -> 0 <= n1 -> get (concat n1 n2 a b) i = get b (i - n1).
  Proof.
    intros; rewrite get_concat by lia.
    destruct (Z.ltb_spec i n1), (Z.leb_spec n1 i); try lia; cbn [iverson].
    apply tadd_0_l.
  Qed.

  (** ** Transposition *)

  Lemma get_transpose_some n m (e : Z -> Z -> X) x :
    get (transpose n m e) x =
    iverson ((0 <=? x) && (x <? m)) (genr 0 n (fun y => get (get e y) x)).
  Proof. unfold transpose; rewrite get_gen_some; reflexivity. Qed.

  Lemma get_transpose n m (e : Z -> Z -> X) x :
    0 <= x < m -> get (transpose n m e) x = genr 0 n (fun y => get (get e y) x).
  Proof. intros; unfold transpose; rewrite get_gen by lia; reflexivity. Qed.

  (** Both indices at once: [e^T[x][y] = e[y][x]] in range. *)
  Lemma get_get_transpose n m (e : Z -> Z -> X) x y :
    0 <= x < m -> 0 <= y < n -> get (get (transpose n m e) x) y = get (get e y) x.
  Proof. intros; rewrite get_transpose, get_gen by lia; reflexivity. Qed.

  (** ** Flattening *)

  (** The heart of flatten: the double indicator sum picks [i/m, i mod m]. *)
  Lemma flatten_elem n m (e : Z -> Z -> X) i :
    0 < m -> 0 <= i < n * m ->
    sumr 0 n (fun j => sumr 0 m (fun k => iverson (i =? j * m + k) (get (get e j) k))) =
    get (get e (i / m)) (i mod m).
  Proof.
    intros Hm Hi.
    rewrite (sumr_ext_ctx 0 n _ (fun j => iverson (j =? i / m) (get (get e j) (i mod m)))).
    - rewrite sumr_indicator.
      replace ((0 <=? i / m) && (i / m <? n)) with true; [reflexivity|].
      symmetry; bool_goal; Z.div_mod_to_equations; nia.
    - intros j Hj.
      rewrite (sumr_ext_ctx 0 m _ (fun k => iverson (k =? i - j * m) (get (get e j) k))).
      + rewrite sumr_indicator.
        destruct (Z.eqb_spec j (i / m)) as [->|Hne].
        * replace (i - i / m * m) with (i mod m) by (Z.div_mod_to_equations; lia).
          replace ((0 <=? i mod m) && (i mod m <? m)) with true; [reflexivity|].
          symmetry; bool_goal; Z.div_mod_to_equations; lia.
        * replace ((0 <=? i - j * m) && (i - j * m <? m)) with false; [reflexivity|].
          symmetry; apply andb_false_iff.
          destruct (Z.leb_spec 0 (i - j * m)), (Z.ltb_spec (i - j * m) m); auto.
          exfalso; apply Hne; Z.div_mod_to_equations; nia.
      + intros k Hk; f_equal; bool_eq.
  Qed.

  (** Flatten as a single generation (for a positive inner extent). *)
  Lemma flatten_div_mod n m (e : Z -> Z -> X) :
    0 < m -> flatten n m e = genr 0 (n * m) (fun i => get (get e (i / m)) (i mod m)).
  Proof. intros; unfold flatten; apply genr_ext_ctx; intros; apply flatten_elem; lia. Qed.

  Lemma get_flatten_some n m (e : Z -> Z -> X) i :
    0 < m ->
    get (flatten n m e) i =
    iverson ((0 <=? i) && (i <? n * m)) (get (get e (i / m)) (i mod m)).
  Proof. intros; rewrite flatten_div_mod by lia; rewrite get_gen_some; reflexivity. Qed.

  Lemma get_flatten n m (e : Z -> Z -> X) i :
    0 < m -> 0 <= i < n * m -> get (flatten n m e) i = get (get e (i / m)) (i mod m).
  Proof. intros; rewrite flatten_div_mod by lia; rewrite get_gen by lia; reflexivity. Qed.

  (** ** Splitting *)

  Lemma get_split_some k n (e : Z -> X) i :
    get (split k n e) i =
    iverson ((0 <=? i) && (i <? cdiv n k))
      (genr 0 k (fun j => iverson (i * k + j <? n) (get e (i * k + j)))).
  Proof. unfold split; rewrite get_gen_some; reflexivity. Qed.

  Lemma get_split k n (e : Z -> X) i :
    0 <= i < cdiv n k ->
    get (split k n e) i = genr 0 k (fun j => iverson (i * k + j <? n) (get e (i * k + j))).
  Proof. intros; unfold split; rewrite get_gen by lia; reflexivity. Qed.

  Lemma get_get_split k n (e : Z -> X) i j :
    0 <= i < cdiv n k -> 0 <= j < k ->
    get (get (split k n e) i) j = iverson (i * k + j <? n) (get e (i * k + j)).
  Proof. intros; rewrite get_split, get_gen by lia; reflexivity. Qed.

  (** ** Padding *)

  Lemma get_pad_r_some k n (e : Z -> X) i :
    get (pad_r k n e) i = iverson ((0 <=? i) && (i <? n + k)) (iverson (i <? n) (get e i)).
  Proof. unfold pad_r; rewrite get_gen_some; reflexivity. Qed.

  Lemma get_pad_r k n (e : Z -> X) i :
    0 <= i < n + k -> get (pad_r k n e) i = iverson (i <? n) (get e i).
  Proof. intros; unfold pad_r; rewrite get_gen by lia; reflexivity. Qed.

  (** Inside the unpadded part the guard is gone. *)
  Lemma get_pad_r_l k n (e : Z -> X) i :
    0 <= i < n -> 0 <= k -> get (pad_r k n e) i = get e i.
  Proof.
    intros; rewrite get_pad_r by lia; destruct (Z.ltb_spec i n); [reflexivity | lia].
  Qed.

  Lemma get_pad_l_some k n (e : Z -> X) i :
    get (pad_l k n e) i = iverson ((0 <=? i) && (i <? n + k)) (iverson (k <=? i) (get e (i - k))).
  Proof. unfold pad_l; rewrite get_gen_some; reflexivity. Qed.

  Lemma get_pad_l k n (e : Z -> X) i :
    0 <= i < n + k -> get (pad_l k n e) i = iverson (k <=? i) (get e (i - k)).
  Proof. intros; unfold pad_l; rewrite get_gen by lia; reflexivity. Qed.

  Lemma get_pad_l_r k n (e : Z -> X) i :
    k <= i < n + k -> 0 <= k -> get (pad_l k n e) i = get e (i - k).
  Proof.
    intros; rewrite get_pad_l by lia; destruct (Z.leb_spec k i); [reflexivity | lia].
  Qed.

  (** ** Truncation *)

  Lemma get_trunc_r_some k (e : Z -> X) i :
    get (trunc_r k e) i = iverson ((0 <=? i) && (i <? k)) (get e i).
  Proof. unfold trunc_r; rewrite get_gen_some; reflexivity. Qed.

  Lemma get_trunc_r k (e : Z -> X) i : 0 <= i < k -> get (trunc_r k e) i = get e i.
  Proof. intros; unfold trunc_r; rewrite get_gen by lia; reflexivity. Qed.

  Lemma get_trunc_l_some k n (e : Z -> X) i :
    get (trunc_l k n e) i = iverson ((0 <=? i) && (i <? k)) (get e (i + n - k)).
  Proof. unfold trunc_l; rewrite get_gen_some; reflexivity. Qed.

  Lemma get_trunc_l k n (e : Z -> X) i :
    0 <= i < k -> get (trunc_l k n e) i = get e (i + n - k).
  Proof. intros; unfold trunc_l; rewrite get_gen by lia; reflexivity. Qed.
End Access.
