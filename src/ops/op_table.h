/* The op names and backward table generated from ops.def (the op enum, ct_op_id, is in
 * kernels/op_id.h; the kernel lookups are in ops/dispatch.h). */
#ifndef CT_OPS_OP_TABLE_H
#define CT_OPS_OP_TABLE_H

#include "core/tensor_impl.h"
#include "kernels/op_id.h"

typedef struct ct_node ct_node;
/* A backward formula: reads node's saved state and the gradients of its outputs
 * (grad_out[i] may be NULL when output i got no gradient: treat it as zeros), and
 * writes the gradient of each input that needs one (node->needs_grad[i]) into
 * grad_in[i], shaped like the input or broadcastable to it (the engine reduces
 * broadcast gradients).  Formulas are written with ops, so they are differentiable.
 * Returns false with the error set on failure. */
typedef bool (*ct_backward_fn)(ct_node *node, ct_tensor **grad_out, ct_tensor **grad_in);

typedef struct {
    const char *name;      /* "add" */
    const char *fn;        /* "ct_add": the name errors give (in-place forms add "_") */
    const char *grad_name; /* "AddBackward0"; NULL when not differentiable */
    ct_backward_fn backward;
} ct_op_info;

extern const ct_op_info ct_ops[CT_NUM_OPS];

#include "ops/dispatch.h"

#endif
