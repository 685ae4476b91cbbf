/*
 * gemmini_testutils.h -- CPU-side helpers that Gemmini-style test programs
 * expect next to gemmini.h (DIM x DIM reference matmuls, rounding shift,
 * scaling, ReLU, comparisons, printing), for the verisched host simulator.
 *
 * Written for this project from the helpers' documented behaviour; the
 * rounding and scaling go through the same definitions as gemmini_params.h
 * (ROUNDING_RIGHT_SHIFT, ACC_SCALE), i.e. half-to-even then saturation.
 * read_cycles() is here, as in the original headers.  Everything is static, so
 * including this header in several files is harmless.
 */
#ifndef SRC_MAIN_C_GEMMINI_TESTUTILS_H
#define SRC_MAIN_C_GEMMINI_TESTUTILS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gemmini_params.h"
#include "gemmini.h"

/* No timing model: "cycles" is the number of Gemmini instructions the CPU issued so far (a
 * hardware loop counts as the six it issues). */
static inline uint64_t read_cycles(void) { return gemmini_sim_insn_count(); }

/* C_full = A * B + D, with optional transposes of A and B (full_t result). */
static inline void gemmini_tu_matmul(const elem_t A[DIM][DIM], const elem_t B[DIM][DIM], int at,
                                     int bt, const void *D, int d_is_elem,
                                     full_t C[DIM][DIM]) {
  size_t r, c, k;
  for (r = 0; r < DIM; r++)
    for (c = 0; c < DIM; c++) {
      full_t sum = d_is_elem ? (full_t)((const elem_t *)D)[r * DIM + c]
                             : ((const full_t *)D)[r * DIM + c];
      for (k = 0; k < DIM; k++)
        sum += (full_t)(at ? A[k][r] : A[r][k]) * (full_t)(bt ? B[c][k] : B[k][c]);
      C[r][c] = sum;
    }
}

#define GEMMINI_TU_MATMULS(suffix, at, bt)                                                      \
  static inline void matmul##suffix(elem_t A[DIM][DIM], elem_t B[DIM][DIM], elem_t D[DIM][DIM], \
                                    full_t C_full[DIM][DIM]) {                                  \
    gemmini_tu_matmul((const elem_t(*)[DIM])A, (const elem_t(*)[DIM])B, at, bt,               \
                      (const void *)D, 1, C_full);                              \
  }                                                                                             \
  static inline void matmul_full##suffix(elem_t A[DIM][DIM], elem_t B[DIM][DIM],                \
                                         full_t D[DIM][DIM], full_t C_full[DIM][DIM]) {         \
    gemmini_tu_matmul((const elem_t(*)[DIM])A, (const elem_t(*)[DIM])B, at, bt, &D[0][0], 0,   \
                      C_full);                                                                  \
  }                                                                                             \
  static inline void matmul_short##suffix(elem_t A[DIM][DIM], elem_t B[DIM][DIM],               \
                                          elem_t D[DIM][DIM], elem_t C[DIM][DIM]) {             \
    full_t tmp[DIM][DIM];                                                                       \
    size_t r, c;                                                                                \
    gemmini_tu_matmul((const elem_t(*)[DIM])A, (const elem_t(*)[DIM])B, at, bt,               \
                      (const void *)D, 1, tmp);                                 \
    for (r = 0; r < DIM; r++)                                                                   \
      for (c = 0; c < DIM; c++) C[r][c] = (elem_t)tmp[r][c]; /* wraps, like elem_t math */       \
  }

GEMMINI_TU_MATMULS(, 0, 0)
GEMMINI_TU_MATMULS(_A_transposed, 1, 0)
GEMMINI_TU_MATMULS(_B_transposed, 0, 1)
GEMMINI_TU_MATMULS(_AB_transposed, 1, 1)
#undef GEMMINI_TU_MATMULS

static inline void matadd(full_t sum[DIM][DIM], full_t m1[DIM][DIM], full_t m2[DIM][DIM]) {
  size_t r, c;
  for (r = 0; r < DIM; r++)
    for (c = 0; c < DIM; c++) sum[r][c] = m1[r][c] + m2[r][c];
}

/* Rounding (half-to-even) right shift, then saturation to elem_t. */
static inline void matshift(full_t full[DIM][DIM], elem_t out[DIM][DIM], int shift) {
  size_t r, c;
  for (r = 0; r < DIM; r++)
    for (c = 0; c < DIM; c++) {
      const full_t v = ROUNDING_RIGHT_SHIFT(full[r][c], shift);
      out[r][c] = (elem_t)(v > elem_t_max ? elem_t_max : (v < elem_t_min ? elem_t_min : v));
    }
}

/* Float scale, round half to even, saturate (ACC_SCALE already saturates). */
static inline void matscale(full_t full[DIM][DIM], elem_t out[DIM][DIM], acc_scale_t scale) {
  size_t r, c;
  for (r = 0; r < DIM; r++)
    for (c = 0; c < DIM; c++) out[r][c] = ACC_SCALE(full[r][c], scale);
}

static inline void matrelu(elem_t in[DIM][DIM], elem_t out[DIM][DIM]) {
  size_t r, c;
  for (r = 0; r < DIM; r++)
    for (c = 0; c < DIM; c++) out[r][c] = in[r][c] > 0 ? in[r][c] : 0;
}

static inline void matrelu6(elem_t in[DIM][DIM], elem_t out[DIM][DIM], int scale) {
  size_t r, c;
  const int cap = 6 * scale;
  for (r = 0; r < DIM; r++)
    for (c = 0; c < DIM; c++) {
      const int v = in[r][c] > 0 ? in[r][c] : 0;
      out[r][c] = (elem_t)(v > cap ? cap : v);
    }
}

static inline void transpose(elem_t in[DIM][DIM], elem_t out[DIM][DIM]) {
  size_t r, c;
  for (r = 0; r < DIM; r++)
    for (c = 0; c < DIM; c++) out[c][r] = in[r][c];
}

static inline void printMatrix(elem_t m[DIM][DIM]) {
  size_t r, c;
  for (r = 0; r < DIM; r++) {
    for (c = 0; c < DIM; c++) printf("%d ", m[r][c]);
    printf("\n");
  }
}

static inline void printMatrixAcc(acc_t m[DIM][DIM]) {
  size_t r, c;
  for (r = 0; r < DIM; r++) {
    for (c = 0; c < DIM; c++) printf("%d ", (int)m[r][c]);
    printf("\n");
  }
}

static inline int is_equal(elem_t x[DIM][DIM], elem_t y[DIM][DIM]) {
  size_t r, c;
  for (r = 0; r < DIM; r++)
    for (c = 0; c < DIM; c++)
      if (x[r][c] != y[r][c]) return 0;
  return 1;
}

static inline int is_equal_transposed(elem_t x[DIM][DIM], elem_t y[DIM][DIM]) {
  size_t r, c;
  for (r = 0; r < DIM; r++)
    for (c = 0; c < DIM; c++)
      if (x[r][c] != y[c][r]) return 0;
  return 1;
}

/* Statement expression (GNU C): 1 iff the leading dim_i x dim_j blocks agree. */
#define MAT_IS_EQUAL(dim_i, dim_j, x, y)                                   \
  ({                                                                       \
    int mat_is_equal_ok_ = 1;                                              \
    size_t mat_is_equal_i_, mat_is_equal_j_;                               \
    for (mat_is_equal_i_ = 0; mat_is_equal_i_ < (size_t)(dim_i); mat_is_equal_i_++) \
      for (mat_is_equal_j_ = 0; mat_is_equal_j_ < (size_t)(dim_j); mat_is_equal_j_++) \
        if ((x)[mat_is_equal_i_][mat_is_equal_j_] != (y)[mat_is_equal_i_][mat_is_equal_j_]) \
          mat_is_equal_ok_ = 0;                                            \
    mat_is_equal_ok_;                                                      \
  })

#endif /* SRC_MAIN_C_GEMMINI_TESTUTILS_H */
