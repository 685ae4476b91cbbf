/*
 * A test in the style of Gemmini's own bareMetalC programs: DIM x DIM
 * matrices in DRAM (row_align), the short macros (gemmini_mvin, gemmini_preload,
 * gemmini_compute_*, gemmini_mvout), and gemmini_testutils.h's CPU helpers
 * (matmul*, matadd, matshift, matscale, matrelu, is_equal*, transpose).
 * Its point is source compatibility; the arithmetic is also re-checked
 * against this project's independent reference (sim_test_common.h).
 */
#include "include/gemmini_testutils.h"
#include "sim_test_common.h"

static void check_helpers_independently(full_t full[DIM][DIM], elem_t shifted[DIM][DIM],
                                        int shift, elem_t scaled[DIM][DIM], float scale) {
  int r, c;
  for (r = 0; r < DIM; r++)
    for (c = 0; c < DIM; c++) {
      CHECK(shifted[r][c] == ref_sat8(ref_shift(full[r][c], shift)), "matshift r %d c %d", r, c);
      CHECK(scaled[r][c] == ref_scale((int32_t)full[r][c], scale), "matscale r %d c %d", r, c);
    }
}

int main(int argc, char **argv) {
  static elem_t A[DIM][DIM] row_align(1), B[DIM][DIM] row_align(1), D[DIM][DIM] row_align(1);
  static elem_t C[DIM][DIM] row_align(1), gold[DIM][DIM], tmp[DIM][DIM], At[DIM][DIM];
  static full_t full[DIM][DIM], full2[DIM][DIM], sum[DIM][DIM];
  int trial;
  rng_seed(seed_from_args(argc, argv));
  gemmini_flush(0);
  gemmini_config_ld(DIM * sizeof(elem_t));
  gemmini_config_st(DIM * sizeof(elem_t));

  for (trial = 0; trial < 40; trial++) {
    const int shift = (int)rng_range(0, 6);
    const int act = (int)rng_range(0, 1);
    const float scale = 1.0f / (float)rng_range(1, 300);
    int r, c;
    for (r = 0; r < DIM; r++)
      for (c = 0; c < DIM; c++) {
        A[r][c] = (elem_t)rng_range(-64, 63);
        B[r][c] = (elem_t)rng_range(-64, 63);
        D[r][c] = (elem_t)rng_range(-64, 63);
      }
    gemmini_mvin(A, 0);
    gemmini_mvin(B, DIM);
    gemmini_mvin(D, 2 * DIM);

    /* OS, A transposed in the array: C = shift(A^T B + D), then ReLU, into the scratchpad. */
    gemmini_extended_config_ex(OUTPUT_STATIONARY, act, shift, 1, true, false);
    gemmini_preload(2 * DIM, 3 * DIM);
    gemmini_compute_preloaded(0, DIM);
    gemmini_mvout(C, 3 * DIM);
    gemmini_fence();
    matmul_A_transposed(A, B, D, full);
    matshift(full, gold, shift);
    if (act == RELU) matrelu(gold, gold);
    CHECK(is_equal(C, gold), "OS A^T trial %d", trial);
    matscale(full, tmp, scale);
    matshift(full, gold, shift);
    check_helpers_independently(full, gold, shift, tmp, scale);

    /* WS, two computes on one set of weights accumulated in the accumulator,
     * read back through the scale and activation of config_st. */
    gemmini_extended_config_ex(WEIGHT_STATIONARY, 0, 0, 1, false, false);
    gemmini_extended_config_st(DIM * sizeof(elem_t), act, scale);
    gemmini_preload(DIM, 1u << 31);
    gemmini_compute_preloaded(0, 2 * DIM);
    gemmini_preload_zeros((1u << 31) | (1u << 30));
    gemmini_compute_accumulated(2 * DIM, GARBAGE_ADDR);
    gemmini_mvout(C, 1u << 31);
    gemmini_fence();
    matmul(A, B, D, full);
    {
      static elem_t Z[DIM][DIM];
      matmul(D, B, Z, full2);
    }
    matadd(sum, full, full2);
    matscale(sum, gold, scale);
    if (act == RELU) matrelu(gold, gold);
    CHECK(is_equal(C, gold), "WS accumulate trial %d", trial);
    CHECK(MAT_IS_EQUAL(DIM, DIM, C, gold), "MAT_IS_EQUAL trial %d", trial);

    transpose(A, At);
    CHECK(is_equal_transposed(A, At), "transpose helper");
  }
  printf("PASS baremetal_style (%llu instructions)\n", (unsigned long long)read_cycles());
  return 0;
}
