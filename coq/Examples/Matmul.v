(** * Matrix multiply: two-level tiling of [i] and [j], a blocked [k]
    reduction, and packed operand tiles (the GotoBLAS/BLIS schedule).

    Paper references: tiling a generation with the dual identity
    [trunc_r n (flatten (split k v)) = v] (ATL paper Sec. 6.3, Fig. 7; the
    rewrite is [gen_tile], Reshape/Duals.v); reordering two generations
    with a [transpose] dual ([transpose_gen] right to left, Fig. 7's
    transpose pair, as Fig. 9 does for the tiled blur); tiling a reduction
    ([sum_tile], Sec. 6.3 applied to SUM); sum/generation interchange and
    let lifting (Sec. 4.1); buffers as lets (Sec. 8.3).

    [C[i][j] = SUM k A[i][k] * B[k][j]], [A : M x K], [B : K x N].  Tile
    sizes are section parameters: [mc] rows per cache block and [mr] rows
    per register block; [nc] columns per block and [nr] per register
    block; [kc] the depth of a [k] block.  [M], [N], [K] are arbitrary (no
    divisibility by any tile size): [gen_tile] and [sum_tile] guard the
    ragged edges, and the guards travel with the code.

    The derived program ([matmul_tiled_expected] below), outside in:
    - [SUM ko]: the [k] blocks outermost, so [C] is a sum of rank-[kc]
      updates.
    - [tlet Bp]: for each [ko], the [kc x N] panel of [B] packed as
      [Bp[jo][jm][kk][jr]]: [nr]-column strips, each a contiguous
      row-major [kc x nr] micro-panel.  Computed once per [ko], read by
      every row block.
    - [io] (blocks of [mc] rows), then [tlet Ap]: the [mc x kc] block of
      [A] packed as [Ap[im][kk][ir]]: [mr]-row micro-panels, each a
      contiguous [kc x mr] array.  Computed once per [(ko, io)], read by
      every column strip.
    - [im] ([mr] rows), [jo] ([nc] columns), [jm] ([nr] columns), and the
      micro-kernel [SUM kk (GEN ir < mr, GEN jr < nr) Ap[im][kk][ir] *
      Bp[jo][jm][kk][jr]]: an [mr x nr] block of [C] accumulated over
      [kk] by outer products of two contiguous vectors, i.e. a register
      block.  The two [transpose]s only permute how the tiles are stored
      into the row-major result; they cost no data movement when lowered
      (the lowering turns reshape operators into index functions).
    - Every packed element and every product carries the edge guards of
      the loops it came from (copied onto the buffers by [ll_guard_dup]),
      so no read is out of bounds and the buffers' padding is zero;
      [check_safe] (Sec. 7.2) proves it, from the shapes of [A] and [B].

    Not done / doubtful: the loop order inside a row block is
    [im, jo, jm] (A micro-panel reused from L1 across the strips, B panel
    streamed); BLIS puts the column strips outside [im] so that a [kc x nr]
    B micro-panel stays in L1 across the [mr]-row groups.  That needs one
    more transpose pushed through the [mc]-level tiling; not attempted.
    As a consequence the [nc] level groups strips but does not improve
    locality in this order. *)

From Coq Require Import ZArith List.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety Reshape.Defs Reshape.Commute Reshape.Duals.
Open Scope Z_scope. Open Scope atl_scope.

Section Matmul.
  Context {S : Type} `{ScalarLaws S}.
  Variables (M N K : Z).
  Variables (mc mr nc nr kc : Z).
  Hypotheses (Hmc : 0 < mc) (Hmr : 0 < mr) (Hnc : 0 < nc) (Hnr : 0 < nr) (Hkc : 0 < kc).
  Hypothesis (HK : 0 <= K).
  Variables (A B : Z -> Z -> S).
  Hypotheses (HA : shaped [M; K] A) (HB : shaped [K; N] B).

  Definition matmul :=
    GEN [ i < M ] GEN [ j < N ] SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ].

  (** Each [rw ... at (pattern)] names its site by the extent of the loop
      (or the bound of the guard) it acts on.  The extents are distinct
      variables, so the pattern picks one node; where a packed buffer
      already holds a loop of the same extent, its guards are merged first
      ([guard_merge]) so that guard patterns cannot hit it. *)
  Derive matmul_tiled SuchThat (matmul = matmul_tiled) As matmul_tiled_correct.
  Proof.
    reschedule.
    (* Block the reduction: [k = ko * kc + kk], guarded by [k < K]. *)
    rw (sum_tile K kc).
    (* [ko] outermost: out of [j], then out of [i]. *)
    rw gen_sum_swap at (genr 0 N _).
    rw gen_sum_swap at (genr 0 M _).
    (* Rows: blocks of [mc], register blocks of [mr]. *)
    rw (gen_tile mc M).
    rw (gen_tile mr mc).
    (* Row guards into the column loop, then [ir] below [j]: a transpose. *)
    rw <- guard_gen at (iverson (_ <? M) _).
    rw <- guard_gen at (iverson (_ <? mc) _).
    rw <- transpose_gen at (genr 0 mr _).
    (* Columns: blocks of [nc], register blocks of [nr]. *)
    rw (gen_tile nc N).
    rw (gen_tile nr nc).
    (* Column guards into the row loop, then [jr] below [ir]. *)
    rw <- guard_gen at (iverson (_ <? N) _).
    rw <- guard_gen at (iverson (_ <? nc) _).
    rw <- transpose_gen at (genr 0 nr _).
    (* All four guards into the [kk] sum, then [kk] above [jr] and [ir]. *)
    rw <- guard_sum at (iverson (_ <? M) _).
    rw <- guard_sum at (iverson (_ <? mc) _).
    rw <- guard_sum at (iverson (_ <? N) _).
    rw <- guard_sum at (iverson (_ <? nc) _).
    rw gen_sum_swap at (genr 0 nr _).
    rw gen_sum_swap at (genr 0 mr _).
    (* Pack B: bind its read; lift it out of the guards (copying the
       column and depth guards onto the copy, which do not mention rows),
       out of [jr], past [ir], out of [kk] and [jm], [jo], and then past
       every row loop up to [ko]. *)
    name_buffer (B _[ _ ] _[ _ ]) as Bp.
    rw ll_guard_dup at (iverson (_ <? K) _).
    rw ll_guard at (iverson (_ <? M) _).
    rw ll_guard at (iverson (_ <? mc) _).
    rw ll_guard_dup at (iverson (_ <? N) _).
    rw ll_guard_dup at (iverson (_ <? nc) _).
    rw let_gen_lift0 at (genr 0 nr _).
    rw ll_gen at (genr 0 mr _).
    rw let_sum_lift0 at (sumr 0 kc _).
    rw ll_transpose at (transpose mr nr _).
    rw let_gen_lift0 at (genr 0 (cdiv nc nr) _).
    rw ll_flatten at (flatten (cdiv nc nr) nr _).
    rw ll_trunc_r at (trunc_r nc _).
    rw let_gen_lift0 at (genr 0 (cdiv N nc) _).
    rw ll_flatten at (flatten (cdiv N nc) nc _).
    rw ll_trunc_r at (trunc_r N _).
    rw ll_transpose at (transpose N mr _).
    rw ll_gen at (genr 0 (cdiv mc mr) _).
    rw ll_flatten at (flatten (cdiv mc mr) mr _).
    rw ll_trunc_r at (trunc_r mc _).
    rw ll_gen at (genr 0 (cdiv M mc) _).
    rw ll_flatten at (flatten (cdiv M mc) mc _).
    rw ll_trunc_r at (trunc_r M _).
    (* One guard on the B copy, so that the guard patterns below only
       see the product's guards. *)
    rw guard_merge.
    rw guard_merge.
    (* Pack A: the same, keeping the row and depth guards, up to [io]. *)
    name_buffer (A _[ _ ] _[ _ ]) as Ap.
    rw ll_guard_dup at (iverson (_ <? K) _).
    rw ll_guard_dup at (iverson (_ <? M) _).
    rw ll_guard_dup at (iverson (_ <? mc) _).
    rw ll_guard at (iverson (_ <? N) _).
    rw ll_guard at (iverson (_ <? nc) _).
    rw ll_gen at (genr 0 nr _).
    rw let_gen_lift0 at (genr 0 mr _).
    rw let_sum_lift0 at (sumr 0 kc _).
    rw ll_transpose at (transpose mr nr _).
    rw ll_gen at (genr 0 (cdiv nc nr) _).
    rw ll_flatten at (flatten (cdiv nc nr) nr _).
    rw ll_trunc_r at (trunc_r nc _).
    rw ll_gen at (genr 0 (cdiv N nc) _).
    rw ll_flatten at (flatten (cdiv N nc) nc _).
    rw ll_trunc_r at (trunc_r N _).
    rw ll_transpose at (transpose N mr _).
    rw let_gen_lift0 at (genr 0 (cdiv mc mr) _).
    rw ll_flatten at (flatten (cdiv mc mr) mr _).
    rw ll_trunc_r at (trunc_r mc _).
    (* One guard on the A copy and one in the micro-kernel. *)
    rw guard_merge.
    rw guard_merge.
    rw guard_merge.
    rw guard_merge.
    rw guard_merge.
    rw guard_merge.
    check_safe.
    done.
  Qed.
  (** The derived program. *)
  Definition matmul_tiled_expected :=
    SUM [ ko < cdiv K kc ]
      tlet Bp :=
        GEN [ jo < cdiv N nc ] GEN [ jm < cdiv nc nr ] GEN [ kk < kc ] GEN [ jr < nr ]
          |[ (jm * nr + jr <? nc) && (jo * nc + (jm * nr + jr) <? N) && (ko * kc + kk <? K) ]|
            B _[ ko * kc + kk ] _[ jo * nc + (jm * nr + jr) ] in
      trunc_r M (flatten (cdiv M mc) mc (GEN [ io < cdiv M mc ]
        tlet Ap :=
          GEN [ im < cdiv mc mr ] GEN [ kk < kc ] GEN [ ir < mr ]
            |[ (im * mr + ir <? mc) && (io * mc + (im * mr + ir) <? M) && (ko * kc + kk <? K) ]|
              A _[ io * mc + (im * mr + ir) ] _[ ko * kc + kk ] in
        trunc_r mc (flatten (cdiv mc mr) mr (GEN [ im < cdiv mc mr ]
          transpose N mr (trunc_r N (flatten (cdiv N nc) nc (GEN [ jo < cdiv N nc ]
            trunc_r nc (flatten (cdiv nc nr) nr (GEN [ jm < cdiv nc nr ]
              transpose mr nr (SUM [ kk < kc ] GEN [ ir < mr ] GEN [ jr < nr ]
                |[ (jm * nr + jr <? nc) && (jo * nc + (jm * nr + jr) <? N) &&
                   (im * mr + ir <? mc) && (io * mc + (im * mr + ir) <? M) &&
                   (ko * kc + kk <? K) ]|
                  Ap _[ im ] _[ kk ] _[ ir ] * Bp _[ jo ] _[ jm ] _[ kk ] _[ jr ])))))))))).

  Lemma matmul_tiled_is_expected : matmul_tiled = matmul_tiled_expected.
  Proof. same_program. Qed.

  Lemma matmul_tiled_spec : matmul = matmul_tiled_expected.
  Proof. rewrite matmul_tiled_correct; apply matmul_tiled_is_expected. Qed.
End Matmul.
