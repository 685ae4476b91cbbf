/*
 * gemmini_config_norm and the performance-counter API (gemmini_perf.h): the library
 * functions over gemmini_counter_access, counted in the simulator's units (instructions,
 * bytes; 0 for stalls).  Usage: perf_counters [err_norm | err_event]
 */
#include <string.h>

#include "sim_test_common.h"
#include "include/gemmini_testutils.h"

#define N 5

static int8_t in[N][DIM][DIM], out[N][DIM][DIM];

int main(int argc, char **argv) {
  uint32_t v, snap;
  int i;
  gemmini_sim_counters_t c;
  if (argc > 1 && strcmp(argv[1], "err_norm") == 0) {
    gemmini_config_norm(0, 2, 0, 0, 0, 0, 0); /* q_const_type is one bit */
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "err_event") == 0) {
    counter_configure(1, WDMA_TOTAL_LATENCY + 1);
    return 0;
  }
  for (i = 0; i < N; i++) memset(in[i], i + 1, sizeof in[i]);
  gemmini_flush(0);
  counter_configure(0, LOAD_ACTIVE_CYCLE);
  counter_configure(1, STORE_ACTIVE_CYCLE);
  counter_configure(2, LOAD_DMA_WAIT_CYCLE);
  counter_configure(7, RDMA_BYTES_REC); /* non-incremental: bit 31 set by counter_configure */
  CHECK(counter_read(0) == 0, "fresh counter %u", counter_read(0));
  gemmini_config_ld(DIM * sizeof(elem_t));
  gemmini_config_st(DIM * sizeof(elem_t));
  for (i = 0; i < N; i++) {
    gemmini_mvin(in[i], i * DIM);
    gemmini_mvout(out[i], i * DIM);
  }
  CHECK(counter_read(0) == N, "loads %u", counter_read(0));
  CHECK(counter_read(1) == N, "stores %u", counter_read(1));
  CHECK(counter_read(2) == 0, "no waiting in a functional model: %u", counter_read(2));
  CHECK(counter_read(7) == N * DIM * DIM, "bytes read %u", counter_read(7));
  CHECK(memcmp(in, out, sizeof in) == 0, "data moved");
  /* A snapshot freezes what reads return until it is reset. */
  counter_snapshot_take();
  snap = counter_read(0);
  gemmini_mvin(in[0], 0);
  CHECK(counter_read(0) == snap, "snapshot %u, read %u", snap, counter_read(0));
  counter_snapshot_reset();
  CHECK(counter_read(0) == snap + 1, "live again %u", counter_read(0));
  /* Resetting the module zeroes every counter and keeps its event. */
  counter_reset();
  CHECK(counter_read(0) == 0 && counter_read(7) == 0, "after reset %u %u", counter_read(0),
        counter_read(7));
  gemmini_mvin(in[1], DIM);
  CHECK(counter_read(0) == 1, "counting after reset %u", counter_read(0));
  /* The raw access, as Gemmini's own counter test uses it. */
  gemmini_counter_access(v, (7 & 0x7) << 4);
  CHECK(v == DIM * DIM, "raw access %u", v);
  /* config_norm: one configuration instruction, statement-shaped. */
  gemmini_config_norm(12345, 1, 0, 1, 3, 7, 9)
  gemmini_config_norm(0, 0, 1, 0, 4, 0, 0);
  c = gemmini_sim_get_counters();
  CHECK(c.config_norm == 2, "config_norm %llu", (unsigned long long)c.config_norm);
  CHECK(gemmini_sim_global.norm_q_const == 12345 && gemmini_sim_global.norm_stat_id == 4 &&
            gemmini_sim_global.norm_igelu_qc == 9,
        "norm state");
  /* read_cycles (gemmini_testutils.h): instructions issued, counter accesses excluded. */
  CHECK(read_cycles() == 1 + 2 + 2 * N + 2 + 2, "read_cycles %llu",
        (unsigned long long)read_cycles());
  printf("PASS perf_counters\n");
  return 0;
}
