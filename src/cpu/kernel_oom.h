/* Kernels cannot return an error.  One whose working memory cannot be allocated stops
 * and makes the op's result fail instead (core/error.h: ct_error_fail_result), on the
 * thread that called it: threads of a parallel region only set a shared flag, which
 * the caller checks after the region. */
#ifndef CT_CPU_KERNEL_OOM_H
#define CT_CPU_KERNEL_OOM_H

#include <stdatomic.h>

#include "core/error.h"

static inline void ct_kernel_out_of_memory(const char *what) {
    ct_error_fail_result("out of memory in %s", what);
}

/* A kernel whose BLAS calls could not get OpenBLAS's working buffers under an
 * address-space limit (Note [OpenBLAS buffers] in cpu/gemm.c). */
static inline void ct_kernel_out_of_address_space(const char *what) {
    ct_error_fail_result("out of memory in %s: no address space left for OpenBLAS's working "
                         "buffer (ulimit -v)", what);
}

#endif
