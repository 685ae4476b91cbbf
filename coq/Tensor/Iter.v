(** * Time iteration: a step applied [T] times (issue 13, item 5).

    [ITER [ T ] u := x0 in e] is the state after [T] applications of the step
    [fun u => e] to the initial tensor [x0] (none when [T <= 0]): a fold over
    time, the form of an explicit stencil's time loop (PolyBench's jacobi-1d
    and jacobi-2d).  The step does not see the time index, so every step is
    the same function; a schedule changes the step (unrolling it, fusing the
    unrolled steps, tiling it in space), never the number of applications
    beyond [titer_unroll].

    Why a fold over states and not a generation over time ([GEN [ t < T ]]):
    only the last state is the result, and the lowering keeps two buffers
    (double buffering) instead of [T] of them.

    Rewriting under the step uses [titer_ctx_shaped]: inside it, the state
    [u] has the initial tensor's extents whenever the step preserves them, so
    side conditions and [check_safe] see [shaped s u].  The unrolling lemma
    and its directive are in Rewrites/Time.v. *)

From Coq Require Import ZArith List Lia.
From Verisched Require Import Tensor.Core Tensor.Shape.
Import ListNotations.
Open Scope Z_scope.

Definition titer {X : Type} (T : Z) (x0 : X) (f : X -> X) : X :=
  Nat.iter (Z.to_nat T) f x0.

Notation "'ITER' [ T ] u := x0 'in' e" := (titer T x0 (fun u => e))
  (at level 200, u name, T at level 200, x0 at level 200, e at level 200,
   format "'[v' 'ITER'  [ T ]  u  :=  x0  'in' '/' e ']'") : atl_scope.
Arguments titer {X} T%Z x0%atl_scope f%atl_scope.

Section Iter.
  Context {X : Type}.

  Lemma titer_nonpos (T : Z) (x : X) f : T <= 0 -> titer T x f = x.
  Proof. intros HT; unfold titer; replace (Z.to_nat T) with O by lia; reflexivity. Qed.

  Lemma titer_succ (T : Z) (x : X) f : 0 <= T -> titer (T + 1) x f = f (titer T x f).
  Proof.
    intros HT; unfold titer; replace (Z.to_nat (T + 1)) with (S (Z.to_nat T)) by lia.
    reflexivity.
  Qed.

  (** Context: rewriting the initial tensor and the step. *)
  Lemma titer_ctx (T : Z) (x y : X) (f g : X -> X) :
    x = y -> (forall u, f u = g u) -> titer T x f = titer T y g.
  Proof.
    intros <- Hfg; unfold titer; induction (Z.to_nat T) as [|k IH]; [reflexivity|].
    change (f (Nat.iter k f x) = g (Nat.iter k g x)); rewrite IH; apply Hfg.
  Qed.

  (** Context with an invariant [P] of the states (used with [P := shaped s]):
      the step needs to agree only on states satisfying it. *)
  Lemma titer_ctx_inv (P : X -> Prop) (T : Z) (x : X) (f g : X -> X) :
    P x -> (forall u, P u -> P (f u)) -> (forall u, P u -> f u = g u) ->
    titer T x f = titer T x g.
  Proof.
    intros Hx Hinv Hfg; unfold titer.
    assert (H : forall k, P (Nat.iter k f x) /\ Nat.iter k f x = Nat.iter k g x).
    { induction k as [|k [HP IH]]; [auto|].
      change (P (f (Nat.iter k f x)) /\ f (Nat.iter k f x) = g (Nat.iter k g x)).
      split; [auto|]. rewrite <- IH. auto. }
    apply H.
  Qed.
End Iter.

Section IterShaped.
  Context {X : Type} `{Shaped X}.

  Lemma titer_ctx_shaped (s : list Z) (T : Z) (x : X) (f g : X -> X) :
    shaped s x -> (forall u, shaped s u -> shaped s (f u)) ->
    (forall u, shaped s u -> f u = g u) -> titer T x f = titer T x g.
  Proof. apply titer_ctx_inv. Qed.

  (** Every state has the initial tensor's extents when the step keeps them. *)
  Lemma shaped_titer (s : list Z) (T : Z) (x : X) (f : X -> X) :
    shaped s x -> (forall u, shaped s u -> shaped s (f u)) -> shaped s (titer T x f).
  Proof.
    intros Hx Hf; unfold titer; induction (Z.to_nat T) as [|k IH]; [auto|].
    change (shaped s (f (Nat.iter k f x))); auto.
  Qed.
End IterShaped.

(** [solve_shape] through time iterations: a state has the initial tensor's
    extents when the step keeps them ([shaped_titer]).  Fails unless it solves
    the goal.  (A second branch, [solve_shape] alone, was dropped: whenever
    it solves the goal, the branch below does too, with the same proof, since
    the [lazymatch] is then run on no goal; it only repeated [solve_shape]
    when the goal could not be solved.) *)
Ltac solve_shape_iter :=
  solve
    [ solve_shape;
      lazymatch goal with
      | |- shaped _ (titer _ _ _) =>
          eapply shaped_titer;
          [ solve_shape_iter
          | let u := fresh "u" in let Hu := fresh "Hu" in
            intros u Hu; cbv beta; solve_shape_iter ]
      end ].
