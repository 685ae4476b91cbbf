(** * The blur of Blur.v, vectorized for AVX2 and AVX-512 (issue 5).

    The algorithm is [blur] of Examples/Blur.v (the ATL paper's Sec. 8.1
    3x3 blur), imported, not restated.  Each derivation starts from
    Blur.v's total fusion, reusing its proof [blur_fused_correct] (border
    rows and columns peeled off, the interior free of guards), and splits
    the interior columns [1 .. m - 2] of every middle row into vectors
    (Exo thesis Sec. 3.3-3.4: [divide_loop] with a cut tail, then
    [replace] by instructions):

    - [gen_vectorize] (Targets/AVX.v): [(m - 2) / 8] full vectors of 8
      lanes, and the last, partial vector (when 8 does not divide
      [m - 2]) whose lanes past the row are guarded off;
    - [vector_index]: every access as [o + l] in the lane [l], every lane
      guard as [l <? c];
    - the full vectors are marked as stored ([avx2_storeu_gen]); the
      partial one as a masked store whose guard is kept inside
      ([avx2_maskstore_guard]) and pushed onto each of the nine reads
      ([rw_all tadd_guard]);
    - the lane-wise sums become trees of [avx2_add] ([rw_all
      avx2_add_gen_tadd]), and the reads [avx2_loadu] / [avx2_maskload]
      ([use_instr_all]): the masked loads read exactly the lanes the row
      has, which [check_safe] proves.

    The border rows and columns stay scalar.  The AVX-512 schedule is the
    same with 16 lanes.  The steps after [vector_index] are run on the
    vectorized interior alone and used by the derivation as one step
    ([blur_avx2_row_ok], below: build time).  Build: about 8 s of CPU for
    the whole file (coqc; 10 s before the interior was split off); per
    derivation the costliest step is [check_safe], about 0.8 s. *)

From Coq Require Import ZArith List Lia.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Examples.Blur.
From Verisched Require Import Reshape.Defs Reshape.Duals Reshape.Bounds Reshape.Partition.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

(** Build time (issue 16): after [gen_vectorize] and [vector_index] (which
    also normalises the border's indices, so it stays a step on the whole
    program), every step acts in the vectorized interior of a middle row
    ([blur_row_src], at width [w]), so those steps are run on it alone, once
    per width ([blur_avx2_row_sig], [blur_avx512_row_sig]), and each
    derivation rewrites the interior with the result ([rw blur_avx2_row_ok
    at ...]): the whole-program passes ([rw_all], [use_instr_all]) then
    neither walk the scalar border nor carry it in their proofs.  The programs are the
    derivations' own, binder names included; [blur_avx2_is] and
    [blur_avx512_is] check them against the expected ones. *)
Definition blur_row_src {S : Type} `{ScalarLaws S} (m : Z) (v : Z -> Z -> S) (w y : Z) :=
  trunc_r (m - 2)
    (flatten (cdiv (m - 2) w) w
       (concat ((m - 2) / w) (cdiv (m - 2) w - (m - 2) / w)
          (GEN [ io < (m - 2) / w ]
             GEN [ l < w ]
               v _[y - 1] _[w * io + l] <+> v _[y - 1] _[w * io + 1 + l] <+>
               v _[y - 1] _[w * io + 2 + l] <+>
               (v _[y] _[w * io + l] <+> v _[y] _[w * io + 1 + l] <+> v _[y] _[w * io + 2 + l]) <+>
               (v _[y + 1] _[w * io + l] <+> v _[y + 1] _[w * io + 1 + l] <+>
                v _[y + 1] _[w * io + 2 + l]))
          (GENR [ (m - 2) / w <= io < cdiv (m - 2) w ]
             GEN [ l < w ]
               |[ l <? m - w * io - 2 ]|
                 (v _[y - 1] _[w * io + l] <+> v _[y - 1] _[w * io + 1 + l] <+>
                  v _[y - 1] _[w * io + 2 + l] <+>
                  (v _[y] _[w * io + l] <+> v _[y] _[w * io + 1 + l] <+> v _[y] _[w * io + 2 + l]) <+>
                  (v _[y + 1] _[w * io + l] <+> v _[y + 1] _[w * io + 1 + l] <+>
                   v _[y + 1] _[w * io + 2 + l]))))).

Definition blur_avx2_row_sig {S : Type} `{ScalarLaws S} (n m : Z) (v : Z -> Z -> S)
    (Hv : shaped [n; m] v) (Hn : 2 <= n) (Hm : 2 <= m) (y : Z) (Hy : 1 <= y < n - 1) :
  { p | ltac:(let t := eval cbv beta delta [blur_row_src] in (blur_row_src m v 8 y) in
              exact (t = p)) }.
Proof.
  eexists.
  rw avx2_storeu_gen.
  rw avx2_maskstore_guard.
  rw_all tadd_guard.
  rw_all avx2_add_gen_tadd.
  use_instr_all avx2_loadu.
  use_instr_all avx2_maskload.
  done.
Defined.

Definition blur_avx512_row_sig {S : Type} `{ScalarLaws S} (n m : Z) (v : Z -> Z -> S)
    (Hv : shaped [n; m] v) (Hn : 2 <= n) (Hm : 2 <= m) (y : Z) (Hy : 1 <= y < n - 1) :
  { p | ltac:(let t := eval cbv beta delta [blur_row_src] in (blur_row_src m v 16 y) in
              exact (t = p)) }.
Proof.
  eexists.
  rw avx512_storeu_gen.
  rw avx512_maskstore_guard.
  rw_all tadd_guard.
  rw_all avx512_add_gen_tadd.
  use_instr_all avx512_loadu.
  use_instr_all avx512_maskload.
  done.
Defined.

Section BlurVec.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (v : Z -> Z -> S).
  Hypothesis Hv : shaped [n; m] v.
  Hypothesis Hn : 2 <= n.
  Hypothesis Hm : 2 <= m.

  (** The vectorized interiors (derived once above) as lemmas. *)
  Lemma blur_avx2_row_ok (y : Z) (Hy : 1 <= y < n - 1) :
    ltac:(let t := eval cbv beta delta [blur_row_src] in (blur_row_src m v 8 y) in
          let r := eval red in (blur_avx2_row_sig n m v Hv Hn Hm y Hy) in
          lazymatch r with exist _ ?p _ => exact (t = p) end).
  Proof. exact (proj2_sig (blur_avx2_row_sig n m v Hv Hn Hm y Hy)). Qed.

  Lemma blur_avx512_row_ok (y : Z) (Hy : 1 <= y < n - 1) :
    ltac:(let t := eval cbv beta delta [blur_row_src] in (blur_row_src m v 16 y) in
          let r := eval red in (blur_avx512_row_sig n m v Hv Hn Hm y Hy) in
          lazymatch r with exist _ ?p _ => exact (t = p) end).
  Proof. exact (proj2_sig (blur_avx512_row_sig n m v Hv Hn Hm y Hy)). Qed.

  (** ** AVX2: 8 lanes *)

  Derive blur_avx2 SuchThat (blur n m v = blur_avx2) As blur_avx2_correct.
  Proof.
    (* Start from Blur.v's fused schedule, derived and proved there. *)
    rewrite (blur_fused_correct n m v Hv Hn Hm).
    reschedule.
    (* The interior columns as vectors of 8. *)
    rw (gen_vectorize (X := S) 8 1 (m - 1) (m - 2) ((m - 2) / 8)).
    vector_index.
    rw blur_avx2_row_ok at (trunc_r (m - 2) _).
    check_safe.
    done.
  Qed.

  (** ** AVX-512F: 16 lanes *)

  Derive blur_avx512 SuchThat (blur n m v = blur_avx512) As blur_avx512_correct.
  Proof.
    rewrite (blur_fused_correct n m v Hv Hn Hm).
    reschedule.
    rw (gen_vectorize (X := S) 16 1 (m - 1) (m - 2) ((m - 2) / 16)).
    vector_index.
    rw blur_avx512_row_ok at (trunc_r (m - 2) _).
    check_safe.
    done.
  Qed.

  (** ** The derived programs *)

  (** The border: the first and last rows, the first and last columns of
      the middle rows (as Blur.v's fused schedule, scalar). *)
  Definition first_row :=
    GEN [ y < 1 ] GEN [ x < m ]
      (|[ 0 <=? x - 1 ]| v _[ y ] _[ x - 1 ]) <+> v _[ y ] _[ x ] <+>
      (|[ x + 1 <? m ]| v _[ y ] _[ x + 1 ]) <+>
      ((|[ 0 <=? x - 1 ]| v _[ 1 + y ] _[ x - 1 ]) <+> v _[ 1 + y ] _[ x ] <+>
       (|[ x + 1 <? m ]| v _[ 1 + y ] _[ x + 1 ])).

  Definition last_row :=
    GENR [ n - 1 <= y < n ] GEN [ x < m ]
      (|[ 0 <=? x - 1 ]| v _[ y - 1 ] _[ x - 1 ]) <+> v _[ y - 1 ] _[ x ] <+>
      (|[ x + 1 <? m ]| v _[ y - 1 ] _[ x + 1 ]) <+>
      ((|[ 0 <=? x - 1 ]| v _[ y ] _[ x - 1 ]) <+> v _[ y ] _[ x ] <+>
       (|[ x + 1 <? m ]| v _[ y ] _[ x + 1 ])).

  Definition first_col (y : Z) :=
    GEN [ x < 1 ]
      v _[ y - 1 ] _[ x ] <+> v _[ y - 1 ] _[ 1 + x ] <+>
      (v _[ y ] _[ x ] <+> v _[ y ] _[ 1 + x ]) <+>
      (v _[ y + 1 ] _[ x ] <+> v _[ y + 1 ] _[ 1 + x ]).

  Definition last_col (y : Z) :=
    GENR [ m - 1 <= x < m ]
      v _[ y - 1 ] _[ x - 1 ] <+> v _[ y - 1 ] _[ x ] <+>
      (v _[ y ] _[ x - 1 ] <+> v _[ y ] _[ x ]) <+>
      (v _[ y + 1 ] _[ x - 1 ] <+> v _[ y + 1 ] _[ x ]).

  (** The interior of row [y]: vectors of 8, each the sum of the nine
      (masked, in the last vector) loads at columns [8 * io + dx], [dx] in
      0..2, of rows [y - 1], [y], [y + 1]. *)
  Definition blur_avx2_expected :=
    concat 1 (n - 1) first_row
      (concat (n - 2) 1
         (GENR [ 1 <= y < n - 1 ]
            concat 1 (m - 1) (first_col y)
              (concat (m - 2) 1
                 (trunc_r (m - 2)
                    (flatten (cdiv (m - 2) 8) 8
                       (concat ((m - 2) / 8) (cdiv (m - 2) 8 - (m - 2) / 8)
                          (GEN [ io < (m - 2) / 8 ]
                             avx2_storeu
                               (avx2_add
                                  (avx2_add
                                     (avx2_add
                                        (avx2_add (avx2_loadu (v _[ y - 1 ]) (8 * io))
                                           (avx2_loadu (v _[ y - 1 ]) (8 * io + 1)))
                                        (avx2_loadu (v _[ y - 1 ]) (8 * io + 2)))
                                     (avx2_add
                                        (avx2_add (avx2_loadu (v _[ y ]) (8 * io))
                                           (avx2_loadu (v _[ y ]) (8 * io + 1)))
                                        (avx2_loadu (v _[ y ]) (8 * io + 2))))
                                  (avx2_add
                                     (avx2_add (avx2_loadu (v _[ y + 1 ]) (8 * io))
                                        (avx2_loadu (v _[ y + 1 ]) (8 * io + 1)))
                                     (avx2_loadu (v _[ y + 1 ]) (8 * io + 2)))))
                          (GENR [ (m - 2) / 8 <= io < cdiv (m - 2) 8 ]
                             avx2_maskstore (m - 8 * io - 2)
                               (avx2_add
                                  (avx2_add
                                     (avx2_add
                                        (avx2_add
                                           (avx2_maskload (v _[ y - 1 ]) (8 * io) (m - 8 * io - 2))
                                           (avx2_maskload (v _[ y - 1 ]) (8 * io + 1) (m - 8 * io - 2)))
                                        (avx2_maskload (v _[ y - 1 ]) (8 * io + 2) (m - 8 * io - 2)))
                                     (avx2_add
                                        (avx2_add
                                           (avx2_maskload (v _[ y ]) (8 * io) (m - 8 * io - 2))
                                           (avx2_maskload (v _[ y ]) (8 * io + 1) (m - 8 * io - 2)))
                                        (avx2_maskload (v _[ y ]) (8 * io + 2) (m - 8 * io - 2))))
                                  (avx2_add
                                     (avx2_add
                                        (avx2_maskload (v _[ y + 1 ]) (8 * io) (m - 8 * io - 2))
                                        (avx2_maskload (v _[ y + 1 ]) (8 * io + 1) (m - 8 * io - 2)))
                                     (avx2_maskload (v _[ y + 1 ]) (8 * io + 2) (m - 8 * io - 2))))))))
                 (last_col y)))
         last_row).

  Lemma blur_avx2_is : blur_avx2 = blur_avx2_expected.
  Proof. unfold blur_avx2_expected, first_row, last_row, first_col, last_col. same_program. Qed.

  Definition blur_avx512_expected :=
    concat 1 (n - 1) first_row
      (concat (n - 2) 1
         (GENR [ 1 <= y < n - 1 ]
            concat 1 (m - 1) (first_col y)
              (concat (m - 2) 1
                 (trunc_r (m - 2)
                    (flatten (cdiv (m - 2) 16) 16
                       (concat ((m - 2) / 16) (cdiv (m - 2) 16 - (m - 2) / 16)
                          (GEN [ io < (m - 2) / 16 ]
                             avx512_storeu
                               (avx512_add
                                  (avx512_add
                                     (avx512_add
                                        (avx512_add (avx512_loadu (v _[ y - 1 ]) (16 * io))
                                           (avx512_loadu (v _[ y - 1 ]) (16 * io + 1)))
                                        (avx512_loadu (v _[ y - 1 ]) (16 * io + 2)))
                                     (avx512_add
                                        (avx512_add (avx512_loadu (v _[ y ]) (16 * io))
                                           (avx512_loadu (v _[ y ]) (16 * io + 1)))
                                        (avx512_loadu (v _[ y ]) (16 * io + 2))))
                                  (avx512_add
                                     (avx512_add (avx512_loadu (v _[ y + 1 ]) (16 * io))
                                        (avx512_loadu (v _[ y + 1 ]) (16 * io + 1)))
                                     (avx512_loadu (v _[ y + 1 ]) (16 * io + 2)))))
                          (GENR [ (m - 2) / 16 <= io < cdiv (m - 2) 16 ]
                             avx512_maskstore (m - 16 * io - 2)
                               (avx512_add
                                  (avx512_add
                                     (avx512_add
                                        (avx512_add
                                           (avx512_maskload (v _[ y - 1 ]) (16 * io) (m - 16 * io - 2))
                                           (avx512_maskload (v _[ y - 1 ]) (16 * io + 1) (m - 16 * io - 2)))
                                        (avx512_maskload (v _[ y - 1 ]) (16 * io + 2) (m - 16 * io - 2)))
                                     (avx512_add
                                        (avx512_add
                                           (avx512_maskload (v _[ y ]) (16 * io) (m - 16 * io - 2))
                                           (avx512_maskload (v _[ y ]) (16 * io + 1) (m - 16 * io - 2)))
                                        (avx512_maskload (v _[ y ]) (16 * io + 2) (m - 16 * io - 2))))
                                  (avx512_add
                                     (avx512_add
                                        (avx512_maskload (v _[ y + 1 ]) (16 * io) (m - 16 * io - 2))
                                        (avx512_maskload (v _[ y + 1 ]) (16 * io + 1) (m - 16 * io - 2)))
                                     (avx512_maskload (v _[ y + 1 ]) (16 * io + 2) (m - 16 * io - 2))))))))
                 (last_col y)))
         last_row).

  Lemma blur_avx512_is : blur_avx512 = blur_avx512_expected.
  Proof. unfold blur_avx512_expected, first_row, last_row, first_col, last_col. same_program. Qed.
End BlurVec.
