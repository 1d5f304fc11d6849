/* The shared forward of one-input pointwise ops (math functions, activations,
 * nan_to_num, clamp with numbers): ct_pointwise, then the node with the op's schema
 * attributes (node->attrs.<op>, decoded from args) and what its backward reads (saved
 * slot 0). */
#ifndef CT_OPS_UNARY_H
#define CT_OPS_UNARY_H

#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/pointwise.h"

typedef enum { CT_SAVE_NONE, CT_SAVE_INPUT, CT_SAVE_OUTPUT } ct_unary_save;

typedef struct {
    ct_op_id op;
    ct_pw_result result;
    ct_unary_save save;
} ct_unary_spec;

/* Forward of u on x; in place (x is the output) when inplace.  Registered result. */
ct_tensor *ct_unary_op(const ct_unary_spec *u, ct_tensor *x, const ct_pw_args *args,
                       bool inplace);
/* where(mask, g, 0): the gradient g kept where mask holds (differentiable in g). */
ct_tensor *ct_mask_grad(ct_tensor *mask, ct_tensor *g);

#endif
