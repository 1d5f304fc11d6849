/* Scan kernels (cumsum, cumprod) see a contiguous input as [M1, L, M2], scanning L. */
#ifndef CT_KERNELS_SCAN_H
#define CT_KERNELS_SCAN_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    bool reverse;   /* scan from the end: out[l] = x[l] op ... op x[L-1] */
    bool exclusive; /* leave the element itself out: out[l] = x[0] op ... op x[l-1] */
} ct_scan_args;

/* cumsum / cumprod: in, out [M1, L, M2] (same signature as ct_reduce_fn). */
typedef void (*ct_scan_fn)(const char *in, char *out, int64_t M1, int64_t L, int64_t M2,
                           const void *ctx);
/* cumprod's gradient (Note [cumprod gradient with zeros]): x, g, out [M1, L, M2]. */
typedef void (*ct_cumprod_grad_fn)(const char *x, const char *g, char *out, int64_t M1,
                                   int64_t L, int64_t M2, const ct_scan_args *a);

#endif
