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
Import ListNotations.
Open Scope Z_scope.

Ltac bridge_show_goal :=
  lazymatch goal with
  | |- ?P = ?R =>
      tryif is_evar R then idtac "<VS-PROGRAM>" P "</VS-PROGRAM>"
      else tryif (is_var R; let b := eval cbv delta [R] in R in is_evar b)
      then idtac "<VS-PROGRAM>" P "</VS-PROGRAM>"
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
      idtac "<VS-SEMANTICS>" P' "</VS-SEMANTICS>"
  end.

(** Print a term between markers (casts dropped), for the bridge's
    print/parse round-trip tests. *)
Ltac bridge_print_term t :=
  let t' := eval cbv beta in t in idtac "<VS-TERM>" t' "</VS-TERM>".
