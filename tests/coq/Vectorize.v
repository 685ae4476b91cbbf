(* Pinned behaviour of the vectorize directive (output compared with
   Vectorize.ref): an elementwise add (AVX2 and AVX-512), the inner loop of
   a 2-D program (broadcast, fmadd), Blur.v's fused blur, operations nested
   in any order (a scaled sum, a product of sums), smax as the whole body
   (two arrays; a ReLU, its 0 a broadcast; a lane-free left operand);
   an smax below a sum and a product, a lane-free operand of + (c stays a
   broadcast in the tail); a SUM loop, alone and after rfactor (reduce_add);
   float64 lanes (avx2pd, avx512pd);
   refusals: a SUM of rows, a strided (not lane-wise)
   body, an unknown name, an extent not known nonnegative, an outer loop, a
   lane guard around a constant (saying to peel); borders on either side as
   masked loads. *)
From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL Examples.Blur.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Vectorize.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m k : Z) (c : S) (f g : Z -> S) (A B : Z -> Z -> S).
  Hypothesis Hf : shaped [n] f.
  Hypothesis Hg : shaped [n] g.
  Hypothesis HA : shaped [n; m] A.
  Hypothesis HB : shaped [n; m] B.
  Hypothesis Hn : 0 <= n.
  Hypothesis Hm : 0 <= m.

  (* (a) 1-D elementwise add: full vectors loadu/add/storeu, the tail masked. *)
  Definition p1 := GEN [ i < n ] f _[ i ] <+> g _[ i ].
  Derive q1 SuchThat (p1 = q1) As q1_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print q1.

  Derive q1b SuchThat (p1 = q1b) As q1b_ok.
  Proof. reschedule. vectorize i with avx512. check_safe. done. Qed.
  Print q1b.

  (* (b) every row of a 2-D program, its inner loop j vectorized: the
     lane-free c is broadcast, c * a + b is a fused multiply-add. *)
  Definition p2 := GEN [ i < n ] GEN [ j < m ] c * A _[ i ] _[ j ] + B _[ i ] _[ j ].
  Derive q2 SuchThat (p2 = q2) As q2_ok.
  Proof. reschedule. vectorize j with avx2. check_safe. done. Qed.
  Print q2.

  (* (c) Blur.v's fused blur: the interior columns (the third loop named x;
     the first two are renamed out of the way, then back). *)
  Variable v : Z -> Z -> S.
  Hypothesis Hv : shaped [n; m] v.
  Hypothesis Hn2 : 2 <= n.
  Hypothesis Hm2 : 2 <= m.
  Derive q3 SuchThat (blur n m v = q3) As q3_ok.
  Proof.
    rewrite (blur_fused_correct n m v Hv Hn2 Hm2).
    reschedule.
    rename_loop x into x0. rename_loop x into x1.
    vectorize x with avx2.
    rename_loop x0 into x. rename_loop x1 into x.
    check_safe.
    done.
  Qed.
  Print q3.

  (* A SUM loop (Halide's vectorized reduction, decision #151): each row's
     sum as the sums of its vectors' lanes (reduce_add), the tail masked. *)
  Definition r1 := GEN [ i < n ] SUM [ r < m ] A _[ i ] _[ r ] * B _[ i ] _[ r ].
  Derive s1 SuchThat (r1 = s1) As s1_ok.
  Proof. reschedule. vectorize r with avx2. check_safe. done. Qed.
  Print s1.
  (* After rfactor, the final sum over the lanes: a literal extent the width
     divides, so no tail; [into] names the vectors' loop. *)
  Derive s1b SuchThat (r1 = s1b) As s1b_ok.
  Proof.
    reschedule. split r by 32 into ro ri. rfactor ri into u as t.
    vectorize u with avx512. vectorize ri with avx512 into rv. check_safe. done.
  Qed.
  Print s1b.
  Print Assumptions s1b_ok.

  (* Float64 lanes (decision #154): the same directive with avx2pd (4 lanes)
     and avx512pd (8): the 2-D fused multiply-add and the rfactor lanes' sum. *)
  Derive q2d SuchThat (p2 = q2d) As q2d_ok.
  Proof. reschedule. vectorize j with avx2pd. check_safe. done. Qed.
  Print q2d.
  Derive s1d SuchThat (r1 = s1d) As s1d_ok.
  Proof.
    reschedule. split r by 16 into ro ri. rfactor ri into u as t.
    vectorize u with avx512pd. vectorize ri with avx512pd into rv. check_safe. done.
  Qed.
  Print s1d.
  Print Assumptions s1d_ok.

  (* Refusals. *)
  (* A SUM of rows: its body is not a scalar. *)
  Definition r1c := SUM [ r < n ] A _[ r ].
  Derive s1c SuchThat (r1c = s1c) As s1c_ok.
  Proof. reschedule. Fail vectorize r with avx2. done. Qed.

  (* A strided access: the lanes do not read contiguous elements. *)
  Definition r2 := GEN [ i < n ] f _[ 2 * i ].
  Derive s2 SuchThat (r2 = s2) As s2_ok.
  Proof. reschedule. Fail vectorize i with avx2. done. Qed.

  (* A division: no vector instruction for it. *)
  Definition r2b := GEN [ i < n ] f _[ i ] / g _[ i ].
  Derive s2b SuchThat (r2b = s2b) As s2b_ok.
  Proof. reschedule. Fail vectorize i with avx2. done. Qed.

  (* No loop of that name. *)
  Derive s3 SuchThat (p1 = s3) As s3_ok.
  Proof. reschedule. Fail vectorize z with avx2. done. Qed.

  (* The extent k - 1 is not known nonnegative. *)
  Definition r4 := GENR [ 1 <= i < k ] f _[ i ].
  Derive s4 SuchThat (r4 = s4) As s4_ok.
  Proof. reschedule. Fail vectorize i with avx2. done. Qed.

  (* An outer loop: its body is a row, not a scalar. *)
  Derive s5 SuchThat (p2 = s5) As s5_ok.
  Proof. reschedule. Fail vectorize i with avx2. done. Qed.
  (* Operations nested in any order: a sum under a product (one pass over
     the lanes; separate add and mul passes left c * (a + b) a lane loop). *)
  Definition p4 := GEN [ i < n ] c * (f _[ i ] + g _[ i ]).
  Derive q4 SuchThat (p4 = q4) As q4_ok.
  Proof. reschedule. vectorize i with avx512. check_safe. done. Qed.
  Print q4.

  Definition p5 := GEN [ i < n ] (f _[ i ] + g _[ i ]) * (g _[ i ] + c).
  (* (g + c: the tail's guard leaves c, a broadcast, under the masked store) *)
  Derive q5 SuchThat (p5 = q5) As q5_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print q5.

  (* The vector loops named by the user ([into]): under a split's [io] they were
     [io0]; here [iv], for the full vectors and the tail. *)
  Derive q7 SuchThat (p1 = q7) As q7_ok.
  Proof.
    reschedule. split i by 64 into io ii peel. vectorize ii with avx2 into iv.
    check_safe. done.
  Qed.
  Print q7.

  (* Borders: a guard that bounds the lane below or above becomes a masked
     load (maskload_range below, maskload above); in the tail the border's
     guard and the tail's are one mask, the tighter bound kept. *)
  Definition p8 := GEN [ i < n ] |[ 1 <=? i ]| f _[ i - 1 ] + f _[ i ].
  Derive q8 SuchThat (p8 = q8) As q8_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print q8.

  Definition p9 := GEN [ i < n ]
    c * (|[ 0 <=? i - 2 ]| f _[ i - 2 ]) + g _[ i ] + (|[ i + 1 <? n ]| f _[ i + 1 ]).
  Derive q9 SuchThat (p9 = q9) As q9_ok.
  Proof. reschedule. vectorize i with avx512. check_safe. done. Qed.
  Print q9.

  (* A border of the outer loop (lane-free guard) around a row read: the
     guard goes outside the lane loop and guards the whole vector. *)
  Definition p10 := GEN [ y < n ] GEN [ x < m ]
    (|[ 0 <=? y - 1 ]| A _[ y - 1 ] _[ x ]) <+> B _[ y ] _[ x ].
  Derive q10 SuchThat (p10 = q10) As q10_ok.
  Proof. reschedule. vectorize x with avx2. check_safe. done. Qed.
  Print q10.

  (* Borders written with >=? and >?: read as <=? and <? on the lane. *)
  Definition p11 := GEN [ i < n ] (|[ i >=? 1 ]| f _[ i - 1 ]) + (|[ n >? i + 1 ]| f _[ i + 1 ]).
  Derive q11 SuchThat (p11 = q11) As q11_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print q11.

  (* A guard that depends on the lane around a lane-free value (a masked
     constant): a broadcast under the border's mask. *)
  Definition r6 := GEN [ i < n ] f _[ i ] + (|[ 1 <=? i ]| c).
  Derive s6 SuchThat (r6 = s6) As s6_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print s6.

  (* A point on the lane is the range [3 <= i < 4] (guard_eqb_range): in the
     tail, with the loop's own bound, maskload_range_min. *)
  Definition r6b := GEN [ i < n ] |[ i =? 3 ]| f _[ i ].
  Derive s6b SuchThat (r6b = s6b) As s6b_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print s6b.

  (* A guard on the lane that is no bound: refused, saying to peel. *)
  Definition r6c := GEN [ i < n ] |[ i mod 2 =? 0 ]| f _[ i ].
  Derive s6c SuchThat (r6c = s6c) As s6c_ok.
  Proof. reschedule. Fail vectorize i with avx2. done. Qed.

  (* A split's guarded tail under vectors that divide its factor: the
     vectors' own tail guard holds by the loops' bounds and is dropped
     (guard_lt_true), the split's guard is the mask. *)
  Definition r7 := GEN [ i < n ] c * f _[ i ].
  Derive s7 SuchThat (r7 = s7) As s7_ok.
  Proof.
    reschedule. split i by 64 into io ii. vectorize ii with avx2. check_safe. done.
  Qed.
  Print s7.

  (* By a factor no multiple of the width: the tail guard falls inside a
     vector, two upper bounds, neither provably the tighter: maskload_min,
     whose mask count is their minimum. *)
  Derive s7b SuchThat (r7 = s7b) As s7b_ok.
  Proof.
    reschedule. split i by 60 into io ii. vectorize ii with avx2. check_safe. done.
  Qed.
  Print s7b.

  (* A window bound: the loop's end and [i <? 5], two upper bounds; in the
     full vectors the loop's is dropped (the loops imply it), in the tail
     both stay (the masked store's count does not stand for the loop's: the
     window's bound would then choose the lanes read, past [f] at [n < 5]):
     maskload_min there. *)
  Definition r8 := GEN [ i < n ] |[ i <? 5 ]| f _[ i ].
  Derive s8 SuchThat (r8 = s8) As s8_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print s8.

  (* A constant under a window: in the tail the masked store's bound above it
     is dropped (its fact, vec_stored; no memory is read under it, so the
     window's bound alone choosing the lanes reads nothing), and the window's
     is the broadcast's mask.  Under a split by a multiple of the width, the
     full vectors' store, all of whose lanes are under the split's bound, is a
     masked store of that many lanes (vec_storeu_maskstore), and the same
     holds there; by 60 the vectors' own tail has two upper bounds above the
     constant once the store's is dropped: maskbroadcast_range_min (with the
     lower bound 0, lanes_const_hi2). *)
  Definition r9 := GEN [ i < n ] (|[ i <? 5 ]| c) + f _[ i ].
  Derive s9 SuchThat (r9 = s9) As s9_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print s9.
  Derive s9b SuchThat (r9 = s9b) As s9b_ok.
  Proof.
    reschedule. split i by 64 into io ii. vectorize ii with avx2. check_safe. done.
  Qed.
  Print s9b.
  Derive s9c SuchThat (r9 = s9c) As s9c_ok.
  Proof.
    reschedule. split i by 60 into io ii. vectorize ii with avx2. check_safe. done.
  Qed.
  Print s9c.

  (* A lower bound and two upper ones on one load (a border under a split
     by 60): maskload_range_min in the split's tail. *)
  Definition r12 := GEN [ i < n ] |[ 1 <=? i ]| f _[ i - 1 ].
  Derive s12 SuchThat (r12 = s12) As s12_ok.
  Proof.
    reschedule. split i by 60 into io ii. vectorize ii with avx2. check_safe. done.
  Qed.
  Print s12.

  (* A loop whose body does not use its index (Coq prints it [_]) is found by
     its name: a fill is a broadcast stored in full vectors and a masked tail;
     a row broadcast's inner loop after [reorder]. *)
  Definition r13 := GEN [ i < n ] c.
  Derive s13 SuchThat (r13 = s13) As s13_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print s13.
  Definition r14 := GEN [ i < n ] GEN [ j < m ] A _[ 0 ] _[ j ].
  Derive s14 SuchThat (0 < n -> r14 = s14) As s14_ok.
  Proof. reschedule. reorder j i. vectorize i with avx512. check_safe. done. Qed.
  Print s14.
End Vectorize.

Section VectorizeMax.
  Context {S : Type} `{ScalarLaws S} {Sm : ScalarMax S}.
  Variables (n : Z) (c : S) (f g : Z -> S).
  Hypothesis Hf : shaped [n] f.
  Hypothesis Hg : shaped [n] g.
  Hypothesis Hn : 0 <= n.

  (* smax as the loop's whole body: the tail's guard onto both operands
     under the masked store (vec_maskstore_guard_max), so masked loads. *)
  Definition m1 := GEN [ i < n ] smax (f _[ i ]) (g _[ i ]).
  Derive w1 SuchThat (m1 = w1) As w1_ok.
  Proof. reschedule. vectorize i with avx512. check_safe. done. Qed.
  Print w1.
  (* the same in float64 lanes: [avx512pd_max] *)
  Derive w1d SuchThat (m1 = w1d) As w1d_ok.
  Proof. reschedule. vectorize i with avx512pd. check_safe. done. Qed.
  Print w1d.

  (* A ReLU of an affine map: the 0 stays a broadcast (_l), fmadd inside. *)
  Definition m2 := GEN [ i < n ] smax (c * f _[ i ] + g _[ i ]) szero.
  Derive w2 SuchThat (m2 = w2) As w2_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print w2.

  (* A lane-free left operand (_r). *)
  Definition m3 := GEN [ i < n ] smax c (f _[ i ]).
  Derive w3 SuchThat (m3 = w3) As w3_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print w3.

  (* An smax below a sum and a product: under the masked store the tail's
     guard reaches it too (vec_maskstore_under). *)
  Definition m4 := GEN [ i < n ] c * (smax c (f _[ i ]) + g _[ i ]).
  Derive w4 SuchThat (m4 = w4) As w4_ok.
  Proof. reschedule. vectorize i with avx512. check_safe. done. Qed.
  Print w4.

  (* Under a split by a multiple of the width (a ReLU split by 32 in vectors
     of 16): the full vectors' store is masked by the split's bound, which
     then passes onto smax's operands (guard_true_smax); in the vectors' own
     tail, empty, the loops imply the split's bound (guard_lt_true). *)
  Derive w5 SuchThat (m1 = w5) As w5_ok.
  Proof.
    reschedule. split i by 32 into io ii. vectorize ii with avx512. check_safe. done.
  Qed.
  Print w5.
  (* By 24, the vectors' tail has the split's bound and its own, of which
     neither is the tighter; both go onto smax's operands (guard2_smax: smax
     0 0 = 0 by the class's idempotence), one maskload_min each. *)
  Derive w6 SuchThat (m1 = w6) As w6_ok.
  Proof.
    reschedule. split i by 24 into io ii. vectorize ii with avx512. check_safe. done.
  Qed.
  Print w6.
  (* A window's bound around a ReLU (its zero a masked broadcast in the
     tail), and a border's lower bound around smax (range-masked loads). *)
  Definition m7 := GEN [ i < n ] |[ i <? 21 ]| smax (f _[ i ]) szero.
  Derive w7 SuchThat (m7 = w7) As w7_ok.
  Proof. reschedule. vectorize i with avx2. check_safe. done. Qed.
  Print w7.
  Definition m8 := GEN [ i < n ] |[ 1 <=? i ]| smax (f _[ i - 1 ]) (f _[ i ]).
  Derive w8 SuchThat (m8 = w8) As w8_ok.
  Proof. reschedule. vectorize i with avx512. check_safe. done. Qed.
  Print w8.
  (* The border under a split by 20 (vectors of 8): the guard pass reaches the
     border's bound before the split's and the tail's go onto smax's
     operands, and goes once more (atl_vec_guards): maskload_range_min.  A
     window under a split by 9 puts three upper bounds on one load, in the
     vectors' tail: maskload_min3, and smax's 0 under them loses the tail's
     store bound (a second pass): maskbroadcast_range_min.  Two windows under
     that split put four: refused, the hint says so. *)
  Derive w9 SuchThat (m8 = w9) As w9_ok.
  Proof.
    reschedule. split i by 20 into io ii. vectorize ii with avx2. check_safe. done.
  Qed.
  Print w9.
  Derive w10 SuchThat (m7 = w10) As w10_ok.
  Proof. reschedule. split i by 9 into io ii. vectorize ii with avx2. check_safe. done. Qed.
  Print w10.
  Definition m9 := GEN [ i < n ] |[ 2 <=? i ]| |[ i <? 21 ]| (f _[ i - 2 ] + f _[ i ]).
  Derive w11 SuchThat (m9 = w11) As w11_ok.
  Proof.
    reschedule. split i by 60 into io ii. vectorize ii with avx512. check_safe. done.
  Qed.
  Print w11.
  Definition m10 := GEN [ i < n ] |[ i <? 21 ]| |[ i <? n - 3 ]| f _[ i ].
  Derive w12 SuchThat (m10 = w12) As w12_ok.
  Proof. reschedule. split i by 9 into io ii. Fail vectorize ii with avx2. done. Qed.
End VectorizeMax.
