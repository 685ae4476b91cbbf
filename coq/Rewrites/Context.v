(** * Context lemmas (paper Sec. 4.2): rewriting under every binder.

    Each lemma proves [C[e1] = C[e2]] from [e1 = e2] under the facts the
    construct [C] makes available: loop bounds for generations and sums,
    the guard's predicate for an Iverson bracket, and the bound value for a
    let.  The traversal in Rewrites/Tactics.v applies them while descending,
    so side conditions at a rewrite site can use every enclosing fact.
    Operators that bind nothing ([⊕], [*], [/], access, reshape operators)
    need no context; the traversal uses [f_equal] for them. *)

From Coq Require Import ZArith.
From Verisched Require Import Tensor.Core Tensor.Sum.
Open Scope Z_scope.

Section Context.
  Context {X : Type} `{TensorLaws X}.

  Lemma genr_ctx lo hi (f g : Z -> X) :
    (forall i, lo <= i < hi -> f i = g i) -> genr lo hi f = genr lo hi g.
  Proof. apply genr_ext_ctx. Qed.

  Lemma sumr_ctx lo hi (f g : Z -> X) :
    (forall i, lo <= i < hi -> f i = g i) -> sumr lo hi f = sumr lo hi g.
  Proof. apply sumr_ext_ctx. Qed.

  Lemma iverson_ctx p (e1 e2 : X) :
    (p = true -> e1 = e2) -> iverson p e1 = iverson p e2.
  Proof. destruct p; cbn; auto. Qed.
End Context.

(** Congruence for a two-argument operator, one argument rewritten: the
    other is named once, where [f_equal2] names it three times (its two
    sides and its reflexivity proof).  The traversal's path to a rewrite
    goes through such nodes, and the kernel checks every copy at [Qed]
    (decision #101). *)
Lemma atl_cong_l {A B C} (F : A -> B -> C) (a a' : A) (b : B) :
  a = a' -> F a b = F a' b.
Proof. intros <-; reflexivity. Qed.

Lemma atl_cong_r {A B C} (F : A -> B -> C) (a : A) (b b' : B) :
  b = b' -> F a b = F a b'.
Proof. intros <-; reflexivity. Qed.

Lemma let_ctx {X Y} (e1 e1' : X) (f g : X -> Y) :
  e1 = e1' -> (forall x, x = e1 -> f x = g x) -> atl_let e1 f = atl_let e1' g.
Proof. intros <- Hfg; unfold atl_let; auto. Qed.
