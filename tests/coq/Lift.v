(* Step proofs in lifted form (coq/Rewrites/Lift.v, decision #103).  Each
   derivation below takes one step whose path goes through one kind of node
   the reader knows (loop, sum, guard, the two sides of a let, a time loop's
   initial tensor and step, both arguments of an operator, a one-argument
   operator, and the transitivity step under a let's body); with the debug
   switch on, a lifted proof the proof engine does not type-check would be
   reported ("atl_lift: ill-typed"), and Qed has the kernel check each.  The
   proofs of p1 and p3 are printed: each node of a path is let-bound once
   ([atl_L] / [atl_R], the node before and after the step). *)
From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL Rewrites.Lift.
From Ltac2 Require Ltac2.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Ltac2 Set AtlLift.debug := fun () => Init.true.

Section Lift.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m T : Z) (A : Z -> Z -> S) (x : Z -> S).
  Hypothesis HA : shaped [n; m] A.
  Hypothesis Hx : shaped [m] x.
  Hypothesis HT : 0 <= T.

  (* loop, sum, guard, left argument of + *)
  Definition p1 := GEN [ i < n ] SUM [ j < m ] |[ 0 <=? j ]| (A _[i] _[j] * x _[j] + sone).
  Derive p1_d SuchThat (p1 = p1_d) As p1_ok.
  Proof. reschedule. rw smul_comm. done. Qed.
  Print p1_ok.

  (* right argument of + *)
  Definition p2 := GEN [ i < n ] sone + A _[i] _[0] * x _[0].
  Derive p2_d SuchThat (p2 = p2_d) As p2_ok.
  Proof. reschedule. rw smul_comm. done. Qed.

  (* a let's bound value, then its body (through a transitivity step) *)
  Definition p3 := tlet b := GEN [ j < m ] x _[j] * sone in GEN [ i < n ] b _[0] * A _[i] _[0].
  Derive p3_d SuchThat (p3 = p3_d) As p3_ok.
  Proof. reschedule. rw smul_1_r. rw smul_comm. done. Qed.
  Print p3_ok.

  (* a time loop's initial tensor, then its step *)
  Definition p4 := ITER [ T ] u := GEN [ j < m ] x _[j] * sone in GEN [ j < m ] u _[j] * sone.
  Derive p4_d SuchThat (p4 = p4_d) As p4_ok.
  Proof. reschedule. rw smul_1_r. rw smul_1_r. done. Qed.

  Print p1_d. Print p2_d. Print p3_d. Print p4_d.
End Lift.
