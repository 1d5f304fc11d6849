/* Shared set-up of reductions: which dims, the output shape, the input seen as a
 * contiguous [M1, R, M2] block (no copy when the layout allows), running a kernel,
 * and the helpers of the backward formulas. */
#ifndef CT_OPS_REDUCE_PLAN_H
#define CT_OPS_REDUCE_PLAN_H

#include "ops/internal.h"
#include "ops/op_table.h"

typedef struct {
    bool reduced[CT_MAX_DIMS];
    int out_ndim;            /* with keepdim applied */
    int64_t out_sizes[CT_MAX_DIMS];
    int64_t kept_sizes[CT_MAX_DIMS]; /* keepdim shape (reduced dims as 1) */
    int64_t M, R;
    int64_t mask;            /* bit d set: dim d is reduced */
} ct_reduce_plan;

/* Fills plan for reducing t over dims (none: all); false with an error naming op
 * ("Dimension out of range ...", "dim 1 appears multiple times in the list of dims"). */
bool ct_reduce_plan_make(const char *op, const ct_tensor *t, ct_dims dims, bool keepdim,
                         ct_reduce_plan *plan);
/* t permuted so that reduced dims come last, as a contiguous tensor (a copy unless
 * t already is laid out that way); unregistered. */
ct_tensor *ct_reduce_input(const char *op, ct_tensor *t, const ct_reduce_plan *plan);
/* t's data seen as a contiguous [M1, R, M2] block: t itself (retained) when its
 * layout allows it, else a permuted copy ([M, R, 1]); unregistered. */
ct_tensor *ct_reduce_layout(const char *op, ct_tensor *t, const ct_reduce_plan *p, int64_t *M1,
                            int64_t *M2);
/* ct_reduce_layout of t converted to dtype k first (when it differs); unregistered. */
ct_tensor *ct_reduce_block(const char *op, ct_tensor *t, const ct_reduce_plan *p, ct_dtype k,
                           int64_t *M1, int64_t *M2);
/* The plan's output shape. */
ct_shape ct_reduce_out_shape(const ct_reduce_plan *p);
/* Runs op's ct_reduce_fn kernel for dtype kin (t converted first when its dtype
 * differs) producing kout, then converts to out_dt.  A new unregistered tensor of the
 * plan's output shape, or NULL with the error set. */
ct_tensor *ct_reduce_run(ct_op_id op, ct_tensor *t, const ct_reduce_plan *p, ct_dtype kin,
                         ct_dtype kout, ct_dtype out_dt, const void *ctx);
/* Reports out = op(t) to the record hook with the attributes of sum/mean/prod (dim,
 * keepdim, dtype) or of all/any/amax/amin (dim, keepdim); no dims given: dim=None. */
void ct_reduce_trace(ct_op_id op, ct_tensor *t, ct_tensor *out, ct_dims dims, bool keepdim,
                     ct_dtype dtype);
/* Records op's node for out = op(t) over plan (node->state.reduce: mask, keepdim). */
ct_node *ct_reduce_record(ct_op_id op, ct_tensor *out, ct_tensor *t, const ct_reduce_plan *p,
                          bool keepdim);
/* PyTorch's name of a dtype in messages ("Long", "Float"). */
const char *ct_dtype_torch_name(ct_dtype t);

/* Gradient g of a reduction's output brought back to the input's shape: reduced dims
 * reinserted as size 1 when !keepdim, then expanded.  Registered. */
ct_tensor *ct_reduce_grad_expand(ct_tensor *g, const ct_node *n, bool keepdim);
/* The reduced dims of node n's plan as a list (empty for a 0-d input: all). */
ct_dims ct_reduce_dims_of(const ct_node *n);
/* The output-shaped g (or saved output) reshaped to the keepdim shape (registered),
 * so that it broadcasts against the input. */
ct_tensor *ct_reduce_kept(ct_tensor *g, const ct_node *n);

/* Scans with the variants backward formulas need (src/ops/scan.c): op is
 * CT_OP_cumsum or CT_OP_cumprod; differentiable; registered. */
ct_tensor *ct_scan(ct_op_id op, ct_tensor *t, int64_t dim, bool reverse, bool exclusive,
                   ct_dtype dtype);
/* The constant masks of reduction gradients (cpu/reduce_mask.h kinds): a float
 * tensor, not differentiable; registered. */
ct_tensor *ct_reduce_mask(ct_tensor *a, ct_tensor *b, int kind);

#endif
