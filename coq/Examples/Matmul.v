(** * Matrix multiply, tiled at two levels on [i] and [j], blocked on
    [k], with a packed operand panel.

    Paper references: tiling a generation by the dual identity
    [trunc_r n (flatten (split k v)) = v] (ATL paper Sec. 6.3, Fig. 7;
    the rewrite is [gen_tile], Reshape/Duals.v), tiling a reduction
    ([sum_tile], Sec. 6.3 applied to SUM), sum/generation interchange
    (Sec. 4.1) and let lifting (the [ll_*] rewrites of Sec. 4.1, used for
    buffers as in Sec. 8.3).  The schedule is the classic
    GotoBLAS/BLIS one, as far as it is expressible without reordering
    generations (see "Not done" below).

    [C[i][j] = SUM k A[i][k] * B[k][j]], [A : M x K], [B : K x N].
    Tile sizes are parameters: [mc] rows per cache block, [mr] rows per
    group inside it; [nc] columns per block, [nr] columns per strip (the
    vector-register width); [kc] the depth of a [k] block.  [M], [N], [K]
    are arbitrary (no divisibility by any tile size): [gen_tile] and
    [sum_tile] guard the ragged edges.

    The derived loop nest:
    - [SUM ko]: the [k] blocks are outermost, so the result is a sum of
      rank-[kc] updates ([C += A[:, ko-block] * B[ko-block, :]]).
    - [tlet Bp := ...]: for each [ko], the [kc x N] panel of [B] is copied
      once into [Bp[jo][jm][kk][jr]] (block of [nc] columns, strip of [nr]
      columns, depth [kk], column in strip): each [kc x nr] strip is
      contiguous and row-major, the layout the inner loop streams.  It is
      reused by every row of [C].  The copy keeps the edge guards of the
      loops it was lifted out of ([ll_guard_dup]), so it never reads [B]
      out of bounds and its padding is zero.
    - [io] / [im] / [ir]: rows in cache blocks of [mc], groups of [mr].
    - [jo] / [jm]: columns in blocks of [nc], strips of [nr].
    - [SUM kk] outside [GEN jr]: for one row and one strip, an
      [nr]-wide accumulator updated [kc] times by
      [A[i][k] * Bp[jo][jm][kk][0..nr)] (broadcast times a contiguous
      vector), i.e. a 1 x nr register block.

    Not done: a true [mr x nr] register block needs the row loop [ir]
    inside the strip loop [jm] (and [jo] outside [im] for the [nc]-column
    block to stay in L1 across rows).  Both are reorderings of two
    generations whose results are stored row-major, i.e. a [transpose]
    dual (Fig. 7) pushed through the tiled loops, which this derivation
    does not attempt; the [mr] level therefore only groups rows. *)

From Coq Require Import ZArith.
From Coq Require Import derive.Derive.
From Verisched Require Import ATL Rewrites.Extra Reshape.Defs Reshape.Commute Reshape.Duals.
Open Scope Z_scope. Open Scope atl_scope.

Section Matmul.
  Context {S : Type} `{ScalarLaws S}.
  Variables (M N K : Z).
  Variables (mc mr nc nr kc : Z).
  Hypotheses (Hmc : 0 < mc) (Hmr : 0 < mr) (Hnc : 0 < nc) (Hnr : 0 < nr) (Hkc : 0 < kc).
  Hypothesis (HK : 0 <= K).
  Variables (A B : Z -> Z -> S).

  Definition matmul :=
    GEN [ i < M ] GEN [ j < N ] SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ].

  (** Each [rw ... at (pattern)] names its site by the extent of the loop
      (or the bound of the guard) it acts on; the extents are distinct
      variables, so the site is unambiguous whatever order [rw] visits
      nodes in. *)
  Derive matmul_tiled SuchThat (matmul = matmul_tiled) As matmul_tiled_correct.
  Proof.
    reschedule.
    (* Block the reduction: [k = ko * kc + kk], guarded by [k < K]. *)
    rw (sum_tile K kc).
    (* [ko] outermost: out of [j], then out of [i]. *)
    rw gen_sum_swap at (genr 0 N _).
    rw gen_sum_swap at (genr 0 M _).
    (* Two-level tiling of rows, then of columns. *)
    rw (gen_tile mc M).
    rw (gen_tile mr mc).
    rw (gen_tile nc N).
    rw (gen_tile nr nc).
    (* The [kk] reduction outside the strip [jr]: first the two column
       guards into the sum, then the interchange. *)
    rw <- guard_sum at (iverson (_ <? N) _).
    rw <- guard_sum at (iverson (_ <? nc) _).
    rw gen_sum_swap at (genr 0 nr _).
    (* Packing: bind the read of [B] and lift it, keeping the three guards
       on the copy, out of [jr], [kk], [jm], the inner column tiling, [jo]
       and the outer column tiling ... *)
    rw let_intro_smul_r.
    rw ll_guard_dup at (iverson (_ <? K) _).
    rw ll_guard_dup at (iverson (_ <? N) _).
    rw ll_guard_dup at (iverson (_ <? nc) _).
    rw let_gen_lift0 at (genr 0 nr _).
    rw let_sum_lift0 at (sumr 0 kc _).
    rw let_gen_lift0 at (genr 0 (cdiv nc nr) _).
    rw ll_flatten at (flatten (cdiv nc nr) nr _).
    rw ll_trunc_r at (trunc_r nc _).
    rw let_gen_lift0 at (genr 0 (cdiv N nc) _).
    rw ll_flatten at (flatten (cdiv N nc) nc _).
    rw ll_trunc_r at (trunc_r N _).
    (* ... then, since the panel does not depend on the row, past the row
       guards and every row loop, up to the [ko] loop. *)
    rw ll_guard at (iverson (_ <? M) _).
    rw ll_guard at (iverson (_ <? mc) _).
    rw ll_gen at (genr 0 mr _).
    rw ll_gen at (genr 0 (cdiv mc mr) _).
    rw ll_flatten at (flatten (cdiv mc mr) mr _).
    rw ll_trunc_r at (trunc_r mc _).
    rw ll_gen at (genr 0 (cdiv M mc) _).
    rw ll_flatten at (flatten (cdiv M mc) mc _).
    rw ll_trunc_r at (trunc_r M _).
    done.
  Qed.

  (** The derived program. *)
  Definition matmul_tiled_expected :=
    SUM [ ko < cdiv K kc ]
      tlet Bp :=
        GEN [ jo < cdiv N nc ] GEN [ jm < cdiv nc nr ] GEN [ kk < kc ] GEN [ jr < nr ]
          |[ jm * nr + jr <? nc ]| |[ jo * nc + (jm * nr + jr) <? N ]| |[ ko * kc + kk <? K ]|
            B _[ ko * kc + kk ] _[ jo * nc + (jm * nr + jr) ] in
      trunc_r M (flatten (cdiv M mc) mc (GEN [ io < cdiv M mc ]
        trunc_r mc (flatten (cdiv mc mr) mr (GEN [ im < cdiv mc mr ] GEN [ ir < mr ]
          |[ im * mr + ir <? mc ]| |[ io * mc + (im * mr + ir) <? M ]|
          trunc_r N (flatten (cdiv N nc) nc (GEN [ jo < cdiv N nc ]
            trunc_r nc (flatten (cdiv nc nr) nr (GEN [ jm < cdiv nc nr ]
              SUM [ kk < kc ] GEN [ jr < nr ]
                |[ jm * nr + jr <? nc ]| |[ jo * nc + (jm * nr + jr) <? N ]|
                |[ ko * kc + kk <? K ]|
                  A _[ io * mc + (im * mr + ir) ] _[ ko * kc + kk ] *
                  Bp _[ jo ] _[ jm ] _[ kk ] _[ jr ])))))))).

  Lemma matmul_tiled_is_expected : matmul_tiled = matmul_tiled_expected.
  Proof. reflexivity. Qed.

  Lemma matmul_tiled_spec : matmul = matmul_tiled_expected.
  Proof. rewrite matmul_tiled_correct; apply matmul_tiled_is_expected. Qed.
End Matmul.
