(** * Name-preserving steps (written for the SGEMM derivation, Examples/Sgemm.v)

    A rewrite names the binders it creates after its lemma ([rw
    let_gen_lift0] turns a buffer [Bp] into [a] and its loop into [i]).
    The steps below do what [ll_*]/[let_*_lift0], [gen_sum_swap],
    [guard_gen]/[guard_sum], [transpose_gen] and [tadd_gen] do, but build
    the result from the node's own binder names, so that the derived
    program keeps the names of the schedule ([io], [ko], [jm], [im], [ir],
    [jv], [l], [kk]; buffers [Bp], [Ap], [t]) and [set_memory] can find a
    buffer by its name.  Each is one library lemma applied at one node
    ([atl_rhs_is t; exact (L args)] checks that [t] is the lemma's right-hand
    side up to renaming), except [swap_sum n at pat] and [lift_sum n at
    pat], which apply [gen_sum_swap] [n] times in one step: at one
    generation, past [n] sums; at [n] nested generations, to one sum. *)

From Coq Require Import ZArith.
From Verisched Require Import Tensor.Core Rewrites.Context Rewrites.Let Rewrites.Gen Rewrites.Guard.
From Verisched Require Import Rewrites.Tactics.
From Verisched Require Import Reshape.Defs Reshape.Access Reshape.Commute Reshape.Duals.
Open Scope Z_scope.

(** Move the let named [x] out of the node that contains it. *)
Ltac step_hoist_node x :=
  idtac;
  lazymatch goal with
  | |- genr 0 ?n (fun i => atl_let (@?e1 i) (fun y => @?f i y)) = _ =>
      atl_same_name x y;
      first
        [ lazymatch e1 with
          | fun _ => ?v =>
              let t := eval cbv beta in (atl_let v (fun y => genr 0 n (fun i => f i y))) in
              (atl_rhs_is t; exact (ll_gen 0 n v f))
          end
        | let t := eval cbv beta in
            (atl_let (genr 0 n (fun i => e1 i)) (fun y => genr 0 n (fun i => f i (get y i)))) in
          (atl_rhs_is t; exact (let_gen_lift0 n e1 f)) ]
  | |- sumr 0 ?n (fun i => atl_let (@?e1 i) (fun y => @?f i y)) = _ =>
      atl_same_name x y;
      first
        [ lazymatch e1 with
          | fun _ => ?v =>
              let t := eval cbv beta in (atl_let v (fun y => sumr 0 n (fun i => f i y))) in
              (atl_rhs_is t; exact (ll_sum 0 n v f))
          end
        | let t := eval cbv beta in
            (atl_let (genr 0 n (fun i => e1 i)) (fun y => sumr 0 n (fun i => f i (get y i)))) in
          (atl_rhs_is t; exact (let_sum_lift0 n e1 f)) ]
  | |- iverson ?p (atl_let ?e1 (fun y => @?f y)) = _ =>
      atl_same_name x y;
      let t := eval cbv beta in (atl_let e1 (fun y => iverson p (f y))) in
      (atl_rhs_is t; exact (ll_guard p e1 f))
  | |- flatten ?n ?m (atl_let ?e1 (fun y => @?f y)) = _ =>
      atl_same_name x y;
      let t := eval cbv beta in (atl_let e1 (fun y => flatten n m (f y))) in
      (atl_rhs_is t; exact (ll_flatten n m e1 f))
  | |- transpose ?n ?m (atl_let ?e1 (fun y => @?f y)) = _ =>
      atl_same_name x y;
      let t := eval cbv beta in (atl_let e1 (fun y => transpose n m (f y))) in
      (atl_rhs_is t; exact (ll_transpose n m e1 f))
  | |- trunc_r ?k (atl_let ?e1 (fun y => @?f y)) = _ =>
      atl_same_name x y;
      let t := eval cbv beta in (atl_let e1 (fun y => trunc_r k (f y))) in
      (atl_rhs_is t; exact (ll_trunc_r k e1 f))
  | |- tadd ?a (atl_let ?e1 (fun y => @?f y)) = _ =>
      atl_same_name x y;
      let t := eval cbv beta in (atl_let e1 (fun y => tadd a (f y))) in
      (atl_rhs_is t; exact (ll_tadd_r e1 a f))
  | |- tadd (atl_let ?e1 (fun y => @?f y)) ?b = _ =>
      atl_same_name x y;
      let t := eval cbv beta in (atl_let e1 (fun y => tadd (f y) b)) in
      (atl_rhs_is t; exact (ll_tadd_l e1 f b))
  | |- smul ?a (atl_let ?e1 (fun y => @?f y)) = _ =>
      atl_same_name x y;
      let t := eval cbv beta in (atl_let e1 (fun y => smul a (f y))) in
      (atl_rhs_is t; exact (ll_smul_r e1 a f))
  | |- smul (atl_let ?e1 (fun y => @?f y)) ?b = _ =>
      atl_same_name x y;
      let t := eval cbv beta in (atl_let e1 (fun y => smul (f y) b)) in
      (atl_rhs_is t; exact (ll_smul_l e1 f b))
  | |- atl_let _ _ = _ =>
      (* a let whose value and body are both lets: [x] may be either (lazymatch
         would commit to the first pattern, and a let in the value of a let whose
         body is a let, 3mm's pack inside [E] above [tlet F], could not move) *)
      first
        [ lazymatch goal with
          | |- atl_let ?e (fun z => atl_let (@?e2 z) (fun y => @?f z y)) = _ =>
              atl_same_name x y;
              lazymatch e2 with
              | fun _ => ?v =>
                  let t := eval cbv beta in (atl_let v (fun y => atl_let e (fun z => f z y))) in
                  (atl_rhs_is t; exact (ll_let_body e v f))
              end
          end
        | lazymatch goal with
          | |- atl_let (atl_let ?e1 (fun y => @?f y)) ?g = _ =>
              atl_same_name x y;
              let t := eval cbv beta in (atl_let e1 (fun y => atl_let (f y) g)) in
              (atl_rhs_is t; exact (ll_let_value e1 f g))
          end ]
  end.

(** [hoist x past pat]: move the let named [x] outward, one node at a
    time, until it has left the first node matching [pat].  One traversal
    per step: the step that moves the let out of a node matching [pat]
    records it by instantiating the flag [s]. *)
Ltac step_hoist_past x pat :=
  let s := open_constr:(_ : bool) in
  tryif atl_step ltac:(first [ atl_match pat; unify s true | idtac ]; step_hoist_node x)
  then (let v := eval hnf in s in
        lazymatch v with true => idtac | _ => try unify s false; step_hoist_past x pat end)
  else (idtac "hoist: the let" x "cannot move further out before leaving" pat;
        fail 0 "hoist: the let" x "cannot move further out before leaving" pat).

(** The same moves in one traversal.  [step_hoist_past] descends from the
    root once per move; but after a move out of a node [N], the next
    pre-order-first node where the let can move is [N]'s parent (the nodes
    before it are ancestors, whose children have not changed, or lie in
    subtrees that were already passed over), so the moves go up one
    path.  [hoist_rec] ([hoist_up_rec_until], Rewrites/Tactics.v) finds
    the first node where [step_hoist_node] applies, as [atl_step] does,
    then makes each move on the way back up, until [s] records that the
    move out of a node matching [pat] was made.
    If a move on the way up is not possible, it records that in [b] and
    changes nothing more; [hoist] then falls back on [step_hoist_past],
    whose one-move-per-traversal search gives the result (or the error) it
    always gave.  The derived program is the same; the proof term has one
    path from the root instead of one per move. *)
(* [hoist_flag_set]: Rewrites/Tactics.v. *)

Ltac hoist_here x pat s := first [ atl_match pat; unify s true | idtac ]; step_hoist_node x.

Ltac hoist_rec x pat s b :=
  hoist_up_rec_until ltac:(idtac; hoist_flag_set s) ltac:(hoist_here x pat s) b.

Ltac step_hoist_fast x pat :=
  let s := open_constr:(_ : bool) in
  let b := open_constr:(_ : bool) in
  etransitivity; [ hoist_rec x pat s b | ]; atl_beta_lhs;
  hoist_flag_set s;
  tryif hoist_flag_set b then fail else unify b false.

Ltac atl_is_let_named x :=
  atl_eta_binder;
  lazymatch goal with
  | |- atl_let _ (fun y => _) = _ => atl_same_name x y
  end.

Tactic Notation "hoist" ident(x) "past" uconstr(pat) :=
  atl_check_goal;
  tryif atl_has_node ltac:(atl_is_let_named x) then idtac
  else (idtac "hoist: the program has no let named" x;
        fail 0 "hoist: the program has no let named" x);
  tryif atl_has_node ltac:(atl_match pat) then idtac
  else (idtac "hoist: no node of the program matches" pat;
        fail 0 "hoist: no node of the program matches" pat);
  tryif step_hoist_fast x pat then idtac else step_hoist_past x pat.

(** The other steps, each at the first node matching [pat]. *)
Ltac step_swap_sum_node :=
  idtac;
  lazymatch goal with
  | |- genr ?a ?b (fun i => sumr ?lo ?hi (fun k => @?f i k)) = _ =>
      let t := eval cbv beta in (sumr lo hi (fun k => genr a b (fun i => f i k))) in
      (atl_rhs_is t; exact (gen_sum_swap lo hi a b f))
  end.

(** One swap at the node, then [cont] on the generation it moved, inside
    the new sum.  The new sum keeps the old one's binder name, as a step of
    its own gives it (a [fresh] name here, as [atl_into]'s, would rename
    [r] to [r0]: that name is only for the hypothesis). *)
Ltac step_swap_sum_into cont :=
  idtac;
  lazymatch goal with
  | |- genr ?a ?b (fun i => sumr ?lo ?hi (fun k => @?f i k)) = _ =>
      let t := eval cbv beta in (sumr lo hi (fun k => genr a b (fun i => f i k))) in
      refine (@eq_trans _ _ t _ (gen_sum_swap lo hi a b f) _);
      lazymatch goal with
      | |- sumr _ _ (fun x => _) = _ =>
          let k' := fresh x in let Hk := fresh "H" k' in
          refine (sumr_ctx _ _ _ (fun x => _) _); intros k' Hk; atl_beta_both; cont
      end
  end.

(** [n] of them at the same node, in one step: [GEN [i] SUM [k1] .. SUM
    [kn] _] becomes [SUM [k1] .. SUM [kn] GEN [i] _], the program that
    [do n swap_sum at pat] gives (each [swap_sum] after the first finds the
    same generation, one sum further in), with one search for the node and
    one step's proof instead of [n] (Conv.v's depth sums: three steps of
    about 0.05 s each became one). *)
Ltac step_swap_sums_node n :=
  lazymatch n with
  | S O => step_swap_sum_node
  | S ?m => step_swap_sum_into ltac:(idtac; step_swap_sums_node m)
  end.

(** As many swaps as the generation's body has nested sums, in one step
    ([repeat] of single [swap_sum] steps at that generation gives the same
    program); fails if its body is no sum.  Used by [register_tile]'s depth
    nest (Targets/Microkernel.v). *)
Ltac step_swap_sums_all_node :=
  idtac;
  lazymatch goal with
  | |- genr _ _ (fun _ => sumr _ _ (fun _ => sumr _ _ _)) = _ =>
      step_swap_sum_into ltac:(idtac; step_swap_sums_all_node)
  | |- _ => step_swap_sum_node
  end.

(** A sum [n] generations down, lifted out above them in one step: [GEN
    [i1] .. GEN [in] SUM [k] _] becomes [SUM [k] GEN [i1] .. GEN [in] _],
    the innermost generation swapped first, as [n] [swap_sum] steps from
    the inside out give it (Sgemm.v's depth sum out of its register tile;
    [register_tile]'s, Targets/Microkernel.v).  Passed to [atl_step] as
    [ltac:(idtac; step_sum_out_node n)]: an argument that begins with a
    [lazymatch] is run where it is written, on the whole program. *)
Ltac step_sum_out_node n :=
  lazymatch n with
  | S O => step_swap_sum_node
  | S ?m =>
      idtac;
      lazymatch goal with
      | |- genr _ _ (fun x => genr _ _ _) = _ =>
          let i' := fresh x in let Hi := fresh "H" i' in
          refine (eq_trans _ _);
          [ refine (genr_ctx _ _ _ (fun x => _) _); intros i' Hi; atl_beta_both;
            step_sum_out_node m
          | step_swap_sum_node ]
      end
  end.

Ltac step_guard_in_node :=
  idtac;
  lazymatch goal with
  | |- iverson ?p (genr ?lo ?hi (fun i => @?f i)) = _ =>
      let t := eval cbv beta in (genr lo hi (fun i => iverson p (f i))) in
      (atl_rhs_is t; exact (eq_sym (guard_gen lo hi p f)))
  | |- iverson ?p (sumr ?lo ?hi (fun i => @?f i)) = _ =>
      let t := eval cbv beta in (sumr lo hi (fun i => iverson p (f i))) in
      (atl_rhs_is t; exact (eq_sym (guard_sum lo hi p f)))
  end.

Ltac step_guard_out_node :=
  idtac;
  lazymatch goal with
  | |- genr ?lo ?hi (fun i => iverson ?p (@?f i)) = _ =>
      let t := eval cbv beta in (iverson p (genr lo hi (fun i => f i))) in
      (atl_rhs_is t; exact (guard_gen lo hi p f))
  | |- atl_let ?e (fun y => iverson ?p (@?f y)) = _ =>
      let t := eval cbv beta in (iverson p (atl_let e (fun y => f y))) in
      (atl_rhs_is t; exact (eq_sym (ll_guard p e f)))
  end.

Ltac step_swap_gen_node :=
  idtac;
  lazymatch goal with
  | |- genr 0 ?m (fun i => genr 0 ?n (fun j => @?f i j)) = _ =>
      let t := eval cbv beta in (transpose n m (genr 0 n (fun j => genr 0 m (fun i => f i j)))) in
      (atl_rhs_is t; exact (eq_sym (transpose_gen n m (fun j i => f i j))))
  end.

Ltac step_split_tadd_node :=
  idtac;
  lazymatch goal with
  | |- genr ?lo ?hi (fun i => tadd (@?f i) (@?g i)) = _ =>
      let t := eval cbv beta in (tadd (genr lo hi (fun i => f i)) (genr lo hi (fun i => g i))) in
      (atl_rhs_is t; exact (eq_sym (tadd_gen lo hi f g)))
  end.

Ltac step_merge_tadd_node :=
  idtac;
  lazymatch goal with
  | |- tadd (genr ?lo ?hi (fun i => @?f i)) (genr ?lo ?hi (fun j => @?g j)) = _ =>
      let t := eval cbv beta in (genr lo hi (fun i => tadd (f i) (g i))) in
      (atl_rhs_is t; exact (tadd_gen lo hi f g))
  end.

(** A step that finds no site says why: no node matches the pattern, or
    the nodes that match are not of the step's form. *)
Tactic Notation "merge_tadd" "at" uconstr(pat) :=
  atl_check_goal;
  tryif atl_step_at pat ltac:(idtac; step_merge_tadd_node) then idtac
  else tryif atl_has_node ltac:(atl_match pat)
  then (idtac "merge_tadd: the nodes matching" pat "are not of the form GEN [i < n] _ <+> GEN [j < n] _ (two generations over the same range)";
        fail 0 "merge_tadd: the nodes matching" pat "are not of the form GEN [i < n] _ <+> GEN [j < n] _ (two generations over the same range)")
  else (idtac "merge_tadd: no node of the program matches" pat;
        fail 0 "merge_tadd: no node of the program matches" pat).
Tactic Notation "swap_sum" "at" uconstr(pat) :=
  atl_check_goal;
  tryif atl_step_at pat ltac:(idtac; step_swap_sum_node) then idtac
  else tryif atl_has_node ltac:(atl_match pat)
  then (idtac "swap_sum: the nodes matching" pat "are not of the form GEN [i] SUM [k] _ (a generation whose body is a sum)";
        fail 0 "swap_sum: the nodes matching" pat "are not of the form GEN [i] SUM [k] _ (a generation whose body is a sum)")
  else (idtac "swap_sum: no node of the program matches" pat;
        fail 0 "swap_sum: no node of the program matches" pat).
(** The count as a [nat] numeral ([swap_sum 3 at ...] reads [3] in the
    scope open there, [Z] in a derivation).  A [Z] count above 64 is
    refused before it is unfolded into a unary [nat] (no program nests that
    deep, and [Z.to_nat 1000000] would not finish). *)
Ltac atl_count_nat n :=
  let T := type of n in
  lazymatch T with
  | nat => let k := eval cbv in n in k
  | Z =>
      let small := eval cbv in (n <=? 64)%Z in
      lazymatch small with
      | true => let k := eval cbv in (Z.to_nat n) in k
      | _ => fail 0 "the count" n "is larger than 64"
      end
  | _ => fail 0 "the count" n "is not a number"
  end.
Tactic Notation "swap_sum" constr(n) "at" uconstr(pat) :=
  atl_check_goal;
  let k := atl_count_nat n in
  lazymatch k with
  | S _ => idtac
  | _ => fail 0 "swap_sum: the count" n "must be a positive number"
  end;
  tryif atl_step_at pat ltac:(idtac; step_swap_sums_node k) then idtac
  else tryif atl_has_node ltac:(atl_match pat)
  then (idtac "swap_sum: the nodes matching" pat "are not of the form GEN [i] SUM [k1] .. SUM [kn] _ with n =" n "(a generation whose body is" n "nested sums)";
        fail 0 "swap_sum: the nodes matching" pat "are not of the form GEN [i] SUM [k1] .. SUM [kn] _ with n =" n "(a generation whose body is" n "nested sums)")
  else (idtac "swap_sum: no node of the program matches" pat;
        fail 0 "swap_sum: no node of the program matches" pat).
Tactic Notation "lift_sum" constr(n) "at" uconstr(pat) :=
  atl_check_goal;
  let k := atl_count_nat n in
  lazymatch k with
  | S _ => idtac
  | _ => fail 0 "lift_sum: the count" n "must be a positive number"
  end;
  tryif atl_step_at pat ltac:(idtac; step_sum_out_node k) then idtac
  else tryif atl_has_node ltac:(atl_match pat)
  then (idtac "lift_sum: the nodes matching" pat "are not of the form GEN [i1] .. GEN [in] SUM [k] _ with n =" n "(a sum" n "generations down)";
        fail 0 "lift_sum: the nodes matching" pat "are not of the form GEN [i1] .. GEN [in] SUM [k] _ with n =" n "(a sum" n "generations down)")
  else (idtac "lift_sum: no node of the program matches" pat;
        fail 0 "lift_sum: no node of the program matches" pat).
Tactic Notation "guard_in" "at" uconstr(pat) :=
  atl_check_goal;
  tryif atl_step_at pat ltac:(idtac; step_guard_in_node) then idtac
  else tryif atl_has_node ltac:(atl_match pat)
  then (idtac "guard_in: the nodes matching" pat "are not of the form |[ p ]| GEN _ or |[ p ]| SUM _ (a guard around a loop)";
        fail 0 "guard_in: the nodes matching" pat "are not of the form |[ p ]| GEN _ or |[ p ]| SUM _ (a guard around a loop)")
  else (idtac "guard_in: no node of the program matches" pat;
        fail 0 "guard_in: no node of the program matches" pat).
Tactic Notation "guard_out" "at" uconstr(pat) :=
  atl_check_goal;
  tryif atl_step_at pat ltac:(idtac; step_guard_out_node) then idtac
  else tryif atl_has_node ltac:(atl_match pat)
  then (idtac "guard_out: the nodes matching" pat "are not of the form GEN [i] |[ p ]| _ or tlet x := e in |[ p ]| _ (a loop or let whose body is a guard)";
        fail 0 "guard_out: the nodes matching" pat "are not of the form GEN [i] |[ p ]| _ or tlet x := e in |[ p ]| _ (a loop or let whose body is a guard)")
  else (idtac "guard_out: no node of the program matches" pat;
        fail 0 "guard_out: no node of the program matches" pat).
Tactic Notation "swap_gen" "at" uconstr(pat) :=
  atl_check_goal;
  tryif atl_step_at pat ltac:(idtac; step_swap_gen_node) then idtac
  else tryif atl_has_node ltac:(atl_match pat)
  then (idtac "swap_gen: the nodes matching" pat "are not of the form GEN [i < m] GEN [j < n] _ (two nested generations from 0)";
        fail 0 "swap_gen: the nodes matching" pat "are not of the form GEN [i < m] GEN [j < n] _ (two nested generations from 0)")
  else (idtac "swap_gen: no node of the program matches" pat;
        fail 0 "swap_gen: no node of the program matches" pat).
Tactic Notation "split_tadd" "at" uconstr(pat) :=
  atl_check_goal;
  tryif atl_step_at pat ltac:(idtac; step_split_tadd_node) then idtac
  else tryif atl_has_node ltac:(atl_match pat)
  then (idtac "split_tadd: the nodes matching" pat "are not of the form GEN [i] (_ <+> _) (a generation whose body is a sum of two tensors)";
        fail 0 "split_tadd: the nodes matching" pat "are not of the form GEN [i] (_ <+> _) (a generation whose body is a sum of two tensors)")
  else (idtac "split_tadd: no node of the program matches" pat;
        fail 0 "split_tadd: no node of the program matches" pat).
