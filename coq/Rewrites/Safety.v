(** * [check_safe]: every access of a program is in bounds (paper Sec. 7.2).

    Our semantics makes an out-of-bounds read return zero, but the C the
    lowering emits would read outside an array.  [check_safe] descends
    through the current program collecting context exactly as [rw] does
    (loop bounds, guard predicates, let bindings), and at every access
    [v _[ i ]] proves [0 <= i < n], where [n] is the extent of [v]: read
    from a [shaped] hypothesis for an input, from the binding for a let
    buffer, or from the syntax of the accessed term.  Each bound is proved
    by [solve_idx] in the tactic engine; the program is not changed.

    On failure it lists every access it could not prove, with its context,
    and fails.  The lowering refuses kernels whose safety was not proved. *)

From Coq Require Import ZArith List Lia.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Shape Tensor.Iter Rewrites.Context Rewrites.Tactics.
From Verisched Require Import Targets.Instr.
Import ListNotations.

(** Extension point: extents of terms built with operators defined later
    (Reshape/Bounds.v gives those of the reshape operators).  A library
    adds a hint to the database [atl_dims] that proves [atl_dims_of v],
    for its operator at the head of [v], by [exact d], [d] the extents of
    [v] outermost first:
    [#[global] Hint Extern 1 (atl_dims_of (op ..)) => exact (..) : atl_dims.]
    Hints of several libraries accumulate, and no later import undoes
    them.  (The hook used to be an Ltac redefined with [Ltac atl_dims_ext
    ::= ...]; Coq 8.16 undoes a redefinition whenever the file that
    defines the tactic is imported again, coq/coq#10556, so a second
    [Require Import Rewrites.Safety] silently dropped the reshape extents.) *)
Definition atl_dims_of {T : Type} (v : T) : Type := list Z.
Create HintDb atl_dims discriminated.

Ltac atl_dims_ext v :=
  let d := constr:(ltac:(solve [ auto 1 with atl_dims nocore ]) : atl_dims_of v) in
  (* [cbv beta] drops the cast *)
  let d := eval cbv beta in d in d.

(** [atl_dims v]: the extents of [v], outermost first, as a list of Z. *)
Ltac atl_dims v :=
  let T := type of v in
  lazymatch T with
  | Z -> _ =>
      lazymatch v with
      | genr ?lo ?hi ?f =>
          let b := eval cbv beta in (f lo) in
          let d := atl_dims b in constr:((hi - lo)%Z :: d)
      | get ?w _ =>
          let d := atl_dims w in
          lazymatch d with _ :: ?d' => d' end
      | iverson _ ?e => atl_dims e
      | tadd ?a _ => atl_dims a
      | sumr ?lo _ ?f => let b := eval cbv beta in (f lo) in atl_dims b
      | atl_let ?e ?f => let b := eval cbv beta in (f e) in atl_dims b
      | titer _ ?x0 _ => atl_dims x0
      | _ =>
          match goal with
          | H : @shaped _ _ _ ?s v |- _ => s
          | H : v = ?e |- _ => atl_dims e
          | _ => atl_dims_ext v
          end
      end
  | _ => constr:(@nil Z)
  end.

(** A bound already proved in this context, kept under a name that [lia]
    and [solve_idx] do not read: the same bound is often needed again by a
    sibling access ([v _[ r ] _[ c - 1 ] <+> v _[ r ] _[ c ]]: [0 <= r < n]
    twice), and [assumption] finds it (it unfolds [atl_bound_known]). *)
Definition atl_bound_known (P : Prop) : Prop := P.

(** Prove one access in bounds, or hand it to [report]. *)
Ltac atl_check_access v i report :=
  first
    [ let d := atl_dims v in
      lazymatch d with
      | ?n :: _ =>
          (* The proof stays in the term (the kernel checks it at Qed).  The
             fact stays in the context only as [atl_bound_known]: as a plain
             fact, every later bound would be proved by [lia] over all
             earlier ones (Blur.v's check_safe took twice as long). *)
          first [ let Hb := fresh "Hbound" in
                  assert (Hb : (0 <= i < n)%Z) by first [ assumption | atl_xlia | solve_idx ];
                  change (atl_bound_known (0 <= i < n)%Z) in Hb
                | report v i constr:(Some n) ]
      end
    | report v i constr:(@None Z) ].

(** Visit every node with its context; check accesses on the way down.

    The walk reads the program as a term and proves only [True]: a loop
    body is entered by [assert (forall i, lo <= i < hi -> True)], a guard's
    body by [assert (p = true -> True)], a let's body by [assert (forall y,
    y = e -> True)], so each bound is proved in exactly the context the
    context lemmas of [rw] give ([genr_ctx], [iverson_ctx], [let_ctx],
    [titer_ctx_shaped]).  The bound proofs stay in the term, so the kernel
    checks [lia]'s certificates at [Qed]; what is gone is the equation
    [P = P] that an earlier walk rebuilt around them, node by node, with
    every subterm named on both sides (decision #101: that proof was most
    of [check_safe]'s share of [Qed] and of its own time). *)
Section SafeWalk.
  Context {X : Type} `{Shaped X}.

  (** The time iteration's step is walked with the state's extents as a
      fact, when the initial tensor's extents are kept by the step. *)
  Lemma safe_titer_shaped (s : list Z) (x : X) (f : X -> X) :
    shaped s x -> (forall u, shaped s u -> shaped s (f u)) ->
    (forall u : X, shaped s u -> True) -> True.
  Proof. auto. Qed.
End SafeWalk.

(** A binder's function as a [fun], named as [atl_eta_binder] names it. *)
Ltac atl_safe_fun_i F :=
  lazymatch F with
  | fun _ => _ => F
  | _ => constr:(fun i => F i)
  end.
Ltac atl_safe_fun_x F :=
  lazymatch F with
  | fun _ => _ => F
  | _ => constr:(fun x => F x)
  end.

(** Into a loop bounded by a quotient ([GEN [ io < N / w ]], the full
    vectors of a vectorized loop), the bound's linear consequence [io * w +
    w <= N] as a fact, once (lemma in Tensor/Arith.v): [lia] does not read
    a quotient's bound, so each access below ([v _[ w * io + l ]]) failed
    [lia] and went through [solve_idx], which derived the same fact again
    for every access.  Not done for a quotient as the lower bound (the
    vectorized loop's tail, [N / w <= io]): there the fact saved little
    time in [check_safe] and cost more at [Qed] (Directives/BlurVec.v:
    +0.17 s). *)
Ltac atl_safe_div_fact i hi Hi :=
  lazymatch hi with
  | (?x / ?c)%Z =>
      try (let Hd := fresh "Hdiv" in
           assert (Hd : (i * c + c <= x)%Z)
             by (apply (idx_div_lt_lin i x c); [ lia | exact (proj2 Hi) ]))
  | _ => idtac
  end.

Ltac atl_safe_walk report t :=
  lazymatch t with
  | @tzero _ _ => idtac
  | get ?v ?i =>
      atl_check_access v i report;
      atl_safe_arg report v; atl_safe_arg report i
  | iverson ?p ?e =>
      (* A guard that reads data ([|[ A _[ i ] =? 0 ]|]) reads it in C too.
         Into the guard, its predicate is turned into facts ([bool_hyps])
         once, rather than by [solve_idx] at every access below it; a guard
         that is false in context closes the walk below it. *)
      atl_safe_arg report p;
      let H := fresh "Hsafe_b" in
      assert (H : p = true -> True)
        by (let Hp := fresh "Hguard" in intros Hp; bool_hyps;
            atl_safe_walk report e; exact I);
      clear H
  | @genr _ _ ?lo ?hi ?F => atl_safe_loop report lo hi F
  | @sumr _ _ ?lo ?hi ?F => atl_safe_loop report lo hi F
  | atl_let ?e ?F =>
      atl_safe_bind report e F ltac:(fun F T y Hy H =>
        assert (H : forall y : T, y = e -> True)
          by (intros y Hy; let b := eval cbv beta in (F y) in
              atl_safe_walk report b; exact I))
  | titer _ ?e ?F =>
      atl_safe_bind report e F ltac:(fun F T y Hy H =>
        first
          [ assert (H : True)
              by (refine (safe_titer_shaped _ e F _ _ _);
                  [ solve_shape_iter_r
                  | intros y Hy; cbv beta; solve_shape_iter_r
                  | intros y Hy; let b := eval cbv beta in (F y) in
                    atl_safe_walk report b; exact I ])
          | assert (H : forall y : T, True)
              by (intros y; let b := eval cbv beta in (F y) in
                  atl_safe_walk report b; exact I) ])
  | ?F ?a ?b => atl_safe_arg report a; atl_safe_arg report b
  | ?F ?a => atl_safe_arg report a
  | _ => idtac
  end
(* A let's body or a time step [F] over [e]: [e] walked, then [k F T y Hy H]
   with [F] a [fun], [T] the type of [e], and names for the bound variable,
   its fact and the asserted walk (cleared after [k]). *)
with atl_safe_bind report e F k :=
  atl_safe_walk report e;
  let F := atl_safe_fun_x F in
  lazymatch F with
  | fun x => _ =>
      let T := type of e in
      let y := fresh x in let Hy := fresh "H" y in let H := fresh "Hsafe_b" in
      k F T y Hy H; clear H
  end
with atl_safe_arg report a :=
  tryif atl_is_index a then idtac else atl_safe_walk report a
with atl_safe_loop report lo hi F :=
  let F := atl_safe_fun_i F in
  lazymatch F with
  | fun x => _ =>
      let i := fresh x in let Hi := fresh "H" i in let H := fresh "Hsafe_b" in
      assert (H : forall i : Z, (lo <= i < hi)%Z -> True)
        by (intros i Hi; atl_safe_div_fact i hi Hi;
            let b := eval cbv beta in (F i) in
            atl_safe_walk report b; exact I);
      clear H
  end.

Ltac atl_report_strict v i n := fail.
Ltac atl_report_print v i n :=
  lazymatch n with
  | Some ?m => idtac "check_safe: cannot prove access in bounds:" v "_[" i "]  needs  0 <=" i "<" m
  | None => idtac "check_safe: unknown extent of the accessed tensor in:" v "_[" i "]"
  end.

Ltac atl_safe_pass report :=
  idtac;
  lazymatch goal with
  | |- ?P0 = _ =>
      (* Instructions and memory markers (Targets/Instr.v) are checked
         through their specification: the body IS the term. *)
      let P := atl_unfold_instrs P0 in
      let H := fresh "Hsafe" in
      assert (H : True) by (atl_safe_walk report P; exact I);
      clear H
  end.

Tactic Notation "check_safe" :=
  tryif atl_safe_pass atl_report_strict
  then idtac "check_safe: all accesses proved in bounds"
  else (atl_safe_pass atl_report_print;
        fail 0 "check_safe: some accesses could not be proved in bounds (listed above)").
