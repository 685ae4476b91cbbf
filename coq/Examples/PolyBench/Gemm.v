(** * PolyBench's gemm: [C := alpha A B + beta C], with the suite's constants.

    PolyBench/C's gemm scales [C] by [beta] and adds [alpha * A[i][k] * B[k][j]]
    in the loop order i, j, k, which reads [B] down a column.  Its
    initialisation fixes [alpha = 1.5] and [beta = 1.2]: here they are the
    literal constants [slit 3 2] and [slit 6 5] (Tensor/Scalar.v).

    [gemm_ikj]: [fission j] splits the [j] loop over the sum of the scaled
    [C] and the product; [reorder k j] puts the reduction outside, so each
    step of [k] adds a scaled row of [B] to a row of the output: the i, k, j
    order, whose inner loop is contiguous in [B] and the output (the C
    compiler vectorizes it). *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
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
End Gemm.
