"""The `avx512` and `avx512-openmp` targets: C11 with AVX-512F intrinsics.

As targets/avx2.py, with 16 float lanes (`__m512`, memory AVX512_REG) and
AVX-512's native lane masks (`__mmask16`: bit l = lane l), so masked loads and
stores need no mask vector.  Float64 kernels use the avx512pd library (`__m512d`, 8
double lanes, `__mmask8`).  Kernels for it compile anywhere gcc does; they
run only on a CPU with avx512f (checked before every call, targets/base.py).
"""

from __future__ import annotations

from verisched.codegen.isa import doubles
from verisched.codegen.vector import VectorISA
from verisched.targets import avx  # noqa: F401  (registers the instruction specifications)
from verisched.targets.native import NativeTarget

HELPERS = r"""#ifndef VS_AVX512_HELPERS
#define VS_AVX512_HELPERS
/* Mask of the lanes l < k of a 16-lane vector (none for k <= 0, all for k >= 16). */
static inline __mmask16 vs_mask16(int k) {
  return k <= 0 ? (__mmask16)0 : k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << k) - 1u);
}
/* Mask of the lanes lo <= l < hi. */
static inline __mmask16 vs_mask16r(int lo, int hi) {
  return (__mmask16)(vs_mask16(hi) & (__mmask16)~vs_mask16(lo));
}
/* The sum of the 16 lanes, by halving in the vector: the 256-bit halves swapped and
   added, then the 128-bit blocks of each half, then the pairs and the lanes within a
   block; lane 0 then holds the sum.  Not _mm512_reduce_add_ps, nor any 256- or 128-bit
   cast or extract: GCC's headers pass those an undefined vector, which g++ -Wall
   reports as maybe uninitialized; these masked forms take v itself as that source. */
static inline float vs_hsum16(__m512 v) {
  const __mmask16 all = (__mmask16)0xFFFF;
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, all, v, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, all, v, v, 0xB1));
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, all, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, all, v, 0xB1));
  return _mm512_cvtss_f32(v);
}
#endif
"""

AVX512 = VectorISA(
    name="avx512",
    family="avx512",
    memory="AVX512_REG",
    lanes=16,
    vtype="__m512",
    mask_type="__mmask16",
    setzero="_mm512_setzero_ps()",
    set1="_mm512_set1_ps({x})",
    loadu="_mm512_loadu_ps({p})",
    maskload="_mm512_maskz_loadu_ps({m}, {p})",
    storeu="_mm512_storeu_ps({p}, {v})",
    maskstore="_mm512_mask_storeu_ps({p}, {m}, {v})",
    add="_mm512_add_ps({a}, {b})",
    mul="_mm512_mul_ps({a}, {b})",
    max="_mm512_max_ps({b}, {a})",  # b > a ? b : a, as vs_smax: a where either is NaN
    fmadd="_mm512_fmadd_ps({a}, {b}, {c})",
    reduce_add="vs_hsum16({v})",
    mask_first="vs_mask16({k})",
    mask_range="vs_mask16r({lo}, {hi})",
    keep="_mm512_maskz_mov_ps({m}, {v})",
    blend="_mm512_mask_blend_ps({m}, {a}, {b})",
    cflags=("-mavx512f",),
    cpu_flags=("avx512f",),
    helpers=HELPERS,
    # A register tile's destination is prefetched for the next tile, after this
    # tile's stores (VectorISA.tile_prefetch, decision #118; #116 had none here).
)

HELPERS_PD = r"""#ifndef VS_AVX512PD_HELPERS
#define VS_AVX512PD_HELPERS
/* Mask of the lanes l < k of an 8-lane vector of doubles (none for k <= 0, all for
   k >= 8). */
static inline __mmask8 vs_mask8d(int k) {
  return k <= 0 ? (__mmask8)0 : k >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << k) - 1u);
}
/* Mask of the lanes lo <= l < hi. */
static inline __mmask8 vs_mask8dr(int lo, int hi) {
  return (__mmask8)(vs_mask8d(hi) & (__mmask8)~vs_mask8d(lo));
}
/* The sum of the 8 lanes, by halving in the vector as vs_hsum16 (the masked forms, for
   the same reason): 256-bit halves, then 128-bit blocks, then the pair in a block. */
static inline double vs_hsum8d(__m512d v) {
  const __mmask8 all = (__mmask8)0xFF;
  v = _mm512_add_pd(v, _mm512_mask_shuffle_f64x2(v, all, v, v, 0x4E));
  v = _mm512_add_pd(v, _mm512_mask_shuffle_f64x2(v, all, v, v, 0xB1));
  v = _mm512_add_pd(v, _mm512_mask_permute_pd(v, all, v, 0x55));
  return _mm512_cvtsd_f64(v);
}
#endif
"""

# The float64 library (decision #154): the same instructions at 8 lanes of a __m512d,
# named avx512pd_ in coq/Targets/AVX.v; the registers are the same (memory AVX512_REG).
AVX512PD = doubles(AVX512, name="avx512pd", family="avx512pd", lanes=8, vtype="__m512d",
                   mask_type="__mmask8", reduce_add="vs_hsum8d({v})",
                   mask_first="vs_mask8d({k})", mask_range="vs_mask8dr({lo}, {hi})",
                   helpers=HELPERS_PD)

TARGET = NativeTarget(name="avx512", summary="C11 with AVX-512F intrinsics (16 float or 8 "
                      "double lanes)", extra_flags=AVX512.cflags, isa=AVX512, isa_f64=AVX512PD,
                      dtypes=("float32", "float64"))
TARGET_OPENMP = NativeTarget(name="avx512-openmp", summary="avx512 with OpenMP", parallel=True,
                             dtypes=("float32", "float64"),
                             extra_flags=(*AVX512.cflags, "-fopenmp"), isa=AVX512,
                             isa_f64=AVX512PD)
