/* The fused softmax-family kernel (cpu/softmax.c), registered under CT_OP_softmax. */
#ifndef CT_KERNELS_SOFTMAX_H
#define CT_KERNELS_SOFTMAX_H

#include <stdint.h>

typedef enum {
    /* the first three take a max first (kernels test kind <= CT_LOGSUMEXP) */
    CT_SOFTMAX,         /* o = exp(x - max) / sum */
    CT_LOG_SOFTMAX,     /* o = x - max - log(sum) */
    CT_LOGSUMEXP,       /* o[M1, M2] = max + log(sum) */
    CT_SOFTMAX_BWD,     /* x = softmax output, g = its gradient */
    CT_LOG_SOFTMAX_BWD, /* x = log_softmax output, g = its gradient */
} ct_softmax_kind;

/* x (and g), o: contiguous [M1, L, M2] ([M1, M2] for o of CT_LOGSUMEXP). */
typedef void (*ct_softmax_fn)(ct_softmax_kind kind, const char *x, const char *g, char *o,
                              int64_t M1, int64_t L, int64_t M2);

#endif
