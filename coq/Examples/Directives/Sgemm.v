(** * SGEMM for AVX2 in 10 directive lines.

    The schedule [sgemm_avx2] of Examples/Sgemm.v (48 steps there, with
    its Ltac phases expanded), derived with directives only, in the order
    of the Exo thesis's SGEMM schedule (Sec. 2: divide the loops, reorder,
    stage the operands and the accumulator, replace by instructions):

    - [split i by (mcr * 6) into io ii]: row blocks of [mc = 6 mcr] rows,
      while [C]'s copy is still in the same loop, so that it is tiled with
      the product ...
    - [fission ii]: ... and then split off it ([C]'s rows [<+>] the
      product, per row block: the form BLIS's thread of [io] runs);
    - [split k by kc into ko kk], [reorder ko ii j]: depth blocks just
      inside the row blocks;
    - [register_tile ii j by 6 16 lanes 8 into im ir jm jv l as t]: the
      6 x 16 register tile of 2 x 8 lanes, its depth sum outside
      (Targets/Microkernel.v);
    - [stage B at io as Bp], [compute_root Bp], [stage A at ko as Ap]: the
      packs (Exo's stage_mem, Rewrites/Stage.v);
    - [select_instr t with avx2]: edges, masked stores, broadcast x load
      multiplies, [t] in registers (Targets/Microkernel.v).

    The result is [sgemm_avx2_expected], binder for binder
    ([sgemm_avx2_directive_same], by [same_program]); the same lines with
    a 6 x 64 tile of 16 lanes and [select_instr t with avx512] give
    [sgemm_avx512_expected] ([sgemm_avx512_directive_same]).  This replaces the
    39-line version of this file, which was the same step list with only
    the packs and the depth split as directives; that step list is still
    Examples/Sgemm.v's derivation. *)

From Coq Require Import ZArith List Lia Bool.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety Examples.Sgemm.
Open Scope Z_scope. Open Scope atl_scope.

Section SgemmDirectives.
  Context {S : Type} `{ScalarLaws S}.
  Variables (M N K : Z) (mcr kc : Z).
  Hypotheses (Hmcr : 0 < mcr) (Hkc : 0 < kc) (HK : 0 <= K).
  Variables (A B C : Z -> Z -> S).
  Hypotheses (HA : shaped [M; K] A) (HB : shaped [K; N] B) (HC : shaped [M; N] C).

  Derive sgemm_avx2_directive SuchThat (sgemm M N K A B C = sgemm_avx2_directive) As sgemm_avx2_directive_correct.
  Proof.
    reschedule.
    rw sadd_tadd.
    split i by (mcr * 6)%Z into io ii.
    fission ii.
    split k by kc into ko kk.
    reorder ko ii j.
    register_tile ii j by 6 16 lanes 8 into im ir jm jv l as t.
    stage B at io as Bp.
    compute_root Bp.
    stage A at ko as Ap.
    select_instr t with avx2.
    check_safe.
    done.
  Qed.
  Lemma sgemm_avx2_directive_same : sgemm_avx2_directive = sgemm_avx2_expected M N K mcr kc A B C.
  Proof. unfold sgemm_avx2_expected; cbv beta; same_program. Qed.

  (** The AVX-512 schedule [sgemm_avx512] (a 6 x 64 tile of 4 x 16 lanes):
      the same lines, other tile width, lane count and instruction set. *)
  Derive sgemm_avx512_directive SuchThat (sgemm M N K A B C = sgemm_avx512_directive) As sgemm_avx512_directive_correct.
  Proof.
    reschedule.
    rw sadd_tadd.
    split i by (mcr * 6)%Z into io ii.
    fission ii.
    split k by kc into ko kk.
    reorder ko ii j.
    register_tile ii j by 6 64 lanes 16 into im ir jm jv l as t.
    stage B at io as Bp.
    compute_root Bp.
    stage A at ko as Ap.
    select_instr t with avx512.
    check_safe.
    done.
  Qed.
  Lemma sgemm_avx512_directive_same : sgemm_avx512_directive = sgemm_avx512_expected M N K mcr kc A B C.
  Proof. unfold sgemm_avx512_expected; cbv beta; same_program. Qed.
End SgemmDirectives.
