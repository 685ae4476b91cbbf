(** * Producer directives: where a let-bound buffer is computed.

    Halide schedules a producer [f] relative to its consumer [g] with
    [compute_root], [compute_at(g, x)], [store_at] and [inline] (Halide
    formal semantics, Sec. 8.3 "Compute Phase" and Sec. 8.4 "Storage
    Phase"; seed halide-formal-semantics.txt); Exo has the corresponding
    rewrites [lift_alloc], [sink_alloc] and [stage_mem] (Exo thesis,
    Table 3.1).  In ATL a producer is a let-bound buffer
    [tlet p := e in body], and the directives below move that let:

    - [inline p]: inline the let named [p] (Tactics.v; [inline] alone
      inlines the first let, [inline c] for a definition [c] unfolds it);
    - [sink p into i]: move the let named [p] down into the loop named [i]
      that is (through guards, other loops, lets and operands that do not
      use [p]) its body: [p] is then recomputed per iteration of [i];
    - [compute_root p]: move the let named [p] to the top of the program;
      a value that mentions a loop variable becomes a buffer indexed by
      that loop ([let_gen_lift0]);
    - [compute_at p i]: [sink p into i], then restrict the producer to the
      region one iteration of [i] reads (bounds inference).

    Each directive is a derivation step on the goal [prog = ?derived]
    (like [rw]), found by the user's binder names ([atl_same_name]), and
    keeps every binder's name: results are built from the node's own
    binders, as in Rewrites/Steps.v.  A refusal prints its reason (so
    that batch runs show it) and fails with the same message. *)

From Coq Require Import ZArith Lia.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum.
From Verisched Require Import Rewrites.Context Rewrites.Let Rewrites.Gen Rewrites.Guard.
From Verisched Require Import Rewrites.Tactics Rewrites.Steps.
From Verisched Require Import Reshape.Defs Reshape.Commute.
Open Scope Z_scope. Open Scope bool_scope.

(** ** Region restriction (the lemma behind [compute_at]) *)

Section Window.
  Context {X Y : Type} `{TensorLaws X}.

  (** A consumer [f] that reads its producer [genr 0 N g] only at indices
      in [lo, lo + len) can read instead the window [v] of [len] elements
      starting at [lo], at index [k - lo].  The window keeps the
      producer's bounds as a guard ([g] is computed only where the
      producer is defined; outside it the producer reads as zero), which
      [simpl_guard] drops where the loop bounds prove it.  The new body
      [f'] and the window [v] are arguments so that the tactic builds them
      with the program's own binder names. *)
  Lemma let_window N lo len (g : Z -> X) (f f' : (Z -> X) -> Y) (v : Z -> X) :
    v = genr 0 len (fun w => iverson ((0 <=? lo + w) && (lo + w <? N)) (g (lo + w))) ->
    (forall a b, (forall k, lo <= k < lo + len -> get a k = get b (k - lo)) -> f a = f' b) ->
    atl_let (genr 0 N g) f = atl_let v f'.
  Proof.
    intros -> Hf; unfold atl_let; apply Hf; intros k Hk.
    rewrite (get_genr 0 len _ (k - lo)) by lia; rewrite get_genr_some.
    replace (lo + (0 + (k - lo))) with k by lia.
    replace (N - 0) with N by lia; rewrite Z.add_0_l; reflexivity.
  Qed.
End Window.

(** ** Shared pieces *)

(** Is the node a let named [p]? *)
Ltac prod_is_let p :=
  atl_eta_binder;
  lazymatch goal with
  | |- atl_let _ (fun y => _) = _ => atl_same_name p y
  end.

(** Does the program have a let named [p] (anywhere, under any binder)? *)
Ltac prod_has_let p :=
  assert_succeeds (etransitivity; [ atl_descend_rec ltac:(prod_is_let p; reflexivity) | ]).

(* A refusal prints its reason and fails with it: coqc does not show a
   [fail] message in batch mode, so the golden tests read the printed copy. *)

(** ** [sink p into i] (Halide Sec. 8.3 compute_at without bounds
    inference; Exo [sink_alloc]/[lift_alloc] reversed) *)

(** One move of the let named [p] one node down its body.  [s] is set to
    [true] by the move that puts it directly inside the loop named [i]. *)
Ltac prod_sink_node p i s :=
  atl_eta_binder;
  lazymatch goal with
  | |- atl_let ?e (fun y => genr ?lo ?hi (fun j => @?f y j)) = _ =>
      atl_same_name p y;
      let t := eval cbv beta in (genr lo hi (fun j => atl_let e (fun y => f y j))) in
      tryif atl_same_name i j then unify s true else idtac;
      (atl_rhs_is t; exact (eq_sym (ll_gen lo hi e (fun j y => f y j))))
  | |- atl_let ?e (fun y => sumr ?lo ?hi (fun j => @?f y j)) = _ =>
      atl_same_name p y;
      let t := eval cbv beta in (sumr lo hi (fun j => atl_let e (fun y => f y j))) in
      tryif atl_same_name i j then unify s true else idtac;
      (atl_rhs_is t; exact (eq_sym (ll_sum lo hi e (fun j y => f y j))))
  | |- atl_let ?e (fun y => iverson ?q (@?f y)) = _ =>
      atl_same_name p y;
      let t := eval cbv beta in (iverson q (atl_let e (fun y => f y))) in
      (atl_rhs_is t; exact (eq_sym (ll_guard q e f)))
  | |- atl_let ?e (fun y => atl_let ?e2 (fun z => @?f y z)) = _ =>
      atl_same_name p y;
      let t := eval cbv beta in (atl_let e2 (fun z => atl_let e (fun y => f y z))) in
      (atl_rhs_is t; exact (ll_let_body e e2 f))
  | |- atl_let ?e (fun y => tadd ?a (@?f y)) = _ =>
      atl_same_name p y;
      let t := eval cbv beta in (tadd a (atl_let e (fun y => f y))) in
      (atl_rhs_is t; exact (eq_sym (ll_tadd_r e a f)))
  | |- atl_let ?e (fun y => tadd (@?f y) ?b) = _ =>
      atl_same_name p y;
      let t := eval cbv beta in (tadd (atl_let e (fun y => f y)) b) in
      (atl_rhs_is t; exact (eq_sym (ll_tadd_l e f b)))
  | |- atl_let ?e (fun y => transpose ?n ?m (@?f y)) = _ =>
      atl_same_name p y;
      let t := eval cbv beta in (transpose n m (atl_let e (fun y => f y))) in
      (atl_rhs_is t; exact (eq_sym (ll_transpose n m e f)))
  | |- atl_let ?e (fun y => flatten ?n ?m (@?f y)) = _ =>
      atl_same_name p y;
      let t := eval cbv beta in (flatten n m (atl_let e (fun y => f y))) in
      (atl_rhs_is t; exact (eq_sym (ll_flatten n m e f)))
  | |- atl_let ?e (fun y => trunc_r ?k (@?f y)) = _ =>
      atl_same_name p y;
      let t := eval cbv beta in (trunc_r k (atl_let e (fun y => f y))) in
      (atl_rhs_is t; exact (eq_sym (ll_trunc_r k e f)))
  end.

(** Every move down to loop [i], in one traversal: the first let named
    [p] (pre-order) whose body [prod_sink_node] can enter, then, after
    each move, the same let as a child of the node it left, until [s] is
    set.  These are the moves that one [atl_step] per move made (after a
    move, the first such let in pre-order is the one just moved: the
    nodes before it are its new ancestors, which are no let named [p], or
    lie in subtrees already passed over), but the path to the let is
    entered once: in Jacobi2d.v that path enters a time loop, whose
    state's shape was proved again at every move (decision #102).  Fails
    where a move is not possible before loop [i]. *)
Ltac prod_sink_here p i s :=
  etransitivity;
  [ prod_sink_node p i s
  | atl_beta_lhs;
    tryif hoist_flag_set s then reflexivity
    else atl_fresh_rhs ltac:(atl_into ltac:(atl_fresh_rhs ltac:(prod_is_let p; prod_sink_here p i s))) ].

Ltac prod_sink_loop p i :=
  let s := open_constr:(_ : bool) in
  etransitivity; [ atl_descend ltac:(prod_is_let p; prod_sink_here p i s) | ]; atl_beta_lhs;
  hoist_flag_set s.

(* [prod_has_let] (a descent of its own) runs only to explain a failure. *)
Ltac prod_sink p i :=
  atl_check_goal;
  tryif prod_sink_loop p i then idtac
  else tryif prod_has_let p then
    (idtac "sink: the body of the let" p
         "is not, through guards, loops, lets and operands that do not use it, a loop named" i; fail 0 "sink: the body of the let" p
         "is not, through guards, loops, lets and operands that do not use it, a loop named" i)
  else (idtac "sink: the program has no let named" p; fail 0 "sink: the program has no let named" p).

Tactic Notation "sink" ident(p) "into" ident(i) := prod_sink p i.

(** ** [compute_root p] (Halide Sec. 8.3 / 8.4: compute and store at the
    root; Exo [lift_alloc]) *)

(** The node whose child is the let named [p]: where hoisting stopped. *)
Ltac prod_print_blocker p :=
  try assert_succeeds
    (etransitivity;
     [ atl_descend ltac:(
         assert_succeeds (atl_into ltac:(prod_is_let p; reflexivity));
         lazymatch goal with
         | |- ?t = _ => idtac "compute_root: the let" p "cannot move out of the node" t
         end; reflexivity)
     | ]).

Ltac prod_at_root p :=
  idtac;
  lazymatch goal with
  | |- ?P = _ =>
      let P' := eval cbv beta in P in
      lazymatch P' with
      | atl_let _ ?F => lazymatch F with fun y => _ => atl_same_name p y end
      end
  end.

Ltac prod_compute_root p :=
  atl_check_goal;
  tryif prod_at_root p
  then (idtac "compute_root: the let" p "is already at the root";
        fail 0 "compute_root: the let" p "is already at the root")
  else idtac;
  hoist_up ltac:(step_hoist_node p);
  tryif prod_at_root p then idtac
  else tryif prod_has_let p then
    (prod_print_blocker p;
     idtac "compute_root: the let" p "cannot move further out (blocking node printed above)";
     fail 0 "compute_root: the let" p "cannot move further out (blocking node printed above)")
  else (idtac "compute_root: the program has no let named" p;
        fail 0 "compute_root: the program has no let named" p).

Tactic Notation "compute_root" ident(p) := prod_compute_root p.

(** ** [compute_at p i] (Halide Sec. 8.3 compute_at with the bounds
    inference of Sec. 8.3's last paragraph; Exo [stage_mem] of a window)

    [sink p into i], then, at the let inside loop [i], bounds inference
    for the common 1-D stencil: the producer is a generation
    [GEN [j < N] g j], and every read of [p] in the consumer is
    [p _[i + c]] for constants [c] (also [i] and [i - c]); the window is
    [c1 .. c2], the least and greatest offsets, and the producer becomes
    [GEN [j < c2 - c1 + 1] |[ in bounds ]| g (i + c1 + j)], read at
    [p _[c - c1]] ([let_window]).

    Tiles (overlapped time tiling, issue 13 item 5): where [i] is the tile
    loop of a [split] ([split x by k into i ii]), the let's body is the
    tile's inner loop [GEN [ii < K] ..] and the reads are
    [p _[i * M + ii + c]] (also [i * M + ii], [i * M + ii - c]), the form
    [split] produces.  The region one iteration of [i] reads is then the
    window [i * M + c1 .. i * M + K - 1 + c2] (with [ii] over [0, K)), of
    [K + (c2 - c1)] elements (symbolic [K]), read at [p _[ii + (c - c1)]]:
    Halide's compute_at of a producer at a tile of its consumer with
    bounds inference (Halide formal semantics, Sec. 8.3 "Compute Phase":
    the producer is computed per tile over the region its consumers in
    the tile need; a window computed once per tile and overlapping its
    neighbours' is the trapezoid of overlapped time tiling).  The same
    lemma [let_window] proves it: every read is shown inside the window
    by [solve_idx] from the bounds of [ii], so the inference is only a
    guess that the proof checks.  Where the reads are of neither form
    [compute_at] refuses, saying so; [sink p into i] alone then gives the
    unrestricted (correct but recomputing) placement. *)

(** The offset [c] of an index [k = i + c] (also [i], [i - c]). *)
Ltac prod_num c :=
  lazymatch c with
  | Z0 => c | Zpos _ => c | Zneg _ => c
  end.

Ltac prod_offset i k :=
  lazymatch constr:((k, i)) with
  | (?a, ?a) => constr:(0)
  | (?a + ?c, ?a) => prod_num c
  | (?a - ?c, ?a) => let c := prod_num c in eval compute in (- c)
  end.

(** The least and greatest offsets of the reads [get y k] in [b]; ends the
    current goal (of type [Z * Z]) with them. *)
Ltac prod_window b y i lo hi :=
  first
    [ match b with
      | context [get y ?k] =>
          let c := prod_offset i k in
          let lt := eval compute in (c <? lo) in
          let gt := eval compute in (hi <? c) in
          lazymatch lt with
          | true => prod_window b y i c hi
          | false => lazymatch gt with true => prod_window b y i lo c end
          end
      end
    | exact (lo, hi) ].

(** [let_window] applied to the let [atl_let (genr 0 N G) B] with the window [lo]
    of [len] elements, the new buffer named [p]; every read [get a k] of the old buffer
    becomes [get p (idx k)], [idx] giving the read's place in the window (both forms
    of [compute_at] below). *)
Ltac prod_apply_window N G B lo len p idx :=
  let v := eval cbv beta in
    (genr 0 len (fun j => iverson ((0 <=? lo + j) && (lo + j <? N)) (G (lo + j)))) in
  eapply (let_window N lo len G B _ v eq_refl);
  let a := fresh "a" in
  let Hab := fresh "Hab" in
  intros a p Hab; cbv beta;
  etransitivity;
  [ atl_everywhere ltac:(
      idtac;
      lazymatch goal with
      | |- get a ?k = _ =>
          let d := idx k in
          exact (eq_trans (Hab k ltac:(solve_idx))
                          (f_equal (get p) (ltac:(lia) : k - lo = d)))
      end)
  | reflexivity ].

Ltac prod_restrict_let p i :=
  atl_eta_binder;
  lazymatch goal with
  | |- atl_let (genr 0 ?N (fun j => @?G j)) (fun y => @?B y) = _ =>
      atl_same_name p y;
      let T := type of (genr 0 N G) in
      let w := constr:(fun y : T =>
                 ltac:(let b := eval cbv beta in (B y) in
                       match b with
                       | context [get y ?k] => let c := prod_offset i k in prod_window b y i c c
                       end)) in
      lazymatch w with
      | fun _ => (?c1, ?c2) =>
          let lo := lazymatch c1 with
                    | Z0 => i
                    | Zneg ?q => constr:(i - Zpos q)
                    | _ => constr:(i + c1)
                    end in
          let len := eval compute in (c2 - c1 + 1) in
          prod_apply_window N G B lo len p
            ltac:(fun k => let c := prod_offset i k in eval compute in (c - c1))
      end
  end.

(** Tile reads [k = i * M + b + c] (also [i * M + b], [i * M + b - c]):
    the base [i * M + b] of such a read of the tile loop [i]. *)
Ltac prod_tile_base i k :=
  let r := lazymatch k with
           | ?a * ?M + ?b + _ => constr:((a, a * M + b))
           | ?a * ?M + ?b - _ => constr:((a, a * M + b))
           | ?a * ?M + ?b => constr:((a, a * M + b))
           end in
  lazymatch r with (?a, ?base) => lazymatch constr:((a, i)) with (?x, ?x) => base end end.

(** The index [b + d] ([b], [b - |d|]) of a read in the window. *)
Ltac prod_plus b d :=
  lazymatch d with
  | Z0 => b
  | Zpos _ => constr:(b + d)
  | Zneg ?q => constr:(b - Zpos q)
  end.

(** The let named [p] directly inside the tile loop [i], its body the
    tile's inner loop: restrict the producer to the tile's window. *)
Ltac prod_restrict_let_tile p i :=
  atl_eta_binder;
  lazymatch goal with
  | |- atl_let (genr 0 ?N (fun j => @?G j)) (fun y => @?B y) = _ =>
      atl_same_name p y;
      let T := type of (genr 0 N G) in
      let w := constr:(fun y : T =>
                 ltac:(let b := eval cbv beta in (B y) in
                       lazymatch b with
                       | genr 0 ?K (fun x => @?F x) =>
                           let r := constr:(fun x : Z =>
                                      ltac:(let f := eval cbv beta in (F x) in
                                            match f with
                                            | context [get y ?k] =>
                                                let base := prod_tile_base i k in
                                                let c := prod_offset base k in
                                                lazymatch base with
                                                | _ * ?M + _ =>
                                                    refine (M, _); prod_window f y base c c
                                                end
                                            end)) in
                           lazymatch r with
                           | fun _ => (?M, (?c1, ?c2)) => exact (K, (M, (c1, c2)))
                           end
                       end)) in
      lazymatch w with
      | fun _ => (?K, (?M, (?c1, ?c2))) =>
          let lo := prod_plus (i * M) c1 in
          let e := eval compute in (c2 - c1) in
          let len := lazymatch K with
                     | Zpos _ => eval compute in (K + e)
                     | _ => prod_plus K e
                     end in
          prod_apply_window N G B lo len p
            ltac:(fun k => let base := prod_tile_base i k in
                           let c := prod_offset base k in
                           let d := eval compute in (c - c1) in
                           let ib := lazymatch base with _ * _ + ?ib => ib end in
                           prod_plus ib d)
      end
  end.

Ltac prod_restrict_root p i :=
  atl_eta_binder;
  lazymatch goal with
  | |- genr _ _ (fun x => atl_let _ (fun y => _)) = _ =>
      atl_same_name i x; atl_same_name p y;
      refine (genr_ctx _ _ _ _ _); let iv := fresh x in let Hi := fresh "H" iv in
      intros iv Hi; atl_beta_lhs;
      first [ prod_restrict_let p iv | prod_restrict_let_tile p iv ]
  | |- sumr _ _ (fun x => atl_let _ (fun y => _)) = _ =>
      atl_same_name i x; atl_same_name p y;
      refine (sumr_ctx _ _ _ _ _); let iv := fresh x in let Hi := fresh "H" iv in
      intros iv Hi; atl_beta_lhs;
      first [ prod_restrict_let p iv | prod_restrict_let_tile p iv ]
  end.

Ltac prod_compute_at p i :=
  atl_check_goal;
  tryif prod_sink_loop p i then idtac
  else tryif prod_has_let p then
    (idtac "compute_at: the region of" p
         "is not available at loop" i
         ": that loop is not one enclosing every use of it (the let's body does not reach it through guards, loops, lets and operands that do not use it)"; fail 0 "compute_at: the region of" p
         "is not available at loop" i
         ": that loop is not one enclosing every use of it (the let's body does not reach it through guards, loops, lets and operands that do not use it)")
  else (idtac "compute_at: the program has no let named" p; fail 0 "compute_at: the program has no let named" p);
  tryif atl_step ltac:(prod_restrict_root p i) then idtac
  else (idtac "compute_at: cannot infer the region of" p "that one iteration of loop" i
         "reads: the producer must be a generation from 0, and every read of it an access at the loop index plus a constant or, where" i "is the tile loop of a split (split x by k into" i "ii), the let's body the tile's loop ii and every read at" i "* k + ii plus a constant (sink p into i places it without restricting it)"; fail 0 "compute_at: cannot infer the region of" p "that one iteration of loop" i
         "reads: the producer must be a generation from 0, and every read of it an access at the loop index plus a constant or, where" i "is the tile loop of a split (split x by k into" i "ii), the let's body the tile's loop ii and every read at" i "* k + ii plus a constant (sink p into i places it without restricting it)").

Tactic Notation "compute_at" ident(p) ident(i) := prod_compute_at p i.
