/* Convolution kernels on the cpu: im2col / col2im around single-threaded GEMMs,
 * parallel over the batch (cpu/conv.c; the column transforms: cpu/conv_cols.h);
 * float32 convs of stride 1 run direct AVX-512 kernels instead (cpu/conv_direct.c: no
 * column buffers, bias fused); float16 / bfloat16 through the reduced GEMM's tiles
 * (cpu/conv_reduced.c).  Their ABI and Note [Conv determinism]: kernels/conv.h. */
#ifndef CT_CPU_CONV_H
#define CT_CPU_CONV_H

#include <stdbool.h>

#include "kernels/conv.h"

/* float32 FORWARD, GRAD_INPUT and GRAD_WEIGHT jobs of stride 1 as direct convolutions
 * (cpu/conv_direct.c, AVX-512); false (nothing done) where that path does not apply. */
bool ct_conv_direct_f32(const ct_conv_job *job);

#endif
