/*
 * The gemm_malloc / gemm_acc_malloc allocators that Exo's output calls:
 * row-granular sizes, accumulator addresses carry bit 31, blocks never
 * overlap, frees in any order make room again, and allocated buffers work as
 * mvin/mvout operands.  argv[1]: seed.
 */
#include "sim_test_common.h"
#include "include/gemm_acc_malloc.h"
#include "include/gemm_malloc.h"

#define N_LIVE 64

int main(int argc, char **argv) {
  uint32_t start[N_LIVE], rows[N_LIVE];
  int live[N_LIVE] = {0};
  int round, i, j;
  rng_seed(seed_from_args(argc, argv));
  gemm_init_mem();
  gemm_acc_init_mem();

  CHECK(gemm_malloc(1) == 0 && gemm_malloc(16) == 1 && gemm_malloc(17) == 2, "row rounding");
  CHECK(gemm_malloc(0) == 4, "a zero-byte request still takes a row");
  gemm_init_mem();
  CHECK(gemm_acc_malloc(64) == 0x80000000u && gemm_acc_malloc(65) == 0x80000001u,
        "accumulator rows are 16 int32 = 64 bytes and carry bit 31");
  gemm_acc_free(0x80000000u);
  CHECK(gemm_acc_malloc(64) == 0x80000000u, "freed accumulator block is reused");

  for (round = 0; round < 2000; round++) {
    const int slot = (int)rng_range(0, N_LIVE - 1);
    if (live[slot]) {
      gemm_free(start[slot]);
      live[slot] = 0;
    } else {
      rows[slot] = (uint32_t)rng_range(1, 300);
      start[slot] = gemm_malloc(rows[slot] * DIM);
      live[slot] = 1;
      CHECK(start[slot] + rows[slot] <= GEMMINI_SIM_SPAD_ROWS, "block inside the scratchpad");
      for (j = 0; j < N_LIVE; j++)
        if (j != slot && live[j])
          CHECK(start[slot] + rows[slot] <= start[j] || start[j] + rows[j] <= start[slot],
                "blocks %d and %d overlap", slot, j);
    }
  }
  for (i = 0; i < N_LIVE; i++)
    if (live[i]) gemm_free(start[i]);
  CHECK(gemm_malloc(GEMMINI_SIM_SPAD_ROWS * DIM) == 0, "everything freed: whole scratchpad");
  gemm_free(0);

  /* Allocated buffers as operands, in Exo's pointer-disguise style. */
  {
    static int8_t in[DIM][DIM], out[DIM][DIM];
    int8_t *buf = (int8_t *)(uintptr_t)gemm_malloc(sizeof in);
    for (i = 0; i < DIM; i++)
      for (j = 0; j < DIM; j++) in[i][j] = (int8_t)rng_range(-128, 127);
    gemmini_config_ld(DIM);
    gemmini_config_st(DIM);
    gemmini_mvin(in, (uint64_t)(uintptr_t)buf);
    gemmini_mvout(out, (uint64_t)(uintptr_t)buf);
    CHECK(memcmp(in, out, sizeof in) == 0, "round trip through an allocated buffer");
    gemm_free((uint32_t)(uintptr_t)buf);
  }
  printf("PASS alloc\n");
  return 0;
}
