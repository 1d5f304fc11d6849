/* Reduced-precision conversions of whole runs of elements, for kernels that work on
 * float tiles (softmax, matrix products, the float16 loops):
 *
 *     float buf[CT_REDUCED_TILE];
 *     ct_half_to_float_n(buf, x + i, len);     // widen a tile of x
 *     ...compute on buf in float...
 *     ct_float_to_half_n(o + i, buf, len);     // round it back, to nearest even
 *
 * float16 uses F16C (AVX2 path) or AVX-512F conversions, picked by ct_cpu_isa() as
 * the kernel variants are (cpu/kernel_util.h); the baseline path converts one
 * element at a time without those instructions.  Every path gives the bits of
 * ct_half_to_float / ct_float_to_half (core/dtype.h): widening is exact, narrowing
 * rounds to nearest even, NaN stays NaN with its payload's high bits. */
#ifndef CT_CPU_REDUCED_CVT_H
#define CT_CPU_REDUCED_CVT_H

#include <stdint.h>

#include "core/dtype.h"

/* Elements per tile that tile-based kernels convert at once (a multiple of the
 * reduction lanes, so tiling never changes an accumulation's order). */
#define CT_REDUCED_TILE 256

void ct_half_to_float_n(float *restrict dst, const ct_half *restrict src, int64_t n);
void ct_float_to_half_n(ct_half *restrict dst, const float *restrict src, int64_t n);
void ct_bf16_to_float_n(float *restrict dst, const ct_bf16 *restrict src, int64_t n);
void ct_float_to_bf16_n(ct_bf16 *restrict dst, const float *restrict src, int64_t n);

/* The one of the four that fits the reduced type of `p` (ct_half * or ct_bf16 *). */
#define CT_REDUCED_TO_FLOAT_N(dst, p, n)                                                 \
    _Generic((p), ct_half *: ct_half_to_float_n, const ct_half *: ct_half_to_float_n,     \
             ct_bf16 *: ct_bf16_to_float_n, const ct_bf16 *: ct_bf16_to_float_n)(dst, p, n)
#define CT_FLOAT_TO_REDUCED_N(p, src, n)                                                 \
    _Generic((p), ct_half *: ct_float_to_half_n, ct_bf16 *: ct_float_to_bf16_n)(p, src, n)

#endif
