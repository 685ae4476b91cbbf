From Coq Require Import ZArith List Lia.
From Coq Require Import derive.Derive.
From Verisched Require Import Tensor.Scalar Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape.
From Verisched Require Import Rewrites.Context Rewrites.Let Rewrites.Gen Rewrites.Guard.
From Verisched Require Import Rewrites.Tactics Reshape.Defs Reshape.Duals Reshape.Partition.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Blur.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (v : Z -> Z -> S).

  Definition blur_x (v : Z -> Z -> S) (x y : Z) : S :=
    v _[ y ] _[ x - 1 ] <+> v _[ y ] _[ x ] <+> v _[ y ] _[ x + 1 ].

  Definition blur_y (v : Z -> Z -> S) (x y : Z) : S :=
    blur_x v x (y - 1) <+> blur_x v x y <+> blur_x v x (y + 1).

  Definition blur (v : Z -> Z -> S) :=
    GEN [ y < n ] GEN [ x < m ] blur_y v x y.

  Definition blur_xg (v : Z -> Z -> S) (x y : Z) : S :=
    |[ (0 <=? y) && (y <? n) ]|
      ((|[ 0 <=? x - 1 ]| v _[ y ] _[ x - 1 ]) <+> v _[ y ] _[ x ] <+>
       (|[ x + 1 <? m ]| v _[ y ] _[ x + 1 ])).

  Hypothesis Hv : shaped [n; m] v.

  Lemma read_out_row y x : ~ (0 <= y < n) -> v _[ y ] _[ x ] = tzero.
  Proof.
    intros Hy; unfold get; rewrite (shaped_out n [m] v y Hv Hy); reflexivity.
  Qed.

  Lemma read_out_col y x : ~ (0 <= x < m) -> v _[ y ] _[ x ] = tzero.
  Proof.
    intros Hx; destruct (Z.le_gt_cases 0 y), (Z.lt_ge_cases y n).
    - pose proof (shaped_get n [m] v y Hv) as Hy.
      unfold get; exact (shaped_out m [] (v y) x Hy Hx).
    - apply read_out_row; lia.
    - apply read_out_row; lia.
    - apply read_out_row; lia.
  Qed.

  Lemma blur_x_guard x y : 0 <= x < m -> blur_x v x y = blur_xg v x y.
  Proof.
    intros Hx; unfold blur_x, blur_xg.
    destruct ((0 <=? y) && (y <? n)) eqn:Ey; cbn [iverson].
    - destruct (Z.leb_spec 0 (x - 1)), (Z.ltb_spec (x + 1) m); cbn [iverson];
        rewrite ?(read_out_col y (x - 1)), ?(read_out_col y (x + 1)) by lia;
        reflexivity.
    - rewrite !read_out_row by (bool_hyps; bool_hyp_cases; bool_hyps; lia).
      cbn [tadd TensorElem_scalar tzero]; rewrite !sadd_0_l; reflexivity.
  Qed.

  Hypothesis Hn : 2 <= n.
  Hypothesis Hm : 2 <= m.

  Derive blur_two_stage SuchThat (blur v = blur_two_stage) As blur_two_stage_correct.
  Proof.
    reschedule.
    inline blur_y.
    rw blur_x_guard. rw blur_x_guard. rw blur_x_guard.
    rw (stage_rows3_root n m (fun r c => blur_xg v c r) (fun a b c => a <+> b <+> c)).
    inline blur_xg.
    rw (gen_peel (n + 2) (n + 1) n).
    simpl_guards. simpl_guards.
    rw (gen_peel_inner (X := S) 1 (n + 1) m (m - 1) (m - 2)).
    simpl_guards. simpl_guards.
    done.
  Time Qed.

  Definition blur_two_stage_expected :=
    tlet buf :=
      concat 1 (n + 1) tzero
        (concat n 1
           (GENR [ 1 <= y < n + 1 ]
              concat 1 (m - 1)
                (GEN [ x < 1 ] v _[ y - 1 ] _[ x ] <+> v _[ y - 1 ] _[ x + 1 ])
                (concat (m - 2) 1
                   (GENR [ 1 <= x < m - 1 ]
                      v _[ y - 1 ] _[ x - 1 ] <+> v _[ y - 1 ] _[ x ] <+> v _[ y - 1 ] _[ x + 1 ])
                   (GENR [ m - 1 <= x < m ] v _[ y - 1 ] _[ x - 1 ] <+> v _[ y - 1 ] _[ x ])))
           tzero) in
    GEN [ y < n ] GEN [ x < m ] buf _[ y ] _[ x ] <+> buf _[ y + 1 ] _[ x ] <+> buf _[ y + 2 ] _[ x ].

  Lemma blur_two_stage_is : blur_two_stage = blur_two_stage_expected.
  Proof. reflexivity. Qed.

  Derive blur_fused SuchThat (blur v = blur_fused) As blur_fused_correct.
  Proof.
    reschedule.
    inline blur_y.
    rw blur_x_guard. rw blur_x_guard. rw blur_x_guard.
    inline blur_xg.
    rw (gen_peel n (n - 1) (n - 2)).
    rw (gen_peel_inner (X := S) 1 (n - 1) m (m - 1) (m - 2)).
    simpl_guards. simpl_guards.
    done.
  Qed.

  Definition blur_fused_expected :=
    concat 1 (n - 1)
      (GEN [ y < 1 ] GEN [ x < m ]
         (|[ 0 <=? x - 1 ]| v _[ y ] _[ x - 1 ]) <+> v _[ y ] _[ x ] <+>
         (|[ x + 1 <? m ]| v _[ y ] _[ x + 1 ]) <+>
         ((|[ 0 <=? x - 1 ]| v _[ y + 1 ] _[ x - 1 ]) <+> v _[ y + 1 ] _[ x ] <+>
          (|[ x + 1 <? m ]| v _[ y + 1 ] _[ x + 1 ])))
      (concat (n - 2) 1
         (GENR [ 1 <= y < n - 1 ]
            concat 1 (m - 1)
              (GEN [ x < 1 ]
                 v _[ y - 1 ] _[ x ] <+> v _[ y - 1 ] _[ x + 1 ] <+>
                 (v _[ y ] _[ x ] <+> v _[ y ] _[ x + 1 ]) <+>
                 (v _[ y + 1 ] _[ x ] <+> v _[ y + 1 ] _[ x + 1 ]))
              (concat (m - 2) 1
                 (GENR [ 1 <= x < m - 1 ]
                    v _[ y - 1 ] _[ x - 1 ] <+> v _[ y - 1 ] _[ x ] <+> v _[ y - 1 ] _[ x + 1 ] <+>
                    (v _[ y ] _[ x - 1 ] <+> v _[ y ] _[ x ] <+> v _[ y ] _[ x + 1 ]) <+>
                    (v _[ y + 1 ] _[ x - 1 ] <+> v _[ y + 1 ] _[ x ] <+> v _[ y + 1 ] _[ x + 1 ]))
                 (GENR [ m - 1 <= x < m ]
                    v _[ y - 1 ] _[ x - 1 ] <+> v _[ y - 1 ] _[ x ] <+>
                    (v _[ y ] _[ x - 1 ] <+> v _[ y ] _[ x ]) <+>
                    (v _[ y + 1 ] _[ x - 1 ] <+> v _[ y + 1 ] _[ x ]))))
         (GENR [ n - 1 <= y < n ] GEN [ x < m ]
            (|[ 0 <=? x - 1 ]| v _[ y - 1 ] _[ x - 1 ]) <+> v _[ y - 1 ] _[ x ] <+>
            (|[ x + 1 <? m ]| v _[ y - 1 ] _[ x + 1 ]) <+>
            ((|[ 0 <=? x - 1 ]| v _[ y ] _[ x - 1 ]) <+> v _[ y ] _[ x ] <+>
             (|[ x + 1 <? m ]| v _[ y ] _[ x + 1 ])))).

  Lemma blur_fused_is : blur_fused = blur_fused_expected.
  Proof. reflexivity. Qed.
  Section Tiled.
    Variables (kn km : Z).
    Hypothesis Hkn : 0 < kn.
    Hypothesis Hkm : 0 < km.

    Derive blur_tiled SuchThat (blur v = blur_tiled) As blur_tiled_correct.
    Proof.
      reschedule.
      inline blur_y.
      rw blur_x_guard. rw blur_x_guard. rw blur_x_guard.
      inline blur_xg.
      Time rw (gen_peel n (n - 1) (n - 2)).
      Time rw (gen_peel_cols (X := S) 1 (n - 1) (n - 2) m (m - 1) (m - 2)).
      Time simpl_guards. Time simpl_guards.
      Time rw (gen_tile2 (X := S) 1 (n - 1) 1 (m - 1) (n - 2) (m - 2) kn km).
      Time rw (gen_concat (X := Z -> Z -> S) ((n - 2) / kn)%Z (cdiv (n - 2) kn)).
      Time rw (gen_concat (X := Z -> Z -> S) ((m - 2) / km)%Z (cdiv (m - 2) km)).
      Time rw guard_elim.
      Time rw guard_and_l.
      Time rw (stage_rows3 (X := S) kn km _ _
                 (fun r c => v _[ r ] _[ c - 1 ] <+> v _[ r ] _[ c ] <+> v _[ r ] _[ c + 1 ])
                 (fun a b c => a <+> b <+> c)).
      Time rw (ll_transpose (X := S) (Y := Z -> Z -> S)).
      done.
    Qed.

    (** The fused 3x3 stencil at [(r, c)], as the partial tiles compute it
        (a name for the reader only: [reflexivity] unfolds it). *)
    Definition blur9 (r c : Z) : S :=
      v _[ r - 1 ] _[ c - 1 ] <+> v _[ r - 1 ] _[ c ] <+> v _[ r - 1 ] _[ c + 1 ] <+>
      (v _[ r ] _[ c - 1 ] <+> v _[ r ] _[ c ] <+> v _[ r ] _[ c + 1 ]) <+>
      (v _[ r + 1 ] _[ c - 1 ] <+> v _[ r + 1 ] _[ c ] <+> v _[ r + 1 ] _[ c + 1 ]).

    (** The interior [(n-2) x (m-2)] block, Fig. 9's body. *)
    Definition blur_tiled_interior :=
      trunc_r (n - 2) (flatten (cdiv (n - 2) kn) kn
        (concat ((n - 2) / kn) (cdiv (n - 2) kn - (n - 2) / kn)
           (* full rows of tiles *)
           (GEN [ yo < (n - 2) / kn ]
              transpose (m - 2) kn (trunc_r (m - 2) (flatten (cdiv (m - 2) km) km
                (concat ((m - 2) / km) (cdiv (m - 2) km - (m - 2) / km)
                   (* full tiles: a (kn + 2) x km buffer of blur_x, no guards *)
                   (GEN [ xo < (m - 2) / km ]
                      tlet buf :=
                        GEN [ y < kn + 2 ] GEN [ x < km ]
                          v _[ 1 + yo * kn + y - 1 ] _[ 1 + xo * km + x - 1 ] <+>
                          v _[ 1 + yo * kn + y - 1 ] _[ 1 + xo * km + x ] <+>
                          v _[ 1 + yo * kn + y - 1 ] _[ 1 + xo * km + x + 1 ] in
                      transpose kn km
                        (GEN [ y < kn ] GEN [ x < km ]
                           buf _[ y ] _[ x ] <+> buf _[ y + 1 ] _[ x ] <+> buf _[ y + 2 ] _[ x ]))
                   (* the last, partial column of tiles *)
                   (GENR [ (m - 2) / km <= xo < cdiv (m - 2) km ]
                      transpose kn km
                        (GEN [ yi < kn ] GEN [ xi < km ]
                           |[ xo * km + xi <? m - 2 ]|
                           blur9 (1 + yo * kn + yi) (1 + xo * km + xi)))))))
           (* the last, partial row of tiles *)
           (GENR [ (n - 2) / kn <= yo < cdiv (n - 2) kn ]
              transpose (m - 2) kn (trunc_r (m - 2) (flatten (cdiv (m - 2) km) km
                (GEN [ xo < cdiv (m - 2) km ]
                   transpose kn km
                     (GEN [ yi < kn ] GEN [ xi < km ]
                        |[ (yo * kn + yi <? n - 2) && (xo * km + xi <? m - 2) ]|
                        blur9 (1 + yo * kn + yi) (1 + xo * km + xi)))))))).

    (** Fig. 9: first row; the middle rows as the transpose of their first
        column, the tiled interior and their last column; last row. *)
    Definition blur_tiled_expected :=
      concat 1 (n - 1)
        (GEN [ y < 1 ] GEN [ x < m ]
           (|[ 0 <=? x - 1 ]| v _[ y ] _[ x - 1 ]) <+> v _[ y ] _[ x ] <+>
           (|[ x + 1 <? m ]| v _[ y ] _[ x + 1 ]) <+>
           ((|[ 0 <=? x - 1 ]| v _[ y + 1 ] _[ x - 1 ]) <+> v _[ y + 1 ] _[ x ] <+>
            (|[ x + 1 <? m ]| v _[ y + 1 ] _[ x + 1 ])))
        (concat (n - 2) 1
           (transpose m (n - 2)
              (concat 1 (m - 1)
                 (transpose (n - 2) 1
                    (GENR [ 1 <= y < n - 1 ] GEN [ x < 1 ]
                       v _[ y - 1 ] _[ x ] <+> v _[ y - 1 ] _[ x + 1 ] <+>
                       (v _[ y ] _[ x ] <+> v _[ y ] _[ x + 1 ]) <+>
                       (v _[ y + 1 ] _[ x ] <+> v _[ y + 1 ] _[ x + 1 ])))
                 (concat (m - 2) 1
                    (transpose (n - 2) (m - 2) blur_tiled_interior)
                    (transpose (n - 2) 1
                       (GENR [ 1 <= y < n - 1 ] GENR [ m - 1 <= x < m ]
                          v _[ y - 1 ] _[ x - 1 ] <+> v _[ y - 1 ] _[ x ] <+>
                          (v _[ y ] _[ x - 1 ] <+> v _[ y ] _[ x ]) <+>
                          (v _[ y + 1 ] _[ x - 1 ] <+> v _[ y + 1 ] _[ x ]))))))
           (GENR [ n - 1 <= y < n ] GEN [ x < m ]
              (|[ 0 <=? x - 1 ]| v _[ y - 1 ] _[ x - 1 ]) <+> v _[ y - 1 ] _[ x ] <+>
              (|[ x + 1 <? m ]| v _[ y - 1 ] _[ x + 1 ]) <+>
              ((|[ 0 <=? x - 1 ]| v _[ y ] _[ x - 1 ]) <+> v _[ y ] _[ x ] <+>
               (|[ x + 1 <? m ]| v _[ y ] _[ x + 1 ])))).

    Lemma blur_tiled_is : blur_tiled = blur_tiled_expected.
    Proof. reflexivity. Qed.
  End Tiled.
End Blur.
