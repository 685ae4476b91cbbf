/*
 * Shared helpers for the Gemmini simulator's C test programs: a seeded RNG and
 * reference arithmetic written independently of the simulator (different
 * formulations of half-to-even rounding, so a shared bug cannot hide).
 */
#ifndef SIM_TEST_COMMON_H
#define SIM_TEST_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/gemmini.h"

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "FAIL %s:%d: (%s) ", __FILE__, __LINE__, #cond);    \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static inline void rng_seed(uint64_t seed) { rng_state = seed * 0x9E3779B97F4A7C15ull + 1; }

/* splitmix64 */
static inline uint64_t rng_u64(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform integer in [lo, hi]. */
static inline int64_t rng_range(int64_t lo, int64_t hi) {
  return lo + (int64_t)(rng_u64() % (uint64_t)(hi - lo + 1));
}

static inline uint64_t seed_from_args(int argc, char **argv) {
  return argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
}

static inline int8_t ref_sat8(int64_t v) { return (int8_t)(v > 127 ? 127 : (v < -128 ? -128 : v)); }

/* Half-to-even rounding via the float magic-constant trick (valid for |y| < 2^22). */
static inline int64_t ref_rne_small(float y) {
  volatile float magic = 12582912.0f; /* 1.5 * 2^23 */
  volatile float t = y + magic;
  return (int64_t)(t - magic);
}

/* int32 * float scale -> int8, as the default ACC_SCALE / MVIN_SCALE specify. */
static inline int8_t ref_scale(int32_t x, float scale) {
  float y = (float)x * scale;
  if (y > 1000.0f) return 127;
  if (y < -1000.0f) return -128;
  return ref_sat8(ref_rne_small(y));
}

/* Right shift by s rounding half to even, via floor division and remainder. */
static inline int64_t ref_shift(int64_t x, int s) {
  int64_t d, q, r;
  if (s == 0) return x;
  d = (int64_t)1 << s;
  q = x / d;
  if (x % d != 0 && x < 0) q -= 1; /* floor */
  r = x - q * d;                    /* 0 <= r < d */
  if (2 * r > d || (2 * r == d && (q & 1))) q += 1;
  return q;
}

static inline int32_t ref_wrap_add(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }

/* Copies an image of `nrows` scratchpad rows (row-major, DIM bytes each) into
 * the scratchpad starting at `row`, in mvins of at most DIM rows.  Uses load
 * configuration 0 with the identity scale. */
static inline void load_spad_region(uint32_t row, const int8_t *image, uint32_t nrows) {
  uint32_t done;
  gemmini_extended3_config_ld(DIM, MVIN_SCALE_IDENTITY, false, 0);
  for (done = 0; done < nrows; done += DIM) {
    uint32_t n = nrows - done < DIM ? nrows - done : DIM;
    gemmini_extended_mvin(image + (size_t)done * DIM, row + done, DIM, n);
  }
}

/* Reads `nrows` scratchpad rows back into a row-major image. */
static inline void read_spad_region(uint32_t row, int8_t *image, uint32_t nrows) {
  uint32_t done;
  gemmini_config_st(DIM);
  for (done = 0; done < nrows; done += DIM) {
    uint32_t n = nrows - done < DIM ? nrows - done : DIM;
    gemmini_extended_mvout(image + (size_t)done * DIM, row + done, DIM, n);
  }
}

/* Accumulator rows as raw int32 (bit 29: full-width read). */
static inline void read_acc_region(uint32_t row, int32_t *image, uint32_t nrows) {
  uint32_t done;
  gemmini_config_st(DIM * sizeof(int32_t));
  for (done = 0; done < nrows; done += DIM) {
    uint32_t n = nrows - done < DIM ? nrows - done : DIM;
    gemmini_extended_mvout(image + (size_t)done * DIM, (1u << 31) | (1u << 29) | (row + done),
                           DIM, n);
  }
}

/* Writes raw int32 rows into the accumulator (overwrite). */
static inline void load_acc_region(uint32_t row, const int32_t *image, uint32_t nrows) {
  uint32_t done;
  gemmini_extended3_config_ld(DIM * sizeof(int32_t), MVIN_SCALE_IDENTITY, false, 2);
  for (done = 0; done < nrows; done += DIM) {
    uint32_t n = nrows - done < DIM ? nrows - done : DIM;
    gemmini_extended_mvin3(image + (size_t)done * DIM, (1u << 31) | (row + done), DIM, n);
  }
}

#endif
