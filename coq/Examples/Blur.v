(** * The blur of the ATL paper, Sec. 8.1 (Figs. 8-9), three schedules.

    Liu, Bernstein, Chlipala, Ragan-Kelley, "Verified Tensor-Program
    Optimization Via High-Level Scheduling Rewrites" (POPL 2022), Sec. 8.1:
    an unnormalized 3x3 blur over an [n x m] image [v] (rows [y], columns
    [x]), the composition of

      blur_x v x y := v[y; x-1] (+) v[y; x] (+) v[y; x+1]
      blur_y v x y := blur_x v x (y-1) (+) blur_x v x y (+) blur_x v x (y+1)

    over the whole image.  Reads outside the image are zero (third
    paragraph of Sec. 8.1); our semantics gives that already for an input
    with [Hv : shaped [n; m] v].  From that one algorithm, [blur], we
    derive:

    1. [blur_two_stage], the breadth-first schedule of Fig. 8: a buffer
       holding [blur_x] over the [n + 2] rows [-1 .. n] (its first and last
       rows are zero), whose middle rows are split into their first
       column, the guard-free main region and their last column; then
       [blur_y] reading the buffer at rows [y], [y+1], [y+2], unguarded;
    2. [blur_fused], total fusion: one loop nest, the first and last rows
       and, in between, the first and last columns peeled off, so that the
       main region carries no guards;
    3. [blur_tiled], Fig. 9 with [kn x km] tiles ([0 < kn], [0 < km] are
       section parameters): the border peeled as in 2, the middle rows
       written as the transpose of (first column, interior, last column)
       each transposed, the [(n-2) x (m-2)] interior tiled and reassembled
       with [trunc_r] / [flatten] / [transpose]; the tiles that lie wholly
       inside the interior carry no guards and compute their own
       [(kn + 2) x km] buffer of [blur_x]; the last row and the last column
       of tiles (partial when [kn], [km] do not divide [n - 2], [m - 2])
       keep their guard and are computed fused.

    Reading of the paper.  The formulas extracted from Figs. 8-9 are
    garbled: the big GEN operators lost their bounds' positions, and the
    concatenations and transposes are scrambled.  We reconstructed them
    from the prose ("conditionally guarding these boundary accesses and
    returning 0 ... partitioning the resulting loops into a constant-state
    region and more logically complex prologue and epilogue loops"), from
    the fragments that survive (Fig. 8's buffer rows [y = 0], [y = 1 ..],
    [y = n + 1], columns [x = 0], [x = m - 1], and its second stage
    [buf[y; x] (+) buf[y+1; x] (+) buf[y+2; x]]; Fig. 9's
    [trunc_r (n-2) (flatten (GEN [yo < (n-2)/kn] ... (+) ...))], the inner
    [trunc_r (m-2) (flatten (GEN [xo < (m-2)/km] ...))], the
    [(kn+2) x km] buffer and the transposed [kn x km] tile), and from the
    shapes.  The full/partial split of the tile loops at [(n-2)/kn] is
    our reading of the two GEN fragments in the figure.

    Departures.  The starting program is the paper's unguarded formula,
    not a hand-guarded one: the first step of every derivation,
    [blur_x_guard] (which needs [Hv]), introduces the boundary guards, so
    each derived program is proved equal to the literal 9-point sum.
    [rw] never enters index terms, so the tiled derivation ends with
    [simpl_index] (Reshape/Partition.v), which rewrites every access
    index to its [ring_simplify] normal form ([1 + yo * kn + y - 1]
    becomes [yo * kn + y], as Fig. 9 prints it).  The zero rows of Fig. 8's buffer
    come out as [tzero] in a concatenation.  Partial tiles are fused (no
    per-tile buffer), as in the public ATL development.

    All three need [2 <= n] and [2 <= m] (the peeled prologue and
    epilogue must exist).  [check_safe] proves every access of the fused
    and tiled programs in bounds; on the two-stage program it cannot run
    (its traversal fails on the [tzero] rows, a node [@tzero X inst] that
    it reads as an application to a type; reported to Rewrites/Tactics.v).

    Build time ([coqc -time], CPU seconds on the shared 2-core machine
    under load): two-stage 0.5 s, fused 1.1 s, tiled 4.2 s (of which
    [simpl_index] 0.7 s, [check_safe] 1.0 s, [Qed] 1.0 s); the whole file
    about 6 s and 530 MB.  The public ATL development needs 236 s and
    1.4 GB for its tiled blur alone. *)

From Coq Require Import ZArith List Lia.
From Coq Require Import derive.Derive.
From Verisched Require Import Tensor.Scalar Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape.
From Verisched Require Import Rewrites.Context Rewrites.Let Rewrites.Gen Rewrites.Guard.
From Verisched Require Import Rewrites.Tactics Rewrites.Safety Rewrites.SameProgram.
From Verisched Require Import Reshape.Defs Reshape.Duals Reshape.Bounds Reshape.Partition.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Blur.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (v : Z -> Z -> S).

  (** ** The algorithm (Sec. 8.1, the two displayed definitions) *)

  Definition blur_x (v : Z -> Z -> S) (x y : Z) : S :=
    v _[ y ] _[ x - 1 ] <+> v _[ y ] _[ x ] <+> v _[ y ] _[ x + 1 ].

  Definition blur_y (v : Z -> Z -> S) (x y : Z) : S :=
    blur_x v x (y - 1) <+> blur_x v x y <+> blur_x v x (y + 1).

  Definition blur (v : Z -> Z -> S) :=
    GEN [ y < n ] GEN [ x < m ] blur_y v x y.

  (** [blur_x] with its boundary reads guarded, as the paper's code does:
      a whole row outside the image is zero, and so are the reads left of
      column 0 and right of column [m - 1] (the caller's [x] is in range).
      Every access under these guards is in bounds, so a lowering to C
      needs no zero-extended input. *)
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

  (** The first step of every derivation: out-of-image reads are zero. *)
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

  (** ** 1. Breadth-first: two stages (Fig. 8) *)

  Derive blur_two_stage SuchThat (blur v = blur_two_stage) As blur_two_stage_correct.
  Proof.
    reschedule.
    inline blur_y.
    (* The three rows of blur_x, with boundary guards. *)
    rw blur_x_guard. rw blur_x_guard. rw blur_x_guard.
    (* Store blur_x for the n + 2 rows -1 .. n; read it at y, y+1, y+2. *)
    rw (stage_rows3_root n m (fun r c => blur_xg v c r) (fun a b c => a <+> b <+> c)).
    inline blur_xg.
    (* Buffer rows: 0 (image row -1), 1 .. n, n + 1 (image row n). *)
    rw (gen_peel (n + 2) (n + 1) n).
    simpl_guard.
    (* Columns of the middle rows: 0, 1 .. m - 2, m - 1. *)
    rw (gen_peel_inner (X := S) 1 (n + 1) m (m - 1) (m - 2)).
    simpl_guard.
    check_safe.   (* every access in bounds: the C reads the buffer unchecked *)
    done.
  Qed.

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
  Proof. same_program. Qed.

  (** ** 2. Total fusion *)

  Derive blur_fused SuchThat (blur v = blur_fused) As blur_fused_correct.
  Proof.
    reschedule.
    inline blur_y.
    rw blur_x_guard. rw blur_x_guard. rw blur_x_guard.
    inline blur_xg.
    (* Rows 0, 1 .. n - 2, n - 1; then the columns of the middle rows. *)
    rw (gen_peel n (n - 1) (n - 2)).
    rw (gen_peel_inner (X := S) 1 (n - 1) m (m - 1) (m - 2)).
    simpl_guard.
    check_safe.
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
  Proof. same_program. Qed.

  (** ** 3. Tiled (Fig. 9) *)

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
      (* The border as in the fused schedule, but the middle rows' columns
         split outside the row loop (Fig. 9's transposes), so that the
         interior is one (n-2) x (m-2) block; its guards all hold. *)
      rw (gen_peel n (n - 1) (n - 2)).
      rw (gen_peel_cols (X := S) 1 (n - 1) (n - 2) m (m - 1) (m - 2)).
      simpl_guard.
      (* Tile the interior by kn x km. *)
      rw (gen_tile2 (X := S) 1 (n - 1) 1 (m - 1) (n - 2) (m - 2) kn km).
      (* Full rows of tiles, then the last (partial) one; within the full
         rows, full tiles, then the last (partial) one. *)
      rw (gen_concat (X := Z -> Z -> S) ((n - 2) / kn)%Z (cdiv (n - 2) kn)).
      rw (gen_concat (X := Z -> Z -> S) ((m - 2) / km)%Z (cdiv (m - 2) km)).
      (* Full tiles need no guard; the last column of tiles keeps only its
         column guard. *)
      rw guard_elim.
      rw guard_and_l.
      (* Each full tile stores blur_x for its kn + 2 rows (Fig. 9's buf)
         and reads it at yi, yi + 1, yi + 2; the let leaves the tile's
         transpose. *)
      rw (stage_rows3 (X := S) kn km _ _
            (fun r c => v _[ r ] _[ c - 1 ] <+> v _[ r ] _[ c ] <+> v _[ r ] _[ c + 1 ])
            (fun a b c => a <+> b <+> c)).
      rw (ll_transpose (X := S) (Y := Z -> Z -> S)).
      (* [1 + yo * kn + y - 1] as [yo * kn + y], as Fig. 9 prints it. *)
      simpl_index.
      (* Safety of the lowering: every access in bounds.  The two facts
         let [solve_idx] bound [yo * kn] and [xo * km] from below in the
         partial tiles, where the loop starts at [(n-2)/kn], [(m-2)/km]. *)
      assert (Hqn : 0 <= (n - 2) / kn) by (apply Z.div_pos; lia).
      assert (Hqm : 0 <= (m - 2) / km) by (apply Z.div_pos; lia).
      check_safe.
      done.
    Qed.

    (** The fused 3x3 stencil whose top-left input pixel is [(r, c)], as
        the partial tiles compute it (a name for the reader only:
        [reflexivity] unfolds it). *)
    Definition blur9 (r c : Z) : S :=
      v _[ r ] _[ c ] <+> v _[ r ] _[ c + 1 ] <+> v _[ r ] _[ c + 2 ] <+>
      (v _[ r + 1 ] _[ c ] <+> v _[ r + 1 ] _[ c + 1 ] <+> v _[ r + 1 ] _[ c + 2 ]) <+>
      (v _[ r + 2 ] _[ c ] <+> v _[ r + 2 ] _[ c + 1 ] <+> v _[ r + 2 ] _[ c + 2 ]).

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
                          v _[ yo * kn + y ] _[ xo * km + x ] <+>
                          v _[ yo * kn + y ] _[ xo * km + x + 1 ] <+>
                          v _[ yo * kn + y ] _[ xo * km + x + 2 ] in
                      transpose kn km
                        (GEN [ y < kn ] GEN [ x < km ]
                           buf _[ y ] _[ x ] <+> buf _[ y + 1 ] _[ x ] <+> buf _[ y + 2 ] _[ x ]))
                   (* the last, partial column of tiles *)
                   (GENR [ (m - 2) / km <= xo < cdiv (m - 2) km ]
                      transpose kn km
                        (GEN [ yi < kn ] GEN [ xi < km ]
                           |[ xo * km + xi <? m - 2 ]|
                           blur9 (yo * kn + yi) (xo * km + xi)))))))
           (* the last, partial row of tiles *)
           (GENR [ (n - 2) / kn <= yo < cdiv (n - 2) kn ]
              transpose (m - 2) kn (trunc_r (m - 2) (flatten (cdiv (m - 2) km) km
                (GEN [ xo < cdiv (m - 2) km ]
                   transpose kn km
                     (GEN [ yi < kn ] GEN [ xi < km ]
                        |[ (yo * kn + yi <? n - 2) && (xo * km + xi <? m - 2) ]|
                        blur9 (yo * kn + yi) (xo * km + xi)))))))).

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
    Proof. unfold blur_tiled_expected, blur_tiled_interior, blur9. same_program. Qed.
  End Tiled.
End Blur.
