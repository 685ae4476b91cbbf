(** * The 3x3 convolution for AVX2 in 5 directive lines.

    The schedule [conv_avx2] of Examples/Conv.v (24 low-level steps there:
    its Ltac [conv_schedule] and the instruction form) derived with
    directives only, as Directives/Sgemm.v does for SGEMM (Exo thesis
    Sec. 7.2's CONV benchmark, scheduled like its SGEMM: divide the loops,
    stage the operands and the accumulator, replace by instructions):

    - [register_tile x k by 6 16 lanes 8 into xo ir jm jv l as t guard]:
      an output row [x, k] as a matrix product, channel strips [jm] of 16
      outside pixel tiles [xo] of 6 ([guard]: [W] need not be a multiple
      of 6, the last tile is guarded, Halide's GuardWithIf), the 6 x 16
      register tile [t] of 2 x 8 lanes; the three reductions [r], [s], [c]
      are moved outside the lane loops only (Targets/Microkernel.v);
    - [stage I at y as Ap]: the im2col panel of the output row,
      [Ap[xo][ir][r][s][c]] (its layout follows the tile's loops, so each
      [c] run is a contiguous copy of the input), zero-padded to whole
      tiles by the row guard it carries (Exo's stage_mem, Rewrites/Stage.v);
    - [stage w at y as Wp], [compute_root Wp]: the weights packed once,
      [Wp[jm][r][s][c][jv][l]];
    - [select_instr t with avx2]: the depth nest outside the tile, masked
      stores, broadcast x load multiplies, [t] in registers.

    The result is [conv_avx2_expected] binder for binder
    ([conv_avx2_directive_same], by [same_program]). *)

From Coq Require Import ZArith List Lia Bool.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety Examples.Conv.
Open Scope Z_scope. Open Scope atl_scope.

Section ConvDirectives.
  Context {S : Type} {Sc : Scalar S} {ScL : ScalarLaws S}.
  Variables (NB H W CI KO : Z).
  Hypothesis (HCI : 0 < CI).
  Variables (I w : Z -> Z -> Z -> Z -> S).
  Hypotheses (HI : shaped [NB; (H + 2)%Z; (W + 2)%Z; CI] I) (Hw : shaped [3; 3; CI; KO] w).

  Derive conv_avx2_directive SuchThat (conv NB H W CI KO I w = conv_avx2_directive)
    As conv_avx2_directive_correct.
  Proof.
    reschedule.
    register_tile x k by 6 16 lanes 8 into xo ir jm jv l as t guard.
    stage I at y as Ap.
    stage w at y as Wp.
    compute_root Wp.
    select_instr t with avx2.
    check_safe.
    done.
  Qed.
  Lemma conv_avx2_directive_same : conv_avx2_directive = conv_avx2_expected NB H W CI KO I w.
  Proof. unfold conv_avx2_expected; cbv beta; same_program. Qed.
End ConvDirectives.
