(** * Latent idioms: stencils as BLAS calls (LIAR, Sec. on latent idioms; issue 14).

    LIAR's seed (liar-latent-idiom-recognition.txt) finds a gemv in a 1-D
    stencil: a sum of shifted reads [a[i] + a[i+1] + a[i+2]] is first seen
    as a reduction [SUM [k < 3] a[i+k]], a scalar factor moves into it, and
    the reduction is then a matrix-vector product of the *window*
    [W[i][k] = a[i+k]] (a view, no copy in LIAR) with a filled weight
    vector [w[k] = c] (its memset).  Nothing of that is trusted here: the
    two lemmas below are the two steps the search's rules [fold_shift3]
    and [window_gemv] (src/verisched/search/rules_latent.py) name, and the
    calls are then introduced by [use_instr blas_gemv] / [blas_fill].

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
