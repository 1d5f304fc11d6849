/* Reduction kernels see a contiguous input as [M, R] and write M outputs. */
#ifndef CT_CPU_REDUCE_H
#define CT_CPU_REDUCE_H

#include "cpu/kernel_util.h"

/* in: M*R elements of the input dtype; out: M elements of the output dtype. */
typedef void (*ct_reduce_fn)(const char *in, char *out, int64_t M, int64_t R, const void *ctx);

/* Size of the fixed chunks a long row is split into: partial results are combined in
 * chunk order, so the value never depends on the number of threads. */
#define CT_REDUCE_CHUNK 16384

#endif
