/* 2x2 max pooling with stride 2 (the common CNN pooling), one output row at a time in
 * vector registers: the same maxima and argmax as the pooling kernels' scalar scan
 * (first maximum wins, a NaN wins and stays).  Each returns how many of the row's OW
 * outputs it did, from the start (0 where this CPU has no vector path); the scalar
 * loop does the rest.  r0, r1: the window's two input rows; W: the input width; base:
 * the plane offset of r0[0]; y, ix: the row's outputs and their plane offsets. */
#ifndef CT_CPU_POOL_PAIRS_H
#define CT_CPU_POOL_PAIRS_H

#include <stdbool.h>
#include <stdint.h>

int64_t ct_max_pairs_row_f32(const float *r0, const float *r1, int64_t W, int64_t OW,
                             int64_t base, float *y, int64_t *ix);
/* float16 (bf16 false) or bfloat16 (true), as their bits. */
int64_t ct_max_pairs_row16(bool bf16, const uint16_t *r0, const uint16_t *r1, int64_t W,
                           int64_t OW, int64_t base, uint16_t *y, int64_t *ix);

#endif
