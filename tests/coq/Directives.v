(* Pinned behaviour of the loop directives (Rewrites/Directives.v; output
   compared with Directives.ref).  Each block shows a directive working, with
   the derived program printed, or refusing with its message. *)
From Coq Require Import ZArith List Lia derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Directives.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m p : Z) (f : Z -> S) (v : Z -> Z -> S) (w : Z -> Z -> Z -> S).
  Hypotheses (Hf : shaped [n] f) (Hv : shaped [n; m] v) (Hw : shaped [n; m; p] w).

  (* split, guard tail: a generation and a sum. *)
  Definition g1 := GEN [ i < n ] f _[ i ].
  Derive d1 SuchThat (g1 = d1) As d1_ok.
  Proof. reschedule. split i by 8 into io ii. check_safe. done. Qed.
  Print d1.

  Definition s1 := SUM [ i < n ] f _[ i ].
  Derive d2 SuchThat (s1 = d2) As d2_ok.
  Proof. reschedule. split i by 4 into ko kk. check_safe. done. Qed.
  Print d2.

  (* A loop not starting at 0 is tiled over its iterations. *)
  Definition g3 := GENR [ 1 <= i < n ] f _[ i - 1 ].
  Derive d3 SuchThat (g3 = d3) As d3_ok.
  Proof. reschedule. split i by 4 into io ii. check_safe. done. Qed.
  Print d3.

  (* split, peel: full tiles without guards, then the epilogue. *)
  Derive d4 SuchThat (0 <= n -> g1 = d4) As d4_ok.
  Proof. reschedule. split i by 4 into io ii peel. check_safe. done. Qed.
  Print d4.

  Derive d5 SuchThat (0 <= n -> s1 = d5) As d5_ok.
  Proof. reschedule. split i by 4 into io ii peel. check_safe. done. Qed.
  Print d5.

  (* split, shift: only for a generation whose extent the factor divides. *)
  Definition g6 := GEN [ i < 4 * m ] v _[ i / m ] _[ i mod m ].
  Derive d6 SuchThat (0 <= m -> g6 = d6) As d6_ok.
  Proof. reschedule. split i by 4 into io ii shift. done. Qed.
  Print d6.

  (* Refusals of split. *)
  Derive d7 SuchThat (g1 = d7) As d7_ok.
  Proof.
    reschedule.
    Fail split i by 0 into io ii.          (* factor not positive *)
    Fail split j by 4 into io ii.          (* no such loop *)
    Fail split i by 4 into io ii shift.    (* overlapping writes *)
    done.
  Qed.
  Derive d8 SuchThat (s1 = d8) As d8_ok.
  Proof.
    reschedule.
    Fail split i by 4 into io ii shift.    (* double count *)
    Fail split i by 4 into io ii peel.     (* 0 <= n unknown *)
    done.
  Qed.
  Derive d9 SuchThat (g3 = d9) As d9_ok.
  Proof. reschedule. Fail split i by 4 into io ii peel. done. Qed.

  (* fuse: two generations, two sums. *)
  Definition g10 := GEN [ i < n ] GEN [ j < m ] v _[ i ] _[ j ].
  Derive d10 SuchThat (0 < m -> g10 = d10) As d10_ok.
  Proof. reschedule. fuse i j into ij. check_safe. done. Qed.
  Print d10.

  Definition s11 := SUM [ i < n ] SUM [ j < m ] v _[ i ] _[ j ].
  Derive d11 SuchThat (0 < m -> s11 = d11) As d11_ok.
  Proof. reschedule. fuse i j into ij. check_safe. done. Qed.
  Print d11.

  (* Refusals of fuse. *)
  Definition gs := GEN [ i < n ] SUM [ j < m ] v _[ i ] _[ j ].
  Definition tri := SUM [ i < n ] SUMR [ i <= j < n ] v _[ i ] _[ j ].
  Derive d12 SuchThat (0 < m -> gs = d12) As d12_ok.
  Proof.
    reschedule.
    Fail fuse i j into ij.                 (* a generation and a reduction *)
    Fail fuse j i into ij.                 (* not a nest in this order *)
    Fail fuse i k into ij.                 (* no such inner loop *)
    done.
  Qed.
  Derive d13 SuchThat (g10 = d13) As d13_ok.
  Proof. reschedule. Fail fuse i j into ij. done. Qed.  (* 0 < m unknown *)
  Derive d14 SuchThat (tri = d14) As d14_ok.
  Proof. reschedule. Fail fuse i j into ij. done. Qed.   (* triangular *)

  (* reorder: GEN/SUM, SUM/GEN, SUM/SUM, GEN/GEN (a transpose). *)
  Derive d15 SuchThat (gs = d15) As d15_ok.
  Proof. reschedule. reorder j i. check_safe. done. Qed.
  Print d15.

  Definition sg := SUM [ j < m ] GEN [ i < n ] v _[ i ] _[ j ].
  Derive d16 SuchThat (sg = d16) As d16_ok.
  Proof. reschedule. reorder i j. check_safe. done. Qed.
  Print d16.

  Derive d17 SuchThat (s11 = d17) As d17_ok.
  Proof. reschedule. reorder j i. check_safe. done. Qed.
  Print d17.

  Derive d18 SuchThat (g10 = d18) As d18_ok.
  Proof. reschedule. reorder j i. check_safe. done. Qed.
  Print d18.

  (* Three loops with guards between them: the guards move inward. *)
  Definition g19 := GEN [ i < n ] SUM [ j < m ] |[ i <? 3 ]| SUM [ k < p ] |[ j <? 2 ]| w _[ i ] _[ j ] _[ k ].
  Derive d19 SuchThat (g19 = d19) As d19_ok.
  Proof. reschedule. reorder k j i. check_safe. done. Qed.
  Print d19.

  (* Refusals of reorder. *)
  Derive d20 SuchThat (tri = d20) As d20_ok.
  Proof. reschedule. Fail reorder j i. done. Qed.      (* triangular *)
  Derive d21 SuchThat (g19 = d21) As d21_ok.
  Proof.
    reschedule.
    Fail reorder k j x.                    (* no such loop *)
    Fail reorder i j.                      (* already in this order *)
    Fail reorder i k.                      (* j lies between *)
    done.
  Qed.
  Definition g22 := GEN [ i < n ] tlet t := GEN [ j < m ] v _[ i ] _[ j ] in SUM [ k < m ] t _[ k ].
  Derive d22 SuchThat (g22 = d22) As d22_ok.
  Proof. reschedule. Fail reorder k i. done. Qed.      (* a let between *)

  (* tile: two generations (transposes, Fig. 9's form), two sums, GEN over SUM. *)
  Derive d23 SuchThat (g10 = d23) As d23_ok.
  Proof. reschedule. tile i j by 4 8 into io jo ii ji. check_safe. done. Qed.
  Print d23.

  Derive d24 SuchThat (s11 = d24) As d24_ok.
  Proof. reschedule. tile i j by 4 8 into io jo ii ji. check_safe. done. Qed.
  Print d24.

  Derive d25 SuchThat (gs = d25) As d25_ok.
  Proof. reschedule. tile i j by 4 8 into io jo ii ji. check_safe. done. Qed.
  Print d25.

  (* Refusals of tile. *)
  Derive d26 SuchThat (sg = d26) As d26_ok.
  Proof.
    reschedule.
    Fail tile j i by 4 8 into jo io ji ii.  (* a sum over a generation *)
    Fail tile i j by 4 8 into io jo ii ji.  (* not a nest in this order *)
    done.
  Qed.
  Derive d27 SuchThat (g10 = d27) As d27_ok.
  Proof. reschedule. Fail tile i j by 4 0 into io jo ii ji. done. Qed.

  (* Halide's habit: a reorder after a tile names every loop of the nest.
     The tile's outer loops keep its transpose and flatten between them and
     are in order already; the depth moves out of ji only.  A loop that
     would cross such a reshape is refused, and so is an order already met. *)
  Definition mm3 := GEN [ i < n ] GEN [ j < m ] SUM [ k < p ] w _[ i ] _[ j ] _[ k ].
  Derive d27b SuchThat (mm3 = d27b) As d27b_ok.
  Proof.
    reschedule. tile i j by 4 8 into io jo ii ji. reorder io jo ii k ji. check_safe. done.
  Qed.
  Print d27b.
  Derive d27c SuchThat (mm3 = d27c) As d27c_ok.
  Proof.
    reschedule. tile i j by 4 8 into io jo ii ji.
    Fail reorder jo io ii k ji.            (* a transpose between io and jo *)
    Fail reorder io jo ii ji.              (* already in this order *)
    Fail fuse io jo into t.                (* Halide's tile then fuse: a reshape between *)
    done.
  Qed.

  (* Halide's tile by hand: split both loops, then reorder.  The inner
     split's flatten and trunc_r move out with its outer loop
     (dir_gen_swap_split): the tile's program, the row split's tail guard
     on its own loop; with a depth, it moves out of ji in the same step. *)
  Derive d27d SuchThat (g10 = d27d) As d27d_ok.
  Proof.
    reschedule. split i by 4 into io ii. split j by 8 into jo ji. reorder io jo ii ji.
    check_safe. done.
  Qed.
  Print d27d.
  Derive d27e SuchThat (mm3 = d27e) As d27e_ok.
  Proof.
    reschedule. split j by 8 into jo ji. split i by 4 into io ii. reorder io jo ii k ji.
    check_safe. done.
  Qed.
  Print d27e.
  Derive d27f SuchThat (g10 = d27f) As d27f_ok.
  Proof.
    reschedule. split i by 4 into io ii. split j by 8 into jo ji.
    Fail reorder jo io ii ji.              (* io is the rows' outer loop: no reshape moves in *)
    done.
  Qed.
  (* Column strips of an interior (a loop from 1, as peel leaves it): the
     split's reshape moves out over GENR [ 1 <= i < n ]. *)
  Definition g27g := GENR [ 1 <= i < n ] GENR [ 1 <= j < m ] v _[ i ] _[ j ].
  Derive d27g SuchThat (g27g = d27g) As d27g_ok.
  Proof. reschedule. split j by 8 into jo ji. reorder jo i ji. check_safe. done. Qed.
  Print d27g.

  (* A directive outside a derivation. *)
  Goal g1 = g1. Fail split i by 4 into io ii. reflexivity. Qed.

  (* Coq's own split is still there. *)
  Goal True /\ True. split; exact I. Qed.

  (* peel: one loop; a 2-D border in place; a 2-D border with the
     interior as one block (named yc xc). *)
  Definition st := GEN [ y < n ] GEN [ x < m ] (|[ 0 <=? x - 1 ]| v _[ y ] _[ x - 1 ]) <+> v _[ y ] _[ x ].
  Derive d28 SuchThat (2 <= n -> g1 = d28) As d28_ok.
  Proof. reschedule. peel i. check_safe. done. Qed.
  Print d28.
  Derive d29 SuchThat (2 <= n -> 2 <= m -> st = d29) As d29_ok.
  Proof. reschedule. peel y x. check_safe. done. Qed.
  Print d29.
  Derive d30 SuchThat (2 <= n -> 2 <= m -> st = d30) As d30_ok.
  Proof. reschedule. peel y x into yc xc. check_safe. done. Qed.
  Print d30.

  (* Refusals of peel. *)
  Derive d31 SuchThat (2 <= n -> st = d31) As d31_ok.
  Proof.
    reschedule.
    Fail peel z.                           (* no such loop *)
    Fail peel y x.                         (* 2 <= m unknown *)
    Fail peel x y.                         (* not a nest in this order *)
    done.
  Qed.
  Derive d32 SuchThat (g3 = d32) As d32_ok.
  Proof. reschedule. Fail peel i. done. Qed.          (* loop not from 0 *)

  (* tile .. partition: full tiles without guards, lower bounds kept. *)
  Definition g33 := GENR [ 1 <= i < n ] GENR [ 1 <= j < m ] v _[ i ] _[ j ].
  Derive d33 SuchThat (1 <= n -> 1 <= m -> g33 = d33) As d33_ok.
  Proof.
    reschedule. tile i j by 4 8 into io jo ii ji partition.
    assert (0 <= (n - 1) / 4) by (apply Z.div_pos; lia).
    assert (0 <= (m - 1) / 8) by (apply Z.div_pos; lia).
    check_safe. done.
  Qed.
  Print d33.

  (* Refusals of tile .. partition. *)
  Derive d34 SuchThat (g10 = d34) As d34_ok.
  Proof.
    reschedule.
    Fail tile i j by 4 8 into io jo ii ji partition.  (* 0 <= n unknown *)
    Fail tile j i by 4 8 into jo io ji ii partition.  (* not a nest in this order *)
    done.
  Qed.
  Derive d35 SuchThat (0 <= n -> 0 <= m -> g10 = d35) As d35_ok.
  Proof. reschedule. Fail tile i j by 0 8 into io jo ii ji partition. done. Qed.

  (* stage_rows: a 3-row stencil computes its stage into a buffer. *)
  Definition g36 := GEN [ y < n ] GEN [ x < m ] v _[ y - 1 ] _[ x ] <+> v _[ y ] _[ x ] <+> v _[ y + 1 ] _[ x ].
  Derive d36 SuchThat (g36 = d36) As d36_ok.
  Proof. reschedule. stage_rows (fun r c => v _[ r ] _[ c ]) at y into buf. done. Qed.
  Print d36.

  (* Refusals of stage_rows. *)
  Derive d37 SuchThat (g36 = d37) As d37_ok.
  Proof.
    reschedule.
    Fail stage_rows (fun r c => v _[ c ] _[ r ]) at y into buf.  (* not that stage *)
    Fail stage_rows (fun r c => v _[ r ] _[ c ]) at z into buf.  (* no such loop *)
    done.
  Qed.
  (* reorder of five and six loops (scatter-to-gather's and a 2-D
     convolution's nest depth); the triangular refusal names the pair. *)
  Definition g38 := SUM [ i < n ] GEN [ j < m ] SUM [ k < p ] GEN [ l < m ] SUM [ r < p ]
    w _[ i ] _[ j ] _[ k ] * w _[ i ] _[ l ] _[ r ].
  Derive d38 SuchThat (g38 = d38) As d38_ok.
  Proof. reschedule. reorder j l k r i. check_safe. done. Qed.
  Print d38.

  Definition g39 := SUM [ i < n ] GEN [ j < m ] SUM [ k < p ] GEN [ l < m ] SUM [ r < p ]
    GEN [ q < p ] w _[ i ] _[ j ] _[ k ] * w _[ i ] _[ l ] _[ r ] * w _[ i ] _[ j ] _[ q ].
  Derive d39 SuchThat (g39 = d39) As d39_ok.
  Proof. reschedule. reorder j l q k r i. check_safe. done. Qed.
  Print d39.

  Definition tri40 := GEN [ i < n ] SUM [ j < m ] SUM [ k < p ] SUM [ l < m ]
    SUMR [ i <= q < n ] v _[ i ] _[ j ] * v _[ q ] _[ l ] * f _[ k ].
  Derive d40 SuchThat (tri40 = d40) As d40_ok.
  Proof.
    reschedule.
    Fail reorder q j k l i.                (* q's bounds depend on i *)
    Fail reorder i j k l q x.              (* no such loop *)
    Fail reorder i j k l q.                (* already in this order *)
    done.
  Qed.

  (* A loop name is matched against that binder only.  After [peel i j
     into yc xc] the border rows come before the interior, their column
     loops eta-reduced ([genr 0 m (get (get v i))]); re-expanded under [i],
     the column binder is named [i] too, and a name check that accepted any
     variable in scope stopped there: "loop xc is not directly inside loop
     yc" (d41), or [split k] split the border's column loop (d42). *)
  Definition st41 := GEN [ i < n ] GEN [ j < m ]
    (|[ (1 <=? i) && (1 <=? j) ]| v _[ i - 1 ] _[ j - 1 ]) <+> v _[ i ] _[ j ].
  Derive d41 SuchThat (2 <= n -> 2 <= m -> st41 = d41) As d41_ok.
  Proof.
    reschedule. peel i j into yc xc. tile yc xc by 4 8 into yo xo yi xi partition.
    check_safe. done.
  Qed.
  Definition g42 := concat 1 n (GEN [ i < 1 ] GEN [ j < m ] v _[ i ] _[ j ])
    (GEN [ k < n ] GEN [ l < m ] v _[ k ] _[ l ]).
  Derive d42 SuchThat (1 <= n -> g42 = d42) As d42_ok.
  Proof.
    reschedule.
    change (GEN [ i < 1 ] GEN [ j < m ] v _[ i ] _[ j ])
      with (genr 0 1 (fun i => genr 0 m (get (get v i)))).
    split k by 4 into ko ki. check_safe. done.
  Qed.
  Print d42.
End Directives.

(* A loop whose body does not use its index prints as [_] (Coq shows no
   name it does not need), yet the directives find it by its name, which the
   bridge shows (Bridge/Print.v, [bridge_show_loop_names]): after [reorder],
   loop [i] of a row broadcast no longer uses its index and is split; a sum
   of a constant is split.  A binder written [_] has no name: [split x] does
   not find it (Ltac itself would call it [x]). *)
Section Unused.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (c : S) (g : Z -> S).
  Hypothesis Hg : shaped [m] g.
  Definition b43 := GEN [ i < n ] GEN [ j < m ] g _[ j ].
  Derive d43 SuchThat (b43 = d43) As d43_ok.
  Proof. reschedule. reorder j i. split i by 4 into io ii. check_safe. done. Qed.
  Print d43.
  Definition s44 := SUM [ k < n ] c.
  Derive d44 SuchThat (s44 = d44) As d44_ok.
  Proof. reschedule. split k by 4 into ko ki. check_safe. done. Qed.
  Print d44.
  Definition b45 := genr 0 n (fun _ => c).
  Derive d45 SuchThat (b45 = d45) As d45_ok.
  Proof. reschedule. Fail split x by 4 into xo xi. done. Qed.
End Unused.

(* rfactor (Rewrites/Rfactor.v): Halide's rfactor.  The buffer takes in the
   sums above the loop, in their order, and the guards between; a triangular
   sum stays outside; a loop not from 0 gives lanes from 0; a generation and
   a taken name are refused. *)
Section Rfactor.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (A : Z -> Z -> S) (x : Z -> S) (w : Z -> Z -> Z -> S).
  Hypotheses (HA : shaped [n; m] A) (Hx : shaped [m] x) (Hw : shaped [n; 4; m] w).

  Definition mv := GEN [ i < n ] SUM [ j < m ] A _[ i ] _[ j ] * x _[ j ].
  Derive r1 SuchThat (mv = r1) As r1_ok.
  Proof. reschedule. split j by 16 into jo ji. rfactor ji into u as t. check_safe. done. Qed.
  Print r1.
  Derive r2 SuchThat (0 <= m -> mv = r2) As r2_ok.
  Proof. reschedule. split j by 16 into jo ji peel. rfactor ji into u as t. check_safe. done. Qed.
  Print r2.
  (* the outer loop of the split: nothing above it to take in *)
  Derive r3 SuchThat (0 <= m -> mv = r3) As r3_ok.
  Proof. reschedule. split j by 16 into jo ji peel. rfactor jo into u as t. check_safe. done. Qed.
  Print r3.
  (* a middle sum: [a] taken in, the guard kept, [c] inside the lanes *)
  Definition s4 := SUM [ a < n ] SUM [ b < 4 ] |[ a + b <? n ]| SUM [ c < m ] w _[ a ] _[ b ] _[ c ].
  Derive r4 SuchThat (s4 = r4) As r4_ok.
  Proof. reschedule. rfactor b into u as t. check_safe. done. Qed.
  Print r4.
  (* a triangular nest: the sum [b]'s extent is [a], so the let goes below [a] *)
  Definition s5 := SUM [ a < m ] SUM [ b < a ] x _[ b ].
  Derive r5 SuchThat (s5 = r5) As r5_ok.
  Proof. reschedule. rfactor b into u as t. check_safe. done. Qed.
  Print r5.
  Definition s6 := SUM [ a < n ] SUMR [ 1 <= b < m ] x _[ b ].
  Derive r7 SuchThat (s6 = r7) As r7_ok.
  Proof.
    reschedule.
    Fail rfactor q into u as t.            (* no such loop *)
    Fail rfactor b into a as t.            (* the lanes' name is taken *)
    done.
  Qed.
  (* a loop not from 0 (decision #153): lane u is the term 1 + u *)
  Derive r6 SuchThat (s6 = r6) As r6_ok.
  Proof. reschedule. rfactor b into u as t. check_safe. done. Qed.
  Print r6.
  (* a lower bound that is an enclosing sum's index: the let goes below it *)
  Definition s9 := SUM [ a < m ] SUMR [ a <= b < m ] x _[ b ].
  Derive r9 SuchThat (s9 = r9) As r9_ok.
  Proof. reschedule. rfactor b into u as t. check_safe. done. Qed.
  Print r9.
  Derive r8 SuchThat (mv = r8) As r8_ok.
  Proof. reschedule. Fail rfactor i into u as t. done. Qed.  (* a generation *)
  Print Assumptions r1_ok.
End Rfactor.

(* The directive re-derivation of the tiled pipeline: its trust base. *)
From Verisched Require Examples.Directives.PipelineTiled.
Print Assumptions Examples.Directives.PipelineTiled.tiled_directive_correct.
Print Assumptions Examples.Directives.PipelineTiled.tiled_directive_same.

(* The directive re-derivations of Blur.v's schedules: their trust base. *)
From Verisched Require Examples.Directives.BlurTiled Examples.Directives.BlurFused2.
Print Assumptions Examples.Directives.BlurTiled.blur_tiled_dir_blur.
Print Assumptions Examples.Directives.BlurTiled.blur_tiled_dir_same.
Print Assumptions Examples.Directives.BlurFused2.blur_fused_dir_same.
Print Assumptions Examples.Directives.BlurFused2.blur_two_stage_dir_same.

(* The directive re-derivations of scatter-to-gather and im2col: their trust base. *)
From Verisched Require Examples.Directives.ScatterGather Examples.Directives.Im2col.
Print Assumptions Examples.Directives.ScatterGather.gather_directive_correct.
Print Assumptions Examples.Directives.ScatterGather.gather_directive_gather.
Print Assumptions Examples.Directives.Im2col.conv1d_im2col_directive_correct.
Print Assumptions Examples.Directives.Im2col.conv1d_im2col_directive_im2col.
Print Assumptions Examples.Directives.Im2col.conv1d_im2col_safe_directive_correct.
Print Assumptions Examples.Directives.Im2col.conv1d_im2col_safe_directive_safe.
Print Assumptions Examples.Directives.Im2col.conv2d_gemm_directive_correct.
Print Assumptions Examples.Directives.Im2col.conv2d_gemm_directive_gemm.
