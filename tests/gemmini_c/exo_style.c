/*
 * Code in the shape Exo's Gemmini backend emits (Exo thesis App. D; anchors
 * "Exo ... Gemmini output"): buffers from a bump allocator in scratchpad/
 * accumulator *row units* disguised as pointers, windows formed by integer
 * arithmetic on those pointers, `(uint64_t)&window` / `(uint32_t)(&window)`
 * as local addresses, accumulator zeroing by mvin3 from address 0, and one
 * preload + compute_preloaded per 16x16x16 block (WS).  The allocator is
 * defined here because Exo emits its own.  Reference in C.  argv: SEED.
 */
#include "sim_test_common.h"

/* --- the program's own allocators (row-granular bump pointers) --- */
static uint32_t spad_next, acc_next;
static uint32_t gemm_malloc(long unsigned int bytes) {
  const uint32_t r = spad_next;
  spad_next += (uint32_t)((bytes + DIM - 1) / DIM);
  return r;
}
static uint32_t gemm_acc_malloc(long unsigned int bytes) {
  const uint32_t r = acc_next;
  acc_next += (uint32_t)((bytes + DIM * 4 - 1) / (DIM * 4));
  return r | 0x80000000u;
}

#define MAXD 80

static int8_t A[MAXD * MAXD], B[MAXD * MAXD], C[MAXD * MAXD];

/* C (M x N) = act(scale * A (M x K) @ B (K x N)); all dense row-major in DRAM. */
static void kernel(int M, int N, int K, float scale, int relu) {
  const int IT = (M + 15) / 16, JT = (N + 15) / 16, KT = (K + 15) / 16;
  int8_t *a = (int8_t *)((uint64_t)gemm_malloc((size_t)IT * KT * 16 * 16));
  int8_t *b = (int8_t *)((uint64_t)gemm_malloc((size_t)KT * JT * 16 * 16));
  int32_t *res = (int32_t *)((uint64_t)gemm_acc_malloc((size_t)JT * 16 * 16 * 4));
  int io, jo, ko;

  gemmini_extended_config_ex(WEIGHT_STATIONARY, 0, 0, 1, 0, 0);
  gemmini_extended_config_st(N * 1, relu ? RELU : 0, scale);
  gemmini_extended4_config_ld(K * 1, 1.0f, 0, 16, 1);
  gemmini_extended4_config_ld(N * 1, 1.0f, 0, 16, 2);
  gemmini_extended3_config_ld(0, 1.0f, 0, 0);

  for (ko = 0; ko < KT; ko++)
    for (jo = 0; jo < JT; jo++) {
      const int kk = K - 16 * ko < 16 ? K - 16 * ko : 16, jj = N - 16 * jo < 16 ? N - 16 * jo : 16;
      gemmini_extended_mvin3(&B[(16 * ko) * N + 16 * jo],
                             ((uint64_t)&*(int8_t *)((uint64_t)(((uint32_t)((uint64_t)b)) +
                                                                ((ko * JT + jo) * 256) / 16))),
                             jj, kk);
    }

  for (io = 0; io < IT; io++) {
    const int ii = M - 16 * io < 16 ? M - 16 * io : 16;
    for (ko = 0; ko < KT; ko++) {
      const int kk = K - 16 * ko < 16 ? K - 16 * ko : 16;
      gemmini_extended_mvin2(&A[(16 * io) * K + 16 * ko],
                             ((uint64_t)&*(int8_t *)((uint64_t)(((uint32_t)((uint64_t)a)) +
                                                                ((io * KT + ko) * 256) / 16))),
                             kk, ii);
    }
    for (jo = 0; jo < JT; jo++) {
      const int jj = N - 16 * jo < 16 ? N - 16 * jo : 16;
      int32_t *acc_win = &*(int32_t *)((uint64_t)(((uint32_t)((uint64_t)res)) + (jo * 256) / 16));
      gemmini_extended_mvin(0, ((uint64_t)acc_win), jj, ii);
      for (ko = 0; ko < KT; ko++) {
        const int kk = K - 16 * ko < 16 ? K - 16 * ko : 16;
        int8_t *a_win = &*(int8_t *)((uint64_t)(((uint32_t)((uint64_t)a)) + ((io * KT + ko) * 256) / 16));
        int8_t *b_win = &*(int8_t *)((uint64_t)(((uint32_t)((uint64_t)b)) + ((ko * JT + jo) * 256) / 16));
        gemmini_extended_preload((uint32_t)(b_win), (uint32_t)(acc_win) | 0x40000000, jj, kk, jj, ii);
        gemmini_extended_compute_preloaded((uint32_t)(a_win), ~((uint32_t)0), kk, ii, 16, 16);
      }
      gemmini_extended_mvout(&C[(16 * io) * N + 16 * jo], (uint32_t)(acc_win), jj, ii);
    }
  }
  gemmini_fence();
}

int main(int argc, char **argv) {
  int trial;
  rng_seed(seed_from_args(argc, argv));
  gemmini_flush(0);
  for (trial = 0; trial < 12; trial++) {
    const int M = (int)rng_range(1, MAXD), N = (int)rng_range(1, MAXD), K = (int)rng_range(1, MAXD);
    const float scale = trial % 3 == 0 ? 1.0f : 1.0f / (float)rng_range(2, 400);
    const int relu = (int)rng_range(0, 1);
    int i, j, k;
    spad_next = 0;
    acc_next = 0;
    for (i = 0; i < MAXD * MAXD; i++) {
      A[i] = (int8_t)rng_range(-128, 127);
      B[i] = (int8_t)rng_range(-128, 127);
      C[i] = 0x55;
    }
    kernel(M, N, K, scale, relu);
    for (i = 0; i < M; i++)
      for (j = 0; j < N; j++) {
        int32_t sum = 0;
        int8_t want;
        for (k = 0; k < K; k++) sum += A[i * K + k] * B[k * N + j];
        want = ref_scale(sum, scale);
        if (relu && want < 0) want = 0;
        CHECK(C[i * N + j] == want, "trial %d (M %d N %d K %d) C[%d][%d] = %d, want %d", trial, M,
              N, K, i, j, C[i * N + j], want);
      }
    for (i = M * N; i < MAXD * MAXD; i++) CHECK(C[i] == 0x55, "trial %d wrote past C at %d", trial, i);
  }
  printf("PASS exo_style\n");
  return 0;
}
