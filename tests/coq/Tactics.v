(* Pinned behaviour of the derivation tactics (output compared with Tactics.ref).
   Each block shows a tactic working, or refusing with its message. *)
From Coq Require Import ZArith List Lia derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Tactics.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (f : Z -> S) (w : Z -> S) (v : Z -> Z -> S).

  (* rw: access into a generation needs its bounds; the guard supplies them. *)
  Definition p1 := GEN [ i < n ] |[ 1 <=? i ]| (GEN [ j < n ] f _[ j ]) _[ i - 1 ].
  Derive q1 SuchThat (p1 = q1) As q1_ok.
  Proof. reschedule. rw get_gen. done. Qed.
  Print q1.

  (* An out-of-bounds access cannot be rewritten: rw names the site and the
     side condition it could not prove. *)
  Definition p2 := GEN [ i < n ] (GEN [ j < n ] f _[ j ]) _[ i + 1 ].
  Derive q2 SuchThat (p2 = q2) As q2_ok.
  Proof.
    reschedule.
    Fail rw get_gen.
    (* the unconditional form keeps the bounds as a guard *)
    rw get_gen_some.
    done.
  Qed.
  Print q2.

  (* Wrong bounds: splitting a sum at a point outside its range is refused. *)
  Definition p3 := SUM [ i < n ] f _[ i ].
  Derive q3 SuchThat (0 <= n -> p3 = q3) As q3_ok.
  Proof.
    reschedule.
    Fail rw (sum_split _ (n + 1)).
    done.
  Qed.

  (* An unknown lemma is an error from Coq itself. *)
  Derive q4 SuchThat (p3 = q4) As q4_ok.
  Proof. reschedule. Fail rw no_such_lemma. done. Qed.

  (* rw outside a derivation. *)
  Goal p3 = p3. Fail rw sum_zero. reflexivity. Qed.

  (* name_buffer binds a subterm that mentions loop variables; the let is
     placed where they are bound. *)
  Definition p5 := GEN [ i < n ] SUM [ r < m ] w _[ r ] * f _[ i + r ].
  Derive q5 SuchThat (p5 = q5) As q5_ok.
  Proof. reschedule. name_buffer (f _[ _ + _ ]) as a. Fail name_buffer (v _[ _ ]) as b. done. Qed.
  Print q5.

  (* simpl_guard removes guards that hold in context and zeroes false ones. *)
  Definition p6 := GEN [ i < n ] |[ 0 <=? i ]| f _[ i ] <+> |[ n <=? i ]| w _[ i ].
  Derive q6 SuchThat (p6 = q6) As q6_ok.
  Proof. reschedule. simpl_guard. done. Qed.
  Print q6.

  (* rw at a pattern chooses among several sites. *)
  Definition p7 := GEN [ i < n ] f _[ i ] <+> w _[ i ].
  Derive q7 SuchThat (p7 = q7) As q7_ok.
  Proof. reschedule. rw tadd_comm' at (f _[ _ ] <+> _). Fail rw tadd_comm' at (v _[ _ ]). done. Qed.
  Print q7.

  (* check_safe proves accesses in bounds or lists those it cannot. *)
  Definition p8 := GEN [ i < n ] GEN [ j < m ] v _[ i ] _[ j ] <+> |[ i + 1 <? n ]| v _[ i + 1 ] _[ j ].
  Derive q8 SuchThat (shaped [n; m] v -> p8 = q8) As q8_ok.
  Proof. reschedule. check_safe. done. Qed.

  Definition p9 := GEN [ i < n ] GEN [ j < m ] v _[ i + 1 ] _[ j ].
  Derive q9 SuchThat (shaped [n; m] v -> p9 = q9) As q9_ok.
  Proof. reschedule. Fail check_safe. done. Qed.
  (* rw with no candidate says why: no node has the lemma's shape, or (at a
     pattern) nodes match the pattern but not the lemma. *)
  Derive q10 SuchThat (p7 = q10) As q10_ok.
  Proof.
    reschedule.
    Fail rw sum_zero.
    Fail rw sum_zero at (f _[ _ ]).
    done.
  Qed.

  (* simpl_guard that changes nothing fails, listing the guards it saw. *)
  Definition p11 := GEN [ i < n ] |[ i <? m ]| f _[ i ].
  Derive q11 SuchThat (p11 = q11) As q11_ok.
  Proof. reschedule. Fail simpl_guard. done. Qed.
  Derive q12 SuchThat (p7 = q12) As q12_ok.
  Proof. reschedule. Fail simpl_guard. done. Qed.

  (* Named steps that find no site: no node matches the pattern, or the
     node that matches is not of the step's form. *)
  Derive q13 SuchThat (p5 = q13) As q13_ok.
  Proof.
    reschedule.
    Fail swap_sum at (v _[ _ ]).
    Fail swap_gen at (GEN [ i < n ] _).
    Fail guard_in at (GEN [ i < n ] _).
    Fail guard_out at (GEN [ i < n ] _).
    Fail split_tadd at (GEN [ i < n ] _).
    Fail merge_tadd at (SUM [ r < m ] _).
    Fail hoist a past (GEN [ i < n ] _).
    swap_sum at (GEN [ i < n ] _).
    done.
  Qed.
  Print q13.

  (* swap_sum n: n swaps at the same generation in one step, the program of
     [do n swap_sum] (binder names included); refused when the generation's
     body has fewer than n nested sums, or for a count that is not positive. *)
  Variable A3 : Z -> Z -> Z -> S.
  Definition p14 := GEN [ i < n ] GEN [ l < 8 ] SUM [ r < 3 ] SUM [ s < 3 ] A3 _[ i + l ] _[ r ] _[ s ].
  Derive q14 SuchThat (p14 = q14) As q14_ok.
  Proof. reschedule. do 2 swap_sum at (GEN [ l < 8 ] _). done. Qed.
  Derive q15 SuchThat (p14 = q15) As q15_ok.
  Proof.
    reschedule.
    Fail swap_sum 3 at (GEN [ l < 8 ] _).
    Fail swap_sum 0 at (GEN [ l < 8 ] _).
    Fail swap_sum 1000000 at (GEN [ l < 8 ] _).
    Fail swap_sum 2 at (v _[ _ ]).
    swap_sum 2 at (GEN [ l < 8 ] _).
    done.
  Qed.
  Print q14. Print q15.
  Goal q14 = q15. Proof. reflexivity. Qed.

  (* lift_sum n: the sum n generations down lifted above them in one step,
     the program of n swap_sums from the inside out; refused when the sum is
     not n generations down. *)
  Definition p16 := GEN [ i < n ] GEN [ j < 2 ] GEN [ l < 8 ] SUM [ r < 3 ] A3 _[ i + l ] _[ r ] _[ j ].
  Derive q16 SuchThat (p16 = q16) As q16_ok.
  Proof.
    reschedule.
    swap_sum at (GEN [ l < 8 ] _). swap_sum at (GEN [ j < 2 ] _). swap_sum at (GEN [ i < n ] _).
    done.
  Qed.
  Derive q17 SuchThat (p16 = q17) As q17_ok.
  Proof.
    reschedule.
    Fail lift_sum 2 at (GEN [ i < n ] _).
    Fail lift_sum 4 at (GEN [ i < n ] _).
    Fail lift_sum 3 at (v _[ _ ]).
    lift_sum 3 at (GEN [ i < n ] _).
    done.
  Qed.
  Print q17.
  Goal q16 = q17. Proof. reflexivity. Qed.
End Tactics.

(* Scalars of type Z: a scalar expression has the type of an index, yet the
   traversal enters it (it mentions accesses), so check_safe sees A[i + 1]
   and rw rewrites inside the product. *)
Section ZScalars.
  Variables (n : Z) (A B : Z -> Z).
  Hypotheses (HA : shaped [n] A) (HB : shaped [n] B).

  Definition z1 := GEN [ i < n ] A _[ i + 1 ] * A _[ i ].
  Derive z1_d SuchThat (z1 = z1_d) As z1_ok.
  Proof. reschedule. Fail check_safe. done. Qed.

  Definition z2 := GEN [ i < n ] |[ i + 1 <? n ]| A _[ i + 1 ] * A _[ i ].
  Derive z2_d SuchThat (z2 = z2_d) As z2_ok.
  Proof. reschedule. check_safe. done. Qed.

  (* A guard that reads data is checked too. *)
  Definition z3 := GEN [ i < n ] |[ A _[ i + 1 ] =? 0 ]| B _[ i ].
  Derive z3_d SuchThat (z3 = z3_d) As z3_ok.
  Proof. reschedule. Fail check_safe. done. Qed.

  (* rw inside a Z scalar expression: the access into a generation. *)
  Definition z4 := GEN [ i < n ] A _[ i ] * (GEN [ j < n ] B _[ j ] + A _[ j ]) _[ i ].
  Derive z4_d SuchThat (z4 = z4_d) As z4_ok.
  Proof. reschedule. rw get_gen. rw smul_comm. check_safe. done. Qed.
  Print z4_d.
End ZScalars.

(* In atl_scope, + and * between Z terms outside index positions are the
   scalar operations of the Z instance (a shape list, an equation); lia
   reads them (Tensor/Arith.v declares them to zify). *)
Section ScopePitfall.
  Context {S : Type} {Sc : Scalar S} {ScL : ScalarLaws S}.
  Variables (H W : Z) (I : Z -> Z -> S).
  Hypothesis HI : shaped [H + 2; W] I.

  Goal forall x : Z, x + 1 = 1 + x /\ 2 * x = x + x.
  Proof. intros; split; lia. Qed.

  Definition sc1 := GEN [ y < H ] GEN [ x < W ] I _[ y + 2 ] _[ x ] + I _[ y ] _[ x ].
  Derive sc1_d SuchThat (sc1 = sc1_d) As sc1_ok.
  Proof. reschedule. check_safe. done. Qed.

  Definition sc2 := GEN [ y < H ] GEN [ x < W ] I _[ y + 3 ] _[ x ].
  Derive sc2_d SuchThat (sc2 = sc2_d) As sc2_ok.
  Proof. reschedule. Fail check_safe. done. Qed.
End ScopePitfall.


(* check_safe under a time loop: the step reads the state [u], whose extents
   come from the initial tensor's, kept by the step (titer_ctx_shaped); an
   access one past the end is refused and listed.  A bound needed twice in
   one context ([0 <= i < n] for [u _[ i ]] in both summands) is proved once. *)
Section SafeIter.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n T : Z) (A : Z -> S).
  Hypotheses (HT : 0 <= T) (HA : shaped [n] A).

  Definition it1 := ITER [ T ] u := A in GEN [ i < n ] u _[ i ] <+> u _[ i ].
  Derive it1_d SuchThat (it1 = it1_d) As it1_ok.
  Proof. reschedule. check_safe. done. Qed.

  Definition it2 := ITER [ T ] u := A in GEN [ i < n ] u _[ i + 1 ].
  Derive it2_d SuchThat (it2 = it2_d) As it2_ok.
  Proof. reschedule. Fail check_safe. done. Qed.
End SafeIter.
