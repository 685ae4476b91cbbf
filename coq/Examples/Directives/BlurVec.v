(** * Examples/BlurVec.v's AVX2 blur, with the [vectorize] directive.

    The schedule of [blur_avx2] (Examples/BlurVec.v), whose steps
    ([gen_vectorize], [vector_index], and, on the vectorized interior
    ([blur_avx2_row_sig] there), the stores, the guard pushed onto the
    reads, the adds, the loads) are here the one directive
    [vectorize x with avx2] (Targets/Vectorize.v).  Blur.v's fused
    schedule has five loops named [x] (first row, first column, interior
    columns, last column, last row); [vectorize] takes the first loop of
    the name, as [rename_loop] does, so the first two are renamed out of
    the way and back.

    The result is [blur_avx2] (same_program, [blur_avx2_vec_is]) but
    for one deliberate difference: the first row and column read [y + 1]
    and [x + 1] (as Blur.v's fused program) where [blur_avx2] reads
    [1 + y] and [1 + x].  Those are strays of the step-by-step schedule:
    its [vector_index] runs over the whole program and takes the loops
    [GEN [ y < 1 ]] and [GEN [ x < 1 ]] (numeral extents) for lane loops;
    [vectorize] normalizes indices in the loop it vectorizes only.  The interior (vectors, tails, masks) is
    [blur_avx2]'s term for term.  [blur_avx2_vec_eq]: the same function. *)

From Coq Require Import ZArith List Lia.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Examples.Blur Examples.BlurVec.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section BlurVecDirective.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (v : Z -> Z -> S).
  Hypothesis Hv : shaped [n; m] v.
  Hypothesis Hn : 2 <= n.
  Hypothesis Hm : 2 <= m.

  Derive blur_avx2_vec SuchThat (blur n m v = blur_avx2_vec) As blur_avx2_vec_correct.
  Proof.
    rewrite (blur_fused_correct n m v Hv Hn Hm).
    reschedule.
    rename_loop x into x0. rename_loop x into x1.
    vectorize x with avx2.
    rename_loop x0 into x. rename_loop x1 into x.
    check_safe.
    done.
  Qed.

  Definition first_row' :=
    GEN [ y < 1 ] GEN [ x < m ]
      (|[ 0 <=? x - 1 ]| v _[ y ] _[ x - 1 ]) <+> v _[ y ] _[ x ] <+>
      (|[ x + 1 <? m ]| v _[ y ] _[ x + 1 ]) <+>
      ((|[ 0 <=? x - 1 ]| v _[ y + 1 ] _[ x - 1 ]) <+> v _[ y + 1 ] _[ x ] <+>
       (|[ x + 1 <? m ]| v _[ y + 1 ] _[ x + 1 ])).

  Definition last_row' :=
    GENR [ n - 1 <= y < n ] GEN [ x < m ]
      (|[ 0 <=? x - 1 ]| v _[ y - 1 ] _[ x - 1 ]) <+> v _[ y - 1 ] _[ x ] <+>
      (|[ x + 1 <? m ]| v _[ y - 1 ] _[ x + 1 ]) <+>
      ((|[ 0 <=? x - 1 ]| v _[ y ] _[ x - 1 ]) <+> v _[ y ] _[ x ] <+>
       (|[ x + 1 <? m ]| v _[ y ] _[ x + 1 ])).

  Definition first_col' (y : Z) :=
    GEN [ x < 1 ]
      v _[ y - 1 ] _[ x ] <+> v _[ y - 1 ] _[ x + 1 ] <+>
      (v _[ y ] _[ x ] <+> v _[ y ] _[ x + 1 ]) <+>
      (v _[ y + 1 ] _[ x ] <+> v _[ y + 1 ] _[ x + 1 ]).

  Definition last_col' (y : Z) :=
    GENR [ m - 1 <= x < m ]
      v _[ y - 1 ] _[ x - 1 ] <+> v _[ y - 1 ] _[ x ] <+>
      (v _[ y ] _[ x - 1 ] <+> v _[ y ] _[ x ]) <+>
      (v _[ y + 1 ] _[ x - 1 ] <+> v _[ y + 1 ] _[ x ]).

  (** The interior of row [y] (as in Examples/BlurVec.v): vectors of 8, each the sum of the nine
      (masked, in the last vector) loads at columns [8 * io + dx], [dx] in
      0..2, of rows [y - 1], [y], [y + 1]. *)
  Definition blur_avx2_vec_expected :=
    concat 1 (n - 1) first_row'
      (concat (n - 2) 1
         (GENR [ 1 <= y < n - 1 ]
            concat 1 (m - 1) (first_col' y)
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
                 (last_col' y)))
         last_row').

  Lemma blur_avx2_vec_is : blur_avx2_vec = blur_avx2_vec_expected.
  Proof. unfold blur_avx2_vec_expected, first_row', last_row', first_col', last_col'. same_program. Qed.

  (** The same function as [blur_avx2]: both equal [blur]. *)
  Lemma blur_avx2_vec_eq : blur_avx2_vec = blur_avx2 n m v.
  Proof. rewrite <- blur_avx2_vec_correct; apply blur_avx2_correct; assumption. Qed.
End BlurVecDirective.
