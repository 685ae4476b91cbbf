/* Second translation unit for counters.c: uses the store configuration set there. */
#include "include/gemmini.h"

void helper_mvout_acc_full(void *dst, uint32_t acc_row);

void helper_mvout_acc_full(void *dst, uint32_t acc_row) {
  gemmini_extended_mvout(dst, (1u << 31) | (1u << 29) | acc_row, DIM, 4);
}
