(** * Instructions as specifications, and memories (Exo thesis, Ch. 2-3).

    The Exo thesis (Sec. 2.3, 3.2.2, 3.4) defines a hardware instruction
    as a procedure whose body is its specification in the language itself,
    annotated with the C it stands for; [replace()] swaps a fragment of a
    program for a call after checking, by unification, that the fragment
    IS the body.  Memories (Sec. 2.2, 3.2.1) are annotations on buffers
    that the analyses ignore and only the code generator reads.

    Here, in a shallow embedding, both are plain Coq definitions:

    - an instruction is a [Definition] whose body is an ATL term (see
      Targets/AVX.v); a call [avx2_loadu v o] is convertible to its body,
      so replacing the body by the call is a proof by conversion, and Coq
      itself checks that the fragment is exactly the specification;
    - a memory marker [in_mem M e] is the identity; wrapping a let's value
      places that buffer in memory [M] for the lowering.

    Tactics:
    - [use_instr I] / [use_instr I at (pat)]: replace the first subterm
      (pre-order, as [rw]) that is the body of instruction [I], for some
      arguments, by the call.  On failure it prints the specification and,
      for the nearest candidate subterms, where they differ from it.
    - [set_memory x M]: wrap the value of the let whose binder is named [x]
      in [in_mem M].

    Registration: a target library declares each instruction constant with
    [#[global] Instance : AtlInstr (@name) := {}.]  [same_program] then
    holds it abstract (an expected program that says [avx2_loadu] accepts
    only a derived program with the call) and [check_safe] unfolds it to
    check the accesses of its specification. *)

From Coq Require Import ZArith.
From Verisched Require Import Tensor.Core Rewrites.Context Rewrites.Tactics.

(** ** Memories *)

Inductive memory := DRAM | AVX2_REG | AVX512_REG | GEMMINI_SPAD | GEMMINI_ACC.

Definition in_mem {X : Type} (m : memory) (e : X) : X := e.
Arguments in_mem {X} m e%atl_scope.

(** ** The registry of instruction constants *)

Class AtlInstr {T : Type} (c : T) : Prop := {}.

#[global] Instance AtlInstr_in_mem : AtlInstr (@in_mem) := {}.

(** [atl_unfold_instrs P]: [P] with every registered constant unfolded
    (for [check_safe]: the specification is the term). *)
Ltac atl_is_instr c := is_const c; let _ := constr:(_ : AtlInstr c) in idtac.

Ltac atl_unfold_instrs P :=
  match P with
  | context [?c] =>
      let _ := constr:(ltac:(atl_is_instr c; exact I) : True) in
      let P' := eval unfold c in P in
      let P'' := eval cbv beta in P' in
      atl_unfold_instrs P''
  | _ => P
  end.

(** [atl_generalize_instrs]: abstract every registered constant of the
    goal as a variable (for [same_program]). *)
Ltac atl_generalize_instrs :=
  repeat match goal with
    | |- context [?c] => atl_is_instr c; generalize c; intro
    end.

(** ** [set_memory x M] *)

Lemma let_in_mem {X Y} (m : memory) (e : X) (f : X -> Y) :
  atl_let e f = atl_let (in_mem m e) f.
Proof. reflexivity. Qed.

Lemma let_in_mem_change {X Y} (m m' : memory) (e : X) (f : X -> Y) :
  atl_let (in_mem m' e) f = atl_let (in_mem m e) f.
Proof. reflexivity. Qed.

(** Do the identifiers [a] and [b] name the same binder?  Inside
    [fun a : atl_name_probe => _], the name [b] denotes a term of the probe
    type exactly when it is [a] (nothing else has that type). *)
Inductive atl_name_probe := atl_name_probe_i.

Ltac atl_same_name a b :=
  let r := constr:(fun a : atl_name_probe => ltac:(exact b)) in idtac.

Ltac atl_mem_root x M :=
  idtac;
  lazymatch goal with
  | |- atl_let ?e (fun y => _) = _ =>
      atl_same_name x y;
      lazymatch e with
      | in_mem _ ?e0 => exact (let_in_mem_change M e0 _)
      | _ => exact (let_in_mem M e _)
      end
  end.

Tactic Notation "set_memory" ident(x) constr(M) :=
  atl_check_goal;
  tryif atl_step ltac:(atl_mem_root x M) then idtac
  else fail 0 "set_memory: the program has no let named" x.

(** ** [use_instr I] *)

(** [atl_instr_inst I k]: the body of instruction [I] and its call, with a
    fresh evar for every parameter, passed to [k body call].  [I] is the
    instruction's name, elaborated with evars for its implicit arguments
    (the scalar type and class), or a partial application fixing some
    leading arguments, e.g. [use_instr (avx2_loadu B)]. *)
Ltac atl_instr_apply b app k :=
  lazymatch b with
  | fun x : ?A => _ =>
      let e := open_constr:(_ : A) in
      let b' := eval cbv beta in (b e) in
      atl_instr_apply b' open_constr:(app e) k
  | _ => k b app
  end.

Ltac atl_instr_inst I k :=
  let h := atl_head I in
  tryif is_const h then idtac
  else fail 100 "use_instr:" I "is not an instruction (a defined constant)";
  let b := eval unfold h in I in
  let b := eval cbv beta in b in
  atl_instr_apply b I k.

(** At the root [t = ?r]: [t] must be the body for some arguments. *)
Ltac atl_instr_root I :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      atl_instr_inst I ltac:(fun body call =>
        atl_skel body t; unify t body; exact (@eq_refl _ call))
  end.

Ltac atl_instr_fail I :=
  let h := atl_head I in
  let b := eval unfold h in h in
  idtac "use_instr" h ": its specification is" b;
  fail 0 "use_instr" h ": no subterm of the program is its specification".

Tactic Notation "use_instr" open_constr(I) :=
  atl_check_goal;
  tryif atl_step ltac:(atl_instr_root I) then idtac
  else atl_instr_fail I.

Tactic Notation "use_instr" open_constr(I) "at" uconstr(pat) :=
  atl_check_goal;
  tryif atl_step ltac:(atl_match pat; atl_instr_root I) then idtac
  else atl_instr_fail I.
