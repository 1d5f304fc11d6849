/* Kernel families and the typed kernel tables that backends register.
 *
 * Every op row of ops/ops.def names its kernel family (its last column); each family
 * has one function type, declared in the family's ABI header (kernels/loop.h, ...).
 * A backend lists its kernels in tables of typed entries:
 *
 *     const ct_kernel_entry ct_cpu_binary_kernels[] = {
 *         CT_KERNEL(LOOP, CT_OP_add, CT_F32, add_f32),  // add_f32 must be a ct_loop_fn
 *         CT_KERNEL_END,
 *     };
 *
 * The compiler checks each function against its family's type; the dispatcher
 * (ops/dispatch.h) refuses, at start-up, an entry whose family is not its op's.  Ops
 * look kernels up with the typed lookups ct_kernel_<family>_for: no casts anywhere.
 * This header and the ABI headers it includes never include src/ops headers. */
#ifndef CT_KERNELS_KERNEL_H
#define CT_KERNELS_KERNEL_H

#include "core/dtype.h"
#include "kernels/conv.h"
#include "kernels/gemm.h"
#include "kernels/index.h"
#include "kernels/loop.h"
#include "kernels/loss.h"
#include "kernels/norm.h"
#include "kernels/op_id.h"
#include "kernels/optim.h"
#include "kernels/pool.h"
#include "kernels/random.h"
#include "kernels/range.h"
#include "kernels/reduce.h"
#include "kernels/rnn_cell.h"
#include "kernels/scan.h"
#include "kernels/shape.h"
#include "kernels/softmax.h"

/* X(FAMILY, family, function type): the family token of ops.def, the lookup's name
 * (ct_kernel_<family>_for) and the kernels' type. */
#define CT_KERNEL_FAMILIES(X)                                                            \
    X(LOOP, loop, ct_loop_fn)                   /* elementwise, over the iterator */     \
    X(REDUCE, reduce, ct_reduce_fn)             /* sum, prod, mean, amax, all, norm */   \
    X(ARGREDUCE, argreduce, ct_argreduce_fn)    /* max/min along a dim with indices */   \
    X(SCAN, scan, ct_scan_fn)                   /* cumsum, cumprod */                    \
    X(CUMPROD_GRAD, cumprod_grad, ct_cumprod_grad_fn)                                    \
    X(SOFTMAX, softmax, ct_softmax_fn)          /* softmax, log_softmax, backwards */    \
    X(GEMM, gemm, ct_gemm_fn)                   /* batched matrix products */            \
    X(CONV, conv, ct_conv_fn)                   /* convolution, im2col, col2im */        \
    X(POOL, pool, ct_pool_fn)                   /* pooling, upsampling */                \
    X(NORM, norm, ct_norm_fn)                   /* batch/layer/group norm */             \
    X(RNN_CELL, rnn_cell, ct_rnn_cell_fn)       /* fused LSTM / GRU cells */             \
    X(RANDOM, random, ct_rng_kernel)            /* uniform, normal, bernoulli, ... */    \
    X(MULTINOMIAL, multinomial, ct_multinomial_kernel)                                   \
    X(RANGE, range, ct_range_kernel)            /* arange, linspace */                   \
    X(COPY, copy, ct_copy_kernel)               /* cat, stack, repeat, flip, roll, ... */ \
    X(BAND, band, ct_band_kernel)               /* tril, triu */                         \
    X(PAD_GATHER, pad_gather, ct_pad_gather_kernel)   /* reflection/replication pad */   \
    X(PAD_SCATTER, pad_scatter, ct_pad_scatter_kernel) /* their backward */              \
    X(ROWS, rows, ct_rows_fn)                   /* index_select, index_add */            \
    X(INDEX_PUT, index_put, ct_put_fn)          /* index_put_ */                         \
    X(INDEX_GET, index_get, ct_index_get_fn)    /* advanced indexing */                  \
    X(SORT, sort, ct_sort_fn)                   /* sort, topk */                         \
    X(NLL, nll, ct_nll_fwd_fn)                  /* nll_loss forward */                   \
    X(NLL_BACKWARD, nll_backward, ct_nll_bwd_fn)                                         \
    X(OPTIM, optim, ct_optim_kernel)            /* fused optimizer steps */

/* CT_FAMILY_NONE: ops without kernels (composites, autograd plumbing). */
typedef enum {
    CT_FAMILY_NONE = 0,
#define CT_FAMILY_ENUM_(F, f, T) CT_FAMILY_##F,
    CT_KERNEL_FAMILIES(CT_FAMILY_ENUM_)
#undef CT_FAMILY_ENUM_
    CT_NUM_FAMILIES
} ct_kernel_family;

/* One kernel, as the member of its family. */
typedef union {
#define CT_FAMILY_MEMBER_(F, f, T) T F;
    CT_KERNEL_FAMILIES(CT_FAMILY_MEMBER_)
#undef CT_FAMILY_MEMBER_
} ct_kernel_fn;

/* One slot of a backend's table: the kernel of (op, dtype), of family `family`. */
typedef struct {
    ct_op_id op;
    ct_dtype dtype;
    ct_kernel_family family;
    ct_kernel_fn fn;
} ct_kernel_entry;

/* An entry: FAMILY is the ops.def token (LOOP, REDUCE, ...); FN must have its type. */
#define CT_KERNEL(FAMILY, OP, DTYPE, FN) {(OP), (DTYPE), CT_FAMILY_##FAMILY, {.FAMILY = (FN)}}
/* The end of a table. */
#define CT_KERNEL_END {(ct_op_id)0, (ct_dtype)0, CT_FAMILY_NONE, {.LOOP = 0}}

#endif
