/*
 * Counters: a fixed instruction sequence whose counts and byte totals are
 * known by hand.  Checks them from C (gemmini_sim_get_counters, read_cycles),
 * prints them on demand, and leaves them for the Python driver's counters
 * file.  Part of the sequence is issued from a second translation unit
 * (counters_helper.c), which must see the same accelerator state.
 */
#include "sim_test_common.h"
#include "include/gemmini_testutils.h"

void helper_mvout_acc_full(void *dst, uint32_t acc_row); /* counters_helper.c */

int main(void) {
  static int8_t a[DIM][4 * DIM], out[DIM][DIM];
  static int32_t full[4][DIM];
  gemmini_sim_counters_t k;

  /* Warm-up traffic, then a counter reset: it must not show below. */
  gemmini_config_ld(DIM);
  gemmini_mvin(a, 0);
  gemmini_sim_reset_counters();
  CHECK(gemmini_sim_get_counters().mvin[0] == 0, "reset_counters");

  gemmini_flush(0);
  gemmini_extended3_config_ld(4 * DIM, 1.0f, false, 0);
  gemmini_extended3_config_ld(4 * DIM, 0.5f, true, 1);
  gemmini_extended3_config_ld(0, 1.0f, false, 2);
  gemmini_extended_mvin(a, 0, DIM, DIM);                       /* 256 B -> spad */
  gemmini_extended_mvin2(a, (1u << 31) | 32, 10, 8);           /* 80 B -> acc (int8, shrunk) */
  gemmini_extended_mvin3(0, (1u << 31) | 64, DIM, DIM);        /* 16 zero rows */
  gemmini_extended_mvin(a, 100, 4 * DIM, DIM);                 /* 1024 B -> spad, 4 blocks */

  gemmini_extended_config_ex(WEIGHT_STATIONARY, 0, 0, 1, 0, 0);
  gemmini_preload(0, (1u << 31) | 128);
  gemmini_compute_preloaded(100, GARBAGE_ADDR);                /* useful 16*16*16 */
  gemmini_extended_preload(GARBAGE_ADDR, (1u << 31) | (1u << 30) | 128, DIM, DIM, DIM, DIM);
  gemmini_extended_compute_accumulated(116, GARBAGE_ADDR, 7, 5, DIM, DIM); /* useful 5*7*16 */

  gemmini_extended_config_ex(OUTPUT_STATIONARY, 0, 0, 1, 0, 0);
  gemmini_extended_preload(GARBAGE_ADDR, 200, DIM, DIM, DIM, DIM);
  gemmini_extended_compute_preloaded(0, 132, DIM, DIM, 9, DIM); /* useful 16*16*9 */

  gemmini_config_st(DIM);
  gemmini_mvout(out, 200);                                     /* 256 B spad -> DRAM */
  gemmini_extended_mvout(out, (1u << 31) | 32, 10, 8);         /* 80 B acc -> DRAM (int8) */
  gemmini_config_st(DIM * sizeof(int32_t));
  helper_mvout_acc_full(full, 128);                            /* 4 x 16 int32 = 256 B */
  gemmini_fence();

  k = gemmini_sim_get_counters();
  CHECK(k.flush == 1 && k.fence == 1, "flush/fence %llu %llu", (unsigned long long)k.flush,
        (unsigned long long)k.fence);
  CHECK(k.config_ld == 3 && k.config_ex == 2 && k.config_st == 2, "configs");
  CHECK(k.mvin[0] == 2 && k.mvin[1] == 1 && k.mvin[2] == 1 && k.mvout == 3, "moves");
  CHECK(k.preload == 3 && k.compute_preloaded == 2 && k.compute_accumulated == 1, "matmuls");
  CHECK(k.dram_to_spad_bytes == 1280 && k.dram_to_acc_bytes == 80, "load bytes %llu %llu",
        (unsigned long long)k.dram_to_spad_bytes, (unsigned long long)k.dram_to_acc_bytes);
  CHECK(k.spad_to_dram_bytes == 256 && k.acc_to_dram_bytes == 336, "store bytes %llu %llu",
        (unsigned long long)k.spad_to_dram_bytes, (unsigned long long)k.acc_to_dram_bytes);
  CHECK(k.zero_fill_rows == 16, "zero rows");
  CHECK(k.macs_issued == 3 * 4096 && k.macs_useful == 4096 + 560 + 2304, "macs %llu %llu",
        (unsigned long long)k.macs_issued, (unsigned long long)k.macs_useful);
  /* read_cycles counts instructions (there is no timing model): 24 since start. */
  CHECK(read_cycles() == 24, "read_cycles %llu", (unsigned long long)read_cycles());
  gemmini_sim_print_counters(stdout);
  return 0;
}
