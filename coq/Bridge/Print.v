(** * Helpers for the Python bridge (src/verisched/pybridge/).

    [all: bridge_show_goal] prints every focused goal between markers the bridge
    parses: a derivation goal [P = ?derived] as the current program [P], any
    other goal as a side goal.  Markers make the output unambiguous however
    Coq breaks lines, and printing only [P] spares the bridge from parsing
    hypotheses.

    [of_list]/[to_list] convert between Coq lists and tensors, so the bridge
    can run a program inside Coq on concrete integer inputs ([vm_compute])
    and compare with its numpy interpreter. *)

From Coq Require Import ZArith Bool List.
From Verisched Require Import Tensor.Core.
From Ltac2 Require Ltac2 List.
Import ListNotations.
Open Scope Z_scope.

(** [bridge_show_loop_names P]: the names of the loops ([genr], [sumr] over a
    [fun]) of [P], as their binders hold them, in pre-order (arguments left to
    right), [_] for a binder without a name, between markers; [bridge_show_goal]
    prints them after the program.  Coq's printer shows a loop whose body does
    not use its index as [_] whatever its name, and renames a binder that would
    capture or shadow a name in scope ([i0] for a second [i]); the directives
    find loops by the names the binders hold ([atl_named_binder],
    Rewrites/Tactics.v).  The bridge puts the names back where no capture
    follows and names the rest by what a directive matches, so what a user reads
    is what a directive finds (pybridge/coqterm.py [with_loop_names]). *)
Module BridgeLoopNames.
Import Ltac2.Ltac2.

Ltac2 is_loop (h : constr) : bool :=
  Bool.or (Constr.equal h '@genr) (Constr.equal h '@sumr).

Ltac2 rec names (t : constr) : ident option list :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.App f args =>
      let n := Array.length args in
      let loop := is_loop f in
      let rec go k :=
        if Int.equal k n then [] else
        let a := Array.get args k in
        let here :=
          if Bool.and loop (Int.equal k (Int.sub n 1)) then
            match Constr.Unsafe.kind a with
            | Constr.Unsafe.Lambda bd body => Constr.Binder.name bd :: names body
            | _ => names a
            end
          else names a in
        List.append here (go (Int.add k 1)) in
      List.append (names f) (go 0)
  | Constr.Unsafe.Lambda bd body => List.append (names (Constr.Binder.type bd)) (names body)
  | Constr.Unsafe.LetIn bd v body =>
      List.append (names v) (names body)
  | Constr.Unsafe.Cast c _ _ => names c
  | _ => []
  end.

Ltac2 show (t : Ltac1.t) : unit :=
  let xs := match Ltac1.to_constr t with Some c => names c | None => [] end in
  let m := List.fold_left (fun m x => Message.concat m
             (Message.concat (Message.of_string " ")
               (match x with Some i => Message.of_ident i | None => Message.of_string "_" end)))
             xs (Message.of_string "<VS-LOOPNAMES>") in
  Message.print (Message.concat m (Message.of_string " </VS-LOOPNAMES>")).
End BridgeLoopNames.

Ltac bridge_show_loop_names P := let f := ltac2:(t |- BridgeLoopNames.show t) in f P.

Ltac bridge_show_goal :=
  lazymatch goal with
  | |- ?P = ?R =>
      tryif is_evar R then (idtac "<VS-PROGRAM>" P "</VS-PROGRAM>"; bridge_show_loop_names P)
      else tryif (is_var R; let b := eval cbv delta [R] in R in is_evar b)
      then (idtac "<VS-PROGRAM>" P "</VS-PROGRAM>"; bridge_show_loop_names P)
      else (lazymatch goal with |- ?G => idtac "<VS-GOAL>" G "</VS-GOAL>" end)
  | |- ?G => idtac "<VS-GOAL>" G "</VS-GOAL>"
  end.



(** The tensor of a list: element [i] is the [i]-th entry, zero outside. *)
Definition of_list {X : Type} `{TensorElem X} (l : list X) : Z -> X :=
  fun i => if (0 <=? i) && (i <? Z.of_nat (length l)) then nth (Z.to_nat i) l tzero
           else tzero.

(** The first [n] elements of a tensor as a list. *)
Definition to_list {X : Type} (n : Z) (v : Z -> X) : list X :=
  map (fun k => v (Z.of_nat k)) (seq 0 (Z.to_nat n)).

(** The current program with every definition that is not an ATL construct
    unfolded (named stages such as [blur_y], the program's own name), so the
    bridge can evaluate programs that mention user definitions.  Instructions
    are unfolded to their specifications too (they are ATL terms), except
    Gemmini's output path [gemmini_acc_out], a scalar primitive defined by Z
    arithmetic, not ATL: unfolded it is a large term the interpreter cannot
    read, so it stays a call, which the interpreter evaluates natively.  A literal
    [slit n d] stays as written (its binary expansion is not ATL either). *)
From Verisched Require Import Reshape.Defs Targets.Gemmini Tensor.Iter.

Ltac bridge_show_semantics :=
  lazymatch goal with
  | |- ?P = _ =>
      let P' := eval cbv beta delta -[genr sumr iverson atl_let get tadd tzero sadd smul sdiv smax szero sone
                 slit titer cdiv concat transpose flatten split pad_r pad_l trunc_r trunc_l
                 Z.add Z.sub Z.mul Z.div Z.modulo Z.ltb Z.leb Z.eqb Z.geb Z.gtb andb
                 TensorElem_fun TensorElem_scalar gemmini_acc_out] in P in
      idtac "<VS-SEMANTICS>" P' "</VS-SEMANTICS>"; bridge_show_loop_names P'
  end.

(** Print a term between markers (casts dropped), for the bridge's
    print/parse round-trip tests. *)
Ltac bridge_print_term t :=
  let t' := eval cbv beta in t in idtac "<VS-TERM>" t' "</VS-TERM>".
