/*
 * gemmini_params.h -- parameters of the default Gemmini configuration, for the
 * verisched host-side functional simulator (see gemmini.h in this directory).
 *
 * Values follow the documented default configuration (Gemmini README,
 * "Generator Parameters" / "Memory Addressing Scheme"; Exo thesis Sec. 7.1:
 * 16x16 array, 256 KiB scratchpad, 64 KiB accumulator).  Written for this
 * project; the names match the ones third-party Gemmini C code expects.
 */
#ifndef GEMMINI_PARAMS_H
#define GEMMINI_PARAMS_H

#include <stdint.h>
#include <limits.h>

#define DIM 16
#define ADDR_LEN 32
#define BANK_NUM 4
#define BANK_ROWS 4096
#define ACC_ROWS 1024
/* Largest DMA burst per row; it bounds how many DIM-wide blocks one mvin may carry. */
#define MAX_BYTES 64
#define MAX_BLOCK_LEN (MAX_BYTES / (DIM * 1))
#define MAX_BLOCK_LEN_ACC (MAX_BYTES / (DIM * 4))

typedef int8_t elem_t;
typedef int32_t acc_t;
typedef int64_t full_t;
typedef uint32_t ind_t;

static const elem_t elem_t_max = 127;
static const elem_t elem_t_min = -128;

#define HAS_MVIN_SCALE
typedef float scale_t;
typedef uint32_t scale_t_bits;

typedef int32_t scale_acc_t;
typedef uint32_t scale_acc_t_bits;

typedef float acc_scale_t;
typedef uint32_t acc_scale_t_bits;

#define ACC_SCALE_T_IS_FLOAT
#define ACC_SCALE_EXP_BITS 8
#define ACC_SCALE_SIG_BITS 24

#define ACC_READ_SMALL_WIDTH
#define ACC_READ_FULL_WIDTH

#define MVIN_SCALE_IDENTITY 1.0
#define ACC_SCALE_IDENTITY 1.0

#define row_align(blocks) __attribute__((aligned((blocks) * DIM * sizeof(elem_t))))
#define row_align_acc(blocks) __attribute__((aligned((blocks) * DIM * sizeof(acc_t))))

/*
 * Rounding helpers used by reference code written against gemmini_params.h.
 * They call the simulator's own rounding functions (defined in gemmini.h), so
 * they are only available once gemmini.h has been included.
 *   ROUNDING_RIGHT_SHIFT: arithmetic right shift, rounding half to even.
 *   ACC_SCALE / MVIN_SCALE: float multiply, round half to even, saturate to int8.
 */
#define ROUNDING_RIGHT_SHIFT(x, shift) gemmini_sim_rounding_shift((int64_t)(x), (int)(shift))
#define ACC_SCALE(x, scale) gemmini_sim_scale_to_elem((int64_t)(x), (float)(scale))
#define MVIN_SCALE(x, scale) gemmini_sim_scale_to_elem((int64_t)(x), (float)(scale))
#define MVIN_SCALE_ACC(x, scale) (x)

#endif /* GEMMINI_PARAMS_H */
