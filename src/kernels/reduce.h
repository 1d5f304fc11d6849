/* The reduction kernel ABI (families REDUCE and ARGREDUCE).  A kernel sees a
 * contiguous input as [M1, R, M2] and writes [M1, M2]: M2 == 1 is a row reduction,
 * M1 == 1 a column reduction (see Note [Fixed reduction order], cpu/reduce.h). */
#ifndef CT_KERNELS_REDUCE_H
#define CT_KERNELS_REDUCE_H

#include <stdint.h>

/* in: M1*R*M2 elements of the input dtype; out: M1*M2 of the output dtype. */
typedef void (*ct_reduce_fn)(const char *in, char *out, int64_t M1, int64_t R, int64_t M2,
                             const void *ctx);

/* Value + index reductions (max/min along a dim, argmax/argmin): for each of the
 * M1*M2 outputs the first best element over R > 0; vals may be NULL. */
typedef void (*ct_argreduce_fn)(const char *in, char *vals, int64_t *idx, int64_t M1,
                                int64_t R, int64_t M2);
/* Vector norms: the kind, as the ctx of the CT_OP_norm kernels. */
typedef enum { CT_NORM_L0, CT_NORM_L1, CT_NORM_L2, CT_NORM_LINF, CT_NORM_LNINF } ct_norm_kind;

#endif
