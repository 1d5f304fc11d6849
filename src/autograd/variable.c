/* Autograd state of a tensor: requires_grad, leaves, .grad. */
#include "autograd/node.h"
#include "ops/internal.h"

bool ct_requires_grad(const ct_tensor *t) {
    if (!ct_alive("ct_requires_grad", 1, t)) return false;
    return t && ct_requires_grad_impl(t);
}
bool ct_is_leaf(const ct_tensor *t) {
    if (!ct_alive("ct_is_leaf", 1, t)) return false;
    return t && !ct_grad_fn_of((ct_tensor *)t);
}
ct_tensor *ct_grad(const ct_tensor *t) {
    if (!ct_alive("ct_grad", 1, t)) return NULL;
    return t ? t->grad : NULL;
}

int ct_set_requires_grad(ct_tensor *t, bool requires_grad) {
    if (!ct_alive("ct_set_requires_grad", 1, t)) return -1;
    if (!t) return -1;
    if (t->grad_fn) {
        if (requires_grad) return 0;
        ct_error("ct_set_requires_grad: you can only change requires_grad flags of leaf "
                 "variables. If you want to use a computed variable in a subgraph that doesn't "
                 "require differentiation use var_no_grad = ct_detach(var).");
        return -1;
    }
    if (requires_grad && !ct_dtype_is_floating(t->dtype)) {
        ct_error("ct_set_requires_grad: only Tensors of floating point dtype can require "
                 "gradients (got %s)", ct_dtype_name(t->dtype));
        return -1;
    }
    t->requires_grad = requires_grad;
    return 0;
}

int ct_set_grad(ct_tensor *t, ct_tensor *grad) {
    if (!ct_alive("ct_set_grad", 1, t) || !ct_alive("ct_set_grad", 2, grad)) return -1;
    if (!t) return -1;
    if (grad) {
        if (grad->ndim != t->ndim || ct_shape_numel(grad->ndim, grad->sizes) != t->numel ||
            memcmp(grad->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim)) {
            char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
            ct_error("ct_set_grad: assigned grad has data of a different size (%s, expected %s)",
                     ct_shape_str(grad->ndim, grad->sizes, a), ct_shape_str(t->ndim, t->sizes, b));
            return -1;
        }
        if (grad->dtype != t->dtype) {
            ct_error("ct_set_grad: assigned grad has data of a different type (%s, expected %s)",
                     ct_dtype_name(grad->dtype), ct_dtype_name(t->dtype));
            return -1;
        }
    }
    ct_retain(grad);
    ct_release(t->grad);
    t->grad = grad;
    return 0;
}
