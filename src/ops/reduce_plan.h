/* Shared set-up of reductions: which dims, the output shape, and the input seen as
 * a contiguous [M, R] matrix (M outputs, R elements reduced into each). */
#ifndef CT_OPS_REDUCE_PLAN_H
#define CT_OPS_REDUCE_PLAN_H

#include "ops/internal.h"

typedef struct {
    bool reduced[CT_MAX_DIMS];
    int out_ndim;            /* with keepdim applied */
    int64_t out_sizes[CT_MAX_DIMS];
    int64_t kept_sizes[CT_MAX_DIMS]; /* keepdim shape (reduced dims as 1) */
    int64_t M, R;
} ct_reduce_plan;

/* Fills plan for reducing t over dims (none: all); false with an error naming op. */
bool ct_reduce_plan_make(const char *op, const ct_tensor *t, ct_dims dims, bool keepdim,
                         ct_reduce_plan *plan);
/* t permuted so that reduced dims come last, as a contiguous tensor (a copy unless
 * t already is laid out that way); unregistered. */
ct_tensor *ct_reduce_input(ct_tensor *t, const ct_reduce_plan *plan);
/* Gradient g of a reduction's output brought back to the input's shape: reduced dims
 * reinserted as size 1 when !keepdim, then expanded.  Registered. */
ct_tensor *ct_reduce_grad_expand(ct_tensor *g, const ct_node *n, bool keepdim);

#endif
