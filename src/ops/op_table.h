/* The op enum, names and dispatch slots generated from ops.def. */
#ifndef CT_OPS_OP_TABLE_H
#define CT_OPS_OP_TABLE_H

#include "core/tensor_impl.h"

typedef enum {
#define CT_OP(name, grad) CT_OP_##name,
#define CT_OP_ND(name) CT_OP_##name,
#include "ops/ops.def"
#undef CT_OP
#undef CT_OP_ND
    CT_NUM_OPS
} ct_op_id;

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

/* Kernels: per (op, device type, dtype) a function pointer whose signature is fixed
 * by the op's family (ct_loop_fn for pointwise ops, ...). */
typedef void (*ct_kernel)(void);
typedef struct {
    ct_op_id op;
    ct_dtype dtype;
    ct_kernel fn;
} ct_kernel_entry;

/* The kernel for (op, device of t, dtype); NULL with "ct_<op>: not implemented for
 * float16 on cpu" when the slot is empty. */
ct_kernel ct_kernel_for(ct_op_id op, ct_device dev, ct_dtype dtype);

#endif
