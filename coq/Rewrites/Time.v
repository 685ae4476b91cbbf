(** * Scheduling time iteration: unrolling the step (issue 13, item 5).

    [titer_unroll k]: [T] applications of a step are [T / k] applications of
    [k] consecutive steps, after [T mod k] single steps:

      ITER [ T ] u := x in e
        = ITER [ T / k ] u := (ITER [ T mod k ] u := x in e) in
            tlet u1 := e in tlet u2 := e[u1/u] in ... e[u(k-1)/u]

    The [k] steps are chained by lets ([tpow_nat]), so each intermediate state
    is a buffer; [inline] then fuses consecutive steps into one pass over the
    tensor (recomputing the neighbours it needs); instead, [split] of the
    last step's loop and [compute_at] of the previous step at its tile loop
    (Rewrites/Producers.v, the tile form of the region inference) tile the
    unrolled steps in space with an overlapping window of the intermediate
    state: overlapped time tiling (a trapezoid per tile, Halide-semantics
    seed Sec. 8.3: compute_at of a producer at a tile of its consumer),
    every step proved ([jacobi1d_tiled], Examples/PolyBench/Jacobi1d.v).
    [unroll_time k] is the directive. *)

From Coq Require Import ZArith List Lia.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Iter Rewrites.Tactics.
Open Scope Z_scope.

Section Unroll.
  Context {X : Type}.

  (** [k] applications of [f], the intermediate states bound by lets. *)
  Fixpoint tpow_nat (k : nat) (f : X -> X) (u : X) : X :=
    match k with
    | O => u
    | S O => f u
    | S k' => atl_let (f u) (fun v => tpow_nat k' f v)
    end.

  Lemma time_iter_succ_r k (f : X -> X) u : Nat.iter k f (f u) = f (Nat.iter k f u).
  Proof.
    induction k as [|k IH]; [reflexivity|].
    change (f (Nat.iter k f (f u)) = f (f (Nat.iter k f u))); rewrite IH; reflexivity.
  Qed.

  Lemma tpow_nat_iter k : forall f u, tpow_nat k f u = Nat.iter k f u.
  Proof.
    induction k as [|k IH]; intros f u; [reflexivity|].
    destruct k as [|k]; [reflexivity|].
    change (tpow_nat (S k) f (f u) = f (Nat.iter (S k) f u)).
    rewrite IH, time_iter_succ_r; reflexivity.
  Qed.

  Lemma time_iter_add a b (f : X -> X) y : Nat.iter (a + b) f y = Nat.iter a f (Nat.iter b f y).
  Proof.
    induction a as [|a IH]; [reflexivity|].
    change (f (Nat.iter (a + b) f y) = f (Nat.iter a f (Nat.iter b f y))); rewrite IH.
    reflexivity.
  Qed.

  Lemma time_iter_mul q k (f : X -> X) y :
    Nat.iter (q * k) f y = Nat.iter q (Nat.iter k f) y.
  Proof.
    induction q as [|q IH]; [reflexivity|].
    change (Nat.iter (k + q * k) f y = Nat.iter k f (Nat.iter q (Nat.iter k f) y)).
    rewrite time_iter_add, IH; reflexivity.
  Qed.

  Lemma time_iter_ext k (f g : X -> X) y :
    (forall u, f u = g u) -> Nat.iter k f y = Nat.iter k g y.
  Proof.
    intros Hfg; induction k as [|k IH]; [reflexivity|].
    change (f (Nat.iter k f y) = g (Nat.iter k g y)); rewrite IH; apply Hfg.
  Qed.

  Lemma titer_unroll (k T : Z) (x : X) (f : X -> X) :
    0 < k -> 0 <= T ->
    titer T x f = titer (T / k) (titer (T mod k) x f) (tpow_nat (Z.to_nat k) f).
  Proof.
    intros Hk HT; unfold titer.
    assert (Hdm : T = T / k * k + T mod k) by (rewrite Z.mul_comm; apply Z.div_mod; lia).
    pose proof (Z.mod_pos_bound T k Hk) as Hm.
    assert (Hq : 0 <= T / k) by (apply Z.div_pos; lia).
    replace (Z.to_nat T) with (Z.to_nat (T / k) * Z.to_nat k + Z.to_nat (T mod k))%nat
      by (rewrite Hdm at 3; rewrite Z2Nat.inj_add, Z2Nat.inj_mul by lia; lia).
    rewrite time_iter_add, time_iter_mul.
    apply time_iter_ext; intros u; symmetry; apply tpow_nat_iter.
  Qed.
End Unroll.

(** [unroll_time k] ([k] a numeral): at the first time iteration, [titer_unroll k],
    the [k] steps written out as lets named [v] (rename them with
    [rename_buffer]); side conditions [0 < k] and [0 <= T] by [solve_idx]. *)
Ltac atl_unroll_time_root k :=
  idtac;  (* delay: passed as a tactic argument, a bare match would run at once *)
  lazymatch goal with
  | |- titer ?T ?x ?f = _ =>
      let kn := eval compute in (Z.to_nat k) in
      etransitivity;
      [ apply (titer_unroll k T x f); solve_idx
      | change (tpow_nat (Z.to_nat k) f) with (tpow_nat kn f); cbn [tpow_nat];
        reflexivity ]
  end.

Tactic Notation "unroll_time" constr(k) :=
  let k := constr:(k%Z) in
  atl_check_goal;
  tryif atl_step ltac:(atl_unroll_time_root k) then idtac
  else fail 0 "unroll_time" k ": no time iteration (ITER) whose length is provably nonnegative, or"
             k "is not a positive numeral".
