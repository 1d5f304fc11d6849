/* Pointwise losses composed of ops, as PyTorch 1.13 composes them: l1 (AbsBackward0,
 * then MeanBackward0 / SumBackward0) and kl_div.  Input and target broadcast as in
 * PyTorch (which warns when their sizes differ); gradients follow from the ops
 * (l1's is 0 at input == target, as PyTorch's).  mse, smooth_l1 and huber are ops:
 * src/ops/loss_elementwise.c. */
#include "ctorch.h"
#include "core/error.h"
#include "ops/internal.h"

ct_tensor *(ct_l1_loss_with)(ct_tensor *x, ct_tensor *y, ct_loss_options o) {
    if (!ct_alive("ct_l1_loss", 1, x) || !ct_alive("ct_l1_loss", 2, y)) return NULL;
    static const char *op = "ct_l1_loss";
    ct_tensor *r = NULL;
    if (!x || !y || !ct_loss_check_reduction(op, o.reduction)) return NULL;
    CT_SCOPE { r = ct_keep(ct_loss_reduce(op, ct_abs(ct_sub(x, y)), o.reduction)); }
    return r;
}

/* xlogy(y, y) - y x, or exp(y) (y - x) with log_target; batchmean divides the sum by
 * the batch size (input's size(0)).  Values and input gradients are PyTorch's; the
 * target gradient where the target is 0 is 0 here, NaN in PyTorch (xlogy's 0 / 0). */
ct_tensor *(ct_kl_div_with)(ct_tensor *x, ct_tensor *y, ct_kl_div_options o) {
    if (!ct_alive("ct_kl_div", 1, x) || !ct_alive("ct_kl_div", 2, y)) return NULL;
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
