/*
 * gemmini.h -- a host-side functional simulator of Gemmini's software interface.
 *
 * Third-party C written against Gemmini's gemmini.h (bareMetalC-style tests,
 * Exo's generated Gemmini code) compiles against this header with a host C
 * compiler and runs on the host: every instruction macro becomes a call into a
 * model of the accelerator's architectural state (scratchpad, accumulator,
 * systolic-array registers, configuration registers).  Nothing here models
 * timing; the point is bit-exact results and loud errors on misuse.
 *
 * Sources of the semantics (facts only; all code here is our own):
 *  - Gemmini README, "Memory Addressing Scheme" and "ISA" sections: row
 *    addressing, bits 31/30/29 of local addresses, mvin/mvout/config/preload/
 *    compute encodings, the permitted transpose/dataflow combinations.
 *  - gemmini_params.h of the default configuration: int8 inputs, int32
 *    accumulators, float scales; scaling rounds half to even and saturates;
 *    the OS output shift is a rounding (half-to-even) right shift.
 *  - Gemmini's Spike functional model: zero padding of partial tiles, the
 *    dataflow-specific meaning of preload/compute, that a DRAM address of 0
 *    loads zeros, that full-width accumulator reads skip scaling and activation.
 *  - Exo thesis (seeds/exo-exocompilation.txt) Sec. 7.1 and App. D: default
 *    sizes and how Exo's output addresses scratchpad/accumulator buffers.
 *
 * State is shared by every translation unit of a program: the functions and
 * the state object are weak definitions, so including this header in several
 * .c files links to one accelerator.
 */
#ifndef VERISCHED_GEMMINI_SIM_H
#define VERISCHED_GEMMINI_SIM_H
/* Guard names used by the original header, so code that tests them still works. */
#ifndef SRC_MAIN_C_GEMMINI_H
#define SRC_MAIN_C_GEMMINI_H
#endif

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gemmini_params.h"
/* Event codes of the performance-counter API (gemmini_perf.h), as the original includes them. */
#include "gemmini_counter.h"

#define GEMMINI_SIM 1

#define GARBAGE_ADDR ((uint32_t)(-1))
#define OUTPUT_STATIONARY 0
#define WEIGHT_STATIONARY 1

#define NO_ACTIVATION 0
#define RELU 1
/* Recognised so that code naming them compiles; the simulator rejects them. */
#define LAYERNORM 2
#define IGELU 3
#define SOFTMAX 4
#ifndef RELU6
#define RELU6 2
#endif

/* The library's dataflow names (Exo's output writes config_ex(WS, ...)). */
enum tiled_matmul_type_t { OS, WS, CPU };

#define GEMMINI_SIM_SPAD_ROWS (BANK_NUM * BANK_ROWS)
#define GEMMINI_SIM_WEAK __attribute__((weak))

/* ------------------------------------------------------------------------ */
/* Counters                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct gemmini_sim_counters {
  uint64_t config_ex;
  uint64_t config_ld;
  uint64_t config_st;
  uint64_t mvin[3]; /* mvin, mvin2, mvin3 */
  uint64_t mvout;
  uint64_t preload;
  uint64_t compute_preloaded;
  uint64_t compute_accumulated;
  uint64_t flush;
  uint64_t fence;
  uint64_t dram_to_spad_bytes;
  uint64_t dram_to_acc_bytes;
  uint64_t spad_to_dram_bytes;
  uint64_t acc_to_dram_bytes;
  uint64_t zero_fill_rows;  /* rows written by mvin from DRAM address 0 */
  uint64_t macs_issued;     /* DIM*DIM*DIM per compute */
  uint64_t macs_useful;     /* products of in-bounds operands only */
  uint64_t loop_ws;         /* gemmini_loop_ws commands (LOOP_WS) */
  uint64_t loop_ws_config;  /* its five configuration commands per call */
  uint64_t loop_unrolled;   /* single instructions the loop unroller generated (also counted
                               by kind above, so bytes and MACs stay complete) */
  uint64_t config_norm;     /* gemmini_config_norm (gemmini_perf.h) */
  uint64_t loop_conv_ws;        /* gemmini_loop_conv_ws commands (LOOP_CONV_WS) */
  uint64_t loop_conv_ws_config; /* its six configuration commands per call */
} gemmini_sim_counters_t;

/* ------------------------------------------------------------------------ */
/* Architectural state                                                       */
/* ------------------------------------------------------------------------ */

struct gemmini_sim_ld_config {
  int configured;
  uint64_t stride_bytes;
  float scale;
  int shrunk;
  uint32_t block_stride;
};

struct gemmini_sim_state {
  int initialized;
  elem_t spad[GEMMINI_SIM_SPAD_ROWS][DIM];
  acc_t acc[ACC_ROWS][DIM];
  /* OS: the partial sums held in the PEs.  WS: the stationary weights. */
  acc_t pe[DIM][DIM];
  int pe_loaded;
  uint32_t pe_cols; /* WS: columns of the loaded weights, for macs_useful */

  int ex_configured;
  int dataflow;
  int sys_act;
  unsigned sys_shift;
  int a_transpose;
  int b_transpose;
  uint32_t a_stride;
  uint32_t c_stride;

  struct gemmini_sim_ld_config ld[3];

  int st_configured;
  uint32_t st_stride_bytes;
  int acc_act;
  float acc_scale;

  int preload_pending;
  uint32_t pre_addr, pre_rows, pre_cols;
  uint32_t out_addr, out_rows, out_cols;
  const char *preload_file;
  int preload_line;

  uint64_t insn_count;
  gemmini_sim_counters_t counters;
  /* gemmini_loop.h: which half of the scratchpad / accumulator the next loop_ws uses. */
  unsigned loop_ab_half;
  unsigned loop_acc_half;
  /* gemmini_loop_conv.h: the conv unroller's own loop slot and accumulator half. */
  unsigned conv_slot;
  unsigned conv_acc_half;
  /* gemmini_perf.h: normalization configuration and the performance counters. */
  uint32_t norm_q_const, norm_stat_id, norm_igelu_qb, norm_igelu_qc;
  int norm_q_const_type, norm_act_msb;
  unsigned perf_event[8];
  uint64_t perf_base[8];
  uint32_t perf_snap[8];
  int perf_snapshot;
};

/* One accelerator per program, whichever translation units include this header. */
GEMMINI_SIM_WEAK struct gemmini_sim_state gemmini_sim_global;

/* ------------------------------------------------------------------------ */
/* Prototypes of the simulator entry points                                  */
/* ------------------------------------------------------------------------ */

void gemmini_sim_fail(const char *file, int line, const char *call, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
int64_t gemmini_sim_round_half_even(double y);
int64_t gemmini_sim_rounding_shift(int64_t x, int shift);
elem_t gemmini_sim_scale_to_elem(int64_t x, float scale);
void gemmini_sim_reset(void);
void gemmini_sim_reset_counters(void);
gemmini_sim_counters_t gemmini_sim_get_counters(void);
void gemmini_sim_print_counters(FILE *out);
uint64_t gemmini_sim_insn_count(void);
void gemmini_sim_mvin(int id, uint64_t dram, uint64_t local, uint64_t cols, uint64_t rows,
                      const char *file, int line);
void gemmini_sim_mvout(uint64_t dram, uint64_t local, uint64_t cols, uint64_t rows,
                       const char *file, int line);
void gemmini_sim_config_ex(uint64_t dataflow, uint64_t act, uint64_t sys_shift,
                           double sys_acc_scale, uint64_t c_stride, uint64_t a_stride,
                           uint64_t a_transpose, uint64_t b_transpose,
                           uint64_t set_only_strides, const char *file, int line);
void gemmini_sim_config_ld(uint64_t stride, double scale, uint64_t shrunk,
                           uint64_t block_stride, uint64_t pixel_repeats, uint64_t id,
                           const char *file, int line);
void gemmini_sim_config_st(uint64_t stride, uint64_t act, double scale, uint64_t pool_stride,
                           const char *file, int line);
void gemmini_sim_preload(uint64_t bd, uint64_t c, uint64_t bd_cols, uint64_t bd_rows,
                         uint64_t c_cols, uint64_t c_rows, const char *file, int line);
void gemmini_sim_compute(int preloaded, uint64_t a, uint64_t bd, uint64_t a_cols,
                         uint64_t a_rows, uint64_t bd_cols, uint64_t bd_rows,
                         const char *file, int line);
void gemmini_sim_flush(uint64_t skip, const char *file, int line);
void gemmini_sim_fence(const char *file, int line);

/* ------------------------------------------------------------------------ */
/* The documented macro interface                                            */
/* ------------------------------------------------------------------------ */

#define gemmini_extended_mvin(dram_addr, spad_addr, cols, rows)                               \
  gemmini_sim_mvin(0, (uint64_t)(dram_addr), (uint64_t)(spad_addr), (uint64_t)(cols),         \
                   (uint64_t)(rows), __FILE__, __LINE__)
#define gemmini_extended_mvin2(dram_addr, spad_addr, cols, rows)                              \
  gemmini_sim_mvin(1, (uint64_t)(dram_addr), (uint64_t)(spad_addr), (uint64_t)(cols),         \
                   (uint64_t)(rows), __FILE__, __LINE__)
#define gemmini_extended_mvin3(dram_addr, spad_addr, cols, rows)                              \
  gemmini_sim_mvin(2, (uint64_t)(dram_addr), (uint64_t)(spad_addr), (uint64_t)(cols),         \
                   (uint64_t)(rows), __FILE__, __LINE__)
#define gemmini_block_mvin(dram_addr, spad_addr, len)                                         \
  gemmini_extended_mvin(dram_addr, spad_addr, (len) * DIM, DIM)
#define gemmini_mvin(dram_addr, spad_addr) gemmini_extended_mvin(dram_addr, spad_addr, DIM, DIM)

#define gemmini_extended_mvout(dram_addr, spad_addr, cols, rows)                              \
  gemmini_sim_mvout((uint64_t)(dram_addr), (uint64_t)(spad_addr), (uint64_t)(cols),           \
                    (uint64_t)(rows), __FILE__, __LINE__)
#define gemmini_mvout(dram_addr, spad_addr) gemmini_extended_mvout(dram_addr, spad_addr, DIM, DIM)

#define gemmini_extended_compute_preloaded(A, BD, A_cols, A_rows, BD_cols, BD_rows)           \
  gemmini_sim_compute(1, (uint64_t)(A), (uint64_t)(BD), (uint64_t)(A_cols), (uint64_t)(A_rows), \
                      (uint64_t)(BD_cols), (uint64_t)(BD_rows), __FILE__, __LINE__)
#define gemmini_extended_compute_accumulated(A, BD, A_cols, A_rows, BD_cols, BD_rows)         \
  gemmini_sim_compute(0, (uint64_t)(A), (uint64_t)(BD), (uint64_t)(A_cols), (uint64_t)(A_rows), \
                      (uint64_t)(BD_cols), (uint64_t)(BD_rows), __FILE__, __LINE__)
#define gemmini_compute_preloaded(A, BD)                                                      \
  gemmini_extended_compute_preloaded(A, BD, DIM, DIM, DIM, DIM)
#define gemmini_compute_accumulated(A, BD)                                                    \
  gemmini_extended_compute_accumulated(A, BD, DIM, DIM, DIM, DIM)

#define gemmini_extended_preload(BD, C, BD_cols, BD_rows, C_cols, C_rows)                     \
  gemmini_sim_preload((uint64_t)(BD), (uint64_t)(C), (uint64_t)(BD_cols), (uint64_t)(BD_rows), \
                      (uint64_t)(C_cols), (uint64_t)(C_rows), __FILE__, __LINE__)
#define gemmini_preload(BD, C) gemmini_extended_preload(BD, C, DIM, DIM, DIM, DIM)
#define gemmini_preload_zeros(C) gemmini_preload(GARBAGE_ADDR, C)

#define gemmini_extended3_config_ex(dataflow, sys_act, sys_shift, sys_acc_scale, C_stride,      \
                                    A_stride, A_transpose, B_transpose, set_only_strides)      \
  gemmini_sim_config_ex((uint64_t)(dataflow), (uint64_t)(sys_act), (uint64_t)(sys_shift),     \
                        (double)(sys_acc_scale), (uint64_t)(C_stride), (uint64_t)(A_stride),  \
                        (uint64_t)(A_transpose), (uint64_t)(B_transpose),                     \
                        (uint64_t)(set_only_strides), __FILE__, __LINE__);
/* ^ The trailing ';' mirrors the original macro, which callers may rely on
 *   (some of Gemmini's own tests write gemmini_extended_config_ex(...) without one). */
#define gemmini_extended2_config_ex(dataflow, sys_act, sys_shift, A_stride, A_transpose,       \
                                    B_transpose)                                              \
  gemmini_extended3_config_ex(dataflow, sys_act, sys_shift, ACC_SCALE_IDENTITY, 1, A_stride,   \
                              A_transpose, B_transpose, 0)
#define gemmini_extended_config_ex(dataflow, sys_act, sys_shift, A_stride, A_transpose,        \
                                   B_transpose)                                               \
  gemmini_extended2_config_ex(dataflow, sys_act, sys_shift, A_stride, A_transpose, B_transpose)
#define gemmini_config_ex(dataflow, sys_act, sys_shift)                                       \
  gemmini_extended_config_ex(dataflow, sys_act, sys_shift, 1, 0, 0)

#define gemmini_extended5_config_ld(stride, scale, shrunk, block_mvin_stride, pixel_repeats, id) \
  gemmini_sim_config_ld((uint64_t)(stride), (double)(scale), (uint64_t)(shrunk),              \
                        (uint64_t)(block_mvin_stride), (uint64_t)(pixel_repeats),             \
                        (uint64_t)(id), __FILE__, __LINE__)
#define gemmini_extended4_config_ld(stride, scale, shrunk, block_mvin_stride, id)             \
  gemmini_extended5_config_ld(stride, scale, shrunk, block_mvin_stride, 1, id)
#define gemmini_extended3_config_ld(stride, scale, shrunk, id)                                \
  gemmini_extended4_config_ld(stride, scale, shrunk, DIM, id)
#define gemmini_extended2_config_ld(stride, scale, shrunk)                                    \
  gemmini_extended3_config_ld(stride, scale, shrunk, 0)
#define gemmini_extended_config_ld(stride, scale) gemmini_extended2_config_ld(stride, scale, false)
#define gemmini_config_ld(stride) gemmini_extended_config_ld(stride, MVIN_SCALE_IDENTITY)

#define gemmini_extended2_config_st(stride, acc_act, acc_scale, pool_stride, pool_size,        \
                                    pool_out_dim, porows, pocols, orows, ocols, upad, lpad)   \
  gemmini_sim_config_st((uint64_t)(stride), (uint64_t)(acc_act), (double)(acc_scale),         \
                        (uint64_t)(pool_stride), __FILE__, __LINE__)
#define gemmini_extended_config_st(stride, acc_act, acc_scale)                                \
  gemmini_extended2_config_st(stride, acc_act, acc_scale, 0, 0, 0, 0, 0, 0, 0, 0, 0)
#define gemmini_config_st(stride) gemmini_extended_config_st(stride, NO_ACTIVATION, ACC_SCALE_IDENTITY)

#define gemmini_flush(skip) gemmini_sim_flush((uint64_t)(skip), __FILE__, __LINE__)
#define gemmini_fence() gemmini_sim_fence(__FILE__, __LINE__)

/* read_cycles() is in gemmini_testutils.h, where the original headers put it. */

/* ------------------------------------------------------------------------ */
/* Implementation                                                            */
/* ------------------------------------------------------------------------ */

GEMMINI_SIM_WEAK void gemmini_sim_fail(const char *file, int line, const char *call,
                                       const char *fmt, ...) {
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "gemmini-sim error: %s at %s:%d: ", call, file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  abort();
}

/* Round half to even, matching the default gemmini_params.h ROUND_NEAR_EVEN. */
GEMMINI_SIM_WEAK int64_t gemmini_sim_round_half_even(double y) {
  int64_t i;
  double rem;
  if (y >= 9.0e18) return INT64_MAX;
  if (y <= -9.0e18) return INT64_MIN;
  i = (int64_t)y; /* truncates toward zero */
  rem = y - (double)i;
  if (rem < 0) rem = -rem;
  if (rem < 0.5) return i;
  if (rem > 0.5 || (i % 2) != 0) return y < 0 ? i - 1 : i + 1;
  return i;
}

/* Arithmetic right shift rounding half to even (the RISC-V "rne" fixed-point mode). */
GEMMINI_SIM_WEAK int64_t gemmini_sim_rounding_shift(int64_t x, int shift) {
  int64_t q, round_bit, sticky;
  if (shift <= 0) return (int64_t)((uint64_t)x << (-shift));
  if (shift >= 63) return 0;
  q = x >> shift;
  round_bit = (x >> (shift - 1)) & 1;
  sticky = shift > 1 ? ((x & (((int64_t)1 << (shift - 1)) - 1)) != 0) : 0;
  return q + (round_bit & (sticky | (q & 1)));
}

static inline elem_t gemmini_sim_saturate(int64_t v) {
  return (elem_t)(v > elem_t_max ? elem_t_max : (v < elem_t_min ? elem_t_min : v));
}

/* int32 -> int8 through a float scale: multiply in single precision, round, saturate.
 * (Takes int64 so that reference code passing full_t values converts the same way.) */
GEMMINI_SIM_WEAK elem_t gemmini_sim_scale_to_elem(int64_t x, float scale) {
  float y = (float)x * scale;
  return gemmini_sim_saturate(gemmini_sim_round_half_even((double)y));
}

static inline acc_t gemmini_sim_wrap_add(acc_t a, acc_t b) {
  return (acc_t)(uint32_t)((uint32_t)a + (uint32_t)b);
}

static inline struct gemmini_sim_state *gemmini_sim_state_get(void);

/* Writes the counters where the Python driver asked for them (env var), at exit. */
static void gemmini_sim_write_counters_at_exit(void) {
  const char *path = getenv("GEMMINI_SIM_COUNTERS_OUT");
  char tmp[4096];
  FILE *f;
  if (path == NULL || path[0] == '\0') return;
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) return;
  f = fopen(tmp, "w");
  if (f == NULL) return;
  gemmini_sim_print_counters(f);
  if (fclose(f) != 0) {
    remove(tmp);
    return;
  }
  if (rename(tmp, path) != 0) remove(tmp);
}

static inline struct gemmini_sim_state *gemmini_sim_state_get(void) {
  struct gemmini_sim_state *s = &gemmini_sim_global;
  if (!s->initialized) {
    s->initialized = 1;
    if (getenv("GEMMINI_SIM_COUNTERS_OUT") != NULL) atexit(gemmini_sim_write_counters_at_exit);
  }
  return s;
}

GEMMINI_SIM_WEAK void gemmini_sim_reset(void) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  memset(s->spad, 0, sizeof s->spad);
  memset(s->acc, 0, sizeof s->acc);
  memset(s->pe, 0, sizeof s->pe);
  s->pe_loaded = 0;
  s->ex_configured = 0;
  s->st_configured = 0;
  memset(s->ld, 0, sizeof s->ld);
  s->preload_pending = 0;
  s->insn_count = 0;
  s->loop_ab_half = 0;
  s->loop_acc_half = 0;
  s->conv_slot = 0;
  s->conv_acc_half = 0;
  memset(s->perf_event, 0, sizeof s->perf_event);
  memset(s->perf_base, 0, sizeof s->perf_base);
  s->perf_snapshot = 0;
  memset(&s->counters, 0, sizeof s->counters);
}

GEMMINI_SIM_WEAK void gemmini_sim_reset_counters(void) {
  memset(&gemmini_sim_state_get()->counters, 0, sizeof(gemmini_sim_counters_t));
}

GEMMINI_SIM_WEAK gemmini_sim_counters_t gemmini_sim_get_counters(void) {
  return gemmini_sim_state_get()->counters;
}

GEMMINI_SIM_WEAK uint64_t gemmini_sim_insn_count(void) {
  return gemmini_sim_state_get()->insn_count;
}

GEMMINI_SIM_WEAK void gemmini_sim_print_counters(FILE *out) {
  const gemmini_sim_counters_t *c = &gemmini_sim_state_get()->counters;
#define GEMMINI_SIM_PRINT(name, value) \
  fprintf(out, "gemmini.%s %llu\n", name, (unsigned long long)(value))
  GEMMINI_SIM_PRINT("config_ex", c->config_ex);
  GEMMINI_SIM_PRINT("config_ld", c->config_ld);
  GEMMINI_SIM_PRINT("config_st", c->config_st);
  GEMMINI_SIM_PRINT("mvin", c->mvin[0]);
  GEMMINI_SIM_PRINT("mvin2", c->mvin[1]);
  GEMMINI_SIM_PRINT("mvin3", c->mvin[2]);
  GEMMINI_SIM_PRINT("mvout", c->mvout);
  GEMMINI_SIM_PRINT("preload", c->preload);
  GEMMINI_SIM_PRINT("compute_preloaded", c->compute_preloaded);
  GEMMINI_SIM_PRINT("compute_accumulated", c->compute_accumulated);
  GEMMINI_SIM_PRINT("flush", c->flush);
  GEMMINI_SIM_PRINT("fence", c->fence);
  GEMMINI_SIM_PRINT("dram_to_spad_bytes", c->dram_to_spad_bytes);
  GEMMINI_SIM_PRINT("dram_to_acc_bytes", c->dram_to_acc_bytes);
  GEMMINI_SIM_PRINT("spad_to_dram_bytes", c->spad_to_dram_bytes);
  GEMMINI_SIM_PRINT("acc_to_dram_bytes", c->acc_to_dram_bytes);
  GEMMINI_SIM_PRINT("zero_fill_rows", c->zero_fill_rows);
  GEMMINI_SIM_PRINT("macs_issued", c->macs_issued);
  GEMMINI_SIM_PRINT("macs_useful", c->macs_useful);
  GEMMINI_SIM_PRINT("loop_ws", c->loop_ws);
  GEMMINI_SIM_PRINT("loop_ws_config", c->loop_ws_config);
  GEMMINI_SIM_PRINT("loop_unrolled", c->loop_unrolled);
  GEMMINI_SIM_PRINT("config_norm", c->config_norm);
  GEMMINI_SIM_PRINT("loop_conv_ws", c->loop_conv_ws);
  GEMMINI_SIM_PRINT("loop_conv_ws_config", c->loop_conv_ws_config);
#undef GEMMINI_SIM_PRINT
  fflush(out);
}

/* ---- local-address decoding (README "Memory Addressing Scheme") -------- */

#define GEMMINI_SIM_ACC_BIT ((uint32_t)1 << 31)
#define GEMMINI_SIM_ACCUMULATE_BIT ((uint32_t)1 << 30)
#define GEMMINI_SIM_FULL_BIT ((uint32_t)1 << 29)
#define GEMMINI_SIM_ROW_MASK ((uint32_t)0x1FFFFFFF)

static inline int gemmini_sim_is_acc(uint32_t a) { return (a & GEMMINI_SIM_ACC_BIT) != 0; }
static inline uint32_t gemmini_sim_row(uint32_t a) { return a & GEMMINI_SIM_ROW_MASK; }

/* Narrows a 64-bit macro argument to the 32-bit local address it must be. */
static inline uint32_t gemmini_sim_local(uint64_t v, const char *what, const char *file, int line,
                                         const char *call) {
  if ((v >> 32) != 0)
    gemmini_sim_fail(file, line, call,
                     "%s 0x%llx does not fit in the 32-bit local address space "
                     "(was a host pointer passed as a scratchpad/accumulator address?)",
                     what, (unsigned long long)v);
  return (uint32_t)v;
}

/* Every row in [first, first + count) must exist in the memory the address selects. */
static inline void gemmini_sim_check_rows(uint32_t addr, uint64_t first, uint64_t count,
                                          const char *what, const char *file, int line,
                                          const char *call) {
  const int acc = gemmini_sim_is_acc(addr);
  const uint64_t limit = acc ? ACC_ROWS : GEMMINI_SIM_SPAD_ROWS;
  if (count == 0) return;
  if (first + count > limit)
    gemmini_sim_fail(file, line, call,
                     "%s touches %s rows %llu..%llu but the %s has rows 0..%llu", what,
                     acc ? "accumulator" : "scratchpad", (unsigned long long)first,
                     (unsigned long long)(first + count - 1), acc ? "accumulator" : "scratchpad",
                     (unsigned long long)(limit - 1));
}

static inline void gemmini_sim_check_dim(uint64_t v, uint64_t max, const char *what,
                                         const char *file, int line, const char *call) {
  if (v > max)
    gemmini_sim_fail(file, line, call, "%s = %llu exceeds the limit %llu", what,
                     (unsigned long long)v, (unsigned long long)max);
}

/* ---- data movement ------------------------------------------------------ */

GEMMINI_SIM_WEAK void gemmini_sim_mvin(int id, uint64_t dram, uint64_t local, uint64_t cols,
                                       uint64_t rows, const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  static const char *names[3] = {"gemmini_extended_mvin", "gemmini_extended_mvin2",
                                 "gemmini_extended_mvin3"};
  char call[256];
  const struct gemmini_sim_ld_config *cfg = &s->ld[id];
  uint32_t addr, base;
  int acc;
  uint64_t esize, max_cols, nblocks, b, r, c;

  s->insn_count++;
  s->counters.mvin[id]++;
  snprintf(call, sizeof call, "%s(dram_addr=0x%llx, local_addr=0x%llx, cols=%llu, rows=%llu)",
           names[id], (unsigned long long)dram, (unsigned long long)local,
           (unsigned long long)cols, (unsigned long long)rows);
  if (!cfg->configured)
    gemmini_sim_fail(file, line, call,
                     "load configuration %d was never set: issue gemmini_extended3_config_ld("
                     "stride_bytes, scale, shrunk, %d) (or gemmini_config_ld for id 0) first",
                     id, id);
  addr = gemmini_sim_local(local, "local_addr", file, line, call);
  if (addr == GARBAGE_ADDR)
    gemmini_sim_fail(file, line, call, "GARBAGE_ADDR is not a valid mvin destination");
  gemmini_sim_check_dim(rows, DIM, "rows", file, line, call);
  acc = gemmini_sim_is_acc(addr);
  esize = acc && !cfg->shrunk ? sizeof(acc_t) : sizeof(elem_t);
  max_cols = MAX_BYTES / esize < DIM ? DIM : MAX_BYTES / esize;
  gemmini_sim_check_dim(cols, max_cols, acc ? (cfg->shrunk ? "cols (int8 into accumulator)"
                                                           : "cols (int32 into accumulator)")
                                            : "cols",
                        file, line, call);
  base = gemmini_sim_row(addr);
  nblocks = (cols + DIM - 1) / DIM;
  for (b = 0; b < nblocks; b++)
    gemmini_sim_check_rows(addr, (uint64_t)base + b * cfg->block_stride, rows, "mvin", file,
                           line, call);

  for (r = 0; r < rows; r++) {
    const unsigned char *src = (const unsigned char *)(uintptr_t)(dram + r * cfg->stride_bytes);
    for (c = 0; c < cols; c++) {
      const uint64_t row = (uint64_t)base + (c / DIM) * cfg->block_stride + r;
      const uint64_t col = c % DIM;
      if (acc) {
        acc_t v = 0;
        if (dram != 0) {
          if (cfg->shrunk) {
            elem_t e;
            memcpy(&e, src + c, sizeof e);
            v = gemmini_sim_scale_to_elem(e, cfg->scale);
          } else {
            memcpy(&v, src + c * sizeof(acc_t), sizeof v); /* int32 data is not scaled */
          }
        }
        if (addr & GEMMINI_SIM_ACCUMULATE_BIT)
          s->acc[row][col] = gemmini_sim_wrap_add(s->acc[row][col], v);
        else
          s->acc[row][col] = v;
      } else {
        elem_t e = 0;
        if (dram != 0) {
          memcpy(&e, src + c, sizeof e);
          e = gemmini_sim_scale_to_elem(e, cfg->scale);
        }
        s->spad[row][col] = e;
      }
    }
  }
  if (dram == 0)
    s->counters.zero_fill_rows += rows * nblocks;
  else if (acc)
    s->counters.dram_to_acc_bytes += rows * cols * esize;
  else
    s->counters.dram_to_spad_bytes += rows * cols * esize;
}

GEMMINI_SIM_WEAK void gemmini_sim_mvout(uint64_t dram, uint64_t local, uint64_t cols,
                                        uint64_t rows, const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  char call[256];
  uint32_t addr, base;
  int acc, full;
  uint64_t esize, max_cols, nblocks, b, r, c;

  s->insn_count++;
  s->counters.mvout++;
  snprintf(call, sizeof call,
           "gemmini_extended_mvout(dram_addr=0x%llx, local_addr=0x%llx, cols=%llu, rows=%llu)",
           (unsigned long long)dram, (unsigned long long)local, (unsigned long long)cols,
           (unsigned long long)rows);
  if (!s->st_configured)
    gemmini_sim_fail(file, line, call,
                     "the store configuration was never set: issue gemmini_extended_config_st("
                     "stride_bytes, act, scale) (or gemmini_config_st) first");
  addr = gemmini_sim_local(local, "local_addr", file, line, call);
  if (addr == GARBAGE_ADDR)
    gemmini_sim_fail(file, line, call, "GARBAGE_ADDR is not a valid mvout source");
  if (dram == 0) gemmini_sim_fail(file, line, call, "DRAM destination address is NULL");
  gemmini_sim_check_dim(rows, DIM, "rows", file, line, call);
  acc = gemmini_sim_is_acc(addr);
  full = acc && (addr & GEMMINI_SIM_FULL_BIT) != 0;
  esize = full ? sizeof(acc_t) : sizeof(elem_t);
  max_cols = MAX_BYTES / esize < DIM ? DIM : MAX_BYTES / esize;
  gemmini_sim_check_dim(cols, max_cols, full ? "cols (full-width int32 read)" : "cols", file,
                        line, call);
  base = gemmini_sim_row(addr);
  nblocks = (cols + DIM - 1) / DIM;
  for (b = 0; b < nblocks; b++)
    gemmini_sim_check_rows(addr, (uint64_t)base + b * DIM, rows, "mvout", file, line, call);

  for (r = 0; r < rows; r++) {
    unsigned char *dst = (unsigned char *)(uintptr_t)(dram + r * s->st_stride_bytes);
    for (c = 0; c < cols; c++) {
      const uint64_t row = (uint64_t)base + (c / DIM) * DIM + r;
      const uint64_t col = c % DIM;
      if (full) {
        memcpy(dst + c * sizeof(acc_t), &s->acc[row][col], sizeof(acc_t));
      } else {
        elem_t e;
        if (acc) {
          e = gemmini_sim_scale_to_elem(s->acc[row][col], s->acc_scale);
          if (s->acc_act == RELU && e < 0) e = 0;
        } else {
          e = s->spad[row][col];
        }
        memcpy(dst + c, &e, sizeof e);
      }
    }
  }
  if (acc)
    s->counters.acc_to_dram_bytes += rows * cols * esize;
  else
    s->counters.spad_to_dram_bytes += rows * cols * esize;
}

/* ---- configuration -------------------------------------------------------- */

static inline int gemmini_sim_finite(double v) { return v == v && v - v == 0.0; }

GEMMINI_SIM_WEAK void gemmini_sim_config_ex(uint64_t dataflow, uint64_t act, uint64_t sys_shift,
                                            double sys_acc_scale, uint64_t c_stride,
                                            uint64_t a_stride, uint64_t a_transpose,
                                            uint64_t b_transpose, uint64_t set_only_strides,
                                            const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  char call[320];
  s->insn_count++;
  s->counters.config_ex++;
  snprintf(call, sizeof call,
           "gemmini_extended_config_ex(dataflow=%llu, act=%llu, sys_shift=%llu, A_stride=%llu, "
           "A_transpose=%llu, B_transpose=%llu; C_stride=%llu, set_only_strides=%llu)",
           (unsigned long long)dataflow, (unsigned long long)act, (unsigned long long)sys_shift,
           (unsigned long long)a_stride, (unsigned long long)a_transpose,
           (unsigned long long)b_transpose, (unsigned long long)c_stride,
           (unsigned long long)set_only_strides);
  (void)sys_acc_scale; /* carried by the encoding, but mvout scales with config_st's scale */
  gemmini_sim_check_dim(a_stride, 0xFFFF, "A_stride", file, line, call);
  gemmini_sim_check_dim(c_stride, 0xFFFF, "C_stride", file, line, call);
  if (!set_only_strides) {
    if (dataflow > 1)
      gemmini_sim_fail(file, line, call,
                       "dataflow must be OUTPUT_STATIONARY (0) or WEIGHT_STATIONARY (1)");
    if (act > 1)
      gemmini_sim_fail(file, line, call,
                       "activation %llu is not supported by the simulator "
                       "(only NO_ACTIVATION = 0 and RELU = 1)",
                       (unsigned long long)act);
    if (sys_shift >= 32)
      gemmini_sim_fail(file, line, call, "sys_shift must be below 32");
    if (a_transpose > 1 || b_transpose > 1)
      gemmini_sim_fail(file, line, call, "A_transpose and B_transpose are booleans");
    /* README "config_ex" table: combinations the hardware cannot perform. */
    if (dataflow == OUTPUT_STATIONARY && !a_transpose && b_transpose)
      gemmini_sim_fail(file, line, call,
                       "output-stationary dataflow cannot transpose B without transposing A");
    if (dataflow == WEIGHT_STATIONARY && a_transpose && b_transpose)
      gemmini_sim_fail(file, line, call,
                       "weight-stationary dataflow cannot transpose both A and B");
    if (s->ex_configured && (int)dataflow != s->dataflow) s->pe_loaded = 0;
    s->dataflow = (int)dataflow;
    s->sys_act = (int)act;
    s->sys_shift = (unsigned)sys_shift;
    s->a_transpose = (int)a_transpose;
    s->b_transpose = (int)b_transpose;
    s->ex_configured = 1;
  }
  s->a_stride = (uint32_t)a_stride;
  s->c_stride = (uint32_t)c_stride;
}

GEMMINI_SIM_WEAK void gemmini_sim_config_ld(uint64_t stride, double scale, uint64_t shrunk,
                                            uint64_t block_stride, uint64_t pixel_repeats,
                                            uint64_t id, const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  char call[256];
  s->insn_count++;
  s->counters.config_ld++;
  snprintf(call, sizeof call,
           "gemmini_extended4_config_ld(stride=%llu, scale=%g, shrunk=%llu, "
           "block_mvin_stride=%llu, id=%llu)",
           (unsigned long long)stride, scale, (unsigned long long)shrunk,
           (unsigned long long)block_stride, (unsigned long long)id);
  if (id > 2)
    gemmini_sim_fail(file, line, call, "id selects mvin (0), mvin2 (1) or mvin3 (2)");
  if (!gemmini_sim_finite(scale)) gemmini_sim_fail(file, line, call, "scale must be finite");
  if (shrunk > 1) gemmini_sim_fail(file, line, call, "shrunk is a boolean");
  gemmini_sim_check_dim(block_stride, 0xFFFF, "block_mvin_stride", file, line, call);
  if (pixel_repeats > 1)
    gemmini_sim_fail(file, line, call, "pixel_repeats > 1 is not supported by the simulator");
  s->ld[id].configured = 1;
  s->ld[id].stride_bytes = stride;
  s->ld[id].scale = (float)scale;
  s->ld[id].shrunk = (int)shrunk;
  s->ld[id].block_stride = (uint32_t)block_stride;
}

GEMMINI_SIM_WEAK void gemmini_sim_config_st(uint64_t stride, uint64_t act, double scale,
                                            uint64_t pool_stride, const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  char call[256];
  s->insn_count++;
  s->counters.config_st++;
  snprintf(call, sizeof call, "gemmini_extended_config_st(stride=%llu, act=%llu, scale=%g)",
           (unsigned long long)stride, (unsigned long long)act, scale);
  if (act > 1)
    gemmini_sim_fail(file, line, call,
                     "activation %llu is not supported by the simulator "
                     "(only NO_ACTIVATION = 0 and RELU = 1)",
                     (unsigned long long)act);
  if (!gemmini_sim_finite(scale)) gemmini_sim_fail(file, line, call, "scale must be finite");
  if (pool_stride != 0)
    gemmini_sim_fail(file, line, call, "max-pooling on mvout is not supported by the simulator");
  s->st_configured = 1;
  s->st_stride_bytes = (uint32_t)stride; /* the encoding keeps 32 bits */
  s->acc_act = (int)act;
  s->acc_scale = (float)scale;
}

GEMMINI_SIM_WEAK void gemmini_sim_flush(uint64_t skip, const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  s->insn_count++;
  s->counters.flush++;
  if (skip > 1) gemmini_sim_fail(file, line, "gemmini_flush(skip)", "skip must be 0 or 1");
}

GEMMINI_SIM_WEAK void gemmini_sim_fence(const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  (void)file;
  (void)line;
  s->insn_count++;
  s->counters.fence++;
}

/* ---- matmul ------------------------------------------------------------- */

GEMMINI_SIM_WEAK void gemmini_sim_preload(uint64_t bd, uint64_t c, uint64_t bd_cols,
                                          uint64_t bd_rows, uint64_t c_cols, uint64_t c_rows,
                                          const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  char call[256];
  uint32_t bd_addr, c_addr;
  s->insn_count++;
  s->counters.preload++;
  snprintf(call, sizeof call,
           "gemmini_extended_preload(BD=0x%llx, C=0x%llx, BD_cols=%llu, BD_rows=%llu, "
           "C_cols=%llu, C_rows=%llu)",
           (unsigned long long)bd, (unsigned long long)c, (unsigned long long)bd_cols,
           (unsigned long long)bd_rows, (unsigned long long)c_cols, (unsigned long long)c_rows);
  if (!s->ex_configured)
    gemmini_sim_fail(file, line, call,
                     "the execute pipeline was never configured: issue "
                     "gemmini_extended_config_ex(dataflow, act, sys_shift, A_stride, "
                     "A_transpose, B_transpose) first");
  if (s->preload_pending)
    gemmini_sim_fail(file, line, call,
                     "the previous preload (at %s:%d) was not consumed by a compute",
                     s->preload_file, s->preload_line);
  bd_addr = gemmini_sim_local(bd, "BD", file, line, call);
  c_addr = gemmini_sim_local(c, "C", file, line, call);
  gemmini_sim_check_dim(bd_cols, DIM, "BD_cols", file, line, call);
  gemmini_sim_check_dim(bd_rows, DIM, "BD_rows", file, line, call);
  gemmini_sim_check_dim(c_cols, DIM, "C_cols", file, line, call);
  gemmini_sim_check_dim(c_rows, DIM, "C_rows", file, line, call);
  if (bd_addr != GARBAGE_ADDR && gemmini_sim_is_acc(bd_addr))
    gemmini_sim_fail(file, line, call,
                     "preloading D/B from the accumulator is not supported (the operand must "
                     "be a scratchpad address or GARBAGE_ADDR)");
  s->pre_addr = bd_addr;
  s->pre_rows = (uint32_t)bd_rows;
  s->pre_cols = (uint32_t)bd_cols;
  s->out_addr = c_addr;
  s->out_rows = (uint32_t)c_rows;
  s->out_cols = (uint32_t)c_cols;
  s->preload_pending = 1;
  s->preload_file = file;
  s->preload_line = line;
}

GEMMINI_SIM_WEAK void gemmini_sim_compute(int preloaded, uint64_t a, uint64_t bd,
                                          uint64_t a_cols, uint64_t a_rows, uint64_t bd_cols,
                                          uint64_t bd_rows, const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  char call[320];
  uint32_t a_addr, bd_addr;
  acc_t A[DIM][DIM], B[DIM][DIM], result[DIM][DIM];
  const int os = s->dataflow == OUTPUT_STATIONARY;
  size_t i, j, k;

  s->insn_count++;
  if (preloaded)
    s->counters.compute_preloaded++;
  else
    s->counters.compute_accumulated++;
  snprintf(call, sizeof call,
           "%s(A=0x%llx, BD=0x%llx, A_cols=%llu, A_rows=%llu, BD_cols=%llu, BD_rows=%llu)",
           preloaded ? "gemmini_extended_compute_preloaded"
                     : "gemmini_extended_compute_accumulated",
           (unsigned long long)a, (unsigned long long)bd, (unsigned long long)a_cols,
           (unsigned long long)a_rows, (unsigned long long)bd_cols, (unsigned long long)bd_rows);
  if (!s->ex_configured)
    gemmini_sim_fail(file, line, call,
                     "the execute pipeline was never configured: issue "
                     "gemmini_extended_config_ex(...) first");
  if (!s->preload_pending)
    gemmini_sim_fail(file, line, call,
                     "no preload precedes this compute: every compute must follow a "
                     "gemmini_extended_preload that names its output");
  if (!preloaded && !s->pe_loaded)
    gemmini_sim_fail(file, line, call,
                     "compute_accumulated has nothing to reuse: no compute_preloaded since the "
                     "dataflow was configured");
  a_addr = gemmini_sim_local(a, "A", file, line, call);
  bd_addr = gemmini_sim_local(bd, "BD", file, line, call);
  gemmini_sim_check_dim(a_cols, DIM, "A_cols", file, line, call);
  gemmini_sim_check_dim(a_rows, DIM, "A_rows", file, line, call);
  gemmini_sim_check_dim(bd_cols, DIM, "BD_cols", file, line, call);
  gemmini_sim_check_dim(bd_rows, DIM, "BD_rows", file, line, call);
  if (a_addr != GARBAGE_ADDR && gemmini_sim_is_acc(a_addr))
    gemmini_sim_fail(file, line, call, "reading A from the accumulator is not supported");
  if (bd_addr != GARBAGE_ADDR && gemmini_sim_is_acc(bd_addr))
    gemmini_sim_fail(file, line, call, "reading B/D from the accumulator is not supported");
  s->preload_pending = 0;

  /* Preload: OS loads D as the initial partial sums, WS loads B as the weights. */
  if (preloaded) {
    const int wt = !os && s->b_transpose;
    const uint32_t pre = s->pre_addr;
    if (pre != GARBAGE_ADDR && s->pre_rows > 0 && s->pre_cols > 0)
      gemmini_sim_check_rows(pre, gemmini_sim_row(pre), wt ? s->pre_cols : s->pre_rows,
                             "the preloaded BD operand", file, line, call);
    for (i = 0; i < DIM; i++)
      for (j = 0; j < DIM; j++) {
        acc_t v = 0;
        if (pre != GARBAGE_ADDR && i < s->pre_rows && j < s->pre_cols)
          v = wt ? s->spad[gemmini_sim_row(pre) + j][i] : s->spad[gemmini_sim_row(pre) + i][j];
        s->pe[i][j] = v;
      }
    s->pe_loaded = 1;
    s->pe_cols = s->pre_cols;
  }

  /* A, logically a_rows x a_cols, zero outside; GARBAGE_ADDR reads as zeros here. */
  if (a_addr != GARBAGE_ADDR && a_rows > 0 && a_cols > 0) {
    const uint64_t n = s->a_transpose ? a_cols : a_rows;
    gemmini_sim_check_rows(a_addr, gemmini_sim_row(a_addr), (n - 1) * s->a_stride + 1,
                           "operand A", file, line, call);
  }
  for (i = 0; i < DIM; i++)
    for (k = 0; k < DIM; k++) {
      acc_t v = 0;
      if (a_addr != GARBAGE_ADDR && i < a_rows && k < a_cols) {
        const uint64_t base = gemmini_sim_row(a_addr);
        v = s->a_transpose ? s->spad[base + (uint64_t)s->a_stride * k][i]
                           : s->spad[base + (uint64_t)s->a_stride * i][k];
      }
      A[i][k] = v;
    }

  /* BD: B for OS (possibly transposed), D (the bias) for WS; zero outside. */
  if (bd_addr != GARBAGE_ADDR && bd_rows > 0 && bd_cols > 0) {
    const uint64_t n = os && s->b_transpose ? bd_cols : bd_rows;
    gemmini_sim_check_rows(bd_addr, gemmini_sim_row(bd_addr), n, os ? "operand B" : "operand D",
                           file, line, call);
  }
  for (i = 0; i < DIM; i++)
    for (j = 0; j < DIM; j++) {
      acc_t v = 0;
      if (bd_addr != GARBAGE_ADDR && i < bd_rows && j < bd_cols) {
        const uint64_t base = gemmini_sim_row(bd_addr);
        v = os && s->b_transpose ? s->spad[base + j][i] : s->spad[base + i][j];
      }
      B[i][j] = v;
    }

  if (os) {
    for (i = 0; i < DIM; i++)
      for (j = 0; j < DIM; j++) {
        acc_t sum = s->pe[i][j];
        for (k = 0; k < DIM; k++) sum = gemmini_sim_wrap_add(sum, A[i][k] * B[k][j]);
        s->pe[i][j] = sum;
        result[i][j] = sum;
      }
    s->counters.macs_useful += a_rows * a_cols * bd_cols;
  } else {
    for (i = 0; i < DIM; i++)
      for (j = 0; j < DIM; j++) {
        acc_t sum = B[i][j];
        for (k = 0; k < DIM; k++) sum = gemmini_sim_wrap_add(sum, A[i][k] * s->pe[k][j]);
        result[i][j] = sum;
      }
    s->counters.macs_useful += a_rows * a_cols * s->pe_cols;
  }
  s->counters.macs_issued += (uint64_t)DIM * DIM * DIM;

  /* Write C: raw int32 into the accumulator, shifted/saturated/activated into the scratchpad. */
  if (s->out_addr != GARBAGE_ADDR && s->out_rows > 0 && s->out_cols > 0) {
    const uint32_t out = s->out_addr;
    const uint64_t base = gemmini_sim_row(out);
    char what[160];
    snprintf(what, sizeof what, "the output C named by the preload at %s:%d", s->preload_file,
             s->preload_line);
    gemmini_sim_check_rows(out, base, (uint64_t)(s->out_rows - 1) * s->c_stride + 1, what, file,
                           line, call);
    /* OS into the accumulator: the RTL PE emits (sum >> shift) clipped to the array's 20-bit
     * output type (PE.scala, spatialArrayOutputType = SInt(20) by default) while Spike stores
     * the raw sum.  Where the two would differ, refuse instead of picking one silently. */
    if (os && gemmini_sim_is_acc(out)) {
      if (s->sys_shift != 0)
        gemmini_sim_fail(file, line, call,
                         "output-stationary results written to the accumulator with sys_shift = "
                         "%u: the hardware shifts them and the functional model does not; use "
                         "sys_shift = 0 (scale on mvout instead)",
                         s->sys_shift);
      for (i = 0; i < s->out_rows; i++)
        for (j = 0; j < s->out_cols; j++)
          if (result[i][j] < -(1 << 19) || result[i][j] >= (1 << 19))
            gemmini_sim_fail(file, line, call,
                             "output-stationary result C[%zu][%zu] = %d does not fit the array's "
                             "20-bit output type (the hardware saturates it): split the K "
                             "reduction and accumulate in the accumulator instead",
                             i, j, (int)result[i][j]);
    }
    for (i = 0; i < s->out_rows; i++)
      for (j = 0; j < s->out_cols; j++) {
        const uint64_t row = base + (uint64_t)s->c_stride * i;
        if (gemmini_sim_is_acc(out)) {
          if (out & GEMMINI_SIM_ACCUMULATE_BIT)
            s->acc[row][j] = gemmini_sim_wrap_add(s->acc[row][j], result[i][j]);
          else
            s->acc[row][j] = result[i][j];
        } else {
          elem_t e = gemmini_sim_saturate(
              os ? gemmini_sim_rounding_shift(result[i][j], (int)s->sys_shift) : result[i][j]);
          if (s->sys_act == RELU && e < 0) e = 0;
          s->spad[row][j] = e;
        }
      }
  }
}

/* The CISC loop instructions (gemmini_loop_ws, gemmini_loop_conv_ws), over the single
 * instructions above. */
#include "gemmini_loop.h"
#include "gemmini_loop_conv.h"
/* gemmini_config_norm and the performance-counter API. */
#include "gemmini_perf.h"

#endif /* VERISCHED_GEMMINI_SIM_H */
