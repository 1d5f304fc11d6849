/* The convolution kernel ABI (CT_OP_convolution, im2col, col2im: family CONV).
 *
 * One geometry describes a 2-D convolution (1-D is H = KH = 1):
 *   x [N, C, H, W]  *  w [O, C/groups, KH, KW]  ->  y [N, O, OH, OW]
 * Three jobs cover conv and transposed conv in both directions:
 *   CT_CONV_FORWARD       y  = w (*) x (+ bias)      (conv forward; conv_transpose's grad_input)
 *   CT_CONV_GRAD_INPUT    gx = col2im(w^T @ gy)       (conv grad_input; conv_transpose forward)
 *   CT_CONV_GRAD_WEIGHT   gw = sum_n gy[n] @ im2col(x[n])^T
 * Note [Conv determinism]: every output element is produced by one thread in a fixed
 * order; grad_weight sums the batch in fixed chunks (a function of N only) combined in
 * chunk order, so results never depend on the thread count. */
#ifndef CT_KERNELS_CONV_H
#define CT_KERNELS_CONV_H

#include <stdint.h>

typedef struct {
    int64_t N, C, H, W;
    int64_t O, KH, KW;
    int64_t OH, OW;
    int64_t sh, sw, ph, pw, dh, dw; /* ph, pw: padding before the first element */
    int64_t groups;
} ct_conv_geom;

typedef enum {
    CT_CONV_FORWARD,
    CT_CONV_GRAD_INPUT,
    CT_CONV_GRAD_WEIGHT,
    CT_CONV_GRAD_BIAS, /* gb[c] = sum over n and the plane of gy [N, channels, plane] */
    CT_CONV_IM2COL,    /* cols [N, C*KH*KW, OH*OW] = im2col(x) (groups 1; O unused) */
    CT_CONV_COL2IM,    /* x [N, C, H, W] = col2im(cols), overlaps summed */
} ct_conv_kind;

/* FORWARD:     in = x, w; bias may be NULL; out = y (written)
 * GRAD_INPUT:  in = gy, w; out = gx (written); bias (a transposed conv's) may be
 *              NULL, else added to each channel of gx
 * GRAD_WEIGHT: in = x, gy; out = gw (written; bias unused)
 * GRAD_BIAS:   in = gy (a) of [g->N, channels, plane]; out = gb [channels]
 * IM2COL:      in = x (a); out = cols.    COL2IM: in = cols (a); out = x
 * All buffers are contiguous, of the kernel's dtype. */
typedef struct {
    ct_conv_kind kind;
    const ct_conv_geom *g;
    const void *a, *b, *bias;
    void *out;
    int64_t channels, plane; /* GRAD_BIAS only */
    void *out_bias; /* GRAD_WEIGHT of a conv (b = gy): also gb [O] as GRAD_BIAS, or NULL */
} ct_conv_job;
typedef void (*ct_conv_fn)(const ct_conv_job *job);

#endif
