/* Range kernels (arange, linspace): out (n) contiguous, of the kernel's dtype. */
#ifndef CT_KERNELS_RANGE_H
#define CT_KERNELS_RANGE_H

#include <stdint.h>

typedef struct {
    double start, end, step; /* floating dtypes (and linspace's step for integers) */
    int64_t istart, istep;   /* arange for integral dtypes: exact int64 arithmetic */
} ct_range_args;

typedef void (*ct_range_kernel)(void *out, int64_t n, const ct_range_args *args);

#endif
