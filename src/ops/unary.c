/* Unary math ops: forward through ct_pointwise, backward in terms of ops. */
#include <math.h>

#include "ops/trace.h"
#include "ops/unary.h"

/* op's schema attributes from its kernel arguments a. */
static void attrs_of(ct_op_id op, const ct_pw_args *a, ct_op_attrs *at) {
    switch (op) {
    case CT_OP_leaky_relu: at->leaky_relu = (ct_leaky_relu_attrs){a->a}; break;
    case CT_OP_elu: at->elu = (ct_elu_attrs){a->a, 1, 1}; break;
    case CT_OP_gelu: at->gelu.approximate = a->i ? "tanh" : "none"; break;
    case CT_OP_softplus: at->softplus = (ct_softplus_attrs){a->a, a->b}; break;
    case CT_OP_hardtanh: at->hardtanh = (ct_hardtanh_attrs){a->a, a->b}; break;
    case CT_OP_nan_to_num:
        at->nan_to_num = (ct_nan_to_num_attrs){{true, a->a}, {true, a->b}, {true, a->c}};
        break;
    case CT_OP_clamp: at->clamp = (ct_clamp_attrs){{a->has_a, a->a}, {a->has_b, a->b}}; break;
    case CT_OP_pow_scalar: at->pow_scalar.exponent = a->a; break;
    case CT_OP_rpow_scalar: at->rpow_scalar.self = a->a; break;
    default: break;
    }
}

ct_tensor *ct_unary_op(const ct_unary_spec *u, ct_tensor *x, const ct_pw_args *args,
                       bool inplace) {
    if (!x) return NULL;
    ct_pw_spec spec = {u->op, u->result, 0};
    /* An in-place op whose backward reads the input keeps a copy of it first. */
    ct_tensor *before = NULL;
    if (inplace && u->save == CT_SAVE_INPUT && ct_any_requires_grad(1, &x)) {
        if (!(before = ct_cast_new(ct_ops[u->op].fn, x, x->dtype))) return NULL;
    }
    ct_tensor *out = ct_pointwise(&spec, 1, &x, inplace ? x : NULL, args);
    if (!out) {
        ct_release(before);
        return NULL;
    }
    ct_node *n = ct_node_record(u->op, 1, &x, 1);
    if (n) {
        if (args) attrs_of(u->op, args, &n->attrs);
        if (u->save == CT_SAVE_INPUT) ct_node_save(n, 0, before ? before : x, false);
        if (u->save == CT_SAVE_OUTPUT) ct_node_save(n, 0, out, true);
        if (inplace) ct_rebase_history(n, out);
        else ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    ct_release(before);
    if (__builtin_expect(ct_trace_active != 0, 0)) {
        ct_op_attrs at = {0}; /* ops with attributes pass args */
        if (args) attrs_of(u->op, args, &at);
        CT_TRACE_ATTRS(u->op, 1, &x, 1, &out, &at);
    }
    return ct_ret(out);
}

ct_tensor *ct_mask_grad(ct_tensor *mask, ct_tensor *g) {
    if (!mask || !g) return NULL;
    ct_tensor *r = NULL;
    CT_SCOPE {
        ct_tensor *zero = ct_zeros_with(
            CT_SHAPE(), (ct_tensor_options){.dtype = g->dtype, .device = g->storage->device});
        r = ct_keep(ct_where(mask, g, zero));
    }
    return r;
}

#define FLOAT_OP(NAME, SAVE) \
    static const ct_unary_spec NAME##_SPEC = {CT_OP_##NAME, CT_PW_PROMOTE_FLOAT, SAVE}; \
    ct_tensor *ct_##NAME(ct_tensor *x) {                                               \
        if (!ct_alive("ct_" #NAME, 1, x)) return NULL;                                \
        return ct_unary_op(&NAME##_SPEC, x, NULL, false);                              \
    }
FLOAT_OP(exp, CT_SAVE_OUTPUT)
FLOAT_OP(log, CT_SAVE_INPUT)
FLOAT_OP(reciprocal, CT_SAVE_OUTPUT)
FLOAT_OP(expm1, CT_SAVE_OUTPUT)
FLOAT_OP(log1p, CT_SAVE_INPUT)
FLOAT_OP(log2, CT_SAVE_INPUT)
FLOAT_OP(sqrt, CT_SAVE_OUTPUT)
FLOAT_OP(rsqrt, CT_SAVE_OUTPUT)
FLOAT_OP(sin, CT_SAVE_INPUT)
FLOAT_OP(cos, CT_SAVE_INPUT)
FLOAT_OP(tanh, CT_SAVE_OUTPUT)
FLOAT_OP(sigmoid, CT_SAVE_OUTPUT)
FLOAT_OP(erf, CT_SAVE_INPUT)

static const ct_unary_spec NEG = {CT_OP_neg, CT_PW_PROMOTE, CT_SAVE_NONE};
static const ct_unary_spec ABS = {CT_OP_abs, CT_PW_PROMOTE, CT_SAVE_INPUT};
static const ct_unary_spec SIGN = {CT_OP_sign, CT_PW_PROMOTE, CT_SAVE_NONE};

ct_tensor *ct_neg(ct_tensor *x) {
    if (!ct_alive("ct_neg", 1, x)) return NULL;
    if (x && x->dtype == CT_BOOL) {
        ct_error("ct_neg: Negation, the `-` operator, on a bool tensor is not supported. If you "
                 "are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
        return NULL;
    }
    return ct_unary_op(&NEG, x, NULL, false);
}
ct_tensor *ct_abs(ct_tensor *x) {
    if (!ct_alive("ct_abs", 1, x)) return NULL;
    return ct_unary_op(&ABS, x, NULL, false);
}
ct_tensor *ct_sign(ct_tensor *x) {
    if (!ct_alive("ct_sign", 1, x)) return NULL;
    return ct_unary_op(&SIGN, x, NULL, false);
}

/* ---- backward formulas (derivatives.yaml) ---- */

#define SAVED(n) ct_node_saved(n, 0)

bool neg_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    return (gi[0] = ct_neg(go[0])) != NULL;
}
bool exp_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_mul(go[0], SAVED(n))) != NULL;
}
bool log_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_div(go[0], SAVED(n))) != NULL;
}
/* -g * out^2 */
bool reciprocal_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *out = SAVED(n);
    return (gi[0] = ct_neg(ct_mul(go[0], ct_mul(out, out)))) != NULL;
}
/* g * (out + 1) */
bool expm1_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_mul(go[0], ct_add_scalar(SAVED(n), 1))) != NULL;
}
/* g / (x + 1) */
bool log1p_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_div(go[0], ct_add_scalar(SAVED(n), 1))) != NULL;
}
/* g / (x ln 2) */
bool log2_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_div(go[0], ct_mul_scalar(SAVED(n), M_LN2))) != NULL;
}
/* g / (2 out) */
bool sqrt_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_div(go[0], ct_mul_scalar(SAVED(n), 2))) != NULL;
}
/* -0.5 g out^3 */
bool rsqrt_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *out = SAVED(n);
    return (gi[0] = ct_mul_scalar(ct_mul(go[0], ct_mul(out, ct_mul(out, out))), -0.5)) != NULL;
}
/* g * sign(x): the subgradient 0 at x == 0, as PyTorch. */
bool abs_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_mul(go[0], ct_sign(SAVED(n)))) != NULL;
}
bool sign_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    return (gi[0] = ct_zeros_like_with(go[0], (ct_tensor_options){0})) != NULL;
}
bool sin_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_mul(go[0], ct_cos(SAVED(n)))) != NULL;
}
bool cos_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_neg(ct_mul(go[0], ct_sin(SAVED(n))))) != NULL;
}
/* g * (1 - out^2) */
bool tanh_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *out = SAVED(n);
    return (gi[0] = ct_mul(go[0], ct_rsub_scalar(ct_mul(out, out), 1))) != NULL;
}
/* g * out * (1 - out) */
bool sigmoid_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *out = SAVED(n);
    return (gi[0] = ct_mul(go[0], ct_mul(out, ct_rsub_scalar(out, 1)))) != NULL;
}
/* g * 2/sqrt(pi) * exp(-x^2) */
bool erf_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = SAVED(n);
    ct_tensor *d = ct_mul_scalar(ct_exp(ct_neg(ct_mul(x, x))), M_2_SQRTPI);
    return (gi[0] = ct_mul(go[0], d)) != NULL;
}
