/*
 * Scratchpad data movement: mvin / mvin2 / mvin3 with their own strides and
 * scales, block mvins (cols > DIM) with a configurable block stride, partial
 * rows/cols, zero-fill from DRAM address 0, and mvout with a row stride.
 * Checked against reference arithmetic in this file; argv[1] is the seed.
 */
#include "sim_test_common.h"

#define TRIALS 300
#define MAX_COLS (DIM * MAX_BLOCK_LEN)

static const float scales[] = {1.0f, 0.5f, 0.25f, 1.5f, 2.0f, 0.3f, -1.0f, 3.7f, 0.0f, 1.0f};

int main(int argc, char **argv) {
  static int8_t src[DIM * 200];
  static int8_t out[DIM * 200];
  static int8_t blk[DIM * DIM];
  int trial;
  rng_seed(seed_from_args(argc, argv));
  gemmini_flush(0);

  for (trial = 0; trial < TRIALS; trial++) {
    const int id = (int)rng_range(0, 2);
    const uint32_t rows = (uint32_t)rng_range(1, DIM);
    const uint32_t cols = (uint32_t)rng_range(1, MAX_COLS);
    const uint32_t nblocks = (cols + DIM - 1) / DIM;
    const uint32_t src_stride = cols + (uint32_t)rng_range(0, 40);
    const uint32_t block_stride = rng_range(0, 1) ? DIM : rows + (uint32_t)rng_range(0, 8);
    const float scale = scales[rng_range(0, 9)];
    const uint32_t span = (nblocks - 1) * block_stride + rows;
    /* Sometimes flush against the end of the scratchpad. */
    const uint32_t base = rng_range(0, 3) == 0 ? GEMMINI_SIM_SPAD_ROWS - span
                                               : (uint32_t)rng_range(0, GEMMINI_SIM_SPAD_ROWS - span);
    uint32_t r, c, b, other;

    for (r = 0; r < rows * src_stride; r++) src[r] = (int8_t)rng_range(-128, 127);

    /* Configure all three loaders; only `id` carries this trial's settings. */
    for (other = 0; other < 3; other++)
      if ((int)other != id) gemmini_extended4_config_ld(7, 9.0f, false, 3, other);
    gemmini_extended4_config_ld(src_stride, scale, false, block_stride, id);
    if (id == 0) gemmini_extended_mvin(src, base, cols, rows);
    if (id == 1) gemmini_extended_mvin2(src, base, cols, rows);
    if (id == 2) gemmini_extended_mvin3(src, base, cols, rows);

    /* Read back block by block (mvout's block stride is fixed at DIM). */
    for (b = 0; b < nblocks; b++) {
      const uint32_t bcols = cols - b * DIM < DIM ? cols - b * DIM : DIM;
      const uint32_t out_stride = DIM + (uint32_t)rng_range(0, 5);
      memset(out, 0x5A, sizeof out);
      gemmini_config_st(out_stride);
      gemmini_extended_mvout(out, base + b * block_stride, bcols, rows);
      for (r = 0; r < rows; r++)
        for (c = 0; c < out_stride && r * out_stride + c < sizeof out; c++) {
          const int8_t got = out[r * out_stride + c];
          if (c < bcols) {
            const int8_t want = ref_scale(src[r * src_stride + b * DIM + c], scale);
            CHECK(got == want, "trial %d id %d block %u r %u c %u scale %g: got %d want %d", trial,
                  id, b, r, c, scale, got, want);
          } else {
            CHECK(got == 0x5A, "trial %d: mvout wrote past cols (r %u c %u)", trial, r, c);
          }
        }
    }

    /* With the default block stride a single wide mvout reads everything back. */
    if (block_stride == DIM && cols > DIM) {
      memset(out, 0, sizeof out);
      gemmini_config_st(cols);
      gemmini_extended_mvout(out, base, cols, rows);
      for (r = 0; r < rows; r++)
        for (c = 0; c < cols; c++)
          CHECK(out[r * cols + c] == ref_scale(src[r * src_stride + c], scale),
                "trial %d wide mvout r %u c %u", trial, r, c);
    }

    /* Zero fill: a DRAM address of 0 loads zeros, through any loader. */
    if (trial % 7 == 0) {
      gemmini_extended4_config_ld(0, 1.0f, false, DIM, 1);
      gemmini_extended_mvin2(0, base, rows <= DIM ? DIM : DIM, rows);
      gemmini_config_st(DIM);
      gemmini_extended_mvout(blk, base, DIM, rows);
      for (r = 0; r < rows * DIM; r++) CHECK(blk[r] == 0, "trial %d zero fill at %u", trial, r);
    }
  }

  /* The shorthand macros: gemmini_config_ld / gemmini_mvin / gemmini_block_mvin / gemmini_mvout. */
  {
    static int8_t wide[DIM][4 * DIM];
    static int8_t back[DIM][4 * DIM];
    uint32_t r, c;
    for (r = 0; r < DIM; r++)
      for (c = 0; c < 4 * DIM; c++) wide[r][c] = (int8_t)rng_range(-128, 127);
    gemmini_config_ld(4 * DIM);
    gemmini_block_mvin(wide, 100, 4);
    gemmini_config_st(4 * DIM);
    for (c = 0; c < 4; c++) gemmini_mvout(&back[0][c * DIM], 100 + c * DIM);
    CHECK(memcmp(wide, back, sizeof wide) == 0, "block mvin + mvout round trip");
    gemmini_mvin(wide, 7);
    gemmini_mvout(back, 7);
    for (r = 0; r < DIM; r++) CHECK(memcmp(wide[r], back[r], DIM) == 0, "mvin/mvout row %u", r);
  }
  gemmini_fence();
  printf("PASS mvin_mvout\n");
  return 0;
}
