/*
 * gemmini_loop_ws against the single instructions it stands for.  Runs the same
 * matmul C = act(scale * (A @ B + D)) twice on a fresh accelerator each time:
 * once as gemmini_loop_ws calls (one, or two that split K the way Gemmini's
 * tiled_matmul does: the first without C, the second accumulating), once as a
 * hand-written sequence of mvin / preload / compute / mvout over 16x16 tiles
 * (one tile per move, i, j, k order: a different order and block size from the
 * unroller's).  Writes both outputs and both accumulator images; the Python
 * test compares them bit for bit and against numpy.
 *
 * Usage: loop_ws M N K LDA LDB LDC ACT SCALE BIAS FULL_C SPLIT IN OUT
 *   BIAS: 0 none, 1 int32 D (M x N), 2 int8 D (low_D, M x N)
 *   SPLIT: 0 one loop_ws, 1 two loop_ws calls splitting K
 *   IN : A (M x LDA int8), B (K x LDB int8), D (M x N, int32 or int8), row-major
 *   OUT: C_loop, C_seq (M x LDC, int8 or int32 if FULL_C), acc_loop, acc_seq
 *        (I*J*DIM rows of DIM int32)
 * Mode "err" ARG: a misuse that the simulator must refuse (ARG names it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/gemmini.h"
#include "include/gemmini_testutils.h"

#define ACC_BIT (1u << 31)
#define ACCUM_BIT (1u << 30)
#define FULL_BIT (1u << 29)

static size_t cdiv(size_t a, size_t b) { return (a + b - 1) / b; }

static size_t M, N, K, LDA, LDB, LDC, I, J, KT;
static int act, bias, full_C;
static float scale;
static int8_t *A, *B;
static void *D;

static void configure(void) {
  const size_t sizeof_D = bias == 2 ? 1 : sizeof(int32_t);
  gemmini_config_ex(WS, NO_ACTIVATION, 0);
  gemmini_extended3_config_ld(LDA, MVIN_SCALE_IDENTITY, false, 0);
  gemmini_extended3_config_ld(LDB, MVIN_SCALE_IDENTITY, false, 1);
  gemmini_extended3_config_ld(N * sizeof_D, MVIN_SCALE_IDENTITY, bias == 2, 2);
  gemmini_extended_config_st(LDC * (full_C ? sizeof(int32_t) : 1), act, scale);
}

static void run_loop(void *C, int split) {
  const size_t pad_I = I * DIM - M, pad_J = J * DIM - N, pad_K = KT * DIM - K;
  uint64_t insns;
  gemmini_sim_counters_t c;
  configure();
  insns = read_cycles();
  if (!split || KT < 2) {
    gemmini_loop_ws(I, J, KT, pad_I, pad_J, pad_K, A, B, bias ? D : NULL, C, LDA, LDB, N, LDC,
                    false, false, full_C, bias == 2, bias != 0, act, 0, 0, false);
  } else {
    const size_t K1 = KT / 2; /* tiles of the first call; it has no padding in K */
    gemmini_loop_ws(I, J, K1, pad_I, pad_J, 0, A, B, bias ? D : NULL, NULL, LDA, LDB, N, LDC,
                    false, false, full_C, bias == 2, bias != 0, act, 0, 0, false);
    gemmini_loop_ws(I, J, KT - K1, pad_I, pad_J, pad_K, A + K1 * DIM, B + K1 * DIM * LDB, NULL,
                    C, LDA, LDB, N, LDC, false, false, full_C, bias == 2, true, act, 0, 0, false);
  }
  c = gemmini_sim_get_counters();
  printf("loop_ws issued %llu\n", (unsigned long long)(read_cycles() - insns));
  printf("loop_ws %llu loop_ws_config %llu loop_unrolled %llu\n", (unsigned long long)c.loop_ws,
         (unsigned long long)c.loop_ws_config, (unsigned long long)c.loop_unrolled);
}

/* The same product as single instructions; the accumulator tiles where the loop puts them. */
static void run_sequence(void *C) {
  const size_t sizeof_D = bias == 2 ? 1 : sizeof(int32_t);
  const size_t sizeof_C = full_C ? sizeof(int32_t) : 1;
  const uint32_t a_tile = 0, b_tile = DIM; /* scratch tiles, reloaded for every product */
  size_t i, j, k;
  configure();
  for (i = 0; i < I; i++)
    for (j = 0; j < J; j++) {
      const size_t rows = i == I - 1 ? M - i * DIM : DIM;
      const size_t cols = j == J - 1 ? N - j * DIM : DIM;
      const uint32_t acc = (uint32_t)((i * J + j) * DIM);
      if (bias)
        gemmini_extended_mvin3((const int8_t *)D + (i * DIM * N + j * DIM) * sizeof_D,
                               ACC_BIT | acc, cols, rows);
      for (k = 0; k < KT; k++) {
        const size_t kk = k == KT - 1 ? K - k * DIM : DIM;
        gemmini_extended_mvin(A + i * DIM * LDA + k * DIM, a_tile, kk, rows);
        gemmini_extended_mvin2(B + k * DIM * LDB + j * DIM, b_tile, cols, kk);
        gemmini_extended_preload(b_tile, ACC_BIT | ((bias || k > 0) ? ACCUM_BIT : 0) | acc,
                                 cols, kk, cols, rows);
        gemmini_extended_compute_preloaded(a_tile, GARBAGE_ADDR, kk, rows, DIM, DIM);
      }
      gemmini_extended_mvout((int8_t *)C + (i * DIM * LDC + j * DIM) * sizeof_C,
                             ACC_BIT | (full_C ? FULL_BIT : 0) | acc, cols, rows);
    }
}

static void read_acc(int32_t *image) {
  size_t t;
  gemmini_config_st(DIM * sizeof(int32_t));
  for (t = 0; t < I * J; t++)
    gemmini_extended_mvout(image + t * DIM * DIM, ACC_BIT | FULL_BIT | (uint32_t)(t * DIM), DIM,
                           DIM);
}

static int misuse(const char *what) {
  static int8_t a[DIM * DIM], b[DIM * DIM], c[DIM * DIM];
  gemmini_config_ex(WS, NO_ACTIVATION, 0);
  gemmini_extended3_config_ld(DIM, MVIN_SCALE_IDENTITY, false, 0);
  gemmini_extended3_config_ld(DIM, MVIN_SCALE_IDENTITY, false, 1);
  gemmini_config_st(DIM);
  if (strcmp(what, "stride") == 0) /* A's loader configured with another stride */
    gemmini_loop_ws(1, 1, 1, 0, 0, 0, a, b, NULL, c, 2 * DIM, DIM, 0, DIM, false, false, false,
                    false, false, NO_ACTIVATION, 0, 0, false);
  if (strcmp(what, "transpose") == 0)
    gemmini_loop_ws(1, 1, 1, 0, 0, 0, a, b, NULL, c, DIM, DIM, 0, DIM, true, false, false,
                    false, false, NO_ACTIVATION, 0, 0, false);
  if (strcmp(what, "fit") == 0) /* C of 33 tiles does not fit half of the accumulator */
    gemmini_loop_ws(33, 1, 1, 0, 0, 0, a, b, NULL, c, DIM, DIM, 0, DIM, false, false, false,
                    false, false, NO_ACTIVATION, 0, 0, false);
  if (strcmp(what, "pad") == 0)
    gemmini_loop_ws(1, 1, 1, DIM, 0, 0, a, b, NULL, c, DIM, DIM, 0, DIM, false, false, false,
                    false, false, NO_ACTIVATION, 0, 0, false);
  printf("no error\n");
  return 0;
}

int main(int argc, char **argv) {
  int split;
  size_t c_bytes, d_bytes;
  void *C_loop, *C_seq;
  int32_t *acc_loop, *acc_seq;
  FILE *f;

  if (argc == 3 && strcmp(argv[1], "err") == 0) return misuse(argv[2]);
  if (argc != 14) {
    fprintf(stderr, "usage: %s M N K LDA LDB LDC ACT SCALE BIAS FULL_C SPLIT IN OUT\n", argv[0]);
    return 2;
  }
  M = strtoul(argv[1], NULL, 10);
  N = strtoul(argv[2], NULL, 10);
  K = strtoul(argv[3], NULL, 10);
  LDA = strtoul(argv[4], NULL, 10);
  LDB = strtoul(argv[5], NULL, 10);
  LDC = strtoul(argv[6], NULL, 10);
  act = atoi(argv[7]);
  scale = strtof(argv[8], NULL);
  bias = atoi(argv[9]);
  full_C = atoi(argv[10]);
  split = atoi(argv[11]);
  I = cdiv(M, DIM);
  J = cdiv(N, DIM);
  KT = cdiv(K, DIM);
  d_bytes = M * N * (bias == 2 ? 1 : sizeof(int32_t));
  c_bytes = M * LDC * (full_C ? sizeof(int32_t) : 1);
  A = malloc(M * LDA);
  B = malloc(K * LDB);
  D = malloc(d_bytes);
  C_loop = calloc(1, c_bytes);
  C_seq = calloc(1, c_bytes);
  acc_loop = malloc(I * J * DIM * DIM * sizeof(int32_t));
  acc_seq = malloc(I * J * DIM * DIM * sizeof(int32_t));
  if (!A || !B || !D || !C_loop || !C_seq || !acc_loop || !acc_seq) return 2;
  f = fopen(argv[12], "rb");
  if (!f || fread(A, 1, M * LDA, f) != M * LDA || fread(B, 1, K * LDB, f) != K * LDB ||
      fread(D, 1, d_bytes, f) != d_bytes) {
    fprintf(stderr, "cannot read %s\n", argv[12]);
    return 2;
  }
  fclose(f);

  gemmini_sim_reset();
  run_loop(C_loop, split);
  read_acc(acc_loop);
  gemmini_sim_reset();
  run_sequence(C_seq);
  read_acc(acc_seq);

  f = fopen(argv[13], "wb");
  if (!f || fwrite(C_loop, 1, c_bytes, f) != c_bytes || fwrite(C_seq, 1, c_bytes, f) != c_bytes ||
      fwrite(acc_loop, sizeof(int32_t), I * J * DIM * DIM, f) != I * J * DIM * DIM ||
      fwrite(acc_seq, sizeof(int32_t), I * J * DIM * DIM, f) != I * J * DIM * DIM) {
    fprintf(stderr, "cannot write %s\n", argv[13]);
    return 2;
  }
  fclose(f);
  printf("DONE loop_ws\n");
  return 0;
}
