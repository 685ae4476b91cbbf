(** * rfactor: Halide's [rfactor], a reduction factored through a buffer.

    [rfactor ki into u as t] takes the reduction loop [ki] (a [SUM])
    and makes its iterations the lanes of an intermediate buffer [t], indexed
    by a new pure loop [u], summed once at the end:

    [SUM [ ko < a ] SUM [ ki < w ] f ko ki]
      becomes
    [tlet t := SUM [ ko < a ] GEN [ u < w ] f ko u in SUM [ ki < w ] t _[ ki ]].

    This is Halide's [f.update().rfactor(ki, u)] (Suriana, Adams and Kamil,
    CGO 2017: the Halide-semantics seed's ref. [35], cited at Sec. 8.2's
    footnote 6 on reduction swaps; the seed's formal fragment leaves it out,
    Sec. 8.6): the factored reduction [intm(u)] keeps the update's other
    reduction variables in their order, [ki] becomes the pure variable [u],
    and the original reduction sums [intm] over [ki].  Its legality there is
    an associative and commutative update, which ATL's [tadd] is.  The
    buffer's [GEN] stands where [ki] stood, inside the enclosing sums of
    the chain ([ko] above): [vectorize u] then gives [w]
    independent vector accumulators over [ko], the matvec row of decisions
    #78 and #146, in one step where [rw sum_lanes_let] took four.

    The chain is the run of [SUM]s and guards directly around [ki] (no let,
    generation or other operator between); its top is where the let goes.
    Everything between keeps its place: guards become guards of the buffer's
    summands.  A sum whose index the extent of [ki] mentions (a triangular
    nest) stays outside the buffer, which the buffer's size must not
    depend on: the let goes below it.  A loop [SUMR [ lo <= ki < hi ]] gives
    [hi - lo] lanes, lane [u] the term [lo + u] ([rfactor_lanes_lo]).
    Refused, with the reason: a loop [ki] that is a generation; a name [u]
    already used by a loop.
    As every directive, the loop is the first named [ki] in pre-order. *)

From Coq Require Import ZArith Lia.
From Verisched Require Import Tensor.Core Tensor.Sum.
From Verisched Require Import Rewrites.Context Rewrites.Gen Rewrites.Guard Rewrites.Tactics.
From Verisched Require Import Rewrites.Directives.
Open Scope Z_scope.

(** A transient marker on the loop being factored, so that the chain is
    the one above the first loop named [ki]: the directive removes it, or
    fails as a whole ([vec_mark], Targets/Vectorize.v, does the same). *)
Definition rf_mark {X : Type} (e : X) : X := e.

Section RfactorLemmas.
  Context {X : Type} `{TensorLaws X}.

  (** The loop itself: its [w] terms named as a buffer and summed. *)
  Lemma rfactor_lanes w (g : Z -> X) :
    rf_mark (sumr 0 w g) = atl_let (genr 0 w g) (fun t => sumr 0 w (fun l => get t l)).
  Proof.
    unfold rf_mark, atl_let; apply sumr_ext_ctx; intros; rewrite get_gen by lia; reflexivity.
  Qed.

  (** A loop from [lo]: the buffer's lane [u] is the term [lo + u] (its
      [hi - lo] lanes from 0, the final sum over them; [sum_shift]). *)
  Lemma rfactor_lanes_lo lo hi (g : Z -> X) :
    rf_mark (sumr lo hi g) =
    atl_let (genr 0 (hi - lo) (fun u => g (lo + u)))
            (fun t => sumr 0 (hi - lo) (fun l => get t l)).
  Proof.
    unfold rf_mark, atl_let; rewrite (sum_shift lo hi g).
    apply sumr_ext_ctx; intros; rewrite get_gen by lia; f_equal; lia.
  Qed.

  (** An enclosing sum moves into the buffer: summing buffers and then
      their lanes is summing the lanes' sums ([sum_swap], [get_sum]).  [k]
      is the final sum, equated last so that the base case names it. *)
  Lemma rfactor_sum lo hi w (k : (Z -> X) -> X) (g : Z -> X) (v : Z -> Z -> X) :
    (forall z, lo <= z < hi -> g z = atl_let (v z) k) ->
    k = (fun t => sumr 0 w (fun l => get t l)) ->
    sumr lo hi g = atl_let (sumr lo hi v) k.
  Proof.
    intros E ->; unfold atl_let in *; rewrite (sumr_ext_ctx lo hi g _ E).
    rewrite sum_swap; apply sumr_ext_ctx; intros; rewrite get_sum; reflexivity.
  Qed.

  (** A guard on the chain becomes a guard of the buffer. *)
  Lemma rfactor_guard p (e : X) w (k : (Z -> X) -> X) (v : Z -> X) :
    e = atl_let v k ->
    k = (fun t => sumr 0 w (fun l => get t l)) ->
    iverson p e = atl_let (iverson p v) k.
  Proof.
    intros -> ->; unfold atl_let; rewrite <- guard_sum.
    apply sumr_ext_ctx; intros; rewrite get_iverson; reflexivity.
  Qed.
End RfactorLemmas.

(** Mark the first loop named [ki] (pre-order), generation or sum. *)
Ltac rf_mark_node ki :=
  atl_eta_binder;
  lazymatch goal with
  | |- ?L = _ =>
      lazymatch L with
      | @genr _ _ _ _ (fun z => _) => atl_same_name ki z
      | @sumr _ _ _ _ (fun z => _) => atl_same_name ki z
      end;
      atl_named_binder; exact (@eq_refl _ (rf_mark L))
  end.

(** Down the chain from its top to the marked loop: each sum and guard
    passes on the buffer built below it ([rfactor_sum], [rfactor_guard]);
    the marked sum builds it with the user's names ([rfactor_lanes]).  The
    final sum [k] is an evar created above the enclosing sums, so an extent
    of [ki] that mentions their indices fails to unify with it: that top
    fails, and [atl_step] tries the next node down the chain. *)
Ltac rf_rec ki u t :=
  atl_eta_binder;
  lazymatch goal with
  | |- @rf_mark _ (@sumr ?X ?E ?lo ?hi (fun z => @?F z)) = _ =>
      tryif dir_is_zero lo then
        (let r := eval cbv beta in
           (atl_let (genr 0 hi (fun u : Z => F u))
                    (fun t : Z -> X => sumr 0 hi (fun ki : Z => get t ki))) in
         atl_rhs_is r; exact (rfactor_lanes hi F))
      else
        (let r := eval cbv beta in
           (atl_let (genr 0 (hi - lo) (fun u : Z => F (lo + u)))
                    (fun t : Z -> X => sumr 0 (hi - lo) (fun ki : Z => get t ki))) in
         atl_rhs_is r; exact (rfactor_lanes_lo lo hi F))
  | |- @sumr ?X ?E ?lo ?hi ?F = _ =>
      lazymatch F with fun x => _ =>
      refine (@rfactor_sum X E _ lo hi _ _ F (fun x => _) _ _);
      [ let i := fresh x in let Hi := fresh "H" i in
        intros i Hi; atl_beta_both; atl_fresh_rhs ltac:(rf_rec ki u t)
      | reflexivity ]
      end
  | |- @iverson ?X ?E ?p ?e = _ =>
      refine (@rfactor_guard X E _ p e _ _ _ _ _);
      [ atl_fresh_rhs ltac:(rf_rec ki u t) | reflexivity ]
  end.

(** The top of the chain: a sum, or the marked loop itself. *)
Ltac rf_top ki u t :=
  atl_eta_binder;
  lazymatch goal with
  | |- @rf_mark _ _ = _ => rf_rec ki u t
  | |- @sumr _ _ _ _ _ = _ => rf_rec ki u t
  end.

Ltac rf_marked_gen :=
  idtac; lazymatch goal with |- @rf_mark _ (@genr _ _ _ _ _) = _ => reflexivity end.

Ltac dir_rfactor ki u t :=
  atl_check_goal;
  tryif dir_has_loop ki then idtac
  else (idtac "rfactor: the program has no loop named" ki;
        fail 0 "rfactor: the program has no loop named" ki);
  tryif dir_has_loop u then
    (idtac "rfactor: a loop named" u "already exists: name the buffer's new lanes loop afresh";
     fail 0 "rfactor: a loop named" u "already exists: name the buffer's new lanes loop afresh")
  else idtac;
  atl_step ltac:(rf_mark_node ki);
  tryif atl_step ltac:(rf_top ki u t) then idtac
  else tryif atl_has_node rf_marked_gen then
    (idtac "rfactor: loop" ki "is a generation (GEN): rfactor factors a reduction (SUM)";
     fail 0 "rfactor: loop" ki "is a generation (GEN): rfactor factors a reduction (SUM)")
  else
    (idtac "rfactor: internal error at loop" ki "(no chain of sums above it could be factored)";
     fail 0 "rfactor: internal error at loop" ki "(no chain of sums above it could be factored)").

Tactic Notation "rfactor" ident(ki) "into" ident(u) "as" ident(t) := dir_rfactor ki u t.
