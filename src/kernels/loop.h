/* The elementwise kernel ABI (family LOOP): the inner loop run over the iterator
 * (core/iter.h).
 *
 *     void loop(char **data, const int64_t *strides, int64_t n, const void *ctx)
 *
 * data[k] points at operand k's first element of the run (outputs first), strides[k]
 * is its byte stride (0 on broadcast dims) and n the run length; ctx is the op's
 * scalar arguments (most ops: const ct_pw_args *).  Fast paths test
 * strides[k] == sizeof(elem).  A kernel reads data[] and strides[] and leaves them
 * as they are (backends may hand it the iterator's own arrays). */
#ifndef CT_KERNELS_LOOP_H
#define CT_KERNELS_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#define CT_ITER_MAX_OPERANDS 5

typedef void (*ct_loop_fn)(char **data, const int64_t *strides, int64_t n, const void *ctx);

/* Scalar arguments handed to pointwise kernels as their ctx. */
typedef struct {
    double a, b, c; /* alpha, negative_slope, min/max, ... */
    int64_t i;      /* integer alpha, rounding mode, ... */
    bool has_a, has_b;
} ct_pw_args;

#endif
