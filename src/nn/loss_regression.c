/* Pointwise losses composed of ops: mse, l1, smooth_l1, huber, kl_div.  Input and
 * target broadcast as in PyTorch (which warns when their sizes differ); gradients
 * follow from the ops, matching PyTorch's formulas, including their choices at the
 * kinks (0 at input == target, the quadratic side below beta / delta). */
#include "ctorch.h"
#include "core/error.h"
#include "ops/internal.h"

/* Runs body (which sets ct_tensor *l, the unreduced loss) in a scope and returns the
 * reduced loss handed to the caller's scope. */
#define LOSS_BODY(op, reduction, body)                                                 \
    ct_tensor *r_ = NULL;                                                              \
    if (!x || !y || !ct_loss_check_reduction(op, reduction)) return NULL;             \
    CT_SCOPE {                                                                         \
        ct_tensor *l = NULL;                                                           \
        body;                                                                          \
        r_ = ct_keep(ct_loss_reduce(op, l, reduction));                                \
    }                                                                                  \
    return r_

ct_tensor *(ct_mse_loss_with)(ct_tensor *x, ct_tensor *y, ct_loss_options o) {
    LOSS_BODY("ct_mse_loss", o.reduction, {
        ct_tensor *d = ct_sub(x, y);
        l = ct_mul(d, d);
    });
}

ct_tensor *(ct_l1_loss_with)(ct_tensor *x, ct_tensor *y, ct_loss_options o) {
    LOSS_BODY("ct_l1_loss", o.reduction, l = ct_abs(ct_sub(x, y)));
}

ct_tensor *(ct_smooth_l1_loss_with)(ct_tensor *x, ct_tensor *y, ct_smooth_l1_options o) {
    if (o.beta < 0) {
        ct_error("ct_smooth_l1_loss: smooth_l1_loss does not support negative values for beta.");
        return NULL;
    }
    if (o.beta == 0) return (ct_l1_loss_with)(x, y, (ct_loss_options){o.reduction});
    LOSS_BODY("ct_smooth_l1_loss", o.reduction, {
        ct_tensor *z = ct_abs(ct_sub(x, y));
        ct_tensor *quad = ct_div_scalar(ct_mul_scalar(ct_mul(z, z), 0.5), o.beta);
        l = ct_where(ct_lt_scalar(z, o.beta), quad, ct_sub_scalar(z, 0.5 * o.beta));
    });
}

ct_tensor *(ct_huber_loss_with)(ct_tensor *x, ct_tensor *y, ct_huber_options o) {
    if (!(o.delta > 0)) {
        ct_error("ct_huber_loss: huber_loss does not support non-positive values for delta.");
        return NULL;
    }
    LOSS_BODY("ct_huber_loss", o.reduction, {
        ct_tensor *z = ct_abs(ct_sub(x, y));
        ct_tensor *quad = ct_mul_scalar(ct_mul(z, z), 0.5);
        ct_tensor *lin = ct_mul_scalar(ct_sub_scalar(z, 0.5 * o.delta), o.delta);
        l = ct_where(ct_lt_scalar(z, o.delta), quad, lin);
    });
}

/* xlogy(y, y) - y x, or exp(y) (y - x) with log_target; batchmean divides the sum by
 * the batch size (input's size(0)).  Values and input gradients are PyTorch's; the
 * target gradient where the target is 0 is 0 here, NaN in PyTorch (xlogy's 0 / 0). */
ct_tensor *(ct_kl_div_with)(ct_tensor *x, ct_tensor *y, ct_kl_div_options o) {
    static const char *op = "ct_kl_div";
    bool batchmean = o.reduction == CT_REDUCTION_BATCHMEAN;
    ct_reduction red = batchmean ? CT_REDUCTION_SUM : o.reduction;
    ct_tensor *r = NULL;
    if (!x || !y || !ct_loss_check_reduction(op, red)) return NULL;
    CT_SCOPE {
        ct_tensor *l;
        if (o.log_target) {
            l = ct_mul(ct_exp(y), ct_sub(y, x));
        } else { /* y log y with 0 where y == 0 (log of 1 there keeps gradients finite) */
            ct_tensor *zero = ct_eq_scalar(y, 0);
            ct_tensor *ylogy = ct_mul(y, ct_log(ct_masked_fill(y, zero, 1)));
            l = ct_sub(ct_masked_fill(ylogy, zero, 0), ct_mul(y, x));
        }
        l = ct_loss_reduce(op, l, red);
        if (l && batchmean && ct_ndim(x) > 0) l = ct_div_scalar(l, (double)ct_size(x, 0));
        r = ct_keep(l);
    }
    return r;
}
