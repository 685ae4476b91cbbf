(** * [stage A at i as Ap]: pack the block of an operand that a loop reads.

    Exo's [stage_mem] (Exo thesis, the table of scheduling operators in
    Sec. 3: [p.stage_mem(a,a',s)] turns [s] into [a' = a; s[a -> a']; a = a'],
    used in Sec. 3.2 to "stage C, A, and B" into Gemmini's memories; seed
    /work/shared/seeds/exo-exocompilation.txt) for the read-only case, in the packed
    layout of BLIS (Van Zee and van de Geijn): the block of input [A]
    that one iteration of loop [i] reads becomes a let-bound buffer [Ap]
    placed directly inside loop [i],

      [GEN i (... A _[e1] _[e2] ...)]
      ~>  [GEN i (tlet Ap := GEN x1 .. GEN xn |[ g ]| A _[e1] _[e2] in
                  ... Ap _[x1] .. _[xn] ...)],

    where [x1 .. xn] are the loops inside [i] (outermost first) that the
    read's indices [e1], [e2] mention, and [g] the conjunction of the
    guards on the way from [i] to the read that mention only loops the
    read mentions (the edge guards of [A]'s block: where the block is
    partial, the buffer is zero and [A] is not read, so [check_safe]
    proves the copy in bounds).  Such a guard directly around the read is
    moved into the buffer; the others on the way are copied (they still
    guard the rest of the computation).  Guards that mention other loops stay
    where they are and are not copied.  Like Exo, the buffer's extent in
    each dimension is the extent of the loop that indexes it; unlike
    Exo's window buffer ([Ap[e1 - lo1, e2 - lo2]]), the buffer is indexed
    by the loops themselves, one dimension per loop, which is the packed
    layout (Matmul.v's and Sgemm.v's [Ap], [Bp]): the micro-kernel then
    reads it contiguously.

    The proof is the library's: [let_intro] (the read named, as
    [name_buffer] does, Tactics.v), then one [ll_*] / [let_gen_lift0] /
    [let_sum_lift0] / [ll_guard] / [ll_guard_dup] move per node between
    the read and loop [i] (Rewrites/Let.v, [step_hoist_node] of
    Rewrites/Steps.v), all in one traversal ([hoist_up], Rewrites/Tactics.v),
    then [guard_merge] on the buffer's value.

    Conditions, each refused with a message naming [stage], the operand,
    the loop and the condition:
    - the program has a loop (generation or sum) named [i] whose body
      reads [A] (a full access [A _[e1] .. _[ek]] of scalar type); the
      first such loop in pre-order is taken;
    - every index [e] of that access is affine in the loop variables
      ([c * x], [x * c], [+], [-], sizes and constants, with no loop
      variable in a coefficient; no data-dependent index such as
      [A _[idx _[i]]]): "not an affine window in the loop's inner
      variables";
    - the read can be moved out to loop [i]: every node on the way is a
      loop from 0, a guard, a reshape operator, [<+>], [*] or a let whose
      value it does not use (not, e.g., a let whose variable the index
      mentions);
    - loop [i] reads [A] at that one access only (several distinct
      accesses, e.g. a stencil [A _[i] + A _[i + 1]], would need one
      window buffer over all of them; refused, not implemented).
    [A] is an operand of the program (a section variable or constant, or
    any term, such as a generation [inline] left: PolyBench/Gemm.v packs
    [alpha * A] so); [stage_let t at i as tp] stages a let-bound buffer
    [t] instead (an intermediate result, as Exo's [stage_mem] takes any
    buffer: 2mm's [tmp] packed for its consumer's micro-kernel), named as
    the program names it: the name is resolved at loop [i], inside the
    let. *)

From Coq Require Import ZArith Bool.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum.
From Verisched Require Import Rewrites.Context Rewrites.Let Rewrites.Gen Rewrites.Guard.
From Verisched Require Import Rewrites.Tactics Rewrites.Steps.
From Verisched Require Import Reshape.Defs Reshape.Commute.
Open Scope Z_scope.

(** ** Queries on terms *)

(** The head of an access chain [v _[a] _[b] ..]. *)
Ltac stage_head e :=
  lazymatch e with
  | get ?v _ => stage_head v
  | _ => e
  end.

(** [e] is a full read of [A]: an access chain with head [A] whose value
    is not itself a tensor. *)
Ltac stage_full_read A e :=
  lazymatch e with
  | get _ _ =>
      let h := stage_head e in constr_eq h A;
      let T := type of e in
      lazymatch T with
      | Z -> _ => fail
      | _ => idtac
      end
  end.

(** A loop variable of the traversal: a variable with its bounds
    [lo <= x < hi] in context (Tactics.v, [atl_into]). *)
Ltac stage_is_loopvar x :=
  idtac; is_var x;
  match goal with
  | _ : _ <= x < _ |- _ => idtac
  end.

Ltac stage_has_loopvar t :=
  idtac;
  match t with
  | context [?x] => stage_is_loopvar x
  end.

Ltac stage_affine t :=
  idtac;
  lazymatch t with
  | ?a + ?b => stage_affine a; stage_affine b
  | ?a - ?b => stage_affine a; stage_affine b
  | - ?a => stage_affine a
  | ?a * ?b =>
      first [ assert_fails (stage_has_loopvar a); stage_affine b
            | assert_fails (stage_has_loopvar b); stage_affine a ]
  | _ => first [ stage_is_loopvar t | assert_fails (stage_has_loopvar t) ]
  end.

(** Every index of the access chain [e] is affine. *)
Ltac stage_affine_read e :=
  idtac;
  lazymatch e with
  | get ?v ?k => stage_affine k; stage_affine_read v
  | _ => idtac
  end.

(** Some loop variable of [p] does not occur in [e]. *)
Ltac stage_foreign_var p e :=
  idtac;
  match goal with
  | _ : _ <= ?x < _ |- _ =>
      is_var x;
      lazymatch p with context [x] => idtac end;
      lazymatch e with context [x] => fail | _ => idtac end
  end.

(** ** The steps *)

(** Status of the naming step. *)
Inductive stage_code := stage_ok | stage_nonaffine.

(** At a read of [A] (the deepest node containing one: the read itself,
    since [atl_descend_post] tries children first), bind it as [Ap]
    ([tlet Ap := A _[..] in Ap], [let_intro] as in [atl_name_root],
    Tactics.v), if its indices are affine; if not, record it in [s] and
    change nothing.  Binding at the read itself (not at the node above
    it, as [name_buffer] does) also covers a read that is the whole body
    of a loop ([GEN j A _[i] _[j]]). *)
Ltac stage_name_root A Ap s :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      (* A read of [A] mentions [A]: a node without it has no subterm to
         try, and the search below (each subterm in turn, at every node the
         post-order descent visits) is skipped there (build time). *)
      lazymatch t with context [A] => idtac end;
      match t with
      | context [?e] =>
          stage_full_read A e;
          tryif stage_affine_read e then
            (unify s stage_ok;
             let T := type of e in
             let F := constr:(fun Ap : T => ltac:(
                        let body := eval pattern e in t in
                        lazymatch body with ?G _ => let b := eval cbv beta in (G Ap) in exact b end)) in
             eapply (let_intro e F))
          else (unify s stage_nonaffine; idtac "stage: the access" e "is not affine"; reflexivity)
      end
  end.

(** A read directly under a guard [|[p]| A _[..]] whose loop variables
    all occur in the read (an operand's own edge guard, as
    [guard2_sum_prod] leaves them, Rewrites/Guard.v) is bound with its
    guard, [tlet Ap := |[p]| A _[..] in Ap]: the guard moves into the
    buffer instead of being copied, so the consumer reads [Ap] unguarded
    (as [name_buffer (|[ _ ]| A _[ _ ] _[ _ ])] does in Sgemm.v). *)
Ltac stage_name_guarded A Ap s :=
  idtac;
  lazymatch goal with
  | |- iverson ?p ?e = _ =>
      stage_full_read A e;
      tryif stage_foreign_var p e then fail else idtac;
      tryif stage_affine_read e then
        (unify s stage_ok;
         let T := type of e in
         eapply (let_intro (iverson p e) (fun Ap : T => Ap)))
      else (unify s stage_nonaffine; idtac "stage: the access" e "is not affine"; reflexivity)
  end.

(** One move of the let named [Ap] out of the node containing it; a guard
    is copied onto the value when all its loop variables occur there. *)
Ltac stage_hoist_node Ap :=
  idtac;
  lazymatch goal with
  | |- iverson ?p (atl_let ?e1 (fun y => @?f y)) = _ =>
      atl_same_name Ap y;
      tryif stage_foreign_var p e1 then
        (let t := eval cbv beta in (atl_let e1 (fun y => iverson p (f y))) in
         (atl_rhs_is t; exact (ll_guard p e1 f)))
      else
        (let t := eval cbv beta in (atl_let (iverson p e1) (fun y => iverson p (f y))) in
         (atl_rhs_is t; exact (ll_guard_dup p e1 f)))
  | |- _ => step_hoist_node Ap
  end.

Ltac stage_local tac :=
  etransitivity; [ atl_fresh_rhs tac | ]; atl_beta_lhs.

Inductive stage_status := st_nonaffine | st_stuck | st_many | st_done.

Ltac stage_is_top Ap :=
  lazymatch goal with
  | |- atl_let _ (fun y => _) = _ => atl_same_name Ap y
  end.

(** In the body of loop [i] (the goal [body = ?r]): name the read, hoist
    it to the body's root, check that no other read of [A] remains, and
    merge the guards of the value.  Never fails: where a condition does
    not hold it records it in [r] and closes the goal as is (the caller
    then fails, undoing everything). *)
Ltac stage_body A Ap r :=
  let s := open_constr:(_ : stage_code) in
  tryif first [ stage_local ltac:(atl_descend ltac:(stage_name_guarded A Ap s))
              | stage_local ltac:(atl_descend_post ltac:(stage_name_root A Ap s)) ] then
    (let v := eval hnf in s in
     lazymatch v with
     | stage_nonaffine => unify r st_nonaffine; reflexivity
     | stage_ok =>
         (* The let up to the body's root, in one traversal ([hoist_up],
            Rewrites/Tactics.v). *)
         tryif stage_is_top Ap then idtac
         else hoist_up ltac:(stage_hoist_node Ap);
         tryif stage_is_top Ap then
           lazymatch goal with
           | |- atl_let _ ?F = _ =>
               tryif (lazymatch F with context [A] => idtac end)
               then (unify r st_many; reflexivity)
               else (unify r st_done;
                     refine (let_ctx _ _ _ _ _ _);
                     [ repeat stage_local ltac:(atl_descend ltac:(atl_root_l uconstr:(guard_merge)));
                       reflexivity
                     | let y := fresh Ap in let Hy := fresh "H" y in intros y Hy; reflexivity ])
           end
         else (unify r st_stuck; reflexivity)
     end)
  else fail.

Ltac stage_is_loop i :=
  atl_eta_binder;
  lazymatch goal with
  | |- genr _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name i z
  | |- sumr _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name i z
  end.

(** At a loop named [i] whose body reads [A] (the first such, in
    pre-order: a packed buffer made by an earlier [stage] may hold a loop
    of the same name): [stage_body] on its body. *)
Ltac stage_loop_node A i Ap r :=
  atl_eta_binder;
  lazymatch goal with
  | |- genr _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name i z;
      refine (genr_ctx _ _ _ _ _); let iv := fresh z in let Hi := fresh "H" iv in intros iv Hi; atl_beta_lhs
  | |- sumr _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name i z;
      refine (sumr_ctx _ _ _ _ _); let iv := fresh z in let Hi := fresh "H" iv in intros iv Hi; atl_beta_lhs
  end;
  (* [A] a term, or the name of a let binder in scope here ([stage_let]) *)
  let Ac := constr:(A) in
  atl_fresh_rhs ltac:(stage_body Ac Ap r).

(* A refusal prints its reason and fails with it (coqc does not show a
   [fail] message in batch mode; the golden tests read the printed copy). *)
Ltac stage_go A i Ap :=
  atl_check_goal;
  let r := open_constr:(_ : stage_status) in
  tryif atl_step ltac:(stage_loop_node A i Ap r) then
    (let v := eval hnf in r in
     lazymatch v with
     | st_done => idtac
     | st_nonaffine =>
         idtac "stage" A "at" i ": the accesses to" A "in loop" i
               "are not an affine window in the loop's inner variables (the access is shown above)";
         fail 0 "stage" A "at" i ": the accesses to" A "in loop" i
               "are not an affine window in the loop's inner variables (the access is shown above)"
     | st_many =>
         idtac "stage" A "at" i ": loop" i "reads" A
               "at more than one access; stage packs a single access (one buffer per access), a window over several is not implemented";
         fail 0 "stage" A "at" i ": loop" i "reads" A
               "at more than one access; stage packs a single access (one buffer per access), a window over several is not implemented"
     | st_stuck =>
         idtac "stage" A "at" i ": the read of" A "cannot be moved out to loop" i
               "(a node on the way is not a loop from 0, a guard, a reshape, <+>, * or a let it does not depend on)";
         fail 0 "stage" A "at" i ": the read of" A "cannot be moved out to loop" i
               "(a node on the way is not a loop from 0, a guard, a reshape, <+>, * or a let it does not depend on)"
     end)
  else tryif atl_has_node ltac:(stage_is_loop i) then
    (idtac "stage" A "at" i ": loop" i "does not read" A;
     fail 0 "stage" A "at" i ": loop" i "does not read" A)
  else (idtac "stage" A "at" i ": the program has no loop named" i;
        fail 0 "stage" A "at" i ": the program has no loop named" i).

Tactic Notation "stage" constr(A) "at" ident(i) "as" ident(Ap) := stage_go A i Ap.
Tactic Notation "stage_let" ident(A) "at" ident(i) "as" ident(Ap) := stage_go A i Ap.

(** [merge_guards]: every chain of directly nested guards
    [|[p]| |[q]| e] becomes one guard [|[p && q]| e] ([guard_merge],
    Rewrites/Guard.v, outermost pair first, so the conjunction lists the
    guards outermost first).  A clean-up after [stage] and [reorder],
    which leave the edge guards of several loops stacked. *)
Ltac stage_merge_all :=
  repeat (atl_step_l uconstr:(guard_merge)).

Tactic Notation "merge_guards" :=
  atl_check_goal;
  tryif atl_has_node ltac:(assert_succeeds (atl_root_l uconstr:(guard_merge)))
  then stage_merge_all
  else (idtac "merge_guards: the program has no guard directly inside another";
        fail 0 "merge_guards: the program has no guard directly inside another").
