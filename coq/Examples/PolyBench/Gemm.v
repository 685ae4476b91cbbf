(** * PolyBench's gemm: [C := alpha A B + beta C], with the suite's constants.

    PolyBench/C's gemm scales [C] by [beta] and adds [alpha * A[i][k] * B[k][j]]
    in the loop order i, j, k, which reads [B] down a column.  Its
    initialisation fixes [alpha = 1.5] and [beta = 1.2]: here they are the
    literal constants [slit 3 2] and [slit 6 5] (Tensor/Scalar.v).

    [gemm_ikj]: [fission j] splits the [j] loop over the sum of the scaled
    [C] and the product; [reorder k j] puts the reduction outside, so each
    step of [k] adds a scaled row of [B] to a row of the output: the i, k, j
    order, whose inner loop is contiguous in [B] and the output (the C
    compiler vectorizes it).

    [gemm_avx512pd] and [gemm_avx2pd]: the SGEMM schedule of
    Examples/Directives/Sgemm.v in float64 lanes (decision #154): row blocks
    of [6 mcr] rows, [C]'s scaled copy fissioned off, depth blocks of [kc],
    a 6 x 32 register tile of 4 vectors of 8 doubles (AVX-512; AVX2: 6 x 8
    of 2 vectors of 4), packed operands, the tile in the [avx512pd] /
    [avx2pd] instructions.  [alpha] goes into [A]'s pack, so that the
    micro-kernel is the SGEMM's (a product by [alpha] at each broadcast,
    as the schedule alone leaves it, ran at 0.83x OpenBLAS's dgemm against
    1.10x without): [name_buffer] of [alpha * A], [compute_root] and
    [inline] leave its reads as reads of that generation, which [stage]
    packs; [get_gen] takes the pack's reads back to [A]. *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Gemm.
  Context {S : Type} `{ScalarLaws S}.
  Variables (ni nj nk : Z).
  Variables (C A B : Z -> Z -> S).
  Hypotheses (HC : shaped [ni; nj] C) (HA : shaped [ni; nk] A) (HB : shaped [nk; nj] B).

  Definition gemm :=
    GEN [ i < ni ] GEN [ j < nj ]
      slit 6 5 * C _[i] _[j] <+> SUM [ k < nk ] slit 3 2 * A _[i] _[k] * B _[k] _[j].

  Derive gemm_ikj SuchThat (gemm = gemm_ikj) As gemm_ikj_correct.
  Proof.
    reschedule.
    fission j.
    reorder k j.
    check_safe.
    done.
  Qed.

  Variables (mcr kc : Z).
  Hypotheses (Hmcr : 0 < mcr) (Hkc : 0 < kc) (Hnk : 0 <= nk).

  Derive gemm_avx512pd SuchThat (gemm = gemm_avx512pd) As gemm_avx512pd_correct.
  Proof.
    reschedule.
    name_buffer (slit 3 2 * A _[ _ ] _[ _ ]) as As.
    compute_root As.
    rename_loop i into ia. rename_loop k into ka.
    inline As.
    split i by (mcr * 6)%Z into io ii.
    fission ii.
    split k by kc into ko kk.
    reorder ko ii j.
    register_tile ii j by 6 32 lanes 8 into im ir jm jv l as t.
    stage B at io as Bp.
    compute_root Bp.
    stage (GEN [ ia < ni ] GEN [ ka < nk ] slit 3 2 * A _[ia] _[ka]) at ko as Ap.
    rw get_gen. rw get_gen.
    select_instr t with avx512pd.
    check_safe.
    done.
  Qed.

  Derive gemm_avx2pd SuchThat (gemm = gemm_avx2pd) As gemm_avx2pd_correct.
  Proof.
    reschedule.
    name_buffer (slit 3 2 * A _[ _ ] _[ _ ]) as As.
    compute_root As.
    rename_loop i into ia. rename_loop k into ka.
    inline As.
    split i by (mcr * 6)%Z into io ii.
    fission ii.
    split k by kc into ko kk.
    reorder ko ii j.
    register_tile ii j by 6 8 lanes 4 into im ir jm jv l as t.
    stage B at io as Bp.
    compute_root Bp.
    stage (GEN [ ia < ni ] GEN [ ka < nk ] slit 3 2 * A _[ia] _[ka]) at ko as Ap.
    rw get_gen. rw get_gen.
    select_instr t with avx2pd.
    check_safe.
    done.
  Qed.
End Gemm.
