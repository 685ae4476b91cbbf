/*
 * gemmini_loop.h -- the weight-stationary matmul loop unroller (gemmini_loop_ws)
 * of the functional simulator.  Included by gemmini.h after the single
 * instructions; do not include it on its own.
 *
 * Facts used (our own code; sources named in the README, "Loop instructions"):
 *  - the argument list and its order are those of gemmini_loop_ws in Gemmini's
 *    gemmini.h (gemmini-rocc-tests); the macro is a braced block there and here;
 *  - the real macro issues six RoCC commands (CONFIG_BOUNDS, CONFIG_ADDRS_AB,
 *    CONFIG_ADDRS_DC, CONFIG_STRIDES_AB, CONFIG_STRIDES_DC, LOOP_WS);
 *  - the hardware (LoopMatmul.scala) unrolls them into mvin (A), mvin2 (B),
 *    mvin3 (D), preload/compute and mvout (C) over 16x16 tiles, k outer, j, i
 *    inner, with the scratchpad and accumulator layouts written out below.
 *
 * The simulator performs exactly that sequence of single instructions through
 * the same entry points a program's own calls reach, so the result of a
 * loop_ws is, by construction, the result of the instructions it stands for.
 * tests/gemmini_c/loop_ws.c checks this against a hand-written sequence.
 */
#ifndef VERISCHED_GEMMINI_LOOP_H
#define VERISCHED_GEMMINI_LOOP_H

#ifndef VERISCHED_GEMMINI_SIM_H
#error "include gemmini.h, which includes gemmini_loop.h"
#endif

/* Concurrent loops of the hardware: successive loop_ws calls alternate between two halves
 * of the scratchpad (A from the bottom of a half, B from its top) and, for calls that store C,
 * two halves of the accumulator. */
#define GEMMINI_SIM_LOOP_CONCURRENT 2
#define GEMMINI_SIM_MAX_BLOCK_LEN (MAX_BYTES / (DIM * (int)sizeof(elem_t)))
#define GEMMINI_SIM_MAX_BLOCK_LEN_ACC (MAX_BYTES / (DIM * (int)sizeof(acc_t)))
/* The hardware's iterators are 16 bits wide. */
#define GEMMINI_SIM_LOOP_MAX_TILES 0xFFFF

void gemmini_sim_loop_ws(uint64_t I, uint64_t J, uint64_t K, uint64_t pad_I, uint64_t pad_J,
                         uint64_t pad_K, uint64_t A, uint64_t B, uint64_t D, uint64_t C,
                         uint64_t A_stride, uint64_t B_stride, uint64_t D_stride,
                         uint64_t C_stride, uint64_t A_transpose, uint64_t B_transpose,
                         uint64_t full_C, uint64_t low_D, uint64_t ex_accumulate, uint64_t act,
                         uint64_t a_spad_id, uint64_t b_spad_id, uint64_t is_resadd,
                         const char *file, int line);

/* Statement-shaped like the original: a braced block. */
#define gemmini_loop_ws(I, J, K, pad_I, pad_J, pad_K, A, B, D, C, A_stride, B_stride, D_stride, \
                        C_stride, A_transpose, B_transpose, full_C, low_D, ex_accumulate, act,  \
                        a_spad_id, b_spad_id, is_resadd)                                        \
  {                                                                                             \
    gemmini_sim_loop_ws((uint64_t)(I), (uint64_t)(J), (uint64_t)(K), (uint64_t)(pad_I),         \
                        (uint64_t)(pad_J), (uint64_t)(pad_K), (uint64_t)(uintptr_t)(A),         \
                        (uint64_t)(uintptr_t)(B), (uint64_t)(uintptr_t)(D),                     \
                        (uint64_t)(uintptr_t)(C), (uint64_t)(A_stride), (uint64_t)(B_stride),   \
                        (uint64_t)(D_stride), (uint64_t)(C_stride), (uint64_t)(A_transpose),    \
                        (uint64_t)(B_transpose), (uint64_t)(full_C), (uint64_t)(low_D),         \
                        (uint64_t)(ex_accumulate), (uint64_t)(act), (uint64_t)(a_spad_id),      \
                        (uint64_t)(b_spad_id), (uint64_t)(is_resadd), __FILE__, __LINE__);      \
  }

static inline uint64_t gemmini_sim_min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

GEMMINI_SIM_WEAK void gemmini_sim_loop_ws(
    uint64_t I, uint64_t J, uint64_t K, uint64_t pad_I, uint64_t pad_J, uint64_t pad_K,
    uint64_t A, uint64_t B, uint64_t D, uint64_t C, uint64_t A_stride, uint64_t B_stride,
    uint64_t D_stride, uint64_t C_stride, uint64_t A_transpose, uint64_t B_transpose,
    uint64_t full_C, uint64_t low_D, uint64_t ex_accumulate, uint64_t act, uint64_t a_spad_id,
    uint64_t b_spad_id, uint64_t is_resadd, const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  char call[384];
  const uint64_t half_rows = GEMMINI_SIM_SPAD_ROWS / GEMMINI_SIM_LOOP_CONCURRENT;
  const uint64_t half_acc = ACC_ROWS / GEMMINI_SIM_LOOP_CONCURRENT;
  const uint64_t sizeof_D = low_D ? sizeof(elem_t) : sizeof(acc_t);
  const uint64_t sizeof_C = full_C ? sizeof(acc_t) : sizeof(elem_t);
  uint64_t a_start, b_start, c_start, insn_before, unrolled_before, i, j, k;
  uint64_t a_blocks, b_blocks, d_blocks, c_blocks;

  snprintf(call, sizeof call,
           "gemmini_loop_ws(I=%llu, J=%llu, K=%llu, pad_I=%llu, pad_J=%llu, pad_K=%llu, "
           "A=0x%llx, B=0x%llx, D=0x%llx, C=0x%llx, ...)",
           (unsigned long long)I, (unsigned long long)J, (unsigned long long)K,
           (unsigned long long)pad_I, (unsigned long long)pad_J, (unsigned long long)pad_K,
           (unsigned long long)A, (unsigned long long)B, (unsigned long long)D,
           (unsigned long long)C);
  if (I == 0 || J == 0 || K == 0 || I > GEMMINI_SIM_LOOP_MAX_TILES ||
      J > GEMMINI_SIM_LOOP_MAX_TILES || K > GEMMINI_SIM_LOOP_MAX_TILES)
    gemmini_sim_fail(file, line, call, "I, J and K count tiles: each must be in [1, 65535]");
  if (pad_I >= DIM || pad_J >= DIM || pad_K >= DIM)
    gemmini_sim_fail(file, line, call, "pad_I, pad_J and pad_K must be < DIM (%d)", DIM);
  if (A_transpose || B_transpose)
    gemmini_sim_fail(file, line, call,
                     "A_transpose/B_transpose are not modelled by the simulator's loop_ws");
  if (is_resadd)
    gemmini_sim_fail(file, line, call, "is_resadd (residual addition) is not modelled");
  if (act != NO_ACTIVATION && act != RELU)
    gemmini_sim_fail(file, line, call, "activation %llu is not modelled (NO_ACTIVATION or RELU)",
                     (unsigned long long)act);
  if (A == 0 || B == 0)
    gemmini_sim_fail(file, line, call, "A and B must be DRAM addresses (not NULL)");
  if (!s->ex_configured || s->dataflow != WEIGHT_STATIONARY)
    gemmini_sim_fail(file, line, call,
                     "loop_ws computes weight-stationary: issue gemmini_config_ex(WS, ...) first");
  if (s->a_transpose || s->b_transpose)
    gemmini_sim_fail(file, line, call,
                     "the transposes of config_ex must match loop_ws's (both 0)");
  /* The loop moves each tile's first row from the address it computes; the rows inside a tile
   * follow the loader's configured stride.  A mismatch is always a bug in the caller (the real
   * library configures them together), so refuse it instead of reading the wrong rows. */
  if (!s->ld[0].configured || s->ld[0].stride_bytes != A_stride * sizeof(elem_t) ||
      s->ld[0].block_stride != DIM)
    gemmini_sim_fail(file, line, call,
                     "load configuration 0 must be set with stride A_stride * sizeof(elem_t) = "
                     "%llu and block stride DIM",
                     (unsigned long long)(A_stride * sizeof(elem_t)));
  if (!s->ld[1].configured || s->ld[1].stride_bytes != B_stride * sizeof(elem_t) ||
      s->ld[1].block_stride != DIM)
    gemmini_sim_fail(file, line, call,
                     "load configuration 1 must be set with stride B_stride * sizeof(elem_t) = "
                     "%llu and block stride DIM",
                     (unsigned long long)(B_stride * sizeof(elem_t)));
  if (D != 0 && (!s->ld[2].configured || s->ld[2].stride_bytes != D_stride * sizeof_D ||
                 s->ld[2].block_stride != DIM || (s->ld[2].shrunk != 0) != (low_D != 0)))
    gemmini_sim_fail(file, line, call,
                     "load configuration 2 must be set with stride D_stride * sizeof_D = %llu, "
                     "block stride DIM and shrunk = low_D (%llu)",
                     (unsigned long long)(D_stride * sizeof_D), (unsigned long long)low_D);
  if (C != 0 && (!s->st_configured || s->st_stride_bytes != C_stride * sizeof_C ||
                 (uint64_t)s->acc_act != act))
    gemmini_sim_fail(file, line, call,
                     "the store configuration must be set with stride C_stride * sizeof_C = %llu "
                     "and the loop's activation (%llu)",
                     (unsigned long long)(C_stride * sizeof_C), (unsigned long long)act);
  if ((I * K + K * J + 1) * DIM > half_rows)
    gemmini_sim_fail(file, line, call,
                     "A (%llu tiles) and B (%llu tiles) do not fit half of the scratchpad "
                     "(%llu rows)",
                     (unsigned long long)(I * K), (unsigned long long)(K * J),
                     (unsigned long long)half_rows);
  if (I * J * DIM > half_acc)
    gemmini_sim_fail(file, line, call,
                     "C (%llu tiles) does not fit half of the accumulator (%llu rows)",
                     (unsigned long long)(I * J), (unsigned long long)half_acc);

  /* Five configuration commands and the loop command itself. */
  s->counters.loop_ws_config += 5;
  s->counters.loop_ws += 1;
  insn_before = s->insn_count;
  unrolled_before = s->counters.mvin[0] + s->counters.mvin[1] + s->counters.mvin[2] +
                    s->counters.mvout + s->counters.preload + s->counters.compute_preloaded +
                    s->counters.compute_accumulated;

  a_start = s->loop_ab_half * half_rows;
  b_start = (s->loop_ab_half + 1) * half_rows - DIM - K * J * DIM;
  c_start = s->loop_acc_half * half_acc;
  (void)a_spad_id; /* bank hints: they place nothing the simulator can observe */
  (void)b_spad_id;

  a_blocks = gemmini_sim_min_u64(K, GEMMINI_SIM_MAX_BLOCK_LEN);
  b_blocks = gemmini_sim_min_u64(J, GEMMINI_SIM_MAX_BLOCK_LEN);
  d_blocks = gemmini_sim_min_u64(J, low_D ? GEMMINI_SIM_MAX_BLOCK_LEN
                                          : GEMMINI_SIM_MAX_BLOCK_LEN_ACC);
  c_blocks = full_C ? 1 : gemmini_sim_min_u64(J, GEMMINI_SIM_MAX_BLOCK_LEN);

  /* D -> accumulator (overwrite), j blocks outer, i inner. */
  if (D != 0)
    for (j = 0; j < J; j += d_blocks)
      for (i = 0; i < I; i++) {
        const uint64_t blocks = gemmini_sim_min_u64(d_blocks, J - j);
        const uint64_t cols = blocks * DIM - (j + blocks >= J ? pad_J : 0);
        const uint64_t rows = DIM - (i == I - 1 ? pad_I : 0);
        gemmini_sim_mvin(2, D + (i * D_stride + j) * DIM * sizeof_D,
                         GEMMINI_SIM_ACC_BIT | (c_start + (i * J + j) * DIM), cols, rows, file,
                         line);
      }
  /* A -> scratchpad, k blocks outer, i inner; tile (i, k) at a_start + (i*K + k)*DIM. */
  for (k = 0; k < K; k += a_blocks)
    for (i = 0; i < I; i++) {
      const uint64_t blocks = gemmini_sim_min_u64(a_blocks, K - k);
      const uint64_t cols = blocks * DIM - (k + blocks >= K ? pad_K : 0);
      const uint64_t rows = DIM - (i == I - 1 ? pad_I : 0);
      gemmini_sim_mvin(0, A + (i * A_stride + k) * DIM * sizeof(elem_t),
                       a_start + (i * K + k) * DIM, cols, rows, file, line);
    }
  /* B -> scratchpad, k outer, j blocks inner; tile (k, j) at b_start + (k*J + j)*DIM. */
  for (k = 0; k < K; k++)
    for (j = 0; j < J; j += b_blocks) {
      const uint64_t blocks = gemmini_sim_min_u64(b_blocks, J - j);
      const uint64_t cols = blocks * DIM - (j + blocks >= J ? pad_J : 0);
      const uint64_t rows = DIM - (k == K - 1 ? pad_K : 0);
      gemmini_sim_mvin(1, B + (k * B_stride + j) * DIM * sizeof(elem_t),
                       b_start + (k * J + j) * DIM, cols, rows, file, line);
    }
  /* k, j, i: B (k, j) is preloaded once (i == 0) and stays in the array for every i. */
  for (k = 0; k < K; k++)
    for (j = 0; j < J; j++)
      for (i = 0; i < I; i++) {
        const uint64_t a_cols = DIM - (k == K - 1 ? pad_K : 0);
        const uint64_t a_rows = DIM - (i == I - 1 ? pad_I : 0);
        const uint64_t b_cols = DIM - (j == J - 1 ? pad_J : 0);
        const uint64_t b_rows = DIM - (k == K - 1 ? pad_K : 0);
        const uint64_t tile = c_start + (i * J + j) * DIM;
        const uint64_t out = (ex_accumulate || k != 0)
                                 ? (GEMMINI_SIM_ACC_BIT | GEMMINI_SIM_ACCUMULATE_BIT | tile)
                                 : (GEMMINI_SIM_ACC_BIT | tile);
        const uint64_t pre = i == 0 ? b_start + (k * J + j) * DIM : GARBAGE_ADDR;
        gemmini_sim_preload(pre, out, b_cols, b_rows, b_cols, a_rows, file, line);
        gemmini_sim_compute(i == 0, a_start + (i * K + k) * DIM, GARBAGE_ADDR, a_cols, a_rows,
                            DIM, DIM, file, line);
      }
  /* C -> DRAM, j blocks outer, i inner, through config_st's scale and activation. */
  if (C != 0)
    for (j = 0; j < J; j += c_blocks)
      for (i = 0; i < I; i++) {
        const uint64_t blocks = gemmini_sim_min_u64(c_blocks, J - j);
        const uint64_t cols = blocks * DIM - (j + blocks >= J ? pad_J : 0);
        const uint64_t rows = DIM - (i == I - 1 ? pad_I : 0);
        gemmini_sim_mvout(C + (i * C_stride + j) * DIM * sizeof_C,
                          GEMMINI_SIM_ACC_BIT | (full_C ? GEMMINI_SIM_FULL_BIT : 0) |
                              (c_start + (i * J + j) * DIM),
                          cols, rows, file, line);
      }

  s->counters.loop_unrolled += s->counters.mvin[0] + s->counters.mvin[1] + s->counters.mvin[2] +
                               s->counters.mvout + s->counters.preload +
                               s->counters.compute_preloaded + s->counters.compute_accumulated -
                               unrolled_before;
  /* read_cycles counts what the CPU issued: the six commands, not what the loop unrolled. */
  s->insn_count = insn_before + 6;
  s->loop_ab_half = (s->loop_ab_half + 1) % GEMMINI_SIM_LOOP_CONCURRENT;
  if (C != 0) s->loop_acc_half = (s->loop_acc_half + 1) % GEMMINI_SIM_LOOP_CONCURRENT;
}

#endif /* VERISCHED_GEMMINI_LOOP_H */
