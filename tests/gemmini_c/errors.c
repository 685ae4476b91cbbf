/*
 * Misuse that the simulator must reject with a clear message (and not corrupt
 * memory).  argv[1] names the case; each case sets up valid state, prints the
 * line number of the instruction that must fail, then issues it.  The Python
 * test checks the exit status, the message and the reported call site.
 */
#include "sim_test_common.h"
#include "include/gemm_acc_malloc.h"
#include "include/gemm_malloc.h"

#define ACC_BIT (1u << 31)
/* The next source line must hold the failing instruction. */
#define FAIL_NEXT() printf("expect line %d\n", __LINE__ + 1), fflush(stdout)

static int8_t buf[DIM * 4][DIM * 4];
static int32_t buf32[DIM][DIM];

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
#define CASE(name) if (strcmp(c, name) == 0)
  CASE("mvin_no_config") {
    FAIL_NEXT();
    gemmini_extended_mvin(buf, 0, DIM, DIM);
  }
  CASE("mvin2_unconfigured") {
    gemmini_extended3_config_ld(DIM, 1.0f, false, 0);
    gemmini_extended_mvin(buf, 0, DIM, DIM);
    FAIL_NEXT();
    gemmini_extended_mvin2(buf, 0, DIM, DIM);
  }
  CASE("mvout_no_config") {
    gemmini_config_ld(DIM);
    gemmini_mvin(buf, 0);
    FAIL_NEXT();
    gemmini_mvout(buf, 0);
  }
  CASE("spad_row_oob") {
    gemmini_config_ld(DIM);
    gemmini_extended_mvin(buf, BANK_NUM * BANK_ROWS - DIM, DIM, DIM); /* last rows: fine */
    FAIL_NEXT();
    gemmini_extended_mvin(buf, BANK_NUM * BANK_ROWS - 4, DIM, DIM);
  }
  CASE("acc_row_oob") {
    gemmini_config_st(DIM);
    gemmini_extended_mvout(buf, ACC_BIT | (ACC_ROWS - 8), DIM, 8); /* fine */
    FAIL_NEXT();
    gemmini_extended_mvout(buf, ACC_BIT | (ACC_ROWS - 8), DIM, 9);
  }
  CASE("block_mvin_oob") {
    gemmini_config_ld(4 * DIM);
    FAIL_NEXT();
    gemmini_extended_mvin(buf, BANK_NUM * BANK_ROWS - 3 * DIM, 4 * DIM, DIM);
  }
  CASE("mvin_rows_too_many") {
    gemmini_config_ld(DIM);
    FAIL_NEXT();
    gemmini_extended_mvin(buf, 0, DIM, DIM + 1);
  }
  CASE("mvin_cols_too_many") {
    gemmini_config_ld(4 * DIM);
    FAIL_NEXT();
    gemmini_extended_mvin(buf, 0, 4 * DIM + 1, DIM);
  }
  CASE("acc_mvin_cols_too_many") {
    gemmini_extended3_config_ld(64 * sizeof(int32_t), 1.0f, false, 0);
    FAIL_NEXT();
    gemmini_extended_mvin(buf32, ACC_BIT, DIM + 1, 1);
  }
  CASE("preload_no_config_ex") {
    FAIL_NEXT();
    gemmini_preload(GARBAGE_ADDR, ACC_BIT);
  }
  CASE("compute_without_preload") {
    gemmini_extended_config_ex(OUTPUT_STATIONARY, 0, 0, 1, 0, 0);
    FAIL_NEXT();
    gemmini_compute_preloaded(0, 0);
  }
  CASE("accumulated_without_preloaded") {
    gemmini_extended_config_ex(WEIGHT_STATIONARY, 0, 0, 1, 0, 0);
    gemmini_preload_zeros(ACC_BIT);
    FAIL_NEXT();
    gemmini_compute_accumulated(0, GARBAGE_ADDR);
  }
  CASE("double_preload") {
    gemmini_extended_config_ex(WEIGHT_STATIONARY, 0, 0, 1, 0, 0);
    gemmini_preload_zeros(ACC_BIT);
    FAIL_NEXT();
    gemmini_preload_zeros(ACC_BIT);
  }
  CASE("bad_transpose_os") {
    FAIL_NEXT();
    gemmini_extended_config_ex(OUTPUT_STATIONARY, 0, 0, 1, 0, 1);
  }
  CASE("bad_transpose_ws") {
    FAIL_NEXT();
    gemmini_extended_config_ex(WEIGHT_STATIONARY, 0, 0, 1, 1, 1);
  }
  CASE("unsupported_act") {
    FAIL_NEXT();
    gemmini_extended_config_st(DIM, 2, 1.0f);
  }
  CASE("preload_from_acc") {
    gemmini_extended_config_ex(OUTPUT_STATIONARY, 0, 0, 1, 0, 0);
    FAIL_NEXT();
    gemmini_preload(ACC_BIT | 16, GARBAGE_ADDR);
  }
  CASE("pointer_as_local") {
    gemmini_config_ld(DIM);
    FAIL_NEXT();
    gemmini_mvin(buf, buf);
  }
  CASE("mvout_null") {
    gemmini_config_st(DIM);
    FAIL_NEXT();
    gemmini_mvout(NULL, 0);
  }
  CASE("garbage_mvin_dest") {
    gemmini_config_ld(DIM);
    FAIL_NEXT();
    gemmini_mvin(buf, GARBAGE_ADDR);
  }
  CASE("operand_a_stride_oob") {
    gemmini_extended_config_ex(OUTPUT_STATIONARY, 0, 0, 4, 0, 0);
    gemmini_preload_zeros(GARBAGE_ADDR);
    FAIL_NEXT();
    gemmini_compute_preloaded(BANK_NUM * BANK_ROWS - 50, GARBAGE_ADDR);
  }
  CASE("output_oob") {
    gemmini_extended_config_ex(WEIGHT_STATIONARY, 0, 0, 1, 0, 0);
    gemmini_preload(GARBAGE_ADDR, ACC_BIT | (ACC_ROWS - 4));
    FAIL_NEXT();
    gemmini_compute_preloaded(0, GARBAGE_ADDR);
  }
  CASE("ld_bad_id") {
    FAIL_NEXT();
    gemmini_extended3_config_ld(DIM, 1.0f, false, 3);
  }
  CASE("acc_heap_exhausted") {
    gemm_acc_malloc(1000 * DIM * sizeof(int32_t));
    FAIL_NEXT();
    gemm_acc_malloc(25 * DIM * sizeof(int32_t));
  }
  CASE("bad_free") {
    gemm_malloc(DIM);
    FAIL_NEXT();
    gemm_free(5);
  }
  CASE("os_shift_into_acc") {
    gemmini_extended_config_ex(OUTPUT_STATIONARY, 0, 3, 1, 0, 0);
    gemmini_preload_zeros(ACC_BIT);
    FAIL_NEXT();
    gemmini_compute_preloaded(GARBAGE_ADDR, GARBAGE_ADDR);
  }
  CASE("os_sum_overflow") {
    /* 16 * (-128) * (-128) = 262144 per compute; two computes reach 2^19. */
    int r, cc;
    for (r = 0; r < DIM; r++)
      for (cc = 0; cc < DIM; cc++) buf[r][cc] = -128;
    gemmini_config_ld(4 * DIM);
    gemmini_mvin(buf, 0);
    gemmini_extended_config_ex(OUTPUT_STATIONARY, 0, 0, 1, 0, 0);
    gemmini_preload_zeros(GARBAGE_ADDR);
    gemmini_compute_preloaded(0, 0);
    gemmini_preload_zeros(ACC_BIT);
    FAIL_NEXT();
    gemmini_compute_accumulated(0, 0);
  }
  printf("UNREACHABLE: case '%s' did not fail\n", c);
  return 0;
}
