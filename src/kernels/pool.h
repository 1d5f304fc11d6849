/* The pooling and upsampling kernel ABI (family POOL; the cpu's are cpu/pool.c).
 *
 * Input [planes, H, W] -> output [planes, OH, OW] (planes = N * C).  The window of
 * each output row/column is tabulated once per dim (ct_pool_win), so one kernel per
 * kind serves max/avg pooling (kernel, stride, padding, dilation, ceil_mode) and the
 * adaptive variants.  Planes run in parallel; each output (forward) or each input
 * plane (backward) is written by one thread in a fixed order, so results never
 * depend on the thread count. */
#ifndef CT_KERNELS_POOL_H
#define CT_KERNELS_POOL_H

#include <stdbool.h>
#include <stdint.h>

/* Input positions lo, lo + step, ... < hi of one output index; `size` is the
 * divisor's share of this dim for count_include_pad (window clipped to the padded
 * input only). */
typedef struct { int64_t lo, hi, step, size; } ct_pool_win;

typedef struct {
    int64_t planes, H, W, OH, OW;
    const ct_pool_win *wh, *ww; /* OH and OW entries */
    bool count_include_pad;
    int64_t divisor; /* divisor_override, 0: none */
    /* upsampling: source index (nearest) or index + weight pairs (bilinear) per dim */
    const int64_t *ih0, *ih1, *iw0, *iw1;
    const double *lh1, *lw1; /* weight of the second index (the first gets 1 - l) */
} ct_pool_geom;

/* forward: in = x [planes, H, W], out = y [planes, OH, OW], idx = argmax (max, or
 * NULL); backward: in = gy, out = gx (written whole), idx = argmax (max);
 * gather (max only): out = y [planes, OH, OW] with y[o] = in[idx[o]] (the adjoint of
 * max's backward, for double backward). */
typedef struct {
    const ct_pool_geom *g;
    bool backward, gather;
    const void *in;
    void *out;
    int64_t *idx;
} ct_pool_job;
typedef void (*ct_pool_fn)(const ct_pool_job *job);

#endif
