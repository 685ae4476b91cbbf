(** * BLAS idioms as instruction specifications (LIAR, issue 14).

    Each BLAS routine the search looks for is, as the vector instructions
    of Targets/AVX.v, a [Definition] whose body is its ATL term,
    registered with [AtlInstr]; [use_instr blas_gemv] then replaces a
    subterm that IS the body, for some arguments, by the call, and Coq
    checks it by conversion.  The bodies are the unscaled forms (alpha = 1,
    beta = 0 in CBLAS terms) plus [blas_axpy]'s scalar; a scaled product
    is found as a call inside the surrounding arithmetic.

    - [blas_dot n x y]          = [SUM [ k < n ] x _[k] * y _[k]]            (cblas_sdot)
    - [blas_axpy n a x y]       = [GEN [ i < n ] a * x _[i] + y _[i]]        (cblas_saxpy, out of place)
    - [blas_gemv m n A x]       = [GEN [ i < m ] SUM [ j < n ] A _[i] _[j] * x _[j]]  (cblas_sgemv, NoTrans)
    - [blas_gemvT m n A x]      = [GEN [ j < n ] SUM [ i < m ] A _[i] _[j] * x _[i]]  (cblas_sgemv, Trans)
    - [blas_gemm m n p A B]     = [GEN [ i < m ] GEN [ j < n ] SUM [ k < p ] A _[i] _[k] * B _[k] _[j]]
                                                                              (cblas_sgemm)
    - [blas_gemv_scaled m n a A x], [blas_gemvT_scaled m n a A x],
      [blas_gemm_scaled m n p a A B]: the same times [a] (CBLAS's alpha),
      [a * (SUM ...)] under the generations
    - [blas_fill n c]           = [GEN [ i < n ] c]                          (memset / fill)
    - [blas_transpose m n A]    = [GEN [ j < n ] GEN [ i < m ] A _[i] _[j]]  (out-of-place transpose)

    Lowering to CBLAS calls is not done yet (docs/search.md). *)

From Coq Require Import ZArith.
From Verisched Require Import Tensor.Scalar Tensor.Core Targets.Instr.
Open Scope Z_scope. Open Scope atl_scope.

Section Blas.
  Context {S : Type} `{Scalar S}.

  Definition blas_dot (n : Z) (x y : Z -> S) : S :=
    SUM [ k < n ] x _[ k ] * y _[ k ].
  Definition blas_axpy (n : Z) (a : S) (x y : Z -> S) : Z -> S :=
    GEN [ i < n ] a * x _[ i ] + y _[ i ].
  Definition blas_gemv (m n : Z) (A : Z -> Z -> S) (x : Z -> S) : Z -> S :=
    GEN [ i < m ] SUM [ j < n ] A _[ i ] _[ j ] * x _[ j ].
  Definition blas_gemvT (m n : Z) (A : Z -> Z -> S) (x : Z -> S) : Z -> S :=
    GEN [ j < n ] SUM [ i < m ] A _[ i ] _[ j ] * x _[ i ].
  Definition blas_gemm (m n p : Z) (A B : Z -> Z -> S) : Z -> Z -> S :=
    GEN [ i < m ] GEN [ j < n ] SUM [ k < p ] A _[ i ] _[ k ] * B _[ k ] _[ j ].
  (** The scaled forms (CBLAS's [alpha]; [beta = 0]). *)
  Definition blas_gemv_scaled (m n : Z) (a : S) (A : Z -> Z -> S) (x : Z -> S) : Z -> S :=
    GEN [ i < m ] a * (SUM [ j < n ] A _[ i ] _[ j ] * x _[ j ]).
  Definition blas_gemvT_scaled (m n : Z) (a : S) (A : Z -> Z -> S) (x : Z -> S) : Z -> S :=
    GEN [ j < n ] a * (SUM [ i < m ] A _[ i ] _[ j ] * x _[ i ]).
  Definition blas_gemm_scaled (m n p : Z) (a : S) (A B : Z -> Z -> S) : Z -> Z -> S :=
    GEN [ i < m ] GEN [ j < n ] a * (SUM [ k < p ] A _[ i ] _[ k ] * B _[ k ] _[ j ]).
  Definition blas_fill (n : Z) (c : S) : Z -> S :=
    GEN [ i < n ] c.
  Definition blas_transpose (m n : Z) (A : Z -> Z -> S) : Z -> Z -> S :=
    GEN [ j < n ] GEN [ i < m ] A _[ i ] _[ j ].
End Blas.

#[global] Instance AtlInstr_blas_dot : AtlInstr (@blas_dot) := {}.
#[global] Instance AtlInstr_blas_axpy : AtlInstr (@blas_axpy) := {}.
#[global] Instance AtlInstr_blas_gemv : AtlInstr (@blas_gemv) := {}.
#[global] Instance AtlInstr_blas_gemvT : AtlInstr (@blas_gemvT) := {}.
#[global] Instance AtlInstr_blas_gemm : AtlInstr (@blas_gemm) := {}.
#[global] Instance AtlInstr_blas_gemv_scaled : AtlInstr (@blas_gemv_scaled) := {}.
#[global] Instance AtlInstr_blas_gemvT_scaled : AtlInstr (@blas_gemvT_scaled) := {}.
#[global] Instance AtlInstr_blas_gemm_scaled : AtlInstr (@blas_gemm_scaled) := {}.
#[global] Instance AtlInstr_blas_fill : AtlInstr (@blas_fill) := {}.
#[global] Instance AtlInstr_blas_transpose : AtlInstr (@blas_transpose) := {}.
