(** * Normalization before lowering (paper Sec. 5.1).

    [normalize] ends a derivation by bringing the program to the form the
    lowering (src/verisched/codegen/lower.py, Fig. 3) accepts: every stored
    leaf is a scalar, and no [<+>] is left at tensor type.  It only applies
    proved rewrites, so it needs no trust:
    - an access is pushed through the construct it reads: [get_gen] (when
      the index is provably in range, else [get_gen_some], which leaves the
      range check as a guard), [get_genr_lo], [get_iverson], [get_sum],
      [get_tadd], [ll_get];
    - tensor addition is specialised (the paper's "dimensionality
      specialization"): [tadd_gen] when both sides are generations over the
      same range, else [tadd_expand] (Sec. 5.1's first lemma, needs shapes);
    - a tensor-valued leaf (a variable, or an access chain into one, in a
      stored position) is eta-expanded ([eta], Sec. 5.1's second lemma),
      one dimension at a time until it is a scalar.
    Shapes come from [shaped] hypotheses through [solve_shape].  A leaf
    reached through an access ([v] in [v _[i]]) is never eta-expanded: it is
    not stored, and expanding it would only be undone by [get_gen].
    Passes repeat until the term no longer changes; what cannot be
    normalized (no shape known) is left as is and the Python checker
    (codegen/normal.py) names it. *)

From Coq Require Import ZArith List.
From Coq Require Import derive.Derive.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape Tensor.Iter.
From Verisched Require Import Rewrites.Context Rewrites.Let Rewrites.Guard Rewrites.Gen.
From Verisched Require Import Rewrites.Tactics.
Import ListNotations.

(** A variable, or an access chain into one. *)
Ltac norm_is_leaf t :=
  lazymatch t with
  | get ?v _ => norm_is_leaf v
  | _ => is_var t
  end.

(** Rules that read the node itself.  The skeleton check of [atl_root_l]
    compares applications only, and the implicit type [Z -> X] of these
    lemmas is a product, so the rules below match the node's head by hand
    (the heads are equal constants, so the unifier has nothing to unfold). *)
Ltac norm_access :=
  idtac;
  lazymatch goal with
  | |- get (genr 0 _ _) _ = _ =>
      first [ eapply get_gen; atl_side | eapply get_gen_some ]
  | |- get (genr _ _ _) _ = _ =>
      first [ eapply get_genr_lo; atl_side | eapply get_genr_some ]
  | |- get (iverson _ _) _ = _ => eapply get_iverson
  | |- get (sumr _ _ _) _ = _ => eapply get_sum
  | |- get (tadd _ _) _ = _ => eapply get_tadd
  | |- get (atl_let _ _) _ = _ => eapply ll_get
  end.

(** Tensor addition, matched by hand for the same reason. *)
Ltac norm_tadd :=
  idtac;
  lazymatch goal with
  | |- @tadd (Z -> _) _ ?a ?b = _ =>
      first
        [ lazymatch a with tzero => eapply tadd_0_l' end
        | lazymatch b with tzero => eapply tadd_0_r' end
        | lazymatch a with genr ?lo ?hi _ =>
            lazymatch b with genr lo hi _ => eapply tadd_gen end end
        | eapply tadd_expand; atl_side ]
  end.

Ltac norm_eta :=
  idtac;
  lazymatch goal with
  | |- ?t = _ => norm_is_leaf t; eapply eta; atl_side
  end.

Ltac norm_root_all := first [ norm_access | norm_tadd | norm_eta ].
Ltac norm_root_noeta := first [ norm_access | norm_tadd ].

(** Can [root] rewrite the node [t] at all?  The heads the rules above match
    ([norm_access]: an access into a generation, guard, sum, addition or
    let; [norm_tadd]: a tensor addition; [norm_eta]: a leaf, for
    [norm_root_all] only: [norm_may_all]).  Where the answer is no,
    [norm_pass] enters the node without trying [root] under a transitivity
    step that it would then undo: the same rewrites, in less time
    (decision #103).  Sound by construction: each branch is the pattern
    the rule's own [lazymatch goal] starts with. *)
Ltac norm_may_noeta t :=
  lazymatch t with
  | get (genr _ _ _) _ => idtac
  | get (iverson _ _) _ => idtac
  | get (sumr _ _ _) _ => idtac
  | get (tadd _ _) _ => idtac
  | get (atl_let _ _) _ => idtac
  | @tadd (Z -> _) _ _ _ => idtac
  end.
Ltac norm_may_all t := first [ norm_may_noeta t | norm_is_leaf t ].

(** [norm_pass] enters no subtree where [root] can fire at no node
    (decision #106; the pass is top-down, so a subtree whose root does not
    fire keeps its children as they are).  Only where the right-hand side
    is an evar of its own: below a binder it is an evar applied to the
    bound variable ([?g i]), and closing [f i = ?g i] by reflexivity lets
    the unifier pick [?g := f], an eta-reduced body that [norm_children]
    (which does not eta-expand, see [norm_pass]) would then take apart as
    a partial application.  [norm_none_noeta t]: no node of
    [t] has the form [norm_may_noeta] accepts. *)
Ltac norm_none_noeta t :=
  lazymatch t with
  | context [get (genr _ _ _) _] => fail
  | context [get (iverson _ _) _] => fail
  | context [get (sumr _ _ _) _] => fail
  | context [get (tadd _ _) _] => fail
  | context [get (atl_let _ _) _] => fail
  | context [@tadd (Z -> _) _ _ _] => fail
  | _ => idtac
  end.

(** ... nor a leaf [norm_eta] could expand: [t] is a scalar (its type no
    product, even unfolded) without a let or a time loop, so every leaf in
    a stored position in it is a scalar too (the operators at scalar type
    take scalars; a tensor is read only through an access, below which
    nothing is eta-expanded). *)
Ltac norm_none_all t :=
  norm_none_noeta t;
  let T := type of t in
  let T' := eval hnf in T in
  lazymatch T' with
  | forall _, _ => fail
  | _ =>
      lazymatch t with
      | context [atl_let _ _] => fail
      | context [titer _ _ _] => fail
      | _ => idtac
      end
  end.

(** One top-down pass, as [atl_everywhere], except that inside the tensor
    operand of an access nothing is eta-expanded ([root] is inherited by the
    children, and switched to [norm_root_noeta] below an access).  The
    transitivity step that joins a node's rewrite to its children's is
    made only where [root] rewrites the node: elsewhere the children are
    entered directly (the same rewrites; a proof without a reflexivity
    step per node, cheaper to build and to check: decision #98).  The same
    shape as [atl_topdown_prune] (Targets/Instr.v) but not the same code: the
    argument [ltac:(norm_children root)] begins with a [lazymatch goal], so
    Ltac runs it where it is passed, on the node itself, before
    [atl_fresh_rhs] looks at the right-hand side; delaying it (as
    [atl_topdown_prune]'s children are) changes what the rewrites unify with
    under binders, and Jacobi2d.v's program was no longer normal. *)
Ltac norm_pass root may none :=
  idtac;
  lazymatch goal with
  | |- ?t = ?r =>
      tryif (tryif is_evar r then none t else fail) then reflexivity else
      tryif (may t; etransitivity; [ root | ])
      then (atl_beta_lhs; atl_fresh_rhs ltac:(norm_children root may none))
      else atl_fresh_rhs ltac:(norm_children root may none)
  end
with norm_children root may none :=
  lazymatch goal with
  | |- @genr ?X ?E ?lo ?hi ?F = _ =>
      lazymatch F with fun x => _ =>
      refine (@genr_ctx X E lo hi F _ _); let i := fresh x in let Hi := fresh "H" i in
      intros i Hi; atl_beta_lhs; norm_pass root may none
      end
  | |- @sumr ?X ?E ?lo ?hi ?F = _ =>
      lazymatch F with fun x => _ =>
      refine (@sumr_ctx X E lo hi F _ _); let i := fresh x in let Hi := fresh "H" i in
      intros i Hi; atl_beta_lhs; norm_pass root may none
      end
  | |- @iverson ?X ?E ?p ?e = _ =>
      refine (@iverson_ctx X E p e _ _); let Hp := fresh "Hguard" in intros Hp; norm_pass root may none
  | |- @atl_let ?X ?Y ?e ?F = _ =>
      lazymatch F with fun x => _ =>
      refine (@let_ctx X Y e _ F _ _ _);
      [ norm_pass root may none
      | let y := fresh x in let Hy := fresh "H" y in
        intros y Hy; atl_beta_lhs; norm_pass root may none ]
      end
  | |- titer _ _ (fun x => _) = _ =>
      (* the initial tensor, then the step with the state's extents (Tensor/Iter.v) *)
      etransitivity;
      [ eapply titer_ctx; [ norm_pass root may none | let y := fresh x in intros y; reflexivity ]
      | atl_eta_binder; atl_into_step x ltac:(norm_pass root may none) ]
  | |- get _ _ = _ =>
      lazymatch goal with
      | |- ?F ?a ?b = _ => refine (@f_equal2 _ _ _ F a _ b _ _ _); [ norm_pass norm_root_noeta norm_may_noeta norm_none_noeta | reflexivity ]
      end
  | |- ?F ?a ?b = _ =>
      refine (@f_equal2 _ _ _ F a _ b _ _ _);
      [ tryif atl_is_index a then reflexivity else norm_pass root may none
      | tryif atl_is_index b then reflexivity else norm_pass root may none ]
  | |- ?F ?a = _ =>
      refine (f_equal F (x:=a) _); tryif atl_is_index a then reflexivity else norm_pass root may none
  | |- _ = _ => reflexivity
  end.

(** [normalize]: passes until a fixpoint. *)
Ltac normalize :=
  atl_check_goal;
  lazymatch goal with
  | |- ?P = _ =>
      (* A pass that changes nothing is undone (its failure backtracks over the
         transitivity step): its congruence proof would stay in the derivation's
         term and cost the kernel a whole-program check at Qed for nothing (build
         time, issue 16). *)
      tryif (etransitivity; [ norm_pass norm_root_all norm_may_all norm_none_all | ]; atl_beta_lhs;
             lazymatch goal with
             | |- ?P' = _ => tryif constr_eq P P' then fail else idtac
             end)
      then normalize else idtac
  end.

(** ** Examples: the paper's Sec. 5.1 cases. *)

Module NormalizeExamples.
  Open Scope Z_scope. Open Scope atl_scope.

  Section Examples.
    Context {S : Type} `{ScalarLaws S}.
    Variables (n m : Z) (f : Z -> Z -> S) (g : Z -> S).
    Hypothesis Hf : shaped [n; m] f.
    Hypothesis Hg : shaped [n] g.

    (** The fused pipeline over rows (Sec. 5.1): [f] returns tensors, so
        [<+>] is at tensor type and the stored leaves are rows. *)
    Definition fused_rows :=
      GEN [ i < n ] (|[ 0 <=? i - 1 ]| f _[ i - 1 ]) <+> f _[ i ].

    Derive fused_rows_normal SuchThat (fused_rows = fused_rows_normal)
      As fused_rows_normal_correct.
    Proof. reschedule. normalize. done. Qed.

    (** The result is the paper's final form: a nested generation with a
        scalar [<+>] at the leaf. *)
    Goal fused_rows_normal =
         GEN [ i < n ] GEN [ j < m ] (|[ 0 <=? i - 1 ]| f _[ i - 1 ] _[ j ]) <+> f _[ i ] _[ j ].
    Proof. reflexivity. Qed.

    (** A tensor-valued leaf is eta-expanded. *)
    Definition copy_rows := GEN [ i < n ] f _[ i ].

    Derive copy_rows_normal SuchThat (copy_rows = copy_rows_normal)
      As copy_rows_normal_correct.
    Proof. reschedule. normalize. done. Qed.

    Goal copy_rows_normal = GEN [ i < n ] GEN [ j < m ] f _[ i ] _[ j ].
    Proof. reflexivity. Qed.

    (** Accesses into generations, sums and guards are pushed inward; the
        in-range access disappears, the other one becomes a guard. *)
    Definition reads :=
      GEN [ i < n ]
        (GEN [ j < n ] SUM [ k < m ] f _[ j ] _[ k ]) _[ i ]
        <+> (GEN [ j < n ] |[ 1 <=? j ]| g _[ j ]) _[ i + 1 ].

    Derive reads_normal SuchThat (reads = reads_normal) As reads_normal_correct.
    Proof. reschedule. normalize. done. Qed.

    Goal reads_normal =
         GEN [ i < n ]
           (SUM [ k < m ] f _[ i ] _[ k ])
           <+> (|[ (0 <=? i + 1) && (i + 1 <? n) ]| |[ 1 <=? i + 1 ]| g _[ i + 1 ]).
    Proof. reflexivity. Qed.

    (** Tensor addition of two generations over one range needs no shapes. *)
    Definition add_gens := (GEN [ i < n ] g _[ i ]) <+> (GEN [ i < n ] g _[ n - 1 - i ]).

    Derive add_gens_normal SuchThat (add_gens = add_gens_normal) As add_gens_normal_correct.
    Proof. reschedule. normalize. done. Qed.

    Goal add_gens_normal = GEN [ i < n ] g _[ i ] <+> g _[ n - 1 - i ].
    Proof. reflexivity. Qed.

    (** A let-bound buffer is normalized too (both its value and its body). *)
    Definition staged :=
      tlet b := GEN [ i < n ] f _[ i ] in
      GEN [ i < n ] b _[ i ] _[ 0 ].

    Derive staged_normal SuchThat (staged = staged_normal) As staged_normal_correct.
    Proof. reschedule. normalize. done. Qed.

    Goal staged_normal =
         tlet b := GEN [ i < n ] GEN [ j < m ] f _[ i ] _[ j ] in
         GEN [ i < n ] b _[ i ] _[ 0 ].
    Proof. reflexivity. Qed.
  End Examples.
End NormalizeExamples.
