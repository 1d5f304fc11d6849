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

#endif
