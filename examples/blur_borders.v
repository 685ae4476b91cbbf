(** The paper's 3x3 blur (coq/Examples/Blur.v), vectorized with its borders as they
    are: no peeled rows or columns.  The image's borders (Halide's constant exterior:
    zero outside) become masked loads at the left and right columns
    ([maskload_range], [maskload]) and a guard on a whole vector for the rows above
    and below ([vectorize]'s borders, docs/directives.md).  Compare
    coq/Examples/Directives/BlurVec.v, which peels the borders first (Blur.v's
    [blur_fused]) and vectorizes the interior.

    Not built by [make proofs] (each derivation costs about 3 s of [vectorize]);
    [verisched bench blur --vec-file examples/blur_borders.v] replays it, and
    tests/test_vectorize_borders.py checks it against the interpreter. *)
From Coq Require Import ZArith List Lia derive.Derive.
From Verisched Require Import ATLGeneric Examples.Blur.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section BlurBorders.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (v : Z -> Z -> S).
  Hypothesis Hv : shaped [n; m] v.
  Hypothesis Hn : 2 <= n.
  Hypothesis Hm : 2 <= m.

  (** The algorithm with its borders as guards: out-of-image reads are zero
      (Blur.v's [blur_x_guard]), then the three rows inlined. *)
  Ltac borders_as_guards :=
    reschedule; inline blur_y;
    rw (blur_x_guard n m v Hv); rw (blur_x_guard n m v Hv); rw (blur_x_guard n m v Hv);
    inline blur_xg.

  Derive blur_avx2_masked SuchThat (blur n m v = blur_avx2_masked)
    As blur_avx2_masked_correct.
  Proof.
    borders_as_guards.
    vectorize x with avx2.
    check_safe.
    done.
  Qed.

  Derive blur_avx512_masked SuchThat (blur n m v = blur_avx512_masked)
    As blur_avx512_masked_correct.
  Proof.
    borders_as_guards.
    vectorize x with avx512.
    check_safe.
    done.
  Qed.
End BlurBorders.
