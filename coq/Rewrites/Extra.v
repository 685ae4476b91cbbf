(** * Extra rewrites used by the Sec. 8 derivations (scatter-to-gather,
    im2col, packed matrix multiply): small general lemmas the core library
    lacks.  Each one is a plain equation whose sides unify first-order (or
    by Miller patterns) with the programs, so [rw] can select its site
    without lemma arguments. *)

From Coq Require Import ZArith Bool Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Rewrites.Gen.
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
