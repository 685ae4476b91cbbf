/*
 * gemm_malloc.h -- scratchpad allocator with the interface Exo's Gemmini
 * output calls (gemm_init_mem / gemm_malloc / gemm_free).  Addresses are
 * scratchpad row numbers; sizes are bytes, rounded up to whole 16-byte rows.
 * First fit over a small block table, so frees may come in any order.  The
 * definitions are weak: an allocator linked in from elsewhere takes precedence.
 */
#ifndef GEMM_MALLOC_H
#define GEMM_MALLOC_H

#include <stdint.h>

#include "gemmini.h"

void gemm_init_mem(void);
uint32_t gemm_malloc(long unsigned int size);
void gemm_free(uint32_t addr);

#define GEMMINI_SIM_MAX_BLOCKS 1024

/* One allocator instance (rows [0, rows)) shared by the scratchpad and accumulator variants. */
struct gemmini_sim_heap {
  uint32_t n;
  uint32_t start[GEMMINI_SIM_MAX_BLOCKS];
  uint32_t len[GEMMINI_SIM_MAX_BLOCKS];
};

GEMMINI_SIM_WEAK struct gemmini_sim_heap gemmini_sim_spad_heap;
GEMMINI_SIM_WEAK struct gemmini_sim_heap gemmini_sim_acc_heap;

/* First fit; blocks are kept sorted by start row.  Returns the row or fails loudly. */
GEMMINI_SIM_WEAK uint32_t gemmini_sim_heap_alloc(struct gemmini_sim_heap *h, uint32_t rows,
                                                 uint32_t capacity, const char *who) {
  uint32_t i, at = 0, k;
  if (rows == 0) rows = 1;
  for (i = 0; i <= h->n; i++) {
    const uint32_t next = i < h->n ? h->start[i] : capacity;
    if (next >= at && next - at >= rows) break;
    if (i < h->n) at = h->start[i] + h->len[i];
  }
  if (i > h->n || h->n == GEMMINI_SIM_MAX_BLOCKS) {
    fflush(stdout);
    fprintf(stderr, "gemmini-sim error: %s(%u rows): out of %s space (%u rows, %u blocks in use)\n",
            who, rows, capacity == ACC_ROWS ? "accumulator" : "scratchpad", capacity, h->n);
    abort();
  }
  for (k = h->n; k > i; k--) {
    h->start[k] = h->start[k - 1];
    h->len[k] = h->len[k - 1];
  }
  h->start[i] = at;
  h->len[i] = rows;
  h->n++;
  return at;
}

GEMMINI_SIM_WEAK void gemmini_sim_heap_free(struct gemmini_sim_heap *h, uint32_t row,
                                            const char *who) {
  uint32_t i;
  for (i = 0; i < h->n; i++)
    if (h->start[i] == row) {
      for (; i + 1 < h->n; i++) {
        h->start[i] = h->start[i + 1];
        h->len[i] = h->len[i + 1];
      }
      h->n--;
      return;
    }
  fflush(stdout);
  fprintf(stderr, "gemmini-sim error: %s(0x%x): no block starts at row %u\n", who, row, row);
  abort();
}

GEMMINI_SIM_WEAK void gemm_init_mem(void) { gemmini_sim_spad_heap.n = 0; }

GEMMINI_SIM_WEAK uint32_t gemm_malloc(long unsigned int size) {
  return gemmini_sim_heap_alloc(&gemmini_sim_spad_heap,
                                (uint32_t)((size + DIM * sizeof(elem_t) - 1) / (DIM * sizeof(elem_t))),
                                GEMMINI_SIM_SPAD_ROWS, "gemm_malloc");
}

GEMMINI_SIM_WEAK void gemm_free(uint32_t addr) {
  gemmini_sim_heap_free(&gemmini_sim_spad_heap, addr & 0x1FFFFFFFu, "gemm_free");
}

#endif /* GEMM_MALLOC_H */
