/*
 * Single-tile matmul sequences (preload / compute_preloaded /
 * compute_accumulated) in either dataflow, with partial tiles on every operand,
 * GARBAGE_ADDR operands and outputs, A/B transposes, A_stride and C_stride,
 * the OS output shift (rounding half to even), ReLU, and outputs into the
 * scratchpad or the accumulator (overwrite or accumulate).
 *
 * Usage: matmul_tile SEED os|ws.  The whole reachable state (an accumulator
 * region and a scratchpad output region) is modelled here and compared after
 * every trial.
 */
#include "sim_test_common.h"

#define TRIALS 150
#define MAX_STEPS 5
#define OPND_ROWS 48 /* rows reserved per operand: 16 rows at A_stride <= 3 */
#define OUT_ROWS 32  /* 16 rows at C_stride <= 2 */
#define ACC_BIT (1u << 31)
#define ACCUM_BIT (1u << 30)

typedef struct {
  int8_t v[DIM][DIM];
  uint32_t rows, cols;
  int garbage;
} operand_t;

static int os;
static int a_t, b_t, act;
static uint32_t a_stride, c_stride, shift;

static int32_t pe[DIM][DIM];      /* OS partial sums or WS weights */
static int32_t ref_acc[OUT_ROWS][DIM];
static int8_t ref_spad[OUT_ROWS][DIM];

static void random_operand(operand_t *o, int allow_garbage) {
  uint32_t i, j;
  const int lim = os ? 100 : 128;
  for (i = 0; i < DIM; i++)
    for (j = 0; j < DIM; j++) o->v[i][j] = (int8_t)rng_range(-lim, lim - 1);
  o->rows = (uint32_t)rng_range(0, 5) == 0 ? (uint32_t)rng_range(0, DIM) : DIM - (uint32_t)rng_range(0, 3);
  o->cols = (uint32_t)rng_range(0, 5) == 0 ? (uint32_t)rng_range(0, DIM) : DIM - (uint32_t)rng_range(0, 3);
  o->garbage = allow_garbage && rng_range(0, 7) == 0;
}

/* Lays out a logical matrix in a scratchpad image the way the array reads it:
 * row step `stride`; `transposed` stores element (i, j) at row j, column i. */
static void place(const operand_t *o, uint32_t spad_row, uint32_t stride, int transposed) {
  static int8_t image[OPND_ROWS][DIM];
  uint32_t i, j;
  for (i = 0; i < OPND_ROWS; i++)
    for (j = 0; j < DIM; j++) image[i][j] = (int8_t)rng_range(-128, 127); /* junk around it */
  for (i = 0; i < DIM; i++)
    for (j = 0; j < DIM; j++) {
      if (transposed)
        image[stride * j][i] = o->v[i][j];
      else
        image[stride * i][j] = o->v[i][j];
    }
  load_spad_region(spad_row, &image[0][0], OPND_ROWS);
}

static int32_t masked(const operand_t *o, uint32_t i, uint32_t j) {
  return (!o->garbage && i < o->rows && j < o->cols) ? o->v[i][j] : 0;
}

int main(int argc, char **argv) {
  int trial;
  rng_seed(seed_from_args(argc, argv));
  os = argc > 2 && strcmp(argv[2], "ws") == 0 ? 0 : 1;

  for (trial = 0; trial < TRIALS; trial++) {
    /* OS sums stay in the PEs across steps; keep them inside the array's 20-bit output
     * range (|sum| <= 3 steps * 16 * 100 * 100 + 100 < 2^19) -- see errors.c os_sum_overflow. */
    const int steps = (int)rng_range(1, os ? 3 : MAX_STEPS);
    /* Regions: operands at random rows, outputs at fixed-size random windows. */
    const uint32_t opnd_base = (uint32_t)rng_range(0, GEMMINI_SIM_SPAD_ROWS - 3 * OPND_ROWS - OUT_ROWS);
    const uint32_t a_row = opnd_base, bd_row = opnd_base + OPND_ROWS, pre_row = opnd_base + 2 * OPND_ROWS;
    const uint32_t spad_out = opnd_base + 3 * OPND_ROWS;
    const uint32_t acc_out = rng_range(0, 3) == 0 ? ACC_ROWS - OUT_ROWS : (uint32_t)rng_range(0, ACC_ROWS - OUT_ROWS);
    int s;
    uint32_t i, j, k;

    /* Execute configuration: a permitted transpose combination for the dataflow. */
    {
      const int combo = (int)rng_range(0, 2);
      a_t = combo >= 1;
      b_t = os ? combo == 2 : combo == 0 ? 0 : (combo == 1 ? 0 : 1);
      if (!os && combo == 2) a_t = 0; /* WS: (0,0), (1,0), (0,1) */
    }
    act = (int)rng_range(0, 1);
    shift = (uint32_t)rng_range(0, 9);
    a_stride = (uint32_t)rng_range(1, 3);
    c_stride = (uint32_t)rng_range(1, 2);
    /* Braces: like the original, the config_ex macros end in their own ';'. */
    if (c_stride == 1 && rng_range(0, 1)) {
      gemmini_extended_config_ex(os ? OUTPUT_STATIONARY : WEIGHT_STATIONARY, act, shift, a_stride, a_t, b_t);
    } else {
      gemmini_extended3_config_ex(os ? OUTPUT_STATIONARY : WEIGHT_STATIONARY, act, shift,
                                  ACC_SCALE_IDENTITY, c_stride, a_stride, a_t, b_t, false);
    }

    /* Random initial contents of both output regions, mirrored in the model. */
    for (i = 0; i < OUT_ROWS; i++)
      for (j = 0; j < DIM; j++) {
        ref_acc[i][j] = (int32_t)rng_range(-100000, 100000);
        ref_spad[i][j] = (int8_t)rng_range(-128, 127);
      }
    load_acc_region(acc_out, &ref_acc[0][0], OUT_ROWS);
    load_spad_region(spad_out, &ref_spad[0][0], OUT_ROWS);

    for (s = 0; s < steps; s++) {
      operand_t A, BD, PRE;
      int32_t result[DIM][DIM];
      /* Step 0 must preload; WS may also re-preload weights later. */
      const int preloaded = s == 0 || rng_range(0, 2) == 0;
      /* 0 garbage, 1 spad, 2 acc overwrite, 3 acc accumulate.  OS results reach the
       * accumulator only unshifted (the simulator rejects the ambiguous shifted case). */
      const int target = os && shift != 0 ? (int)rng_range(0, 1) : (int)rng_range(0, 3);
      const uint32_t out_rows = (uint32_t)rng_range(0, 4) == 0 ? (uint32_t)rng_range(0, DIM) : DIM;
      const uint32_t out_cols = (uint32_t)rng_range(0, 4) == 0 ? (uint32_t)rng_range(0, DIM) : DIM;
      uint32_t out_addr = GARBAGE_ADDR;

      random_operand(&A, 1);
      random_operand(&BD, 1);
      random_operand(&PRE, 1);
      place(&A, a_row, a_stride, a_t);
      place(&BD, bd_row, 1, os && b_t);
      place(&PRE, pre_row, 1, !os && b_t);

      if (target == 1) out_addr = spad_out;
      if (target == 2) out_addr = ACC_BIT | acc_out;
      if (target == 3) out_addr = ACC_BIT | ACCUM_BIT | acc_out;

      /* OS: preload = D (initial partial sums), BD of compute = B.
       * WS: preload = B (weights), BD of compute = D (bias). */
      if (preloaded) {
        gemmini_extended_preload(PRE.garbage ? GARBAGE_ADDR : pre_row, out_addr, PRE.cols, PRE.rows,
                                 out_cols, out_rows);
        gemmini_extended_compute_preloaded(A.garbage ? GARBAGE_ADDR : a_row,
                                           BD.garbage ? GARBAGE_ADDR : bd_row, A.cols, A.rows,
                                           BD.cols, BD.rows);
        for (i = 0; i < DIM; i++)
          for (j = 0; j < DIM; j++) pe[i][j] = masked(&PRE, i, j);
      } else {
        /* The preload's BD is ignored by compute_accumulated. */
        gemmini_extended_preload(PRE.garbage ? GARBAGE_ADDR : pre_row, out_addr, PRE.cols, PRE.rows,
                                 out_cols, out_rows);
        gemmini_extended_compute_accumulated(A.garbage ? GARBAGE_ADDR : a_row,
                                             BD.garbage ? GARBAGE_ADDR : bd_row, A.cols, A.rows,
                                             BD.cols, BD.rows);
      }

      for (i = 0; i < DIM; i++)
        for (j = 0; j < DIM; j++) {
          int32_t sum = os ? pe[i][j] : masked(&BD, i, j);
          for (k = 0; k < DIM; k++)
            sum += masked(&A, i, k) * (os ? masked(&BD, k, j) : pe[k][j]);
          result[i][j] = sum;
        }
      if (os) memcpy(pe, result, sizeof pe);

      for (i = 0; i < out_rows; i++)
        for (j = 0; j < out_cols; j++) {
          const uint32_t row = c_stride * i;
          if (target == 1) {
            int8_t e = ref_sat8(os ? ref_shift(result[i][j], (int)shift) : result[i][j]);
            if (act == RELU && e < 0) e = 0;
            ref_spad[row][j] = e;
          } else if (target == 2) {
            ref_acc[row][j] = result[i][j];
          } else if (target == 3) {
            ref_acc[row][j] = ref_wrap_add(ref_acc[row][j], result[i][j]);
          }
        }
    }

    {
      static int32_t got_acc[OUT_ROWS][DIM];
      static int8_t got_spad[OUT_ROWS][DIM];
      read_acc_region(acc_out, &got_acc[0][0], OUT_ROWS);
      read_spad_region(spad_out, &got_spad[0][0], OUT_ROWS);
      for (i = 0; i < OUT_ROWS; i++)
        for (j = 0; j < DIM; j++) {
          CHECK(got_acc[i][j] == ref_acc[i][j], "%s trial %d acc row %u col %u: got %d want %d "
                "(a_t %d b_t %d a_stride %u c_stride %u steps %d)", os ? "OS" : "WS", trial, i, j,
                got_acc[i][j], ref_acc[i][j], a_t, b_t, a_stride, c_stride, steps);
          CHECK(got_spad[i][j] == ref_spad[i][j], "%s trial %d spad row %u col %u: got %d want %d "
                "(shift %u act %d)", os ? "OS" : "WS", trial, i, j, got_spad[i][j], ref_spad[i][j],
                shift, act);
        }
    }
  }
  printf("PASS matmul_tile %s\n", os ? "os" : "ws");
  return 0;
}
