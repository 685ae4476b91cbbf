/*
 * Accumulator data movement: int32 mvin (full width), int8 mvin into the
 * accumulator ("shrunk", scaled), the accumulate bit (30) on mvin, zero fill
 * from DRAM address 0, mvout with scale + ReLU + saturation, and the
 * full-width read bit (29) that returns raw int32 without scale/activation.
 */
#include "sim_test_common.h"

#define TRIALS 300
#define ACC_BIT (1u << 31)
#define ACCUM_BIT (1u << 30)
#define FULL_BIT (1u << 29)

static const float scales[] = {1.0f, 0.5f, 0.25f, 0.125f, 1.5f, 0.01f, 0.3f, -0.5f, 2.0f, 1.0f / 3};

int main(int argc, char **argv) {
  static int32_t src[DIM * 40];
  static int32_t src2[DIM * 40];
  static int8_t src8[DIM * 40];
  static int32_t expect[DIM][DIM];
  static int32_t full[DIM * 40];
  static int8_t out[DIM * 40];
  int trial;
  rng_seed(seed_from_args(argc, argv));

  for (trial = 0; trial < TRIALS; trial++) {
    const uint32_t rows = (uint32_t)rng_range(1, DIM);
    const uint32_t cols = (uint32_t)rng_range(1, DIM);
    const uint32_t stride = cols + (uint32_t)rng_range(0, 9); /* in elements */
    const uint32_t base = rng_range(0, 3) == 0 ? ACC_ROWS - rows
                                               : (uint32_t)rng_range(0, ACC_ROWS - rows);
    /* Mostly small magnitudes (so scaling is interesting), sometimes anything. */
    const int64_t mag = rng_range(0, 4) == 0 ? INT32_MAX : (int64_t)rng_range(1, 600);
    const float st_scale = scales[rng_range(0, 9)];
    const float ld_scale = scales[rng_range(0, 9)];
    const int act = (int)rng_range(0, 1);
    const int accumulate = (int)rng_range(0, 1);
    const int use_shrunk = (int)rng_range(0, 1);
    uint32_t r, c;

    for (r = 0; r < rows * stride; r++) {
      src[r] = (int32_t)rng_range(-mag - (mag == INT32_MAX), mag);
      src2[r] = (int32_t)rng_range(-1000, 1000);
      src8[r] = (int8_t)rng_range(-128, 127);
    }

    /* First write: int32 overwrite. */
    gemmini_extended3_config_ld(stride * sizeof(int32_t), 1.0f, false, 0);
    gemmini_extended_mvin(src, ACC_BIT | base, cols, rows);
    for (r = 0; r < rows; r++)
      for (c = 0; c < cols; c++) expect[r][c] = src[r * stride + c];

    /* Second write: int8 (scaled) or int32, overwrite or accumulate. */
    if (use_shrunk) {
      gemmini_extended3_config_ld(stride, ld_scale, true, 1);
      gemmini_extended_mvin2(src8, ACC_BIT | (accumulate ? ACCUM_BIT : 0) | base, cols, rows);
    } else {
      gemmini_extended3_config_ld(stride * sizeof(int32_t), ld_scale, false, 1);
      gemmini_extended_mvin2(src2, ACC_BIT | (accumulate ? ACCUM_BIT : 0) | base, cols, rows);
    }
    for (r = 0; r < rows; r++)
      for (c = 0; c < cols; c++) {
        /* int8 data is scaled on the way in; int32 data is not (MVIN_SCALE_ACC is the identity). */
        const int32_t v = use_shrunk ? ref_scale(src8[r * stride + c], ld_scale) : src2[r * stride + c];
        expect[r][c] = accumulate ? ref_wrap_add(expect[r][c], v) : v;
      }

    /* Full-width read: raw int32, unaffected by the store scale and activation. */
    gemmini_extended_config_st(cols * sizeof(int32_t), act, st_scale);
    memset(full, 0x77, sizeof full);
    gemmini_extended_mvout(full, ACC_BIT | FULL_BIT | base, cols, rows);
    for (r = 0; r < rows; r++)
      for (c = 0; c < cols; c++)
        CHECK(full[r * cols + c] == expect[r][c], "trial %d full read r %u c %u: %d vs %d", trial,
              r, c, full[r * cols + c], expect[r][c]);

    /* Narrow read: scale, round half to even, saturate, then ReLU. The
     * accumulate bit on a read address is ignored. */
    {
      const uint32_t out_stride = cols + (uint32_t)rng_range(0, 3);
      gemmini_extended_config_st(out_stride, act, st_scale);
      memset(out, 0x33, sizeof out);
      gemmini_extended_mvout(out, ACC_BIT | (rng_range(0, 1) ? ACCUM_BIT : 0) | base, cols, rows);
      for (r = 0; r < rows; r++)
        for (c = 0; c < out_stride; c++) {
          const int8_t got = out[r * out_stride + c];
          if (c < cols) {
            int8_t want = ref_scale(expect[r][c], st_scale);
            if (act == RELU && want < 0) want = 0;
            CHECK(got == want, "trial %d narrow r %u c %u acc %d scale %g act %d: got %d want %d",
                  trial, r, c, expect[r][c], st_scale, act, got, want);
          } else {
            CHECK(got == 0x33, "trial %d: narrow mvout wrote past cols", trial);
          }
        }
    }

    /* Zero fill into the accumulator: overwrite clears, accumulate leaves as is. */
    if (trial % 5 == 0) {
      gemmini_extended3_config_ld(0, 1.0f, false, 2);
      gemmini_extended_mvin3(0, ACC_BIT | ACCUM_BIT | base, cols, rows);
      gemmini_extended_config_st(cols * sizeof(int32_t), NO_ACTIVATION, 1.0f);
      gemmini_extended_mvout(full, ACC_BIT | FULL_BIT | base, cols, rows);
      for (r = 0; r < rows; r++)
        for (c = 0; c < cols; c++)
          CHECK(full[r * cols + c] == expect[r][c], "accumulating zeros changed r %u c %u", r, c);
      gemmini_extended_mvin3(0, ACC_BIT | base, cols, rows);
      gemmini_extended_mvout(full, ACC_BIT | FULL_BIT | base, cols, rows);
      for (r = 0; r < rows * cols; r++) CHECK(full[r] == 0, "zero fill left %d", full[r]);
    }
  }

  /* Wide int8 mvin into the accumulator: up to MAX_BYTES columns, one DIM-wide block every
   * block_mvin_stride rows, each element scaled and widened to int32. */
  for (trial = 0; trial < 50; trial++) {
    static int8_t wide[DIM][4 * DIM];
    static int32_t back[DIM][DIM];
    const uint32_t rows = (uint32_t)rng_range(1, DIM);
    const uint32_t cols = (uint32_t)rng_range(DIM + 1, 4 * DIM);
    const uint32_t bstride = rows + (uint32_t)rng_range(0, 5);
    const float scale = scales[rng_range(0, 9)];
    const uint32_t nblocks = (cols + DIM - 1) / DIM;
    const uint32_t base = (uint32_t)rng_range(0, ACC_ROWS - nblocks * bstride);
    uint32_t r, c, b;
    for (r = 0; r < DIM; r++)
      for (c = 0; c < 4 * DIM; c++) wide[r][c] = (int8_t)rng_range(-128, 127);
    gemmini_extended4_config_ld(4 * DIM, scale, true, bstride, 0);
    gemmini_extended_mvin(wide, ACC_BIT | base, cols, rows);
    gemmini_extended_config_st(DIM * sizeof(int32_t), NO_ACTIVATION, 1.0f);
    for (b = 0; b < nblocks; b++) {
      const uint32_t bcols = cols - b * DIM < DIM ? cols - b * DIM : DIM;
      gemmini_extended_mvout(back, ACC_BIT | FULL_BIT | (base + b * bstride), bcols, rows);
      for (r = 0; r < rows; r++)
        for (c = 0; c < bcols; c++)
          CHECK(back[r][c] == ref_scale(wide[r][b * DIM + c], scale),
                "wide shrunk mvin block %u r %u c %u", b, r, c);
    }
  }

  /* Exact rounding ties: x * 0.5 for odd x lands on .5; half to even decides. */
  {
    static int32_t ties[DIM][DIM];
    static int8_t res[DIM][DIM];
    int r, c;
    for (r = 0; r < DIM; r++)
      for (c = 0; c < DIM; c++) ties[r][c] = (r * DIM + c) - 128; /* -128 .. 127 */
    gemmini_extended3_config_ld(DIM * sizeof(int32_t), 1.0f, false, 0);
    gemmini_extended_mvin(ties, ACC_BIT | 0, DIM, DIM);
    gemmini_extended_config_st(DIM, NO_ACTIVATION, 0.5f);
    gemmini_extended_mvout(res, ACC_BIT | 0, DIM, DIM);
    for (r = 0; r < DIM; r++)
      for (c = 0; c < DIM; c++) {
        const int x = ties[r][c];
        /* floor(x/2) then round odd halves to the even neighbour */
        int q = x >= 0 ? x / 2 : -((-x + 1) / 2);
        if ((x & 1) && (q & 1)) q += 1;
        CHECK(res[r][c] == q, "tie %d * 0.5 -> %d, want %d", x, res[r][c], q);
      }
    /* Saturation at both ends. */
    ties[0][0] = 1000000; ties[0][1] = -1000000; ties[0][2] = 255; ties[0][3] = -257;
    gemmini_extended_mvin(ties, ACC_BIT | 0, DIM, 1);
    gemmini_extended_config_st(DIM, NO_ACTIVATION, 1.0f);
    gemmini_extended_mvout(res, ACC_BIT | 0, DIM, 1);
    CHECK(res[0][0] == 127 && res[0][1] == -128 && res[0][2] == 127 && res[0][3] == -128,
          "saturation: %d %d %d %d", res[0][0], res[0][1], res[0][2], res[0][3]);
    /* int32 wrap-around when accumulating. */
    ties[0][0] = INT32_MAX;
    gemmini_extended_mvin(ties, ACC_BIT | 0, 1, 1);
    ties[0][0] = 1;
    gemmini_extended_mvin(ties, ACC_BIT | ACCUM_BIT | 0, 1, 1);
    gemmini_extended_config_st(DIM * sizeof(int32_t), NO_ACTIVATION, 1.0f);
    gemmini_extended_mvout(ties, ACC_BIT | FULL_BIT | 0, 1, 1);
    CHECK(ties[0][0] == INT32_MIN, "accumulator wraps: %d", ties[0][0]);
  }
  printf("PASS acc_mvin_mvout\n");
  return 0;
}
