/* F.binary_cross_entropy_with_logits, composed of ops in PyTorch 1.13's stable form:
 * with m = max(-x, 0), log(1 + exp(-x)) = m + log(exp(-m) + exp(-x - m)), whose terms
 * never overflow; the derivative of m cancels, so the gradient is exactly
 * sigmoid-based at every x (x == 0 included). */
#include <string.h>

#include "ctorch.h"
#include "core/error.h"
#include "ops/internal.h"

ct_tensor *(ct_binary_cross_entropy_with_logits_with)(ct_tensor *x, ct_tensor *y,
                                                      ct_bce_with_logits_options o) {
    static const char *op = "ct_binary_cross_entropy_with_logits";
    if (!x || !y || !ct_loss_check_reduction(op, o.reduction)) return NULL;
    ct_shape xs = ct_shape_of(x), ys = ct_shape_of(y);
    if (xs.ndim != ys.ndim || memcmp(xs.d, ys.d, sizeof(int64_t) * (size_t)xs.ndim)) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error("%s: Target size (torch.Size(%s)) must be the same as input size "
                 "(torch.Size(%s))", op, ct_shape_str(ys.ndim, ys.d, a),
                 ct_shape_str(xs.ndim, xs.d, b));
        return NULL;
    }
    ct_tensor *r = NULL;
    CT_SCOPE {
        ct_tensor *m = ct_clamp(ct_neg(x), .min = CT_SOME(0));
        ct_tensor *sp = ct_add(ct_log(ct_add(ct_exp(ct_neg(m)), ct_exp(ct_sub(ct_neg(x), m)))), m);
        if (o.pos_weight) /* log_weight = 1 + (pos_weight - 1) y */
            sp = ct_mul(ct_add_scalar(ct_mul(ct_sub_scalar(o.pos_weight, 1), y), 1), sp);
        ct_tensor *l = ct_add(ct_mul(ct_rsub_scalar(y, 1), x), sp);
        if (o.weight) l = ct_mul(l, o.weight);
        r = ct_keep(ct_loss_reduce(op, l, o.reduction));
    }
    return r;
}
