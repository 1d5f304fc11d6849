/* binary_cross_entropy and binary_cross_entropy_with_logits, ops with the weight and
 * the reduction inside (see Note [Elementwise loss ops]).
 *
 * binary_cross_entropy: logs clamped to >= -100, as PyTorch; its gradient is
 * PyTorch's (x - y) / max(x (1 - x), 1e-12f): finite where the input saturates at 0
 * or 1 (composing log ops would give NaN there).
 *
 * binary_cross_entropy_with_logits: PyTorch 1.13's stable form, with m = max(-x, 0),
 * log(1 + exp(-x)) = m + log(exp(-m) + exp(-x - m)), whose terms never overflow. */
#include <string.h>

#include "ops/loss_impl.h"
#include "ops/reduce_plan.h"
#include "ops/autocast.h"

/* Saved tensors: the input, the target and bce_with_logits's pos_weight. */
enum { SV_INPUT, SV_TARGET, SV_POS_WEIGHT };

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
    if (x->numel == 0 || ct_tensor_is_meta(x)) return true; /* meta: no values to check */
    double lo = NAN, hi = NAN;
    ct_trace_mute(); /* a check, not part of the op's graph */
    CT_SCOPE {
        CT_NO_GRAD {
            lo = ct_item(ct_amin(x));
            hi = ct_item(ct_amax(x));
        }
    }
    ct_trace_unmute();
    if (!(lo >= 0 && hi <= 1)) { /* NaN fails too, as in PyTorch */
        ct_error("%s: all elements of input should be between 0 and 1", op);
        return false;
    }
    return true;
}

ct_tensor *(ct_binary_cross_entropy_with)(ct_tensor *x, ct_tensor *y, ct_bce_options o) {
    if (!ct_alive("ct_binary_cross_entropy", 1, x) || !ct_alive("ct_binary_cross_entropy", 2, y) ||
        !ct_option_alive("ct_binary_cross_entropy", "weight", o.weight))
        return NULL;
    CT_AUTOCAST_OP(CT_OP_binary_cross_entropy, ct_binary_cross_entropy_with(x, y, o), x, y,
                   o.weight);
    static const char *op = "ct_binary_cross_entropy";
    if (!x || !y || !ct_loss_check_reduction(op, o.reduction) || !bce_check(op, x, y))
        return NULL;
    ct_tensor *in[2] = {x, y};
    double numel = 0;
    ct_tensor *l = ct_pw_loss_forward("binary_cross_entropy", &BCE, 2, in, NULL, o.weight,
                                      o.reduction, &numel);
    if (!l) return NULL;
    ct_node *n = ct_record1(CT_OP_binary_cross_entropy, l, 2, in);
    if (n) {
        ct_node_save(n, SV_INPUT, x, false);
        ct_node_save(n, SV_TARGET, y, false);
        ct_pw_loss_save(n, o.weight, o.reduction, numel);
    }
    CT_TRACE_ATTRS(CT_OP_binary_cross_entropy, 3, ((ct_tensor *[]){x, y, o.weight}), 1, &l,
                   &(ct_binary_cross_entropy_attrs){ct_reduction_aten(o.reduction)});
    return l;
}

static const ct_pw_spec BCE_BWD = {CT_OP_binary_cross_entropy_backward, CT_PW_PROMOTE, 0};

/* max(x (1 - x), EPSILON): PyTorch's EPSILON is the float 1e-12f (9.99999996e-13) in
 * every dtype. */
static ct_tensor *bce_den(ct_tensor *x) {
    return ct_clamp_with(ct_mul(ct_rsub_scalar(x, 1), x),
                         (ct_clamp_options){.min = CT_SOME((double)1e-12f)});
}

/* d/dx = (x - y) / max(x (1 - x), EPSILON), one fused op;  d/dy = log(1 - x) - log(x)
 * (unclamped, as PyTorch's binary_cross_entropy_target_backward). */
bool binary_cross_entropy_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    if (!go[0]) return true;
    ct_tensor *x = ct_node_saved(n, SV_INPUT), *y = ct_node_saved(n, SV_TARGET);
    ct_tensor *g = x && y ? ct_pw_loss_grad(n, go[0]) : NULL;
    if (!g) return false;
    if (n->needs_grad[0] && !(gi[0] = ct_pw_loss_backward(&BCE_BWD, x, y, NULL, g, 0)))
        return false;
    if (n->needs_grad[1] && !(gi[1] = ct_mul(ct_sub(ct_log(ct_rsub_scalar(x, 1)), ct_log(x)), g)))
        return false;
    return true;
}

/* Of D g with D = (x - y) / den, den = max(x (1 - x), EPSILON) (PyTorch's formulas,
 * which take den's derivative where it is clamped too):
 * dD/dx = (x^2 - 2 x y + y) / den^2,  dD/dy = -1 / den. */
bool binary_cross_entropy_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *gg, *x, *y, *pw;
    if (!ct_pw_loss_backward_backward(n, go, gi, &gg, &x, &y, &pw)) return false;
    if (!gg) return true;
    ct_tensor *den = bce_den(x);
    if (n->needs_grad[0]) {
        ct_tensor *num = ct_add(ct_mul(x, ct_sub(x, ct_mul_scalar(y, 2))), y);
        if (!(gi[0] = ct_div(ct_mul(gg, num), ct_mul(den, den)))) return false;
    }
    return !n->needs_grad[1] || (gi[1] = ct_neg(ct_div(gg, den)));
}

static const ct_pw_spec BCEL = {CT_OP_binary_cross_entropy_with_logits, CT_PW_PROMOTE, 0};

ct_tensor *(ct_binary_cross_entropy_with_logits_with)(ct_tensor *x, ct_tensor *y,
                                                      ct_bce_with_logits_options o) {
    static const char *op = "ct_binary_cross_entropy_with_logits";
    if (!ct_alive(op, 1, x) || !ct_alive(op, 2, y) || !ct_option_alive(op, "weight", o.weight) ||
        !ct_option_alive(op, "pos_weight", o.pos_weight))
        return NULL;
    CT_AUTOCAST_OP(CT_OP_binary_cross_entropy_with_logits,
                   ct_binary_cross_entropy_with_logits_with(x, y, o), x, y, o.weight,
                   o.pos_weight);
    static const char *fn = "binary_cross_entropy_with_logits";
    if (!x || !y || !ct_loss_check_reduction(op, o.reduction)) return NULL;
    if (x->ndim != y->ndim || memcmp(x->sizes, y->sizes, sizeof(int64_t) * (size_t)x->ndim)) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error("%s: Target size (torch.Size(%s)) must be the same as input size "
                 "(torch.Size(%s))", op, ct_shape_str(y->ndim, y->sizes, a),
                 ct_shape_str(x->ndim, x->sizes, b));
        return NULL;
    }
    ct_tensor *pw = o.pos_weight;
    if (pw && ct_requires_grad(pw) && ct_is_grad_enabled()) {
        ct_error("%s: The function '%s' is not differentiable with respect to argument "
                 "'pos_weight'. This input cannot have requires_grad True.", op, fn);
        return NULL;
    }
    /* The kernel takes (pos_weight, input, target); without pos_weight a wrapped 1
     * (which takes no part in type promotion) stands in and ctx.i says so. */
    ct_tensor *one = pw ? NULL : ct_wrap_scalar(1, x);
    ct_tensor *in[3] = {pw ? pw : one, x, y};
    ct_pw_args a = {.i = pw != NULL};
    double numel = 0;
    ct_tensor *l = in[0] ? ct_pw_loss_forward(fn, &BCEL, 3, in, &a, o.weight, o.reduction, &numel)
                         : NULL;
    ct_release(one);
    if (!l) return NULL;
    ct_node *n = ct_record1(CT_OP_binary_cross_entropy_with_logits, l, 2, in + 1);
    if (n) {
        ct_node_save(n, SV_INPUT, x, false);
        ct_node_save(n, SV_TARGET, y, false);
        if (pw) ct_node_save(n, SV_POS_WEIGHT, pw, false);
        n->state.loss.has_pos_weight = pw != NULL;
        ct_pw_loss_save(n, o.weight, o.reduction, numel);
    }
    CT_TRACE_ATTRS(CT_OP_binary_cross_entropy_with_logits, 4,
                   ((ct_tensor *[]){x, y, o.weight, pw}), 1, &l,
                   &(ct_binary_cross_entropy_with_logits_attrs){ct_reduction_aten(o.reduction)});
    return l;
}

/* log(1 + exp(-x)) = m + log(exp(-m) + exp(-x - m)) with m = max(-x, 0), in ops: no
 * term overflows, and the derivative of m cancels. */
static ct_tensor *softplus_neg(ct_tensor *x) {
    ct_tensor *m = ct_clamp(ct_neg(x), .min = CT_SOME(0));
    return ct_add(ct_log(ct_add(ct_exp(ct_neg(m)), ct_exp(ct_sub(ct_neg(x), m)))), m);
}

static const ct_pw_spec BCEL_BWD = {CT_OP_binary_cross_entropy_with_logits_backward,
                                     CT_PW_PROMOTE, 0};

/* PyTorch's formulas, p the pos_weight (1 when none):
 * d/dx = (p y + 1 - y) sigmoid(x) - p y (one fused op),
 * d/dy = -x + (p - 1) log(1 + exp(-x)). */
bool binary_cross_entropy_with_logits_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    if (!go[0]) return true;
    ct_tensor *x = ct_node_saved(n, SV_INPUT), *y = ct_node_saved(n, SV_TARGET);
    bool has_pw = n->state.loss.has_pos_weight;
    ct_tensor *pw = has_pw ? ct_node_saved(n, SV_POS_WEIGHT) : NULL;
    ct_tensor *g = x && y && (pw || !has_pw) ? ct_pw_loss_grad(n, go[0]) : NULL;
    if (!g) return false;
    if (n->needs_grad[0] && !(gi[0] = ct_pw_loss_backward(&BCEL_BWD, x, y, pw, g, 0)))
        return false;
    if (n->needs_grad[1]) {
        ct_tensor *d = ct_neg(x);
        if (pw) d = ct_add(d, ct_mul(ct_sub_scalar(pw, 1), softplus_neg(x)));
        if (!(gi[1] = ct_mul(d, g))) return false;
    }
    return true;
}

/* Of D g with D = (p y + 1 - y) s - p y, s = sigmoid(x):
 * dD/dx = (p y + 1 - y) s (1 - s),  dD/dy = (p - 1) s - p (without p: s (1 - s), -1). */
bool binary_cross_entropy_with_logits_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *gg, *x, *y, *pw;
    if (!ct_pw_loss_backward_backward(n, go, gi, &gg, &x, &y, &pw)) return false;
    if (!gg) return true;
    ct_tensor *s = ct_sigmoid(x);
    if (n->needs_grad[0]) {
        ct_tensor *ds = ct_mul(s, ct_rsub_scalar(s, 1));
        if (pw) ds = ct_mul(ds, ct_sub(ct_add_scalar(ct_mul(pw, y), 1), y));
        if (!(gi[0] = ct_mul(gg, ds))) return false;
    }
    if (n->needs_grad[1])
        gi[1] = pw ? ct_mul(gg, ct_sub(ct_mul(ct_sub_scalar(pw, 1), s), pw)) : ct_neg(gg);
    return !n->needs_grad[1] || gi[1];
}
