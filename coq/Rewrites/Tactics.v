(** * Derivation tactics (paper Sec. 4.3).

    A derivation is a goal [prog = ?derived] whose right-hand side is an
    evar (Coq's [Derive]).  Every step rewrites the left-hand side, which
    is therefore always the current program; the Python bridge prints it
    after each step.  [done] closes the goal, instantiating [?derived].

    - [reschedule]: start a derivation (intro hypotheses, unfold the
      program's name).
    - [rw L], [rw <- L]: rewrite once with lemma [L] at the first site, in
      pre-order, where [L]'s side of the equation unifies and every side
      condition is proved by [atl_side].  [rw L at pat] restricts the
      sites to nodes unifying with the pattern [pat].
    - [inline]: inline the first let; [inline p]: inline the let named
      [p]; [inline c]: unfold definition [c] (when no let is named [c]).
    - [name_buffer e as x]: bind subterm [e] as a let buffer [x].
    - [simpl_guard]: everywhere, drop guards whose predicate is provable in
      context, zero those provably false, then clean up zeros.
    - [check_safe]: prove every access in bounds, or list those it cannot.
    - [rename_buffer x into y], [rename_loop x into y]: rename a binder.
    - Name-preserving steps ([hoist x past pat], [swap_sum], [swap_gen],
      [guard_in], [guard_out], [split_tadd], [merge_tadd]): Rewrites/Steps.v.

    Descending into a binder applies the context lemma of Rewrites/Context.v
    and introduces the bound variable under its own name with its bounds,
    so side conditions see every enclosing fact, and a pattern or a lemma
    argument may mention the program's own loop variables. *)

From Coq Require Import ZArith List.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape Tensor.Iter.
From Verisched Require Import Rewrites.Context Rewrites.Let Rewrites.Guard Rewrites.Gen.
From Verisched Require Import Reshape.ShapeRules Rewrites.Lift.
From Ltac2 Require Ltac2.
Import ListNotations.

(** Side conditions: shapes (through the reshape operators too,
    Reshape/ShapeRules.v), then index arithmetic: first the linear
    decision procedure alone on the context as it is ([xlia], [lia]
    without [zify]; Tensor/Arith.v, [atl_lia]), which proves most index
    bounds, then [solve_idx], which first turns guards and [cdiv] into
    facts. *)
Ltac atl_side :=
  solve [ reflexivity | assumption | solve_shape_reshape | atl_xlia | solve_idx ].

(** Is [t] an index or a predicate, which the traversal never enters?

    Not decided by type alone: with scalars of type [Z] (the [Z] instance,
    Gemmini's integers) a scalar expression such as [A _[ i + 1 ] * A _[ i ]]
    has the type of an index, and skipping it would hide its accesses from
    [check_safe] (which would then accept an out-of-bounds read) and its
    subterms from [rw].  A term of type [Z], [bool] or [nat] is an index
    (or predicate, or configuration argument) unless it mentions an ATL
    construct: an access, a scalar or tensor operation, a sum, generation,
    guard or let.  Anything else is entered.

    Why this and not a table of index positions per construct (get's
    index, loop bounds, reshape extents, instruction offsets, ...): that
    table would have to grow with every reshape operator and instruction a
    library defines, and a position missing from it would again silently
    skip accesses; the rule below needs no registration, and where it errs
    it errs towards entering, which costs a few nodes of traversal but
    never soundness.  A [Z] term with an access in it is entered even in
    an index position (indirect indexing [v _[ idx _[ i ] ]]): [check_safe]
    then proves the inner access in bounds as well.  The only [Z] terms
    with ATL meaning it does not enter are those with no access and no
    ATL operation at all (a let-bound scalar variable, a numeral), where
    there is nothing to check and no ATL rewrite can apply inside. *)
Ltac atl_mentions_atl t :=
  match t with
  | context [@get _ _ _] => idtac
  | context [@sadd _ _ _ _] => idtac
  | context [@smul _ _ _ _] => idtac
  | context [@sdiv _ _ _ _] => idtac
  | context [@szero _ _] => idtac
  | context [@sone _ _] => idtac
  | context [@tadd _ _ _ _] => idtac
  | context [@tzero _ _] => idtac
  | context [@sumr _ _ _ _ _] => idtac
  | context [@genr _ _ _ _ _] => idtac
  | context [@iverson _ _ _ _] => idtac
  | context [@atl_let _ _ _ _] => idtac
  end.

Ltac atl_is_index t :=
  tryif atl_mentions_atl t then fail else
  let T := type of t in
  lazymatch T with
  | Z => idtac
  | bool => idtac
  | nat => idtac
  | _ => fail
  end.

Ltac atl_beta_lhs :=
  idtac;
  lazymatch goal with
  | |- ?P = ?R => let P' := eval cbv beta in P in change (P' = R)
  end.

(** [atl_rhs_is t; exact (L args)] closes [l = ?r] by a lemma whose
    right-hand side is [t] up to conversion (beta, binder names), with
    [?r := t]: the node's own binder names are kept.  It replaces [exact (L
    args : _ = t)], whose cast stayed in the proof term, where the kernel
    typed [t] again at [Qed] (6% of Sgemm.v's AVX2 derivation's term). *)
Ltac atl_rhs_is t := idtac; lazymatch goal with |- _ = ?r => unify r t end.

(** Under a binder the right-hand side is an evar applied to the bound
    variable ([?g i]).  Unifying a lemma against that flexible term makes
    Coq guess a first-order solution ([?g := ?f], [i := ?k]) and fail, so
    we first route through a fresh, unapplied evar. *)
Ltac atl_fresh_rhs k :=
  idtac;
  lazymatch goal with
  | |- ?t = ?R => tryif is_evar R then k else (refine (@eq_trans _ t _ R _ _); [ k | reflexivity ])
  end.

(** Unification may instantiate a binder's body eta-reduced
    ([genr 0 n (get f)] for [GEN [ i < n ] f _[ i ]]); expand it again so
    the traversal sees the access inside. *)
Ltac atl_eta_binder :=
  idtac;
  lazymatch goal with
  | |- @genr ?X ?E ?lo ?hi ?F = ?R =>
      lazymatch F with
      | fun _ => _ => idtac
      | _ => change (@genr X E lo hi (fun i => F i) = R)
      end
  | |- @sumr ?X ?E ?lo ?hi ?F = ?R =>
      lazymatch F with
      | fun _ => _ => idtac
      | _ => change (@sumr X E lo hi (fun i => F i) = R)
      end
  | |- @atl_let ?X ?Y ?e ?F = ?R =>
      lazymatch F with
      | fun _ => _ => idtac
      | _ => change (@atl_let X Y e (fun x => F x) = R)
      end
  | |- @titer ?X ?T ?e ?F = ?R =>
      lazymatch F with
      | fun _ => _ => idtac
      | _ => change (@titer X T e (fun x => F x) = R)
      end
  | _ => idtac
  end.

(** Into the step of a time iteration (Tensor/Iter.v): with the state's extents
    as a fact ([titer_ctx_shaped]: the initial tensor's, when the step keeps
    them, proved by [solve_shape]), else with no fact about the state. *)
(** [solve_shape_iter] with the reshape operators' rules
    ([solve_shape_reshape], Reshape/ShapeRules.v): a step tiled by [split]
    is a [trunc_r] of a [flatten].  (No third branch [solve_shape_reshape]
    alone: the second solves every goal it would, as in [solve_shape_iter].) *)
Ltac solve_shape_iter_r :=
  solve
    [ solve_shape_iter
    | solve_shape_reshape;
      lazymatch goal with
      | |- shaped _ (titer _ _ _) =>
          eapply shaped_titer;
          [ solve_shape_iter_r
          | let u := fresh "u" in let Hu := fresh "Hu" in
            intros u Hu; cbv beta; solve_shape_iter_r ]
      end ].

Ltac atl_into_step x k :=
  first
    [ eapply titer_ctx_shaped;
      [ solve_shape_iter_r
      | let y := fresh x in let Hy := fresh "H" y in intros y Hy; cbv beta; solve_shape_iter_r
      | let y := fresh x in let Hy := fresh "H" y in intros y Hy; atl_beta_lhs; k ]
    | eapply titer_ctx;
      [ exact eq_refl | let y := fresh x in intros y; atl_beta_lhs; k ] ].

(** Below a loop the descent's goal is [(fun i => B) i = (fun i => ?b) i]
    (the body of the new loop is an evar under its binder, so no
    transitivity step is needed to instantiate an applied evar, decision
    #101); both sides are beta-reduced.  [eval] and [change], not the [cbv]
    tactic, which would leave a cast, a copy of the goal, in the proof. *)
(* [change_no_check]: [P' = R'] is the goal's beta normal form by
   construction, and the kernel checks the conversion at [Qed] in any case;
   [change]'s own check (unifying [R], an evar applied to the bound
   variable, with [R']) took three quarters of this tactic's time.  A
   reduction tactic ([cbv beta]) would be cheaper still but leaves a cast
   with the old goal in the proof term, which made [Qed] dearer (#105). *)
Ltac atl_beta_both :=
  idtac;
  lazymatch goal with
  | |- ?P = ?R =>
      let P' := eval cbv beta in P in let R' := eval cbv beta in R in change_no_check (P' = R')
  end.

(** [atl_descend tac]: on a goal [t = ?r], run [tac] at the first node of
    [t] (pre-order, left to right) where it succeeds; every other node is
    closed by reflexivity.  Fails if there is no such node. *)
(** One step into a node: apply the context lemma of its binder (or, for
    other operators, [atl_cong_l] / [atl_cong_r], which name the child left
    alone once, or [f_equal]), run [rec] on one child, backtracking over the
    choice.  The context lemmas and the congruences are applied with [refine] (their
    arguments spelled out) rather than [eapply]: the same instance and the
    same two subgoals, without the clause-environment unifier, which was
    about a tenth of a derivation's time. *)
Ltac atl_into rec :=
  atl_eta_binder;
  lazymatch goal with
  | |- @tzero _ _ = _ => fail
  | |- @genr ?X ?E ?lo ?hi ?F = _ =>
      lazymatch F with fun x => _ =>
      let i := fresh x in let Hi := fresh "H" i in
      refine (@genr_ctx X E lo hi F (fun i => _) _); intros i Hi; atl_beta_both; rec
      end
  | |- @sumr ?X ?E ?lo ?hi ?F = _ =>
      lazymatch F with fun x => _ =>
      let i := fresh x in let Hi := fresh "H" i in
      refine (@sumr_ctx X E lo hi F (fun i => _) _); intros i Hi; atl_beta_both; rec
      end
  | |- @iverson ?X ?E ?p ?e = _ =>
      refine (@iverson_ctx X E p e _ _); let Hp := fresh "Hguard" in intros Hp; rec
  | |- titer _ _ (fun x => _) = _ =>
      first
        [ eapply titer_ctx; [ rec | let y := fresh x in intros y; exact eq_refl ]
        | atl_into_step x rec ]
  | |- atl_let _ (fun x => _) = _ =>
      first
        [ refine (let_ctx _ _ _ _ _ _);
          [ rec
          | let y := fresh x in let Hy := fresh "H" y in intros y Hy; exact eq_refl ]
        | refine (let_ctx _ _ _ _ _ _);
          [ exact eq_refl
          | let y := fresh x in let Hy := fresh "H" y in
            intros y Hy; atl_beta_lhs; rec ] ]
  | |- ?F ?a ?b = _ =>
      first
        [ tryif atl_is_index a then fail else (refine (atl_cong_l F a _ b _); rec)
        | tryif atl_is_index b then fail else (refine (atl_cong_r F a b _ _); rec) ]
  | |- ?F ?a = _ =>
      tryif atl_is_index a then fail else (refine (f_equal F (x:=a) _); rec)
  end.

(** [atl_descend_rec_prune none tac]: the search, failing at once on a
    subtree where [none] says [tac] can fire at no node (as
    [atl_everywhere_prune]'s [none]): the first site found is the same,
    since only subtrees without one are skipped.  [atl_descend_rec tac]:
    without that test. *)
Ltac atl_descend_rec_prune none tac :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      tryif none t then fail else
      atl_fresh_rhs ltac:(first [ tac | atl_into ltac:(atl_descend_rec_prune none tac) ])
  end.
Ltac atl_none_never t := fail.
Ltac atl_descend_rec tac := atl_descend_rec_prune atl_none_never tac.

(** The descent's proof in lifted form (Rewrites/Lift.v, decision #103): the
    same site, rewrite and new program, each node of the path named once. *)
Ltac atl_descend_prune none tac :=
  let f := ltac2:(k |- AtlLift.lifted (fun () => Ltac1.run k)) in
  f ltac:(idtac; atl_descend_rec_prune none tac).
Ltac atl_descend tac := atl_descend_prune atl_none_never tac.

(** [atl_everywhere_prune none may tac] ([atl_everywhere_may may tac] without
    [none]): run [tac] once at every node, bottom-up
    (so a node sees its children already rewritten); where [tac] fails the
    node is left as is.  [may t] says whether [tac] can rewrite the node [t]
    once its children are rewritten; a node where it cannot is entered
    without the transitivity step that would join [tac]'s rewrite to its
    children's: no [tac] attempt there and a smaller proof (decision #101).
    [may] must be sound: it may answer yes for a node [tac] leaves alone,
    never no for a node [tac] rewrites.  A test on the node's head is, since
    rewriting the children keeps it.  A node that is no application (a
    variable, a constant) has no children: [tac] runs on it directly,
    without a transitivity step (decision #98).  [none t] (the [prune]
    variant) says that [tac] can rewrite no node of the subtree [t]: no
    application in it passes [may] and no leaf is one [tac] rewrites.  The
    subtree is then closed by reflexivity without being entered (if no node
    fires, no node's children change, so each node is met as it is in [t]).
    It must be sound the same way: it may fail on a subtree with no site,
    never succeed on one with a site.  Entering a node costs a
    context lemma, [intros] and a [change] (about 0.3 ms); [none] is one
    [context] match, Coq's own subterm search in OCaml (decision #106). *)
Ltac atl_everywhere_prune none may tac :=
  idtac;
  lazymatch goal with
  | |- ?t = ?r =>
      tryif none t then exact eq_refl else
      lazymatch t with
      | _ _ =>
          tryif may t then
            (refine (@eq_trans _ t _ r _ _);
             [ atl_fresh_rhs ltac:(atl_children ltac:(atl_everywhere_prune none may tac))
             | atl_beta_lhs; first [ tac | exact eq_refl ] ])
          else atl_fresh_rhs ltac:(atl_children ltac:(atl_everywhere_prune none may tac))
      | _ => first [ tac | exact eq_refl ]
      end
  end
with atl_children k :=
  atl_eta_binder;
  lazymatch goal with
  | |- @tzero _ _ = _ => exact eq_refl
  (* the scalar constants are leaves: [@szero S inst] is an application whose
     head's type is dependent, which [f_equal2] below cannot take (the whole
     pass over an enclosing node failed: a lane guard above [smax x szero],
     a ReLU, was left unnormalized by [vector_index]) *)
  | |- @szero _ _ = _ => exact eq_refl
  | |- @sone _ _ = _ => exact eq_refl
  | |- @genr ?X ?E ?lo ?hi ?F = _ =>
      lazymatch F with fun x => _ =>
      refine (@genr_ctx X E lo hi F _ _); let i := fresh x in let Hi := fresh "H" i in
      intros i Hi; atl_beta_lhs; k
      end
  | |- @sumr ?X ?E ?lo ?hi ?F = _ =>
      lazymatch F with fun x => _ =>
      refine (@sumr_ctx X E lo hi F _ _); let i := fresh x in let Hi := fresh "H" i in
      intros i Hi; atl_beta_lhs; k
      end
  | |- @iverson ?X ?E ?p ?e = _ =>
      refine (@iverson_ctx X E p e _ _); let Hp := fresh "Hguard" in intros Hp; k
  | |- titer _ _ (fun x => _) = _ =>
      refine (eq_trans _ _);
      [ eapply titer_ctx; [ k | let y := fresh x in intros y; exact eq_refl ]
      | atl_eta_binder; atl_into_step x k ]
  | |- @atl_let ?X ?Y ?e ?F = _ =>
      lazymatch F with fun x => _ =>
      refine (@let_ctx X Y e _ F _ _ _);
      [ k | let y := fresh x in let Hy := fresh "H" y in intros y Hy; atl_beta_lhs; k ]
      end
  | |- ?F ?a ?b = _ =>
      refine (@f_equal2 _ _ _ F a _ b _ _ _);
      [ tryif atl_is_index a then exact eq_refl else k
      | tryif atl_is_index b then exact eq_refl else k ]
  | |- ?F ?a = _ =>
      refine (f_equal F (x:=a) _); tryif atl_is_index a then exact eq_refl else k
  | |- _ = _ => exact eq_refl
  end.

(** [atl_everywhere tac]: [tac] tried at every node. *)
Ltac atl_may_any t := idtac.
Ltac atl_everywhere_may may tac := atl_everywhere_prune atl_none_never may tac.
Ltac atl_everywhere tac := atl_everywhere_may atl_may_any tac.

(** Is [R] the right-hand side of a derivation still open: an evar, or
    the name Coq's [Derive] gives the derived program (a local definition
    whose body is that evar)?  [reschedule] keeps the name: the proof then
    refers to the program by it, one token where the evar would stand for
    the whole final program in every step's [eq_trans] (Derive replaces
    the name by the defined constant), and the kernel typed and
    hash-consed each copy at [Qed]. *)
Ltac atl_is_open R :=
  first [ is_evar R | is_var R; let b := eval cbv delta [R] in R in is_evar b ].

(** A rewrite step on the derivation goal [P = ?R]. *)
Ltac atl_check_goal :=
  idtac;
  lazymatch goal with
  | |- _ = ?R => tryif atl_is_open R then idtac else
      fail 0 "not inside a derivation: the goal's right-hand side must be the program being derived (start with reschedule)"
  | _ => fail 0 "not inside a derivation: expected a goal  program = ?derived"
  end.

Ltac atl_step_prune none tac :=
  atl_check_goal;
  lazymatch goal with |- ?t = ?r => refine (@eq_trans _ t _ r _ _) end;
  [ atl_descend_prune none tac | ]; atl_beta_lhs.
Ltac atl_step tac := atl_step_prune atl_none_never tac.

(** ** Root actions

    Coq's unifier would happily unfold [get], [genr] and the [Z] comparisons
    to match a lemma against an unrelated node, and can spend minutes doing
    so.  Before [eapply] we therefore check that the node has the same
    syntactic skeleton as the lemma's side: equal constants and
    applications, with the lemma's variables (evars) matching anything.
    Binder bodies are compared after substituting a common dummy index. *)

(** The skeleton walk, in Ltac2 (build time: in Ltac1 it was a fifth of a
    rewrite step).  [skel d l t]: [l] and [t] agree on constants and
    applications, where [l] is a pattern whose wildcards are its evars and
    its de Bruijn indices above [d] (the quantifiers of a lemma, for
    [atl_skel_check], which so needs no evar per quantifier), and the
    application of a wildcard ([?f i j], a higher-order pattern) matches
    anything; binder bodies are compared under the binder (as with a common
    variable).  Exactly the Ltac1 walk it replaces: an evar or a quantifier
    matches anything; a term equal to [t] matches; an application is walked
    along both spines from the last argument (a partial application equal to
    [t]'s ends the walk, so both spines have the same length otherwise); a
    non-dependent product matches one; a [fun] matches a [fun]; nothing else
    matches. *)
Module AtlSkel.
Import Ltac2.Ltac2.

Ltac2 wild (d : int) (l : constr) : bool :=
  match Constr.Unsafe.kind l with
  | Constr.Unsafe.Evar _ _ => true
  | Constr.Unsafe.Rel i => Int.gt i d
  | _ => false
  end.

Ltac2 rec head_wild (d : int) (l : constr) : bool :=
  match Constr.Unsafe.kind l with
  | Constr.Unsafe.App f _ => head_wild d f
  | _ => wild d l
  end.

(** [f a1 .. an] as [(f a1 .. a(n-1), an)]. *)
Ltac2 split_app (t : constr) : (constr * constr) option :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.App f args =>
      let n := Array.length args in
      let last := Array.get args (Int.sub n 1) in
      if Int.equal n 1 then Some (f, last)
      else Some (Constr.Unsafe.make (Constr.Unsafe.App f (Array.sub args 0 (Int.sub n 1))), last)
  | _ => None
  end.

(** Does [Rel k] occur in [t]? *)
Ltac2 rec occurs_rel (k : int) (t : constr) : bool :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.Rel i => Int.equal i k
  | Constr.Unsafe.App f args => if occurs_rel k f then true else Array.exist (occurs_rel k) args
  | Constr.Unsafe.Lambda b body =>
      if occurs_rel k (Constr.Binder.type b) then true else occurs_rel (Int.add k 1) body
  | Constr.Unsafe.Prod b body =>
      if occurs_rel k (Constr.Binder.type b) then true else occurs_rel (Int.add k 1) body
  | Constr.Unsafe.LetIn b v body =>
      if occurs_rel k (Constr.Binder.type b) then true
      else if occurs_rel k v then true else occurs_rel (Int.add k 1) body
  | Constr.Unsafe.Cast c _ ty => if occurs_rel k c then true else occurs_rel k ty
  | Constr.Unsafe.Evar _ args => Array.exist (occurs_rel k) args
  | Constr.Unsafe.Case _ _ _ _ _ => true
  | Constr.Unsafe.Fix _ _ _ _ => true
  | Constr.Unsafe.CoFix _ _ _ => true
  | Constr.Unsafe.Proj _ c => occurs_rel k c
  | _ => false
  end.

(** [t] in beta normal form (the Ltac1 walk compared binder bodies after
    [cbv beta]; [t], the program, is kept in that form by the traversal). *)
Ltac2 rec nf_beta (t : constr) : constr :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.App f args =>
      let f := nf_beta f in
      let args := Array.map nf_beta args in
      match Constr.Unsafe.kind f with
      | Constr.Unsafe.Lambda _ body =>
          let n := Array.length args in
          let r := nf_beta (Constr.Unsafe.substnl [Array.get args 0] 0 body) in
          if Int.equal n 1 then r
          else nf_beta (Constr.Unsafe.make (Constr.Unsafe.App r (Array.sub args 1 (Int.sub n 1))))
      | _ => Constr.Unsafe.make (Constr.Unsafe.App f args)
      end
  | Constr.Unsafe.Lambda b body => Constr.Unsafe.make (Constr.Unsafe.Lambda b (nf_beta body))
  | Constr.Unsafe.Prod b body => Constr.Unsafe.make (Constr.Unsafe.Prod b (nf_beta body))
  | Constr.Unsafe.LetIn b v body => Constr.Unsafe.make (Constr.Unsafe.LetIn b (nf_beta v) (nf_beta body))
  | Constr.Unsafe.Cast c k ty => Constr.Unsafe.make (Constr.Unsafe.Cast (nf_beta c) k ty)
  | _ => t
  end.

Ltac2 rec skel (d : int) (l : constr) (t : constr) : bool :=
  if wild d l then true
  else if Constr.equal l t then true
  else if head_wild d l then true
  else
    match Constr.Unsafe.kind l with
    | Constr.Unsafe.App _ _ => skel_app d l t   (* [l <> t]: walks both spines *)
    | Constr.Unsafe.Prod b body =>
        if occurs_rel 1 body then false else
        match Constr.Unsafe.kind t with
        | Constr.Unsafe.Prod b' body' =>
            if occurs_rel 1 body' then false
            else if skel d (Constr.Binder.type b) (Constr.Binder.type b') then skel (Int.add d 1) body body'
            else false
        | _ => false
        end
    | Constr.Unsafe.Lambda _ body =>
        match Constr.Unsafe.kind t with
        | Constr.Unsafe.Lambda _ tbody => skel (Int.add d 1) (nf_beta body) tbody
        | _ => false
        end
    | _ => false
    end
with skel_app (d : int) (l : constr) (t : constr) : bool :=
  if Constr.equal l t then true
  else
    match split_app l with
    | Some lp =>
        match split_app t with
        | Some tp =>
            let (lf, la) := lp in
            let (tf, ta) := tp in
            if skel_app d lf tf then skel d la ta else false
        | None => false
        end
    | None => skel d l t
    end.

(** The head of an application ([f] in [f a1 .. an]). *)
Ltac2 rec head (c : constr) : constr :=
  match Constr.Unsafe.kind c with
  | Constr.Unsafe.App f _ => head f
  | _ => c
  end.

(** [skel d l t] is false when [l]'s head is a constant, an inductive, a
    constructor or a variable and [t]'s head is another one: [Constr.equal
    l t] is then false, and the spine walk of [skel_app] ends on those two
    heads, which [skel] compares with [Constr.equal] (a wildcard head, the
    only way two different heads match, is excluded).  Checked first
    because almost every node a traversal visits fails here, and the walk
    costs about 0.2 ms where this costs a few microseconds (build time,
    issue 16). *)
Ltac2 heads_differ (d : int) (l : constr) (t : constr) : bool :=
  let hl := head l in
  let rigid :=
    match Constr.Unsafe.kind hl with
    | Constr.Unsafe.Constant _ _ => true
    | Constr.Unsafe.Ind _ _ => true
    | Constr.Unsafe.Constructor _ _ => true
    | Constr.Unsafe.Var _ => true
    | Constr.Unsafe.Rel i => Int.le i d
    | _ => false
    end in
  if rigid then Bool.neg (Constr.equal hl (head t)) else false.

Ltac2 of1 (x : Ltac1.t) : constr :=
  match Ltac1.to_constr x with
  | Some c => c
  | None => Control.throw (Tactic_failure None)
  end.

(** Does some subterm of [t] ([t] itself included; the prefixes [f a1 ..
    ak] of an application too, whose own subterms are [f] and the [ai])
    pass [skel 0 p]?  Over-approximated where the walk does not look: a
    [match], a fixpoint, a projection or an evar counts as yes. *)
Ltac2 skel_one (p : constr) (t : constr) : bool :=
  if heads_differ 0 p t then false else skel 0 p t.
Ltac2 rec skel_any (p : constr) (t : constr) : bool :=
  if skel_one p t then true else skel_sub p t
(** ... some subterm other than [t] itself. *)
with skel_sub (p : constr) (t : constr) : bool :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.App f args =>
      let n := Array.length args in
      let rec prefixes k :=
        if Int.ge k n then false
        else if skel_one p (Constr.Unsafe.make (Constr.Unsafe.App f (Array.sub args 0 k))) then true
        else prefixes (Int.add k 1) in
      if prefixes 1 then true
      else if skel_any p f then true
      else Array.exist (skel_any p) args
  | Constr.Unsafe.Lambda b body =>
      if skel_any p (Constr.Binder.type b) then true else skel_any p body
  | Constr.Unsafe.Prod b body =>
      if skel_any p (Constr.Binder.type b) then true else skel_any p body
  | Constr.Unsafe.LetIn b v body =>
      if skel_any p (Constr.Binder.type b) then true
      else if skel_any p v then true else skel_any p body
  | Constr.Unsafe.Cast c _ ty => if skel_any p c then true else skel_any p ty
  | Constr.Unsafe.Case _ _ _ _ _ => true
  | Constr.Unsafe.Fix _ _ _ _ => true
  | Constr.Unsafe.CoFix _ _ _ => true
  | Constr.Unsafe.Proj _ _ => true
  | Constr.Unsafe.Evar _ _ => true
  | _ => false
  end.

(** Fails unless some subterm of [t] other than [t] passes [atl_skel p]:
    [atl_name_root] binds a subterm only where that check passes, and it
    enumerates every subterm with [match t with context [?e]], about
    0.05 ms each in Ltac1, at every node its post-order descent visits
    (every node below and before the site).  This walk, a few microseconds
    a subterm, lets it skip the nodes with no candidate (build time). *)
Ltac2 skel_sub_tac (p : Ltac1.t) (t : Ltac1.t) : unit :=
  if skel_sub (of1 p) (of1 t) then () else Control.zero (Tactic_failure None).

Ltac2 skel_tac (l : Ltac1.t) (t : Ltac1.t) : unit :=
  if skel_one (of1 l) (of1 t) then () else Control.zero (Tactic_failure None).

(** A statement without its leading quantifiers. *)
Ltac2 rec strip (ty : constr) : constr :=
  match Constr.Unsafe.kind ty with
  | Constr.Unsafe.Prod _ body => strip body
  | Constr.Unsafe.Cast c _ _ => strip c
  | _ => ty
  end.

(** [keep_tac tac k]: runs [tac] on a continuation that receives a term,
    then undoes everything [tac] did (its evars: the implicit arguments of
    a lemma or an instruction elaborated to read its head) and passes the
    term to [k].  The term must not mention those evars (a constant). *)
Ltac2 Type exn ::= [ AtlKept (constr) ].
Ltac2 keep_tac (tac : Ltac1.t) (k : Ltac1.t) : unit :=
  let v := match Control.case (fun () =>
             Ltac1.apply tac [Ltac1.lambda (fun x => Control.zero (AtlKept (of1 x)))] Ltac1.run) with
           | Val _ => 'tt
           | Err e => match e with AtlKept h => h | _ => 'tt end
           end in
  Ltac1.apply k [Ltac1.of_constr v] Ltac1.run.

(** The left ([dir] true) or right side of the statement [ty] of a lemma,
    [forall xs, l = r] (with the [xs] as de Bruijn indices), or [None]
    when the statement is no equation. *)
Ltac2 eq_side (ty : Ltac1.t) (dir : Ltac1.t) : constr option :=
  let c := strip (of1 ty) in
  match Constr.Unsafe.kind c with
  | Constr.Unsafe.App e args =>
      if Bool.and (Constr.equal e '@eq) (Int.equal (Array.length args) 3) then
        Some (Array.get args (if Constr.equal (of1 dir) 'true then 1 else 2))
      else None
  | _ => None
  end.

(** The head of that side, passed to the Ltac1 continuation [k]; [tt]
    where it is not a constant (a quantified function, a [fun]) or the
    statement is no equation: a pass that rewrites with the lemma can fire
    only at a node with that head (the skeleton check), so a subtree
    without it is left unentered. *)
Ltac2 lhs_head_tac (ty : Ltac1.t) (dir : Ltac1.t) (k : Ltac1.t) : unit :=
  let h := match eq_side ty dir with
           | Some side =>
               let hd := head side in
               match Constr.Unsafe.kind hd with
               | Constr.Unsafe.Constant _ _ => hd
               | _ => 'tt
               end
           | None => 'tt
           end in
  Ltac1.apply k [Ltac1.of_constr h] Ltac1.run.

(** A lemma's statement [forall xs, l = r]: [l] ([dir] true) or [r] against
    [t], the [xs] as wildcards; [notEq] (an Ltac1 tactic) when the
    statement is no equation. *)
Ltac2 skel_lemma_tac (ty : Ltac1.t) (dir : Ltac1.t) (t : Ltac1.t) (notEq : Ltac1.t) : unit :=
  match eq_side ty dir with
  | Some side => if skel_one side (of1 t) then () else Control.zero (Tactic_failure None)
  | None => Ltac1.run notEq
  end.

(** [memo_run norm k]: [k f], where the Ltac1 function [f t k'] calls [k']
    with [norm]'s result for [t] ([norm t k''] calls [k''] with it),
    computed at the first request for a term equal to [t] in this run of
    [k] and reused after.  For [atl_ring_norm] over a pass: the same index
    recurs at many nodes (each tap of a stencil, under each tile), and
    [ring_simplify] is about 12 ms a call.  The result is a proposal: every
    caller proves [t = u] in its own context ([lia], [ring]), and the
    normal form depends only on the term (a variable is an atom, whatever
    binds it). *)
Ltac2 rec memo_find (c : (constr * constr) list) (t : constr) : constr option :=
  match c with
  | [] => None
  | p :: r => let (a, b) := p in if Constr.equal a t then Some b else memo_find r t
  end.
Ltac2 memo_run (norm : Ltac1.t) (k : Ltac1.t) : unit :=
  let cache := Array.make 1 [] in
  let f := Ltac1.lambda (fun t => Ltac1.lambda (fun k' =>
    let tc := of1 t in
    (match memo_find (Array.get cache 0) tc with
     | Some u => Ltac1.apply k' [Ltac1.of_constr u] Ltac1.run
     | None =>
         Ltac1.apply norm [t; Ltac1.lambda (fun u =>
           Array.set cache 0 ((tc, of1 u) :: Array.get cache 0);
           Ltac1.apply k' [u] Ltac1.run; ltac1val:(idtac))] Ltac1.run
     end);
    ltac1val:(idtac))) in
  Ltac1.apply k [f] Ltac1.run.
End AtlSkel.

Ltac atl_skel l t := let f := ltac2:(l t |- AtlSkel.skel_tac l t) in f l t.
Ltac atl_skel_sub l t := let f := ltac2:(l t |- AtlSkel.skel_sub_tac l t) in f l t.

(** [atl_ring_memo k]: [k f] with [f t k'] as [atl_ring_norm t k'], each
    distinct [t] normalized once in the run of [k] ([memo_run]). *)
Ltac atl_ring_memo k :=
  let g := ltac2:(norm k |- AtlSkel.memo_run norm k) in g atl_ring_norm k.

(** [atl_keep tac k]: [k v] where [tac] computes [v] (by calling its
    continuation), with [tac]'s effects undone: see [keep_tac].  [k tt]
    where [tac] fails. *)
Ltac atl_keep tac k := let f := ltac2:(tac k |- AtlSkel.keep_tac tac k) in f tac k.

(** [atl_side_head L dir k]: [k] applied to the head constant of lemma [L]'s
    left ([dir] true) or right side, or to [tt] (see [lhs_head_tac]); [L]'s implicit arguments are
    elaborated only for the look and left no trace. *)
Ltac atl_side_head L dir k :=
  atl_keep ltac:(fun k' =>
    let L' := open_constr:(L) in
    let T := type of L' in
    let f := ltac2:(ty dir k |- AtlSkel.lhs_head_tac ty dir k) in
    f T dir k') k.

(** [atl_none_head h t]: [t] has no subterm with head [h] (a constant;
    [tt] stands for "unknown" and never prunes).  The subterm search is
    Coq's own [context] matching, in OCaml, a few microseconds a node. *)
Ltac atl_none_head h t :=
  tryif constr_eq h tt then fail
  else lazymatch t with context [h] => fail | _ => idtac end.

(** [dir] is [true] to match the lemma's left side (rewrite left to right). *)
Ltac atl_skel_check L dir :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      let L' := open_constr:(L) in
      let T := type of L' in
      let f := ltac2:(ty dir t k |- AtlSkel.skel_lemma_tac ty dir t k) in
      f T dir t ltac:(fail 100 "rw: the lemma is not an equation")
  end.

Ltac atl_root_l L := assert_succeeds (atl_skel_check L true); eapply L; atl_side.
Ltac atl_root_r L := assert_succeeds (atl_skel_check L false); eapply eq_sym; eapply L; atl_side.
Ltac atl_match pat :=
  idtac;
  lazymatch goal with
  | |- ?t = _ => let p := open_constr:(pat) in assert_succeeds (atl_skel p t); unify t p
  end.

(** Diagnostics when [rw] finds no site: show every node where the
    lemma's side unifies, and the side conditions left unproved there. *)
Ltac atl_diag_print :=
  first [ solve [ atl_side ]
        | match goal with |- ?g => idtac "    unproved side condition:" g end ].

Ltac atl_diag_root app :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      tryif assert_succeeds app then
        (idtac "  candidate site:" t; assert_fails (app; atl_diag_print; fail))
      else idtac;
      fail
  end.

Ltac atl_rw_diag app :=
  tryif (etransitivity; [ atl_descend_rec ltac:(atl_diag_root app) | ]) then idtac else idtac.

Ltac atl_rw_fail name :=
  fail 0 "rw" name ": no site where the lemma applies with all side conditions proved (candidate sites, if any, are listed above)".

(** Is there a node where [tac] succeeds (nothing is changed)?  A search
    whose proof is discarded runs the descent itself, [atl_descend_rec]: the
    lifted proof ([atl_descend], decision #103) would be built for nothing. *)
Ltac atl_has_node tac :=
  assert_succeeds (etransitivity; [ atl_descend_rec ltac:(tac; reflexivity) | ]).

(** What [rw] prints when it finds no site: the candidate sites with their
    unproved side conditions or, when there is none, why: no node has the
    lemma's shape, or ([at pat]) no node matches the pattern, or nodes
    match the pattern but none has the lemma's shape. *)
Ltac atl_rw_explain app :=
  tryif atl_has_node ltac:(assert_succeeds app)
  then (idtac "  candidates:"; atl_rw_diag app)
  else idtac "  no node of the program has the shape of the lemma's rewritten side".

Ltac atl_rw_explain_at pat app :=
  tryif atl_has_node ltac:(atl_match pat)
  then (tryif atl_has_node ltac:(assert_succeeds (atl_match pat; app))
        then (idtac "  candidates:"; atl_rw_diag ltac:(atl_match pat; app))
        else idtac "  nodes match the pattern" pat "but none of them has the shape of the lemma's rewritten side")
  else idtac "  no node of the program matches the pattern" pat.

(** [rw]'s search enters no subtree without a node headed as the lemma's
    side (where every skeleton check would fail): the same first site. *)
Ltac atl_rw_step L dir root :=
  atl_side_head L dir ltac:(fun h => atl_step_prune ltac:(atl_none_head h) root).

(** [atl_step (atl_root_l L)] with that search. *)
Ltac atl_step_l L := atl_rw_step L true ltac:(atl_root_l L).

(** The head of an application. *)
Ltac atl_head t := lazymatch t with ?f _ => atl_head f | _ => t end.

(** [atl_pat_head pat k]: [k] applied to the head of the pattern [pat]
    where it is a constant, else to [tt]; [pat]'s holes are elaborated only
    for the look ([atl_keep]). *)
Ltac atl_pat_head pat k :=
  atl_keep ltac:(fun k' => let p := open_constr:(pat) in let h := atl_head p in
                           tryif is_const h then k' h else k' tt) k.

(** [atl_step (atl_match pat; tac)], the search entering no subtree without
    a node headed as [pat] ([atl_match]'s skeleton check fails elsewhere).
    A [tac] that begins with [lazymatch] or [let] is passed as
    [ltac:(idtac; ..)], or Ltac runs it where it is passed. *)
Ltac atl_step_at pat tac :=
  atl_pat_head pat ltac:(fun h => atl_step_prune ltac:(atl_none_head h) ltac:(atl_match pat; tac)).

Tactic Notation "rw" uconstr(L) :=
  atl_check_goal; tryif atl_rw_step L true ltac:(atl_root_l L) then idtac
  else (idtac "rw" L ": no site found;";
          atl_rw_explain ltac:(assert_succeeds (atl_skel_check L true); eapply L); atl_rw_fail L).

Tactic Notation "rw" "<-" uconstr(L) :=
  atl_check_goal; tryif atl_rw_step L false ltac:(atl_root_r L) then idtac
  else (idtac "rw <-" L ": no site found;";
          atl_rw_explain ltac:(assert_succeeds (atl_skel_check L false); eapply eq_sym; eapply L); atl_rw_fail L).

Tactic Notation "rw" uconstr(L) "at" uconstr(pat) :=
  atl_check_goal; tryif atl_rw_step L true ltac:(atl_match pat; atl_root_l L) then idtac
  else (idtac "rw" L "at" pat ": no site found;";
          atl_rw_explain_at pat ltac:(assert_succeeds (atl_skel_check L true); eapply L); atl_rw_fail L).

Tactic Notation "rw" "<-" uconstr(L) "at" uconstr(pat) :=
  atl_check_goal; tryif atl_rw_step L false ltac:(atl_match pat; atl_root_r L) then idtac
  else (idtac "rw <-" L "at" pat ": no site found;";
          atl_rw_explain_at pat ltac:(assert_succeeds (atl_skel_check L false); eapply eq_sym; eapply L); atl_rw_fail L).

(** [inline]: inline the first let (Sec. 4.1). *)
Tactic Notation "inline" :=
  tryif atl_step_prune ltac:(atl_none_head (@atl_let)) ltac:(atl_root_l uconstr:(unfold_let)) then idtac
  else (fail 0 "inline: the program has no let to inline").

(** [name_buffer pat as x]: bind a subterm as a let buffer [x] (let
    introduction).  [pat] is a pattern whose holes stand for the program's
    loop variables, e.g. [name_buffer (x _[ _ ] _[ _ + _ ]) as a].  The let
    is placed at the smallest node strictly containing the first matching
    subterm, i.e. as close to its use as possible (Fig. 12, first step);
    the [ll_*] and [let_*_lift] rewrites then move it outward. *)
Ltac atl_descend_post tac :=
  atl_fresh_rhs ltac:(first [ atl_into ltac:(atl_descend_post tac) | tac ]).

(** A [bool] evar used as a flag: set by [unify s true]. *)
Ltac hoist_flag_set s := let v := eval hnf in s in lazymatch v with true => idtac end.

(** [hoist_up mv]: [mv] rewrites the node it is run on by moving one of
    its children's constructs above it (a let out of a loop, [stage] and
    [compute_root]; a loop out of a guard, [reorder]'s and
    [register_tile]'s guards moved into the inner loop).  Every such move
    up one path, in one traversal: the first node (pre-order) where [mv]
    applies, then each node on the way back up, until the root or a node
    where [mv] does not apply (recorded in [b]; nothing above it changes)
    or, for [hoist_up_rec_until stop], where [stop] succeeds ([hoist]'s
    [hoist_rec], Rewrites/Steps.v, stops after the move out of the node
    matching its pattern).  These are the moves [repeat atl_step mv]
    makes, which descends from the root once per move and finds the moved
    construct's new parent each time (the nodes before it in pre-order are
    its ancestors or lie in subtrees already passed over), but the proof
    has one path instead of one per move, so [Qed] checks the subtrees on
    the way once instead of once per level (decision #102).
    [hoist_up_step mv] fails where [mv] applies nowhere ([hoist_up_all mv]
    then makes every path's moves); [hoist_up mv] never fails (no move
    leaves the goal as is). *)
Ltac hoist_up_rec_until stop mv b :=
  atl_fresh_rhs ltac:(
    first
      [ mv
      | etransitivity;
        [ atl_into ltac:(hoist_up_rec_until stop mv b)
        | atl_beta_lhs;
          tryif stop then reflexivity
          else tryif hoist_flag_set b then reflexivity
          else first [ mv | unify b true; reflexivity ] ] ]).

Ltac hoist_up_rec mv b := hoist_up_rec_until ltac:(idtac; fail) mv b.

Ltac hoist_up_step mv :=
  let b := open_constr:(_ : bool) in
  etransitivity; [ hoist_up_rec mv b | ]; atl_beta_lhs;
  try unify b false.

Ltac hoist_up mv := try hoist_up_step mv.

(** Every path's moves: [repeat hoist_up_step mv], each step first
    checked by [atl_has_node], whose search ([atl_descend_rec]) finds the
    first site without [hoist_up_rec]'s transitivity step at every node it
    enters: where no site is left (the common last step, and often the
    only one) the failing search costs what [repeat atl_step mv]'s last
    step cost. *)
Ltac hoist_up_all mv :=
  repeat (atl_has_node mv; hoist_up_step mv).

Ltac atl_name_root pat x :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      let p := open_constr:(pat) in
      atl_skel_sub p t;
      match t with
      | context [?e] =>
          tryif constr_eq e t then fail else idtac;
          atl_skel p e; unify e p;
          let T := type of e in
          let F := constr:(fun x : T => ltac:(
                     let body := eval pattern e in t in
                     lazymatch body with ?G _ => let b := eval cbv beta in (G x) in exact b end)) in
          eapply (let_intro e F)
      end
  end.

Tactic Notation "name_buffer" uconstr(pat) "as" ident(x) :=
  atl_check_goal;
  tryif (etransitivity; [ atl_descend_post ltac:(atl_name_root pat x) | ]; atl_beta_lhs)
  then idtac
  else fail 0 "name_buffer: no subterm of the program matches" pat.

(** [simpl_guard]: one top-down pass; see the header. *)
(** Each lemma is tried only at nodes with the head of its left side (the
    same sites as trying all of them everywhere, since a site must have
    the lemma's skeleton, but without elaborating eleven lemmas at every
    node of the program). *)
Ltac atl_guard_root :=
  idtac;
  lazymatch goal with
  | |- iverson _ _ = _ =>
      first [ atl_root_l uconstr:(guard_elim)
            | atl_root_l uconstr:(guard_zero)
            | atl_root_l uconstr:(guard_and_l)
            | atl_root_l uconstr:(guard_and_r)
            | atl_root_l uconstr:(guard_of_zero) ]
  | |- tadd _ _ = _ =>
      first [ atl_root_l uconstr:(tadd_0_l')
            | atl_root_l uconstr:(tadd_0_r') ]
  | |- smul _ _ = _ =>
      first [ atl_root_l uconstr:(smul_zero_l)
            | atl_root_l uconstr:(smul_zero_r) ]
  | |- sumr _ _ _ = _ => atl_root_l uconstr:(sum_zero)
  | |- genr _ _ _ = _ => atl_root_l uconstr:(gen_zero)
  end.

(** Where [atl_guard_root] can fire: its heads, over a subtree with a guard
    or a zero (every rule needs one at or below its site, and rewriting
    makes a zero only from a guard). *)
Ltac atl_guard_may t :=
  lazymatch t with
  | iverson _ _ => idtac
  | tadd _ _ => idtac
  | smul _ _ => idtac
  | sumr _ _ _ => idtac
  | genr _ _ _ => idtac
  end;
  lazymatch t with
  | context [iverson _ _] => idtac
  | context [@tzero _ _] => idtac
  end.

(** A [simpl_guard] that changes nothing fails, listing the guards it saw
    (a derivation step that does nothing is a mistake in the script). *)
Ltac atl_print_guards :=
  try assert_succeeds
    (etransitivity;
     [ atl_descend_rec ltac:(idtac; lazymatch goal with
                         | |- iverson ?p _ = _ => idtac "  |[" p "]|"; fail
                         end)
     | ]).

(** No guard and no zero in [t]: no node of [t] passes [atl_guard_may]. *)
Ltac atl_guard_none t :=
  lazymatch t with
  | context [iverson _ _] => fail
  | context [@tzero _ _] => fail
  | _ => idtac
  end.

Ltac simpl_guard :=
  atl_check_goal;
  lazymatch goal with
  | |- ?P0 = _ =>
      atl_step ltac:(atl_everywhere_prune atl_guard_none atl_guard_may atl_guard_root);
      lazymatch goal with
      | |- ?P1 = _ =>
          tryif constr_eq P0 P1 then
            (tryif atl_has_node ltac:(idtac; lazymatch goal with |- iverson _ _ = _ => idtac end)
             then (idtac "simpl_guard: no guard can be removed or zeroed: none is provably true or false in its context; the guards are:";
                   atl_print_guards;
                   fail 0 "simpl_guard: no guard can be removed or zeroed (the guards are listed above)")
             else (idtac "simpl_guard: no guard can be removed or zeroed: the program has no guard";
                   fail 0 "simpl_guard: no guard can be removed or zeroed: the program has no guard"))
          else idtac
      end
  end.

(** [reschedule]: start a derivation.  Introduces hypotheses (shapes of
    the inputs) and unfolds the program's own name, so the first printed
    program is the algorithm itself. *)
Ltac reschedule :=
  intros;
  lazymatch goal with
  | |- ?P = ?R =>
      tryif atl_is_open R then idtac
      else fail 0 "reschedule: expected a goal  program = ?derived  (state it with Derive ... SuchThat (prog = derived))";
      let h := atl_head P in
      tryif is_const h then
        (let P' := eval unfold h in P in change (P' = R); atl_beta_lhs)
      else idtac
  | _ => fail 0 "reschedule: expected a goal  program = ?derived"
  end.

(** [done]: end the derivation, instantiating the derived program. *)
Ltac done :=
  lazymatch goal with
  | |- ?P = ?R =>
      tryif is_evar R then reflexivity
      else tryif atl_is_open R then
        (* Derive's name for the evar: unification does not unfold it *)
        (let b := eval cbv delta [R] in R in change (P = b); reflexivity)
      else fail 0 "done: not at the end of a derivation"
  | _ => fail 0 "done: side goals remain"
  end.

(** ** Names of binders *)

(** Do the identifiers [a] and [b] name the same binder?  Inside
    [fun a : atl_name_probe => _], the name [b] denotes a term of the probe
    type exactly when it is [a] (nothing else has that type).  The body is
    checked against the probe type: without it, [b] naming any variable in
    scope (an enclosing loop's index, a section variable) passed, so a
    binder that shadows its parent's name, as the eta-expanded [fun i => F i]
    of [atl_eta_binder] under a loop [i] does, matched every name asked for
    and a directive stopped at the wrong loop. *)
Inductive atl_name_probe := atl_name_probe_i.

Ltac atl_same_name a b :=
  let r := constr:(fun a : atl_name_probe => (ltac:(exact b) : atl_name_probe)) in idtac.

(** Does the goal's left side, a loop or a let, bind a named variable?  Its
    last argument is a [fun] (after [atl_eta_binder]); the check reads that
    [fun]'s own binder, so a loop whose index its body does not use is found
    by its name (Coq prints it [_]; the bridge restores the name from
    [bridge_show_loop_names], coq/Bridge/Print.v), and a binder with no name
    ([fun _ => ..] as written, which Ltac would call [x]) never matches.  Not
    [@?F z]'s [F]: that function is rebuilt with the pattern's binder name. *)
Module AtlNamed.
Import Ltac2.Ltac2.
Ltac2 lhs_named (l : Ltac1.t) : unit :=
  let no () := Control.zero (Tactic_failure None) in
  match Ltac1.to_constr l with
  | Some c =>
      match Constr.Unsafe.kind c with
      | Constr.Unsafe.App _ args =>
          match Constr.Unsafe.kind (Array.get args (Int.sub (Array.length args) 1)) with
          | Constr.Unsafe.Lambda bd _ =>
              match Constr.Binder.name bd with Some _ => () | None => no () end
          | _ => no ()
          end
      | _ => no ()
      end
  | None => no ()
  end.
End AtlNamed.
Ltac atl_named_binder :=
  lazymatch goal with
  | |- ?l = _ => let f := ltac2:(l |- AtlNamed.lhs_named l) in f l
  end.

(** [rename_buffer x into y]: rename the binder of the first let named
    [x] (pre-order) to [y]; the program is unchanged up to alpha.  The
    let-lifting lemmas name the lifted buffer after their own binder, so
    without it a derivation ends with several buffers called [a]; the
    names are what the printed program, [set_memory] and the lowering see. *)
Ltac atl_rename_root x y :=
  atl_eta_binder;
  lazymatch goal with
  | |- atl_let ?e (fun z => @?F z) = _ =>
      atl_named_binder; atl_same_name x z;
      let T := type of e in
      exact (@eq_refl _ (atl_let e (fun y : T => F y)))
  end.

Tactic Notation "rename_buffer" ident(x) "into" ident(y) :=
  atl_check_goal;
  tryif atl_step ltac:(atl_rename_root x y) then idtac
  else fail 0 "rename_buffer: the program has no let named" x.

(** [rename_loop x into y]: rename the first generation or summation
    (pre-order) whose index is named [x]; the program is unchanged up to
    alpha.  Lifting lemmas name loops after their own binders ([i], [j],
    ...), and loop names are what the printed program and the generated C
    show.  A name is matched as Ltac sees it: where a binder has the name
    of an enclosing one (Coq prints it [i0]), rename the enclosing one
    first. *)
Ltac atl_rename_loop_root x y :=
  atl_eta_binder;
  lazymatch goal with
  | |- @genr ?X ?E ?lo ?hi (fun z => @?F z) = _ =>
      atl_named_binder; atl_same_name x z;
      exact (@eq_refl _ (@genr X E lo hi (fun y : Z => F y)))
  | |- @sumr ?X ?E ?lo ?hi (fun z => @?F z) = _ =>
      atl_named_binder; atl_same_name x z;
      exact (@eq_refl _ (@sumr X E lo hi (fun y : Z => F y)))
  end.

Tactic Notation "rename_loop" ident(x) "into" ident(y) :=
  atl_check_goal;
  tryif atl_step ltac:(atl_rename_loop_root x y) then idtac
  else fail 0 "rename_loop: the program has no loop named" x.

(** [inline p]: inline the let named [p] (the first in pre-order, Halide's
    [inline], formal semantics Sec. 8.3: the producer is computed at each
    use); [inline c], where no let is named [c]: unfold the definition
    [c] (a reshape operator or a user-defined stage) everywhere in the
    program.  The let's name is tried first. *)
Ltac atl_inline_let_root p :=
  atl_eta_binder;
  lazymatch goal with
  | |- atl_let ?e (fun y => @?F y) = _ =>
      atl_same_name p y; exact (unfold_let e F)
  end.

(** Unfold the constant of the program whose name is [c].  An identifier
    argument cannot be turned into a global reference in Ltac, so the
    program's constants are compared with [c] by name: [fresh] derives the
    same identifier from a constant and from its name. *)
(* Called as a function so that [fresh] avoids no name bound by the caller. *)
Ltac atl_name_of h := fresh h.

Ltac atl_unfold_def c :=
  lazymatch goal with
  | |- ?P = ?R =>
      match P with
      | context [?h] =>
          is_const h;
          let x := atl_name_of h in let y := atl_name_of c in atl_same_name x y;
          let P' := eval cbv beta delta [h] in P in
          change (P' = R); atl_beta_lhs
      end
  end.

Ltac atl_inline_named c :=
  atl_check_goal;
  tryif atl_step ltac:(atl_inline_let_root c) then idtac
  else tryif atl_unfold_def c then idtac
  else (idtac "inline: the program has no let named" c "and mentions no definition named so";
        fail 0 "inline: the program has no let named" c "and mentions no definition named so").

Tactic Notation "inline" ident(c) := atl_inline_named c.
