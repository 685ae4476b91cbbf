(** * Latent idioms: stencils as BLAS calls (LIAR, Sec. on latent idioms; issue 14).

    LIAR's seed (liar-latent-idiom-recognition.txt) finds a gemv in a 1-D
    stencil: a sum of shifted reads [a[i] + a[i+1] + a[i+2]] is first seen
    as a reduction [SUM [k < 3] a[i+k]], a scalar factor moves into it, and
    the reduction is then a matrix-vector product of the *window*
    [W[i][k] = a[i+k]] (a view, no copy in LIAR) with a filled weight
    vector [w[k] = c] (its memset).  Nothing of that is trusted here: the
    two lemmas below are the two steps the search's rules [fold_shift3]
    and [window_gemv] (src/verisched/search/latent.py) name, and the
    calls are then introduced by [use_instr blas_gemv] / [blas_fill].
    [sum_dot_ones] (vsum: a dot with a vector of ones) and [gather5_gemv]
    (stencil2d: a gemv per row of outputs over a gather view of the five
    reads, with a vector of ones) are the same idea for LIAR's other two
    latent kernels.

    [window_gemv] is stated over the whole generation so that the bounds
    of [i] and [k] (the window is zero outside them) are the lemma's own:
    no side condition is left to the rewriting tactic.  The last two
    lemmas do the same for the AVX2 idioms: a scalar factor of a lane-wise
    product becomes a broadcast vector. *)

From Coq Require Import ZArith Lia.
From Verisched Require Import Tensor.Scalar Tensor.Core Tensor.Sum.
Open Scope Z_scope. Open Scope atl_scope.

Section Latent.
  Context {S : Type} `{ScalarLaws S}.

  (** Three shifted reads are a reduction over the shift. *)
  Lemma fold_shift3 (a : Z -> S) (i : Z) :
    a _[ i ] + a _[ i + 1 ] + a _[ i + 2 ] = (SUM [ k < 3 ] a _[ i + k ]).
  Proof.
    unfold sumr, get; change (Z.to_nat (3 - 0)) with 3%nat; cbn [sum_nat].
    cbn [tadd tzero TensorElem_scalar].
    rewrite Z.add_0_r; change (Z.succ 0) with 1%Z; change (Z.succ 1) with 2%Z.
    rewrite sadd_0_r, sadd_assoc; reflexivity.
  Qed.

  (** The same for two, four and five reads (a stencil of another width;
      the search's rules [fold_shift2], [fold_shift4], [fold_shift5]). *)
  Lemma fold_shift2 (a : Z -> S) (i : Z) :
    a _[ i ] + a _[ i + 1 ] = (SUM [ k < 2 ] a _[ i + k ]).
  Proof.
    unfold sumr, get; change (Z.to_nat (2 - 0)) with 2%nat; cbn [sum_nat].
    cbn [tadd tzero TensorElem_scalar].
    rewrite Z.add_0_r; change (Z.succ 0) with 1%Z.
    rewrite sadd_0_r; reflexivity.
  Qed.

  Lemma fold_shift4 (a : Z -> S) (i : Z) :
    a _[ i ] + a _[ i + 1 ] + a _[ i + 2 ] + a _[ i + 3 ] = (SUM [ k < 4 ] a _[ i + k ]).
  Proof.
    unfold sumr, get; change (Z.to_nat (4 - 0)) with 4%nat; cbn [sum_nat].
    cbn [tadd tzero TensorElem_scalar].
    rewrite Z.add_0_r; change (Z.succ 0) with 1%Z; change (Z.succ 1) with 2%Z;
    change (Z.succ 2) with 3%Z.
    rewrite sadd_0_r, !sadd_assoc; reflexivity.
  Qed.

  Lemma fold_shift5 (a : Z -> S) (i : Z) :
    a _[ i ] + a _[ i + 1 ] + a _[ i + 2 ] + a _[ i + 3 ] + a _[ i + 4 ]
    = (SUM [ k < 5 ] a _[ i + k ]).
  Proof.
    unfold sumr, get; change (Z.to_nat (5 - 0)) with 5%nat; cbn [sum_nat].
    cbn [tadd tzero TensorElem_scalar].
    rewrite Z.add_0_r; change (Z.succ 0) with 1%Z; change (Z.succ 1) with 2%Z;
    change (Z.succ 2) with 3%Z; change (Z.succ 3) with 4%Z.
    rewrite sadd_0_r, !sadd_assoc; reflexivity.
  Qed.

  (** A reduction of shifted reads times a weight is the window's product
      with the filled weight vector (the body of [blas_gemv], then of
      [blas_fill] for the weights). *)
  Lemma window_gemv (n m : Z) (a : Z -> S) (c : S) :
    (GEN [ i < n ] SUM [ k < m ] a _[ i + k ] * c) =
    (GEN [ i < n ] SUM [ k < m ]
      (GEN [ iw < n ] GEN [ kw < m ] a _[ iw + kw ]) _[ i ] _[ k ] * (GEN [ kw < m ] c) _[ k ]).
  Proof.
    apply genr_ext_ctx; intros i Hi; apply sumr_ext_ctx; intros k Hk.
    rewrite !get_genr by lia; reflexivity.
  Qed.

  (** A reduction of a vector is its dot product with a vector of ones
      (LIAR's vsum: [dot xs (fill 1)]; the body of [blas_dot], then of
      [blas_fill] for the ones). *)
  Lemma sum_dot_ones (n : Z) (x : Z -> S) :
    (SUM [ k < n ] x _[ k ]) = (SUM [ k < n ] x _[ k ] * (GEN [ kw < n ] slit 1 1) _[ k ]).
  Proof.
    apply sumr_ext_ctx; intros k Hk.
    rewrite get_genr by lia; rewrite slit_1; symmetry; apply smul_1_r.
  Qed.

  (** Five reads per output (LIAR's stencil2d, a 5-point cross) are, for
      one row of outputs, the product of a *gather view* with a vector of
      ones: row [j] of the view holds the five values output [j] reads,
      selected by the column [kw] with Iverson brackets (summed with [<+>],
      at rank 0 the same as [+]).  Stated for any
      five functions of [j] over the whole generation (the search applies
      it to five 2-D reads of one tensor); the body of [blas_gemv] with
      [m] rows and 5 columns, then of [blas_fill 5 (slit 1 1)]. *)
  Lemma gather5_gemv (m : Z) (e0 e1 e2 e3 e4 : Z -> S) :
    (GEN [ j < m ] e0 j + e1 j + e2 j + e3 j + e4 j) =
    (GEN [ j < m ] SUM [ k < 5 ]
      (GEN [ jw < m ] GEN [ kw < 5 ]
         (|[ kw =? 0 ]| e0 jw) <+> (|[ kw =? 1 ]| e1 jw) <+> (|[ kw =? 2 ]| e2 jw)
         <+> (|[ kw =? 3 ]| e3 jw) <+> (|[ kw =? 4 ]| e4 jw)) _[ j ] _[ k ]
      * (GEN [ kw < 5 ] slit 1 1) _[ k ]).
  Proof.
    apply genr_ext_ctx; intros j Hj.
    unfold sumr; change (Z.to_nat (5 - 0)) with 5%nat; cbn [sum_nat].
    rewrite !get_genr by lia.
    change (Z.succ 0) with 1; change (Z.succ 1) with 2; change (Z.succ 2) with 3;
      change (Z.succ 3) with 4.
    rewrite ?Z.add_0_l; cbn [Z.eqb Pos.eqb iverson tadd tzero TensorElem_scalar].
    rewrite !slit_1, !smul_1_r, !sadd_0_l, !sadd_0_r, !sadd_assoc; reflexivity.
  Qed.

  (** ** Latent vector idioms (the search's [--idioms avx2])

      A scalar factor of a lane-wise product is the lane of a vector filled
      with it: the body of [avx2_broadcast] (Targets/AVX.v) appears, and the
      product becomes the body of [avx2_mul] or [avx2_fmadd].  Stated for
      any width [w], over the whole generation (the lane's bounds are the
      lemma's own). *)
  Lemma lanes_bcast_mul (w : Z) (c : S) (b : Z -> S) :
    (GEN [ l < w ] c * b _[ l ]) = (GEN [ l < w ] (GEN [ lb < w ] c) _[ l ] * b _[ l ]).
  Proof. apply genr_ext_ctx; intros l Hl; rewrite get_genr by lia; reflexivity. Qed.

  Lemma lanes_bcast_fmadd (w : Z) (c : S) (b d : Z -> S) :
    (GEN [ l < w ] c * b _[ l ] + d _[ l ]) =
    (GEN [ l < w ] (GEN [ lb < w ] c) _[ l ] * b _[ l ] + d _[ l ]).
  Proof. apply genr_ext_ctx; intros l Hl; rewrite get_genr by lia; reflexivity. Qed.
End Latent.
