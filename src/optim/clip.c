/* Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_). */
#include <math.h>

#include "ctorch.h"
#include "core/error.h"
#include "core/object.h"
#include "ops/options.h"

double ct_clip_grad_norm_with(ct_tensor *const *params, int n, double max_norm, ct_clip_options o) {
    if (!ct_all_alive("ct_clip_grad_norm_", 1, params, n)) return NAN;
    if (!params && n > 0) return NAN;
    /* Order 0 is a real order (the count of nonzero entries), so only "not given" is 2. */
    ct_opt_f64 p = CT_SOME(ct_opt_or(o.norm_type, 2));
    double total = 0;
    bool ok = true;
    CT_SCOPE {
        CT_NO_GRAD {
            /* As PyTorch: the norm of the per-parameter norms. */
            ct_tensor *norms[n > 0 ? n : 1];
            int k = 0;
            for (int i = 0; i < n && ok; i++) {
                if (!params[i]) ok = false;
                else if (ct_grad(params[i]))
                    ok = (norms[k++] = ct_norm(ct_grad(params[i]), .p = p)) != NULL;
            }
            if (!ok || k == 0) break;
            ct_tensor *t = ct_norm(ct_stack(k, norms, 0), .p = p);
            if (!t) {
                ok = false;
                break;
            }
            /* On meta the norm has no value: the scaling still runs (shapes and dtypes
             * checked, no data) and the result is NAN with no error set. */
            total = ct_is_meta(t) ? NAN : ct_item(t);
            if (o.error_if_nonfinite && !ct_is_meta(t) && !isfinite(total)) {
                ct_error("ct_clip_grad_norm_: The total norm of order %g for gradients from "
                         "`parameters` is non-finite, so it cannot be clipped. To disable this "
                         "error and scale the gradients by the non-finite norm anyway, set "
                         "`error_if_nonfinite=False`", p.v);
                ok = false;
                break;
            }
            /* clip_coef = max_norm / (total + 1e-6), clamped to 1, applied to every grad. */
            ct_tensor *coef = ct_clamp(ct_div(ct_full_like(t, max_norm), ct_add_scalar(t, 1e-6)),
                                       .max = CT_SOME(1.0));
            for (int i = 0; i < n && ok; i++)
                if (ct_grad(params[i]))
                    ok = ct_mul_(ct_grad(params[i]), ct_to(coef, .dtype = ct_dtype_of(ct_grad(params[i])))) != NULL;
        }
    }
    return ok ? total : NAN;
}
int ct_clip_grad_value_(ct_tensor *const *params, int n, double clip_value) {
    if (!ct_all_alive("ct_clip_grad_value_", 1, params, n)) return -1;
    int rc = 0;
    CT_SCOPE {
        CT_NO_GRAD {
            for (int i = 0; i < n && rc == 0; i++) {
                if (!params || !params[i]) rc = -1;
                else if (ct_grad(params[i]) &&
                         !ct_clamp_(ct_grad(params[i]), .min = CT_SOME(-clip_value), .max = CT_SOME(clip_value)))
                    rc = -1;
            }
        }
    }
    return rc;
}
