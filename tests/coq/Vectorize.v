(* Pinned behaviour of the vectorize directive (output compared with
   Vectorize.ref): an elementwise add (AVX2 and AVX-512), the inner loop of
   a 2-D program (broadcast, fmadd), Blur.v's fused blur; refusals: a SUM
   loop, a strided (not lane-wise) body, an unknown name, an extent not
   known nonnegative, an outer loop. *)
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

  (* Refusals. *)
  (* A SUM loop is a reduction. *)
  Definition r1 := GEN [ i < n ] SUM [ r < m ] A _[ i ] _[ r ].
  Derive s1 SuchThat (r1 = s1) As s1_ok.
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
End Vectorize.
