(** * Several outputs swept by one loop (issue 13, item 3).

    A program with two outputs is a pair of tensors (docs/decisions.md #61).
    Two loops over the same range that produce different outputs, mvt's
    [x1 = x1 + A y1] (a generation over the rows of [A]) and, after
    [reorder], [x2 = x2 + A^T y2] (a sum over the rows of [A]), read [A]
    twice.  Fusing them means one loop whose iteration [i] contributes to
    both outputs: a sum over [i] of pairs, for which pairs of tensors need
    [⊕] and a zero, componentwise (the product of two commutative monoids).
    A generation is a sum of one-hot slices ([genr_as_sum]: slice [i] is
    [f i] at index [i], zero elsewhere), so a pair of a generation and a sum
    over the same range is one sum of pairs ([pair_gen_sum]), and so is a
    pair of two sums ([pair_sum_sum]).  The lowering writes a one-hot slice
    as one store (codegen/generation.py), so the fused loop is the two loop
    bodies side by side, reading each row of [A] once.

    [fuse_outputs] applies the first of these lemmas that matches the top of
    the program; it refuses, naming the cause, when the two components are
    not a generation or a sum ([x <+> SUM]) over the same range. *)

From Coq Require Import ZArith Bool FunctionalExtensionality Lia.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Rewrites.Tactics.
Open Scope Z_scope.

#[global] Instance TensorElem_pair {X Y : Type} `{TensorElem X} `{TensorElem Y}
  : TensorElem (X * Y) :=
  {| tzero := (tzero, tzero);
     tadd := fun a b => (tadd (fst a) (fst b), tadd (snd a) (snd b)) |}.

#[global] Instance TensorLaws_pair {X Y : Type} `{TensorLaws X} `{TensorLaws Y}
  : TensorLaws (X * Y).
Proof.
  split; intros; cbn [tadd tzero TensorElem_pair fst snd];
    [ rewrite (tadd_comm (fst a)), (tadd_comm (snd a))
    | rewrite (tadd_assoc (fst a)), (tadd_assoc (snd a))
    | rewrite !tadd_0_l; destruct a ]; reflexivity.
Qed.

Section Outputs.
  Context {X Y : Type} `{TensorLaws X} `{TensorLaws Y}.

  Lemma sumr_pair lo hi (f : Z -> X) (g : Z -> Y) :
    sumr lo hi (fun i => (f i, g i)) = (sumr lo hi f, sumr lo hi g).
  Proof.
    unfold sumr; generalize (Z.to_nat (hi - lo)); intros k; revert lo.
    induction k as [|k IH]; intros; cbn [sum_nat]; [reflexivity|].
    rewrite IH; reflexivity.
  Qed.

  (** A generation is the sum of its one-hot slices. *)
  Lemma genr_as_sum n (f : Z -> X) :
    genr 0 n f = sumr 0 n (fun i => genr 0 n (fun k => iverson (k =? i) (f i))).
  Proof.
    apply functional_extensionality; intros k.
    rewrite sumr_apply; unfold genr.
    destruct ((0 <=? k) && (k <? n - 0)) eqn:Hk.
    - assert (Hin : 0 <= k < n) by (bool_hyps; lia).
      rewrite (sumr_ext_ctx 0 n _ (fun i => iverson (i =? k) (f i))).
      + rewrite sumr_indicator, Z.add_0_l.
        replace ((0 <=? k) && (k <? n)) with true; [reflexivity|].
        symmetry; apply andb_true_intro; split; [apply Z.leb_le | apply Z.ltb_lt]; lia.
      + intros i _; rewrite Z.add_0_l, Z.eqb_sym; reflexivity.
    - symmetry; apply sumr_zero.
  Qed.
End Outputs.

Section Fuse.
  Context {X Y : Type} `{TensorLaws X} `{TensorLaws Y}.

  (** The fusions: a generation [Z -> X] and a sum of any type [Y] (a
      tensor or a scalar), or two sums, over the same range [0 .. n], each
      sum after its initial value. *)
  Lemma pair_gen_sum n (f : Z -> X) (q0 : Y) (g : Z -> Y) :
    (genr 0 n f, tadd q0 (sumr 0 n g)) =
    tadd (tzero, q0) (sumr 0 n (fun i => (genr 0 n (fun k => iverson (k =? i) (f i)), g i))).
  Proof.
    rewrite sumr_pair; cbn [tadd tzero TensorElem_pair fst snd].
    rewrite tadd_0_l, <- genr_as_sum; reflexivity.
  Qed.

  Lemma pair_gen_sum0 n (f : Z -> X) (g : Z -> Y) :
    (genr 0 n f, sumr 0 n g) =
    sumr 0 n (fun i => (genr 0 n (fun k => iverson (k =? i) (f i)), g i)).
  Proof. rewrite sumr_pair, <- genr_as_sum; reflexivity. Qed.

  Lemma pair_sum_gen n (p0 : X) (f : Z -> X) (g : Z -> Y) :
    (tadd p0 (sumr 0 n f), genr 0 n g) =
    tadd (p0, tzero) (sumr 0 n (fun i => (f i, genr 0 n (fun k => iverson (k =? i) (g i))))).
  Proof.
    rewrite sumr_pair; cbn [tadd tzero TensorElem_pair fst snd].
    rewrite tadd_0_l, <- genr_as_sum; reflexivity.
  Qed.

  Lemma pair_sum_sum n (p0 : X) (f : Z -> X) (q0 : Y) (g : Z -> Y) :
    (tadd p0 (sumr 0 n f), tadd q0 (sumr 0 n g)) =
    tadd (p0, q0) (sumr 0 n (fun i => (f i, g i))).
  Proof. rewrite sumr_pair; reflexivity. Qed.
End Fuse.

(** The other shapes (two generations; a sum without its initial value
    beside anything but a generation) are first put in the form [x <+> SUM]:
    a generation as [tzero <+>] the sum of its one-hot slices, a bare sum
    after [tzero]; [pair_sum_sum] then fuses them. *)
Section AsSum.
  Context {X : Type} `{TensorLaws X}.

  Lemma gen_as_tadd_sum n (f : Z -> X) :
    genr 0 n f = tadd tzero (sumr 0 n (fun i => genr 0 n (fun k => iverson (k =? i) (f i)))).
  Proof. rewrite tadd_0_l, <- genr_as_sum; reflexivity. Qed.

  Lemma sum_as_tadd_sum n (g : Z -> X) : sumr 0 n g = tadd tzero (sumr 0 n g).
  Proof. rewrite tadd_0_l; reflexivity. Qed.
End AsSum.

(** [fuse_outputs]: the two outputs of the program in one loop. *)
Ltac atl_fuse_outputs_root :=
  idtac;
  lazymatch goal with
  | |- (genr 0 ?n _, tadd _ (sumr 0 ?n _)) = _ => apply pair_gen_sum
  | |- (genr 0 ?n _, sumr 0 ?n _) = _ => apply pair_gen_sum0
  | |- (tadd _ (sumr 0 ?n _), genr 0 ?n _) = _ => apply pair_sum_gen
  | |- (tadd _ (sumr 0 ?n _), tadd _ (sumr 0 ?n _)) = _ => apply pair_sum_sum
  | |- (?a, ?b) = _ =>
      let a' := lazymatch a with
                | genr 0 ?n ?f => constr:(tadd tzero (sumr 0 n (fun i => genr 0 n (fun k => iverson (k =? i) (f i)))))
                | sumr 0 ?n ?g => constr:(tadd tzero (sumr 0 n g))
                | tadd _ (sumr 0 _ _) => a
                end in
      let b' := lazymatch b with
                | genr 0 ?n ?f => constr:(tadd tzero (sumr 0 n (fun i => genr 0 n (fun k => iverson (k =? i) (f i)))))
                | sumr 0 ?n ?g => constr:(tadd tzero (sumr 0 n g))
                | tadd _ (sumr 0 _ _) => b
                end in
      lazymatch constr:((a', b')) with
      | (tadd _ (sumr 0 ?n _), tadd _ (sumr 0 ?n _)) =>
          transitivity (a', b');
          [ f_equal; first [ apply gen_as_tadd_sum | apply sum_as_tadd_sum | reflexivity ]
          | apply pair_sum_sum ]
      end
  end.

(** Why a program is not fused, said in its own terms: which output is not a
    loop from 0, or the two ranges that differ. *)
Ltac atl_fuse_outputs_range e k :=
  lazymatch e with
  | genr ?lo ?hi _ => k lo hi
  | sumr ?lo ?hi _ => k lo hi
  | tadd _ (sumr ?lo ?hi _) => k lo hi
  end.

Ltac atl_fuse_outputs_why :=
  lazymatch goal with
  | |- (?a, ?b) = _ =>
      tryif atl_fuse_outputs_range a ltac:(fun _ _ => idtac) then
        (tryif atl_fuse_outputs_range b ltac:(fun _ _ => idtac) then
           atl_fuse_outputs_range a ltac:(fun la ha =>
           atl_fuse_outputs_range b ltac:(fun lb hb =>
             tryif (unify la 0; unify lb 0) then
               (idtac "fuse_outputs: the two outputs' loops run over different ranges, 0 .." ha "and 0 .." hb "(one loop must sweep both)";
                fail 0 "fuse_outputs: the two outputs' loops run over different ranges, 0 .." ha "and 0 .." hb "(one loop must sweep both)")
             else
               (idtac "fuse_outputs: the outputs' loops must start at 0; they run over" la ".." ha "and" lb ".." hb;
                fail 0 "fuse_outputs: the outputs' loops must start at 0; they run over" la ".." ha "and" lb ".." hb)))
         else
           (idtac "fuse_outputs: the second output is not a generation or a sum (SUM, or x <+> SUM) at its top";
            fail 0 "fuse_outputs: the second output is not a generation or a sum (SUM, or x <+> SUM) at its top"))
      else
        (idtac "fuse_outputs: the first output is not a generation or a sum (SUM, or x <+> SUM) at its top";
         fail 0 "fuse_outputs: the first output is not a generation or a sum (SUM, or x <+> SUM) at its top")
  | |- _ =>
      idtac "fuse_outputs: the program is not a pair (a, b) of two outputs at its top";
      fail 0 "fuse_outputs: the program is not a pair (a, b) of two outputs at its top"
  end.

Tactic Notation "fuse_outputs" :=
  atl_check_goal;
  tryif (etransitivity; [ atl_fuse_outputs_root | ]; atl_beta_lhs) then idtac
  else atl_fuse_outputs_why.
