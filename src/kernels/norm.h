/* The fused normalization kernels (cpu/norm.c): batch_norm, layer_norm, group_norm,
 * forward and backward, as one job each.
 *
 *   batch_norm:  x [N, C, S]; statistics per channel c over N and S; affine per c.
 *   layer_norm / group_norm:  x [N, G * K, S] seen as N * G rows of K * S elements;
 *                statistics per row; affine per channel (row % G) * K + k, constant
 *                over S.  layer_norm is G = 1, S = 1, K = the normalized size.
 *
 * Note [Norm determinism]: every statistic and every per-channel gradient is reduced
 * by one thread in an order fixed by the shape (rows or planes in order, each summed
 * in CT_REDUCE_LANES double lanes; layer_norm's weight gradient in fixed row chunks
 * combined in chunk order), so results never depend on the thread count. */
#ifndef CT_KERNELS_NORM_H
#define CT_KERNELS_NORM_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    bool backward;
    bool training;       /* batch_norm: batch statistics (else running ones) */
    int64_t N, C, S;     /* batch_norm; layer/group_norm: C = G * K */
    int64_t G;           /* layer/group_norm: groups (1 for layer_norm) */
    double eps, momentum;
    /* x, y, gy, gx are of the kernel's dtype; w, b, gw, gb, the statistics and the
     * running statistics of its parameter dtype: the same, but float32 for the float16
     * and bfloat16 kernels (ct_opmath_type; cpu/norm_reduced.c). */
    const void *x, *w, *b; /* w, b: [C] (layer_norm: [K]); either may be NULL */
    /* Statistics: batch_norm [C], layer/group_norm [N * G].  The forward writes them
     * (batch_norm in eval: the running mean and 1 / sqrt(running_var + eps)); the
     * backward reads them. */
    void *mean, *rstd;
    /* batch_norm forward: read in eval, updated in place when training (either may be
     * NULL then), contiguous */
    void *running_mean, *running_var;
    void *y;             /* forward output, like x */
    const void *gy;      /* backward: the output gradient, like x */
    void *gx, *gw, *gb;  /* backward outputs; NULL: not wanted */
} ct_norm_job;

typedef void (*ct_norm_fn)(const ct_norm_job *job);

#endif
