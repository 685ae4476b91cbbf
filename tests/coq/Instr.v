(* Pinned behaviour of the instruction tactics (output compared with Instr.ref):
   use_instr on each AVX instruction, its diagnostics on a mismatch,
   set_memory, same_program holding instructions and in_mem abstract, and
   check_safe on masked tails. *)
From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Instr.
  Context {S : Type} `{ScalarLaws S} `{ScalarMax S}.
  Variables (n : Z) (x : S) (f g h : Z -> S) (B : Z -> Z -> S).
  Hypothesis Hf : shaped [n] f.
  Hypothesis Hn : 0 <= n.

  (* use_instr on each instruction: the subterm is exactly the specification. *)
  Definition p1 :=
    GEN [ j < 4 ]
      (GEN [ l < 8 ] B _[ j ] _[ 8 * j + l ]) <+>
      (GEN [ l < 8 ] |[ l <? n - 8 * j ]| f _[ 8 * j + l ]) <+>
      (GEN [ l < 8 ] x) <+>
      (GEN [ l < 8 ] (GEN [ k < 8 ] f _[ k ]) _[ l ] * (GEN [ k < 8 ] g _[ k ]) _[ l ]) <+>
      (GEN [ l < 8 ] f _[ l ] + g _[ l ]) <+>
      (GEN [ l < 8 ] f _[ l ] * g _[ l ] + h _[ l ]) <+>
      (GEN [ l < 8 ] smax (f _[ l ]) (g _[ l ])) <+>
      (GEN [ l < 8 ] |[ l <? 3 ]| h _[ l ]) <+>
      (GEN [ l < 16 ] f _[ 16 * j + l ]).
  Derive q1 SuchThat (p1 = q1) As q1_ok.
  Proof.
    reschedule.
    use_instr avx2_loadu. use_instr avx2_maskload. use_instr avx2_broadcast.
    use_instr avx2_storeu. use_instr avx2_storeu.
    use_instr avx2_mul. use_instr avx2_add. use_instr avx2_fmadd. use_instr avx2_max.
    use_instr avx2_maskstore. use_instr avx512_loadu.
    done.
  Qed.
  Print q1.

  (* Matching is modulo index arithmetic: l + 8 * j is read as 8 * j + l. *)
  Definition p2a := GEN [ j < 4 ] GEN [ l < 8 ] |[ 8 * j + l <? n ]| f _[ 1 + (l + 8 * j) ].
  Derive q2a SuchThat (p2a = q2a) As q2a_ok.
  Proof. reschedule. use_instr avx2_maskload. done. Qed.
  Print q2a.

  (* Mismatches: a stride-2 index is no o + l; a lane-dependent term where
     broadcast has a lane-free scalar.  The message lists the closest
     subterms and where each differs. *)
  Definition p2 := GEN [ j < 4 ] GEN [ l < 8 ] f _[ 2 * l + 8 * j ].
  Derive q2 SuchThat (p2 = q2) As q2_ok.
  Proof.
    reschedule.
    Fail use_instr avx2_loadu.
    Fail use_instr avx2_broadcast.
    done.
  Qed.

  (* The only vector has 16 lanes: the loop range differs. *)
  Definition p2b := GEN [ l < 16 ] f _[ l ].
  Derive q2b SuchThat (p2b = q2b) As q2b_ok.
  Proof. reschedule. Fail use_instr avx2_storeu. use_instr avx512_storeu. done. Qed.
  Print q2b.

  (* use_instr ... at (pattern) restricts the sites; use_instr_all takes them all. *)
  Definition p3 := GEN [ j < 4 ] (GEN [ l < 8 ] f _[ 8 * j + l ]) <+> (GEN [ l < 8 ] g _[ 8 * j + l ]).
  Derive q3 SuchThat (p3 = q3) As q3_ok.
  Proof. reschedule. use_instr avx2_loadu at (GEN [ _ < _ ] g _[ _ ]). use_instr_all avx2_loadu. done. Qed.
  Print q3.

  (* rw_all: one top-down pass splits a whole lane-wise sum into adds. *)
  Definition p3b := GEN [ j < 4 ] GEN [ l < 8 ] f _[ 8 * j + l ] <+> g _[ 8 * j + l ] <+> h _[ 8 * j + l ].
  Derive q3b SuchThat (p3b = q3b) As q3b_ok.
  Proof. reschedule. rw_all avx2_add_gen_tadd. use_instr_all avx2_loadu. done. Qed.
  Print q3b.

  (* set_memory: the let named b goes to the AVX2 registers; an unknown name is refused. *)
  Definition p4 := GEN [ j < 4 ] tlet b := GEN [ l < 8 ] f _[ 8 * j + l ] in GEN [ l < 8 ] x * b _[ l ].
  Derive q4 SuchThat (p4 = q4) As q4_ok.
  Proof.
    reschedule.
    use_instr avx2_loadu.
    set_memory b DRAM.
    set_memory b AVX2_REG.
    Fail set_memory c AVX2_REG.
    (* a memory is a constant of a type a target declared with [Memory] *)
    Fail set_memory b true.
    rw avx2_mul_gen. use_instr avx2_broadcast. use_instr avx2_storeu.
    done.
  Qed.
  Print q4.

  (* set_memory at a pattern of the let's value, whatever its name; it also
     moves a let already placed. *)
  Derive q4b SuchThat (p4 = q4b) As q4b_ok.
  Proof.
    reschedule.
    set_memory at (GEN [ _ < 8 ] f _[ _ ]) AVX2_REG.
    set_memory at (GEN [ _ < 8 ] f _[ _ ]) DRAM.
    Fail set_memory at (GEN [ _ < 8 ] g _[ _ ]) DRAM.
    done.
  Qed.
  Print q4b.

  (* same_program holds instructions and in_mem abstract: the stated call is
     accepted, its unfolding or a missing memory marker is not. *)
  Lemma q4_is : q4 = GEN [ j < 4 ] tlet b := in_mem AVX2_REG (avx2_loadu f (8 * j)) in
                                    avx2_mul (avx2_broadcast x) (avx2_storeu b).
  Proof. same_program. Qed.
  Lemma q4_unfolded : q4 = GEN [ j < 4 ] tlet b := in_mem AVX2_REG (GEN [ l < 8 ] f _[ 8 * j + l ]) in
                                          avx2_mul (avx2_broadcast x) (avx2_storeu b).
  Proof. Fail same_program. reflexivity. Qed.
  Lemma q4_no_mem : q4 = GEN [ j < 4 ] tlet b := avx2_loadu f (8 * j) in
                                        avx2_mul (avx2_broadcast x) (avx2_storeu b).
  Proof. Fail same_program. reflexivity. Qed.

  (* check_safe: a masked load whose lanes past n are masked off is in
     bounds; the same load unmasked is not. *)
  Definition p5 := GEN [ j < cdiv n 8 ] GEN [ l < 8 ] |[ 8 * j + l <? n ]| f _[ 8 * j + l ].
  Derive q5 SuchThat (p5 = q5) As q5_ok.
  Proof. reschedule. vector_index. use_instr avx2_maskload. check_safe. done. Qed.
  Print q5.

  (* check_safe reads a buffer's extent through its memory marker and the
     instructions in its value. *)
  Hypothesis Hg : shaped [8] g.
  Definition p7 := tlet b := GEN [ l < 8 ] g _[ l ] in GEN [ l < 8 ] x * b _[ l ].
  Derive q7 SuchThat (p7 = q7) As q7_ok.
  Proof.
    reschedule. use_instr avx2_storeu. set_memory b AVX2_REG.
    rw avx2_mul_gen. use_instr avx2_broadcast. use_instr avx2_storeu.
    check_safe. done.
  Qed.
  Print q7.

  Definition p6 := GEN [ j < cdiv n 8 ] GEN [ l < 8 ] f _[ 8 * j + l ].
  Derive q6 SuchThat (p6 = q6) As q6_ok.
  Proof. reschedule. use_instr avx2_loadu. Fail check_safe. done. Qed.
End Instr.

(* A broadcast whose scalar type only the program fixes (the search's
   vaxpy, examples/search/vector.v).  use_instr and use_instr_all read the
   head of the instruction's specification to skip subtrees without it;
   read from the instruction itself, that left its implicit arguments
   instantiated (here as Z -> Z -> S), and use_instr_all found no site,
   before decision #106's fix. *)
Section Broadcast.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (alpha : S) (x y : Z -> Z -> S).
  Definition p8 := GEN [ i < n ] GEN [ l < 8 ] alpha * x _[ i ] _[ l ] + y _[ i ] _[ l ].
  Derive q8 SuchThat (p8 = q8) As q8_ok.
  Proof.
    reschedule.
    rw lanes_bcast_fmadd at (GEN [ l < 8 ] alpha * x _[ _ ] _[ l ] + y _[ _ ] _[ l ]).
    use_instr avx2_broadcast at (GEN [ _ < 8 ] alpha).
    done.
  Qed.
  Print q8.
  Derive q9 SuchThat (p8 = q9) As q9_ok.
  Proof.
    reschedule.
    rw lanes_bcast_fmadd at (GEN [ l < 8 ] alpha * x _[ _ ] _[ l ] + y _[ _ ] _[ l ]).
    use_instr_all avx2_broadcast.
    done.
  Qed.
  Print q9.
End Broadcast.
