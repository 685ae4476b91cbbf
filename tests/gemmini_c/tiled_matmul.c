/*
 * A tiled int8 matmul with int32 bias, C = act(scale * (A @ B + D)), written
 * directly against the instruction macros in either dataflow, for arbitrary
 * M, N, K (not multiples of DIM).  The reference is computed in numpy by the
 * Python test: this program only reads operands and writes results.
 *
 * Usage: tiled_matmul M N K os|ws ACT SCALE BIAS(0|1) IN_FILE OUT_FILE
 *   IN_FILE : A (M*K int8), B (K*N int8), D (M*N int32), row-major
 *   OUT_FILE: C (M*N int8, scaled/activated), C_full (M*N int32, raw accumulator)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/gemmini.h"

#define ACC_BIT (1u << 31)
#define ACCUM_BIT (1u << 30)
#define FULL_BIT (1u << 29)

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

int main(int argc, char **argv) {
  size_t M, N, K, I, J, KT, i, j, k;
  int os, act, bias;
  float scale;
  int8_t *A, *B, *C;
  int32_t *D, *Cfull;
  FILE *f;
  uint32_t A_base, B_base;

  if (argc != 10) {
    fprintf(stderr, "usage: %s M N K os|ws ACT SCALE BIAS IN OUT\n", argv[0]);
    return 2;
  }
  M = strtoul(argv[1], NULL, 10);
  N = strtoul(argv[2], NULL, 10);
  K = strtoul(argv[3], NULL, 10);
  os = strcmp(argv[4], "os") == 0;
  act = atoi(argv[5]);
  scale = strtof(argv[6], NULL);
  bias = atoi(argv[7]);
  I = (M + DIM - 1) / DIM;
  J = (N + DIM - 1) / DIM;
  KT = (K + DIM - 1) / DIM;
  if ((I * KT + KT * J) * DIM > GEMMINI_SIM_SPAD_ROWS || I * J * DIM > ACC_ROWS) {
    fprintf(stderr, "problem too large for one scratchpad/accumulator residency\n");
    return 2;
  }
  A = malloc(M * K);
  B = malloc(K * N);
  D = malloc(M * N * sizeof(int32_t));
  C = malloc(M * N);
  Cfull = malloc(M * N * sizeof(int32_t));
  if (!A || !B || !D || !C || !Cfull) return 2;
  f = fopen(argv[8], "rb");
  if (!f || fread(A, 1, M * K, f) != M * K || fread(B, 1, K * N, f) != K * N ||
      fread(D, sizeof(int32_t), M * N, f) != M * N) {
    fprintf(stderr, "cannot read %s\n", argv[8]);
    return 2;
  }
  fclose(f);

  A_base = 0;
  B_base = (uint32_t)(GEMMINI_SIM_SPAD_ROWS - KT * J * DIM); /* B at the top of the scratchpad */
#define A_TILE(i, k) (A_base + (uint32_t)(((i) * KT + (k)) * DIM))
#define B_TILE(k, j) (B_base + (uint32_t)(((k) * J + (j)) * DIM))
#define C_TILE(i, j) ((uint32_t)(((i) * J + (j)) * DIM))

  gemmini_flush(0);
  gemmini_extended_config_ex(os ? OUTPUT_STATIONARY : WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, 0, 0);
  gemmini_extended3_config_ld(K * sizeof(int8_t), MVIN_SCALE_IDENTITY, false, 0);
  gemmini_extended3_config_ld(N * sizeof(int8_t), MVIN_SCALE_IDENTITY, false, 1);
  gemmini_extended3_config_ld(bias ? N * sizeof(int32_t) : 0, MVIN_SCALE_IDENTITY, false, 2);

  /* Bias (or zeros) into the accumulator, one int32 tile per mvin3. */
  for (i = 0; i < I; i++)
    for (j = 0; j < J; j++) {
      const size_t rows = min_sz(DIM, M - i * DIM), cols = min_sz(DIM, N - j * DIM);
      if (bias)
        gemmini_extended_mvin3(D + i * DIM * N + j * DIM, ACC_BIT | C_TILE(i, j), cols, rows);
      else
        gemmini_extended_mvin3(0, ACC_BIT | C_TILE(i, j), cols, rows);
    }
  /* A and B as block mvins of up to MAX_BLOCK_LEN tiles (consecutive tiles are DIM rows apart). */
  for (i = 0; i < I; i++)
    for (k = 0; k < KT; k += MAX_BLOCK_LEN) {
      const size_t rows = min_sz(DIM, M - i * DIM), cols = min_sz(MAX_BLOCK_LEN * DIM, K - k * DIM);
      gemmini_extended_mvin(A + i * DIM * K + k * DIM, A_TILE(i, k), cols, rows);
    }
  for (k = 0; k < KT; k++)
    for (j = 0; j < J; j += MAX_BLOCK_LEN) {
      const size_t rows = min_sz(DIM, K - k * DIM), cols = min_sz(MAX_BLOCK_LEN * DIM, N - j * DIM);
      gemmini_extended_mvin2(B + k * DIM * N + j * DIM, B_TILE(k, j), cols, rows);
    }

  if (os) {
    /* Output-stationary: the partial sum stays in the array across k; only the
     * last k names an output, accumulated onto the bias. */
    for (i = 0; i < I; i++)
      for (j = 0; j < J; j++)
        for (k = 0; k < KT; k++) {
          const size_t a_rows = min_sz(DIM, M - i * DIM), a_cols = min_sz(DIM, K - k * DIM);
          const size_t b_rows = a_cols, b_cols = min_sz(DIM, N - j * DIM);
          const uint32_t out = k == KT - 1 ? (ACC_BIT | ACCUM_BIT | C_TILE(i, j)) : GARBAGE_ADDR;
          gemmini_extended_preload(GARBAGE_ADDR, out, DIM, DIM, b_cols, a_rows);
          if (k == 0)
            gemmini_extended_compute_preloaded(A_TILE(i, k), B_TILE(k, j), a_cols, a_rows, b_cols, b_rows);
          else
            gemmini_extended_compute_accumulated(A_TILE(i, k), B_TILE(k, j), a_cols, a_rows, b_cols, b_rows);
        }
  } else {
    /* Weight-stationary: preload B(k, j) once, stream every A(i, k) through it. */
    for (k = 0; k < KT; k++)
      for (j = 0; j < J; j++)
        for (i = 0; i < I; i++) {
          const size_t a_rows = min_sz(DIM, M - i * DIM), a_cols = min_sz(DIM, K - k * DIM);
          const size_t b_rows = a_cols, b_cols = min_sz(DIM, N - j * DIM);
          const uint32_t out = ACC_BIT | ACCUM_BIT | C_TILE(i, j);
          if (i == 0) {
            gemmini_extended_preload(B_TILE(k, j), out, b_cols, b_rows, b_cols, a_rows);
            gemmini_extended_compute_preloaded(A_TILE(i, k), GARBAGE_ADDR, a_cols, a_rows, DIM, DIM);
          } else {
            gemmini_extended_preload(GARBAGE_ADDR, out, b_cols, b_rows, b_cols, a_rows);
            gemmini_extended_compute_accumulated(A_TILE(i, k), GARBAGE_ADDR, a_cols, a_rows, DIM, DIM);
          }
        }
  }

  /* int8 results: blocks of up to MAX_BLOCK_LEN tiles per mvout (tiles (i, j..) are adjacent). */
  gemmini_extended_config_st(N * sizeof(int8_t), act, scale);
  for (i = 0; i < I; i++)
    for (j = 0; j < J; j += MAX_BLOCK_LEN) {
      const size_t rows = min_sz(DIM, M - i * DIM), cols = min_sz(MAX_BLOCK_LEN * DIM, N - j * DIM);
      gemmini_extended_mvout(C + i * DIM * N + j * DIM, ACC_BIT | C_TILE(i, j), cols, rows);
    }
  /* Raw int32 results through the full-width bit, one tile per mvout. */
  gemmini_extended_config_st(N * sizeof(int32_t), act, scale);
  for (i = 0; i < I; i++)
    for (j = 0; j < J; j++) {
      const size_t rows = min_sz(DIM, M - i * DIM), cols = min_sz(DIM, N - j * DIM);
      gemmini_extended_mvout(Cfull + i * DIM * N + j * DIM, ACC_BIT | FULL_BIT | C_TILE(i, j), cols, rows);
    }
  gemmini_fence();

  f = fopen(argv[9], "wb");
  if (!f || fwrite(C, 1, M * N, f) != M * N || fwrite(Cfull, sizeof(int32_t), M * N, f) != M * N ||
      fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", argv[9]);
    return 2;
  }
  free(A);
  free(B);
  free(C);
  free(D);
  free(Cfull);
  return 0;
}
