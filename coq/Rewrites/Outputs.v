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

  (** The fusions, for outputs [Z -> X] and [Z -> Y]: a generation and a sum, or
      two sums, over the same range [0 .. n], each sum after its initial value. *)
  Lemma pair_gen_sum n (f : Z -> X) (q0 : Z -> Y) (g : Z -> Z -> Y) :
    (genr 0 n f, tadd q0 (sumr 0 n g)) =
    tadd (tzero, q0) (sumr 0 n (fun i => (genr 0 n (fun k => iverson (k =? i) (f i)), g i))).
  Proof.
    rewrite sumr_pair; cbn [tadd tzero TensorElem_pair fst snd].
    rewrite tadd_0_l, <- genr_as_sum; reflexivity.
  Qed.

  Lemma pair_gen_sum0 n (f : Z -> X) (g : Z -> Z -> Y) :
    (genr 0 n f, sumr 0 n g) =
    sumr 0 n (fun i => (genr 0 n (fun k => iverson (k =? i) (f i)), g i)).
  Proof. rewrite sumr_pair, <- genr_as_sum; reflexivity. Qed.

  Lemma pair_sum_gen n (p0 : Z -> X) (f : Z -> Z -> X) (g : Z -> Y) :
    (tadd p0 (sumr 0 n f), genr 0 n g) =
    tadd (p0, tzero) (sumr 0 n (fun i => (f i, genr 0 n (fun k => iverson (k =? i) (g i))))).
  Proof.
    rewrite sumr_pair; cbn [tadd tzero TensorElem_pair fst snd].
    rewrite tadd_0_l, <- genr_as_sum; reflexivity.
  Qed.

  Lemma pair_sum_sum n (p0 : Z -> X) (f : Z -> Z -> X) (q0 : Z -> Y) (g : Z -> Z -> Y) :
    (tadd p0 (sumr 0 n f), tadd q0 (sumr 0 n g)) =
    tadd (p0, q0) (sumr 0 n (fun i => (f i, g i))).
  Proof. rewrite sumr_pair; reflexivity. Qed.
End Fuse.

(** [fuse_outputs]: the two outputs of the program in one loop. *)
Ltac atl_fuse_outputs_root :=
  idtac;
  lazymatch goal with
  | |- (genr 0 ?n _, tadd _ (sumr 0 ?n _)) = _ => apply pair_gen_sum
  | |- (genr 0 ?n _, sumr 0 ?n _) = _ => apply pair_gen_sum0
  | |- (tadd _ (sumr 0 ?n _), genr 0 ?n _) = _ => apply pair_sum_gen
  | |- (tadd _ (sumr 0 ?n _), tadd _ (sumr 0 ?n _)) = _ => apply pair_sum_sum
  end.

Tactic Notation "fuse_outputs" :=
  atl_check_goal;
  tryif (etransitivity; [ atl_fuse_outputs_root | ]; atl_beta_lhs) then idtac
  else (idtac "fuse_outputs: the program is not a pair of a generation or a sum (x <+> SUM) over the same range 0 .. n in each output";
        fail 0 "fuse_outputs: the program is not a pair of a generation or a sum (x <+> SUM) over the same range 0 .. n in each output").
