/* F.cross_entropy: log_softmax followed by nll_loss (class indices) or by the dot
 * product with the target distribution (class probabilities), as PyTorch 1.13's
 * cross_entropy_loss; label smoothing mixes in the uniform distribution. */
#include <string.h>

#include "ctorch.h"
#include "core/error.h"
#include "ops/internal.h"
#include "ops/options.h"
#include "ops/reduce_plan.h"
#include "ops/autocast.h"

static const char *OP = "ct_cross_entropy";

/* weight [C] viewed as [1, C, 1, ...] so that it broadcasts against input. */
static ct_tensor *class_view(ct_tensor *w, const ct_tensor *x) {
    ct_shape s = {.ndim = ct_ndim(x)};
    for (int d = 0; d < s.ndim; d++) s.d[d] = 1;
    s.d[s.ndim == 1 ? 0 : 1] = ct_numel(w);
    return ct_view(w, s);
}

static bool check_class_weight(const ct_tensor *x, const ct_tensor *w, int64_t C) {
    if (!w || (ct_ndim(w) == 1 && ct_numel(w) == C)) return true;
    char a[CT_SHAPE_STR_MAX];
    ct_shape s = ct_shape_of(w);
    ct_error("%s: cross_entropy: weight tensor should be defined either for all %lld classes "
             "or no classes but got weight tensor of shape: %s", OP, (long long)C,
             ct_shape_str(s.ndim, s.d, a));
    (void)x;
    return false;
}

/* Targets as class probabilities (target has input's shape). */
static ct_tensor *prob_target(ct_tensor *x, ct_tensor *y, int cdim, int64_t C,
                              ct_cross_entropy_options o) {
    if (!ct_dtype_is_floating(ct_dtype_of(y))) {
        ct_error("%s: Expected floating point type for target with class probabilities, got %s",
                 OP, ct_dtype_torch_name(ct_dtype_of(y)));
        return NULL;
    }
    if (o.ignore_index.v != -100) {
        ct_error("%s: ignore_index is not supported for floating point target", OP);
        return NULL;
    }
    if (!check_class_weight(x, o.weight, C)) return NULL;
    ct_tensor *lp = ct_log_softmax(x, cdim);
    if (o.label_smoothing > 0)
        y = ct_add_scalar(ct_mul_scalar(y, 1 - o.label_smoothing), o.label_smoothing / (double)C);
    ct_tensor *p = ct_mul(lp, y);
    if (o.weight) p = ct_mul(p, class_view(o.weight, x));
    switch (o.reduction) {
    case CT_REDUCTION_NONE: return ct_neg(ct_sum(p, .dims = CT_DIMS(cdim)));
    case CT_REDUCTION_SUM: return ct_neg(ct_sum(p));
    default: /* the mean over the batch elements (not the classes); NaN when empty */
        if (!p) return NULL;
        return ct_loss_grad_fn_as(
            ct_div_scalar(ct_neg(ct_sum(p)), C ? (double)(ct_numel(x) / C) : 0.0), "DivBackward1");
    }
}

/* PyTorch's label smoothing of class-index targets: (1 - ls) nll + ls / C times the
 * loss against the uniform distribution (ignored targets add nothing; the mean
 * divides by the summed weights of the targets, like nll's). */
static ct_tensor *smoothed(ct_tensor *lp, ct_tensor *nll, ct_tensor *y, int cdim, int64_t C,
                           ct_cross_entropy_options o) {
    ct_tensor *p = o.weight ? ct_mul(lp, class_view(o.weight, lp)) : lp;
    ct_tensor *ignored = ct_eq_scalar(y, o.ignore_index.v);
    ct_tensor *s = ct_masked_fill(ct_neg(ct_sum(p, .dims = CT_DIMS(cdim))), ignored, 0);
    if (o.reduction == CT_REDUCTION_SUM) {
        s = ct_sum(s);
    } else if (o.reduction == CT_REDUCTION_MEAN) {
        ct_tensor *den;
        if (o.weight) {
            ct_tensor *t = ct_flatten(ct_masked_fill(y, ignored, 0), 0, -1);
            ct_tensor *wt = ct_index_select(o.weight, 0, t);
            den = ct_sum(ct_masked_fill(wt, ct_flatten(ignored, 0, -1), 0));
        } else {
            den = ct_sum(ct_logical_not(ignored));
        }
        s = ct_div(ct_sum(s), den);
    }
    return ct_add(ct_mul_scalar(nll, 1 - o.label_smoothing),
                  ct_mul_scalar(s, o.label_smoothing / (double)C));
}

ct_tensor *(ct_cross_entropy_with)(ct_tensor *x, ct_tensor *y, ct_cross_entropy_options o) {
    if (!ct_alive("ct_cross_entropy", 1, x) || !ct_alive("ct_cross_entropy", 2, y) ||
        !ct_option_alive("ct_cross_entropy", "weight", o.weight))
        return NULL;
    /* log_softmax and nll_loss in float32, as PyTorch's cross_entropy: nll_loss's row */
    CT_AUTOCAST_OP(CT_OP_nll_loss, ct_cross_entropy_with(x, y, o), x, o.weight);
    if (!x || !y || !ct_loss_check_reduction(OP, o.reduction)) return NULL;
    if (!(o.label_smoothing >= 0 && o.label_smoothing <= 1)) {
        ct_error("%s: label_smoothing must be between 0.0 and 1.0. Got: %g", OP, o.label_smoothing);
        return NULL;
    }
    if (ct_ndim(x) < 1) {
        ct_error("%s: Expected 1 or more dimensions (got 0)", OP);
        return NULL;
    }
    int64_t ignore_index;
    if (!ct_opt_int(OP, "ignore_index", o.ignore_index, -100, &ignore_index)) return NULL;
    o.ignore_index = CT_SOME(ignore_index); /* read as .v below */
    int cdim = ct_ndim(x) == 1 ? 0 : 1;
    int64_t C = ct_size(x, cdim);
    ct_shape xs = ct_shape_of(x), ys = ct_shape_of(y);
    bool probs = xs.ndim == ys.ndim && !memcmp(xs.d, ys.d, sizeof(int64_t) * (size_t)xs.ndim);
    ct_tensor *r = NULL;
    CT_SCOPE {
        if (probs) {
            r = ct_keep(prob_target(x, y, cdim, C, o));
        } else {
            ct_tensor *lp = ct_log_softmax(x, cdim);
            ct_tensor *nll = ct_nll_loss_op(OP, lp, y, o.weight, o.reduction, (int64_t)o.ignore_index.v);
            if (nll && o.label_smoothing > 0) nll = smoothed(lp, nll, y, cdim, C, o);
            r = ct_keep(nll);
        }
    }
    return r;
}
