/* Activations (relu, leaky_relu, elu, gelu, silu, softplus, hardtanh) and nan_to_num:
 * one-input ops with scalar arguments, backward in terms of ops. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops/trace.h"
#include "ops/options.h"
#include "ops/unary.h"

static const ct_unary_spec RELU = {CT_OP_relu, CT_PW_PROMOTE, CT_SAVE_OUTPUT};
static const ct_unary_spec LEAKY = {CT_OP_leaky_relu, CT_PW_PROMOTE, CT_SAVE_INPUT};
static const ct_unary_spec ELU = {CT_OP_elu, CT_PW_PROMOTE, CT_SAVE_INPUT};
static const ct_unary_spec GELU = {CT_OP_gelu, CT_PW_PROMOTE, CT_SAVE_INPUT};
static const ct_unary_spec SILU = {CT_OP_silu, CT_PW_PROMOTE, CT_SAVE_INPUT};
static const ct_unary_spec SOFTPLUS = {CT_OP_softplus, CT_PW_PROMOTE, CT_SAVE_INPUT};
static const ct_unary_spec HARDTANH = {CT_OP_hardtanh, CT_PW_PROMOTE, CT_SAVE_INPUT};
static const ct_unary_spec NAN_TO_NUM = {CT_OP_nan_to_num, CT_PW_PROMOTE, CT_SAVE_INPUT};

static ct_tensor *relu(ct_tensor *x, bool inplace) {
    if (x && x->dtype == CT_BOOL) {
        ct_error("ct_relu%s: Boolean inputs not supported for relu", inplace ? "_" : "");
        return NULL;
    }
    return ct_unary_op(&RELU, x, NULL, inplace);
}
ct_tensor *ct_relu(ct_tensor *x) {
    if (!ct_alive("ct_relu", 1, x)) return NULL;
    return relu(x, false);
}
ct_tensor *ct_relu_(ct_tensor *x) {
    if (!ct_alive("ct_relu_", 1, x)) return NULL;
    return relu(x, true);
}

ct_leaky_relu_options ct_leaky_relu_resolve(ct_leaky_relu_options o) {
    return (ct_leaky_relu_options){.negative_slope = CT_SOME(ct_opt_or(o.negative_slope, 0.01))};
}
ct_elu_options ct_elu_resolve(ct_elu_options o) {
    return (ct_elu_options){.alpha = CT_SOME(ct_opt_or(o.alpha, 1))};
}
ct_softplus_options ct_softplus_resolve(ct_softplus_options o) {
    return (ct_softplus_options){.beta = CT_SOME(ct_opt_or(o.beta, 1)),
                                 .threshold = CT_SOME(ct_opt_or(o.threshold, 20))};
}
ct_hardtanh_options ct_hardtanh_resolve(ct_hardtanh_options o) {
    return (ct_hardtanh_options){.min_val = CT_SOME(ct_opt_or(o.min_val, -1)),
                                 .max_val = CT_SOME(ct_opt_or(o.max_val, 1))};
}

ct_tensor *ct_leaky_relu_with(ct_tensor *x, ct_leaky_relu_options o) {
    if (!ct_alive("ct_leaky_relu", 1, x)) return NULL;
    o = ct_leaky_relu_resolve(o);
    return ct_unary_op(&LEAKY, x, &(ct_pw_args){.a = o.negative_slope.v}, false);
}
ct_tensor *ct_elu_with(ct_tensor *x, ct_elu_options o) {
    if (!ct_alive("ct_elu", 1, x)) return NULL;
    return ct_unary_op(&ELU, x, &(ct_pw_args){.a = ct_elu_resolve(o).alpha.v}, false);
}
ct_tensor *ct_gelu_with(ct_tensor *x, ct_gelu_options o) {
    if (!ct_alive("ct_gelu", 1, x)) return NULL;
    if (o.approximate != CT_GELU_NONE && o.approximate != CT_GELU_TANH) {
        ct_error("ct_gelu: approximate must be CT_GELU_NONE or CT_GELU_TANH (got %d)",
                 (int)o.approximate);
        return NULL;
    }
    return ct_unary_op(&GELU, x, &(ct_pw_args){.i = o.approximate}, false);
}
ct_tensor *ct_silu(ct_tensor *x) {
    if (!ct_alive("ct_silu", 1, x)) return NULL;
    return ct_unary_op(&SILU, x, NULL, false);
}
ct_tensor *ct_softplus_with(ct_tensor *x, ct_softplus_options o) {
    if (!ct_alive("ct_softplus", 1, x)) return NULL;
    o = ct_softplus_resolve(o);
    return ct_unary_op(&SOFTPLUS, x, &(ct_pw_args){.a = o.beta.v, .b = o.threshold.v}, false);
}
ct_tensor *ct_hardtanh_with(ct_tensor *x, ct_hardtanh_options o) {
    if (!ct_alive("ct_hardtanh", 1, x)) return NULL;
    if (x && x->dtype == CT_BOOL) {
        ct_error("ct_hardtanh: Bool inputs not supported for hardtanh");
        return NULL;
    }
    o = ct_hardtanh_resolve(o);
    return ct_unary_op(&HARDTANH, x, &(ct_pw_args){.a = o.min_val.v, .b = o.max_val.v}, false);
}

/* The largest finite value of a floating dtype (nan_to_num's default for inf). */
static double float_max(ct_dtype t) {
    switch (t) {
    case CT_F16: return 65504.0;
    case CT_BF16: return 3.3895313892515355e38;
    case CT_F32: return FLT_MAX;
    default: return DBL_MAX;
    }
}

ct_tensor *ct_nan_to_num_with(ct_tensor *x, ct_nan_to_num_options o) {
    if (!ct_alive("ct_nan_to_num", 1, x)) return NULL;
    if (!x) return NULL;
    ct_pw_args a = {.a = o.nan,
                    .b = o.posinf.set ? o.posinf.v : float_max(x->dtype),
                    .c = o.neginf.set ? o.neginf.v : -float_max(x->dtype)};
    return ct_unary_op(&NAN_TO_NUM, x, &a, false);
}

/* ---- backward formulas ---- */

#define SAVED(n) ct_node_saved(n, 0)

/* PyTorch's threshold_backward(g, y, threshold): 0 where y <= threshold, else g (a NaN
 * in y passes g).  One fused pass instead of a compare and a select; recorded, so
 * relu has second derivatives. */
static ct_tensor *threshold_backward(ct_tensor *g, ct_tensor *y, double threshold) {
    static const ct_pw_spec SPEC = {CT_OP_threshold_backward, CT_PW_PROMOTE, 0};
    if (!g || !y) return NULL;
    ct_tensor *in[2] = {g, y};
    ct_tensor *out = ct_pointwise(&SPEC, 2, in, NULL, &(ct_pw_args){.a = threshold});
    if (!out) return NULL;
    ct_node *n = ct_node_record(CT_OP_threshold_backward, 2, in, 1);
    if (n) {
        n->attrs.threshold_backward.threshold = threshold;
        ct_node_save(n, 0, y, false);
        ct_node_give_output(n, out, 0);
    }
    CT_TRACE_ATTRS(CT_OP_threshold_backward, 2, in, 1, &out,
                   &(ct_threshold_backward_attrs){threshold});
    return ct_ret(out);
}
bool relu_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = threshold_backward(go[0], SAVED(n), 0)) != NULL;
}
/* Linear in g; y only selects, so its gradient is zero (none is sent). */
bool threshold_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    if (!n->needs_grad[0]) return true;
    return (gi[0] = threshold_backward(go[0], SAVED(n), n->attrs.threshold_backward.threshold)) != NULL;
}
bool leaky_relu_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = SAVED(n);
    return (gi[0] = ct_where(ct_gt_scalar(x, 0), go[0], ct_mul_scalar(go[0], n->attrs.leaky_relu.negative_slope))) != NULL;
}
/* g where x > 0, else g * alpha * exp(x) (NaN for NaN, as PyTorch) */
bool elu_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = SAVED(n);
    ct_tensor *neg = ct_mul(go[0], ct_mul_scalar(ct_exp(x), n->attrs.elu.alpha));
    return (gi[0] = ct_where(ct_gt_scalar(x, 0), go[0], neg)) != NULL;
}
/* exact: g * (Phi(x) + x phi(x)); tanh: PyTorch's GeluBackward formula. */
bool gelu_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = SAVED(n), *d;
    if (!strcmp(n->attrs.gelu.approximate, "tanh")) {
        const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
        ct_tensor *x2 = ct_mul(x, x);
        ct_tensor *inner = ct_mul_scalar(ct_add(x, ct_mul_scalar(ct_mul(x2, x), kappa)), beta);
        ct_tensor *t = ct_tanh(inner);
        ct_tensor *left_d = ct_mul_scalar(ct_add_scalar(t, 1), 0.5);
        ct_tensor *right_d = ct_mul(ct_mul(ct_mul_scalar(x, 0.5), ct_rsub_scalar(ct_mul(t, t), 1)),
                                    ct_mul_scalar(ct_add_scalar(ct_mul_scalar(x2, 3 * kappa), 1), beta));
        d = ct_add(left_d, right_d);
    } else {
        ct_tensor *cdf = ct_mul_scalar(ct_add_scalar(ct_erf(ct_mul_scalar(x, M_SQRT1_2)), 1), 0.5);
        ct_tensor *pdf = ct_mul_scalar(ct_exp(ct_mul_scalar(ct_mul(x, x), -0.5)),
                                       M_2_SQRTPI * M_SQRT1_2 * 0.5);
        d = ct_add(cdf, ct_mul(x, pdf));
    }
    return (gi[0] = ct_mul(go[0], d)) != NULL;
}
/* g * s * (1 + x (1 - s)), s = sigmoid(x) */
bool silu_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = SAVED(n), *s = ct_sigmoid(x);
    ct_tensor *d = ct_mul(s, ct_add_scalar(ct_mul(x, ct_rsub_scalar(s, 1)), 1));
    return (gi[0] = ct_mul(go[0], d)) != NULL;
}
/* g where beta x > threshold, else g * sigmoid(beta x) */
bool softplus_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *z = ct_mul_scalar(SAVED(n), n->attrs.softplus.beta);
    ct_tensor *lin = ct_gt_scalar(z, n->attrs.softplus.threshold);
    return (gi[0] = ct_where(lin, go[0], ct_mul(go[0], ct_sigmoid(z)))) != NULL;
}
/* g where min_val < x < max_val */
bool hardtanh_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = SAVED(n);
    const ct_hardtanh_attrs *a = &n->attrs.hardtanh;
    ct_tensor *in = ct_logical_and(ct_gt_scalar(x, a->min_val), ct_lt_scalar(x, a->max_val));
    return (gi[0] = ct_mask_grad(in, go[0])) != NULL;
}
/* g where x is finite */
bool nan_to_num_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_mask_grad(ct_isfinite(SAVED(n)), go[0])) != NULL;
}
