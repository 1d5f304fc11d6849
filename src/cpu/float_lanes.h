/* Float lane sums for the float16 / bfloat16 kernels that work on float tiles
 * (cpu/softmax_reduced.c, cpu/norm_reduced.c): CT_REDUCE_LANES float accumulators,
 * element i of a run into lane i % CT_REDUCE_LANES (a tile is a whole number of lane
 * rounds, so the order is fixed by the run alone), folded as a fixed tree. */
#ifndef CT_CPU_FLOAT_LANES_H
#define CT_CPU_FLOAT_LANES_H

#include "cpu/reduce.h"

/* l[j] += a[i + j] (or a * b) */
CT_SIMD_PROC(lanes_add, (float *restrict l, const float *restrict a, const float *restrict b,
                         int64_t n), (l, a, b, n), {
    int64_t i = 0;
    if (b) {
        for (; i + CT_REDUCE_LANES <= n; i += CT_REDUCE_LANES)
            for (int j = 0; j < CT_REDUCE_LANES; j++) l[j] += a[i + j] * b[i + j];
        for (int j = 0; i < n; i++, j++) l[j] += a[i] * b[i];
    } else {
        for (; i + CT_REDUCE_LANES <= n; i += CT_REDUCE_LANES)
            for (int j = 0; j < CT_REDUCE_LANES; j++) l[j] += a[i + j];
        for (int j = 0; i < n; i++, j++) l[j] += a[i];
    }
})
static inline float lanes_total(float *l) {
    for (int w = CT_REDUCE_LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) l[j] += l[j + w];
    return l[0];
}

#endif
