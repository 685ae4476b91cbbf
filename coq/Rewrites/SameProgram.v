(** * [same_program]: the derived program is the one the file states.

    Each example ends by stating the program its derivation produced.
    [reflexivity] would accept any program *convertible* to the statement,
    for example one in which a let had been inlined, since [atl_let] and
    the other constructs are definitions.  [same_program] first abstracts
    every ATL construct (core and reshape) as a variable, so the two
    programs must agree up to alpha-, beta- and eta-conversion and the
    unfolding of the user's own definitions, with every let, loop, guard,
    access and reshape operator in the same place.  Instruction constants
    and [in_mem] (registered with [AtlInstr], Targets/Instr.v) are
    abstracted as well, so a stated call [avx2_loadu v o] accepts only a
    derived program with that call, not its unfolding. *)

From Verisched Require Import Tensor.Core Reshape.Defs Targets.Instr.

(* A name (the derived constant) is unfolded once; an application is left alone, and
   so is a section variable: a program that is a bare input ([Definition sc := a.])
   has nothing to unfold, and [red] fails on it: [match] then takes the next branch. *)
Ltac atl_red_name t :=
  match t with _ _ => t | _ => eval red in t | _ => t end.

Ltac same_program :=
  lazymatch goal with
  | |- ?a = ?b =>
      let a' := atl_red_name a in
      let b' := atl_red_name b in
      change (a' = b');
      (* Syntactically equal (up to alpha): equal under any abstraction, so
         the abstraction below, which rewrites both programs whole nineteen
         times, is skipped (build time, decision #106). *)
      tryif constr_eq a' b' then exact (@eq_refl _ a') else
      (generalize (@atl_let) (@genr) (@sumr) (@iverson) (@get) (@tadd) (@tzero)
                 (@sadd) (@smul) (@sdiv) (@cdiv)
                 (@concat) (@transpose) (@flatten) (@split) (@pad_r) (@pad_l)
                 (@trunc_r) (@trunc_l);
      intros;
      (* Instruction constants and memory markers registered with
         [AtlInstr] (Targets/Instr.v) are held abstract too. *)
      atl_generalize_instrs;
      first [ reflexivity
            | fail 1 "same_program: the derived program differs from the expected one" ])
  end.
