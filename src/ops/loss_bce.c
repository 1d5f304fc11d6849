/* binary_cross_entropy: an elementwise op (logs clamped to >= -100, as PyTorch) whose
 * gradient is PyTorch's (x - y) / max(x (1 - x), 1e-12f): finite where the input
 * saturates at 0 or 1 (composing log ops would give NaN there); weight and reduction
 * are applied after it. */
#include <string.h>

#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/pointwise.h"
#include "ops/reduce_plan.h"

static const ct_pw_spec BCE = {CT_OP_binary_cross_entropy, CT_PW_PROMOTE, 0};

static bool bce_check(const char *op, ct_tensor *x, ct_tensor *y) {
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    if (x->ndim != y->ndim || memcmp(x->sizes, y->sizes, sizeof(int64_t) * (size_t)x->ndim)) {
        ct_error("%s: Using a target size (torch.Size(%s)) that is different to the input size "
                 "(torch.Size(%s)) is deprecated. Please ensure they have the same size.", op,
                 ct_shape_str(y->ndim, y->sizes, a), ct_shape_str(x->ndim, x->sizes, b));
        return false;
    }
    if (!ct_dtype_is_floating(x->dtype)) {
        ct_error("%s: \"binary_cross_entropy\" not implemented for '%s'", op,
                 ct_dtype_torch_name(x->dtype));
        return false;
    }
    if (y->dtype != x->dtype) {
        ct_error("%s: Found dtype %s but expected %s", op, ct_dtype_torch_name(y->dtype),
                 ct_dtype_torch_name(x->dtype));
        return false;
    }
    if (x->numel == 0) return true;
    double lo = NAN, hi = NAN;
    CT_SCOPE {
        CT_NO_GRAD {
            lo = ct_item(ct_amin(x));
            hi = ct_item(ct_amax(x));
        }
    }
    if (!(lo >= 0 && hi <= 1)) { /* NaN fails too, as in PyTorch */
        ct_error("%s: all elements of input should be between 0 and 1", op);
        return false;
    }
    return true;
}

ct_tensor *(ct_binary_cross_entropy_with)(ct_tensor *x, ct_tensor *y, ct_bce_options o) {
    static const char *op = "ct_binary_cross_entropy";
    if (!x || !y || !ct_loss_check_reduction(op, o.reduction) || !bce_check(op, x, y))
        return NULL;
    ct_tensor *in[2] = {x, y};
    ct_tensor *l = ct_pointwise(&BCE, 2, in, NULL, NULL);
    if (!l) return NULL;
    ct_node *n = ct_record1(CT_OP_binary_cross_entropy, l, 2, in);
    if (n) {
        ct_node_save(n, 0, x, false);
        ct_node_save(n, 1, y, false);
    }
    ct_ret(l);
    ct_tensor *r = NULL;
    CT_SCOPE {
        if (o.weight) l = ct_mul(l, o.weight);
        r = ct_keep(ct_loss_reduce(op, l, o.reduction));
    }
    return r;
}

/* d/dx = (x - y) / max(x (1 - x), EPSILON);  PyTorch's EPSILON is the float 1e-12f
 * (9.99999996e-13) in every dtype;  d/dy = log(1 - x) - log(x) (unclamped, as
 * PyTorch's binary_cross_entropy_target_backward). */
bool binary_cross_entropy_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = ct_node_saved(n, 0), *y = ct_node_saved(n, 1), *g = go[0];
    if (!x || !y || !g) return false;
    if (n->needs_grad[0]) {
        ct_tensor *den = ct_clamp_with(ct_mul(ct_rsub_scalar(x, 1), x),
                                       (ct_clamp_options){.min = CT_SOME((double)1e-12f)});
        if (!(gi[0] = ct_mul(ct_div(ct_sub(x, y), den), g))) return false;
    }
    if (n->needs_grad[1] && !(gi[1] = ct_mul(ct_sub(ct_log(ct_rsub_scalar(x, 1)), ct_log(x)), g)))
        return false;
    return true;
}
