"""The `avx2` and `avx2-openmp` targets: C11 with AVX2 + FMA intrinsics.

The target library of the Exo thesis's Sec. 3.2: the AVX2 instructions'
specifications are targets/avx.py's (checked against coq/Targets/AVX.v);
this module only says which C each becomes, and which memory holds vector
registers (AVX2_REG: `__m256`, 8 float lanes; for float64 kernels the avx2pd
library, `__m256d`, 4 double lanes).  Masks are `__m256i` lane masks
(sign bit set = lane on), built by the helpers below for "the first k lanes".
Code without instructions lowers exactly as for `c` / `openmp`.
"""

from __future__ import annotations

from verisched.codegen.isa import doubles
from verisched.codegen.vector import VectorISA
from verisched.targets import avx  # noqa: F401  (registers the instruction specifications)
from verisched.targets.native import NativeTarget

HELPERS = r"""#ifndef VS_AVX2_HELPERS
#define VS_AVX2_HELPERS
/* Mask of the lanes l < k of an 8-lane vector (none for k <= 0, all for k >= 8). */
static inline __m256i vs_mask8(int k) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
/* Mask of the lanes lo <= l < hi. */
static inline __m256i vs_mask8r(int lo, int hi) {
  return _mm256_andnot_si256(vs_mask8(lo), vs_mask8(hi));
}
/* The sum of the 8 lanes (AVX2 has no reduce intrinsic): the halves added, then
   the upper pair onto the lower, then the two left. */
static inline float vs_hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif
"""

AVX2 = VectorISA(
    name="avx2",
    family="avx2",
    memory="AVX2_REG",
    lanes=8,
    vtype="__m256",
    mask_type="__m256i",
    setzero="_mm256_setzero_ps()",
    set1="_mm256_set1_ps({x})",
    loadu="_mm256_loadu_ps({p})",
    maskload="_mm256_maskload_ps({p}, {m})",
    storeu="_mm256_storeu_ps({p}, {v})",
    maskstore="_mm256_maskstore_ps({p}, {m}, {v})",
    add="_mm256_add_ps({a}, {b})",
    mul="_mm256_mul_ps({a}, {b})",
    max="_mm256_max_ps({b}, {a})",  # b > a ? b : a, as vs_smax: a where either is NaN
    fmadd="_mm256_fmadd_ps({a}, {b}, {c})",
    reduce_add="vs_hsum8({v})",
    mask_first="vs_mask8({k})",
    mask_range="vs_mask8r({lo}, {hi})",
    keep="_mm256_and_ps({v}, _mm256_castsi256_ps({m}))",
    blend="_mm256_blendv_ps({a}, {b}, _mm256_castsi256_ps({m}))",
    cflags=("-mavx2", "-mfma"),
    cpu_flags=("avx2", "fma"),
    helpers=HELPERS,
)

HELPERS_PD = r"""#ifndef VS_AVX2PD_HELPERS
#define VS_AVX2PD_HELPERS
/* Mask of the lanes l < k of a 4-lane vector of doubles (64-bit lanes, sign bit set =
   lane on; none for k <= 0, all for k >= 4). */
static inline __m256i vs_mask4d(int k) {
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(k), _mm256_setr_epi64x(0, 1, 2, 3));
}
/* Mask of the lanes lo <= l < hi. */
static inline __m256i vs_mask4dr(int lo, int hi) {
  return _mm256_andnot_si256(vs_mask4d(lo), vs_mask4d(hi));
}
/* The sum of the 4 lanes: the halves added, then the upper lane onto the lower. */
static inline double vs_hsum4d(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
  return _mm_cvtsd_f64(s);
}
#endif
"""

# The float64 library (decision #154): the same instructions at 4 lanes of a __m256d,
# named avx2pd_ in coq/Targets/AVX.v; the registers are the same (memory AVX2_REG).
AVX2PD = doubles(AVX2, name="avx2pd", family="avx2pd", lanes=4, vtype="__m256d",
                 reduce_add="vs_hsum4d({v})", mask_first="vs_mask4d({k})",
                 mask_range="vs_mask4dr({lo}, {hi})", helpers=HELPERS_PD)

TARGET = NativeTarget(name="avx2", summary="C11 with AVX2 + FMA intrinsics (8 float or 4 "
                      "double lanes)", extra_flags=AVX2.cflags, isa=AVX2, isa_f64=AVX2PD,
                      dtypes=("float32", "float64"))
TARGET_OPENMP = NativeTarget(name="avx2-openmp", summary="avx2 with OpenMP", parallel=True,
                             dtypes=("float32", "float64"),
                             extra_flags=(*AVX2.cflags, "-fopenmp"), isa=AVX2, isa_f64=AVX2PD)
