/*
 * gemmini_perf.h -- gemmini_config_norm and the performance-counter API of the host
 * simulator.  Included by gemmini.h after the single instructions; do not include it on
 * its own.
 *
 * Facts used (README, "Normalization configuration" and "Performance counters"): the
 * argument lists and the config-register encoding of counter accesses are those of
 * Gemmini's gemmini.h (gemmini-rocc-tests): bit 0 resets the counter module, bit 1 resets
 * the snapshot, bit 2 takes one, bit 3 configures counter (bits 4-6) to the event in bits
 * 12-17, bit 31 marking a non-incremental event; otherwise the access reads counter
 * (bits 4-6).  counter_read and friends are library functions over that one access.
 *
 * The simulator has no timing model, so each event is counted in the unit it already
 * counts: one per instruction of the unit the event names ("cycles" = instructions, as
 * read_cycles does), bytes for the DMA byte counters, and 0 for events that measure
 * waiting, stalls, overlap, misses or occupancy, which a model that runs one instruction
 * to completion at a time does not have.
 */
#ifndef VERISCHED_GEMMINI_PERF_H
#define VERISCHED_GEMMINI_PERF_H

#ifndef VERISCHED_GEMMINI_SIM_H
#error "include gemmini.h, which includes gemmini_perf.h"
#endif

#define GEMMINI_SIM_NUM_COUNTERS 8
#define GEMMINI_SIM_MAX_EVENT (INCREMENTAL_COUNTERS + 7)

void gemmini_sim_config_norm(uint64_t q_const, uint64_t q_const_type, uint64_t set_stats_id_only,
                             uint64_t act_msb, uint64_t stat_id, uint64_t igelu_qb,
                             uint64_t igelu_qc, const char *file, int line);
uint32_t gemmini_sim_counter_access(uint32_t config_reg, const char *file, int line);

/* Statement-shaped, like the original (a braced block). */
#define gemmini_config_norm(q_const, q_const_type, set_stats_id_only, act_msb, stat_id,        \
                            igelu_qb, igelu_qc)                                                \
  {                                                                                            \
    gemmini_sim_config_norm((uint64_t)(uint32_t)(q_const), (uint64_t)(q_const_type),           \
                            (uint64_t)(set_stats_id_only), (uint64_t)(act_msb),                \
                            (uint64_t)(stat_id), (uint64_t)(uint32_t)(igelu_qb),               \
                            (uint64_t)(uint32_t)(igelu_qc), __FILE__, __LINE__);               \
  }

#define gemmini_counter_access(rd, config_reg)                                                 \
  {                                                                                            \
    (rd) = gemmini_sim_counter_access((uint32_t)(config_reg), __FILE__, __LINE__);           \
  }

/* The library layer over the access, as in the original header. */
static inline uint32_t counter_read(size_t index) {
  uint32_t res;
  gemmini_counter_access(res, (uint32_t)((index & 0x7) << 4));
  return res;
}

static inline void counter_configure(size_t index, size_t counter_code) {
  const uint32_t non_incremental = counter_code > INCREMENTAL_COUNTERS;
  uint32_t ignored;
  if (non_incremental) counter_code -= INCREMENTAL_COUNTERS;
  gemmini_counter_access(ignored, (uint32_t)((index & 0x7) << 4) | 0x8u |
                                      (uint32_t)((counter_code & 0x3f) << 12) |
                                      (non_incremental << 31));
  (void)ignored;
}

static inline void counter_snapshot_take(void) {
  uint32_t ignored;
  gemmini_counter_access(ignored, 0x4u);
  (void)ignored;
}

static inline void counter_snapshot_reset(void) {
  uint32_t ignored;
  gemmini_counter_access(ignored, 0x2u);
  (void)ignored;
}

static inline void counter_reset(void) {
  uint32_t ignored;
  gemmini_counter_access(ignored, 0x1u);
  (void)ignored;
}

/* The value of event `code` since the program started (see the file comment). */
static inline uint64_t gemmini_sim_event_total(const struct gemmini_sim_state *s, unsigned code) {
  const gemmini_sim_counters_t *c = &s->counters;
  const uint64_t loads = c->mvin[0] + c->mvin[1] + c->mvin[2];
  const uint64_t stores = c->mvout;
  const uint64_t executes = c->preload + c->compute_preloaded + c->compute_accumulated;
  switch (code) {
    case MAIN_LD_CYCLES: case LOAD_ACTIVE_CYCLE: case RDMA_ACTIVE_CYCLE: return loads;
    case MAIN_ST_CYCLES: case STORE_ACTIVE_CYCLE: case WDMA_ACTIVE_CYCLE: return stores;
    case MAIN_EX_CYCLES: case EXE_ACTIVE_CYCLE: return executes;
    case EXE_FLUSH_CYCLE: return c->flush;
    case DMA_TLB_HIT_REQ: case DMA_TLB_TOTAL_REQ: return loads + stores; /* no TLB: all hit */
    case RESERVATION_STATION_ACTIVE_CYCLES: return s->insn_count;
    case LOOP_MATMUL_ACTIVE_CYCLES: return c->loop_unrolled;
    case RDMA_BYTES_REC: return c->dram_to_spad_bytes + c->dram_to_acc_bytes;
    case WDMA_BYTES_SENT: return c->spad_to_dram_bytes + c->acc_to_dram_bytes;
    default: return 0; /* waits, stalls, overlaps, misses, occupancy, latency */
  }
}

GEMMINI_SIM_WEAK void gemmini_sim_config_norm(uint64_t q_const, uint64_t q_const_type,
                                              uint64_t set_stats_id_only, uint64_t act_msb,
                                              uint64_t stat_id, uint64_t igelu_qb,
                                              uint64_t igelu_qc, const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  char call[256];
  s->insn_count++;
  s->counters.config_norm++;
  snprintf(call, sizeof call,
           "gemmini_config_norm(q_const=%llu, q_const_type=%llu, set_stats_id_only=%llu, "
           "act_msb=%llu, stat_id=%llu, ...)",
           (unsigned long long)q_const, (unsigned long long)q_const_type,
           (unsigned long long)set_stats_id_only, (unsigned long long)act_msb,
           (unsigned long long)stat_id);
  if (q_const_type > 1 || set_stats_id_only > 1 || act_msb > 1)
    gemmini_sim_fail(file, line, call,
                     "q_const_type, set_stats_id_only and act_msb are one-bit fields");
  if (stat_id > 0xFF) gemmini_sim_fail(file, line, call, "stat_id is an 8-bit field");
  /* Only the normalizing activations (LAYERNORM, SOFTMAX, IGELU) read this state, and the
   * simulator refuses those; it is kept so a program can configure it as the library does. */
  s->norm_stat_id = (uint32_t)stat_id;
  if (!set_stats_id_only) {
    s->norm_q_const = (uint32_t)q_const;
    s->norm_q_const_type = (int)q_const_type;
    s->norm_act_msb = (int)act_msb;
    s->norm_igelu_qb = (uint32_t)igelu_qb;
    s->norm_igelu_qc = (uint32_t)igelu_qc;
  }
}

GEMMINI_SIM_WEAK uint32_t gemmini_sim_counter_access(uint32_t config_reg, const char *file,
                                                     int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  const unsigned index = (config_reg >> 4) & 0x7;
  unsigned k;
  char call[128];
  snprintf(call, sizeof call, "gemmini_counter_access(config_reg=0x%x)", (unsigned)config_reg);
  if (config_reg & 0x1u) { /* reset the counter module: every value to 0, snapshot off */
    for (k = 0; k < GEMMINI_SIM_NUM_COUNTERS; k++)
      s->perf_base[k] = gemmini_sim_event_total(s, s->perf_event[k]);
    s->perf_snapshot = 0;
    return 0;
  }
  if (config_reg & 0x2u) { /* reset the snapshot: reads see live values again */
    s->perf_snapshot = 0;
    return 0;
  }
  if (config_reg & 0x4u) { /* take a snapshot of every counter */
    for (k = 0; k < GEMMINI_SIM_NUM_COUNTERS; k++)
      s->perf_snap[k] =
          (uint32_t)(gemmini_sim_event_total(s, s->perf_event[k]) - s->perf_base[k]);
    s->perf_snapshot = 1;
    return 0;
  }
  if (config_reg & 0x8u) { /* configure counter `index` to an event, from 0 */
    unsigned code = (config_reg >> 12) & 0x3f;
    if (config_reg >> 31) code += INCREMENTAL_COUNTERS;
    if (code > GEMMINI_SIM_MAX_EVENT)
      gemmini_sim_fail(file, line, call, "event %u does not exist (gemmini_counter.h)", code);
    s->perf_event[index] = code;
    s->perf_base[index] = gemmini_sim_event_total(s, code);
    return 0;
  }
  if (s->perf_snapshot) return s->perf_snap[index];
  return (uint32_t)(gemmini_sim_event_total(s, s->perf_event[index]) - s->perf_base[index]);
}

#endif /* VERISCHED_GEMMINI_PERF_H */
