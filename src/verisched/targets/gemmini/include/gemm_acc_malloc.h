/*
 * gemm_acc_malloc.h -- accumulator allocator with the interface Exo's Gemmini
 * output calls (gemm_acc_init_mem / gemm_acc_malloc / gemm_acc_free).  Returns
 * an accumulator row number with bit 31 set (an accumulator local address);
 * sizes are bytes of int32 data, rounded up to whole 64-byte rows.
 */
#ifndef GEMM_ACC_MALLOC_H
#define GEMM_ACC_MALLOC_H

#include <stdint.h>

#include "gemm_malloc.h" /* the shared first-fit heap */

void gemm_acc_init_mem(void);
uint32_t gemm_acc_malloc(long unsigned int size);
void gemm_acc_free(uint32_t addr);

GEMMINI_SIM_WEAK void gemm_acc_init_mem(void) { gemmini_sim_acc_heap.n = 0; }

GEMMINI_SIM_WEAK uint32_t gemm_acc_malloc(long unsigned int size) {
  return 0x80000000u |
         gemmini_sim_heap_alloc(&gemmini_sim_acc_heap,
                                (uint32_t)((size + DIM * sizeof(acc_t) - 1) / (DIM * sizeof(acc_t))),
                                ACC_ROWS, "gemm_acc_malloc");
}

GEMMINI_SIM_WEAK void gemm_acc_free(uint32_t addr) {
  gemmini_sim_heap_free(&gemmini_sim_acc_heap, addr & 0x1FFFFFFFu, "gemm_acc_free");
}

#endif /* GEMM_ACC_MALLOC_H */
