/* pow in its three forms: tensor ** tensor (PowBackward1), tensor ** number
 * (PowBackward0), number ** tensor (PowBackward2).  Gradients at a zero base follow
 * PyTorch (see the formulas below). */
#include <math.h>

#include "ops/trace.h"
#include "ops/unary.h"

/* Saved tensors: pow's base, exponent and result (pow_scalar: the base; scalar ** tensor:
 * the result, alone). */
enum { SV_BASE, SV_EXPONENT, SV_RESULT };
enum { SV_SCALAR_POW_RESULT = 0 };

ct_tensor *ct_pow(ct_tensor *x, ct_tensor *e) {
    if (!ct_alive("ct_pow", 1, x) || !ct_alive("ct_pow", 2, e)) return NULL;
    if (!x || !e) return NULL;
    ct_pw_spec spec = {CT_OP_pow, CT_PW_PROMOTE, 0};
    ct_tensor *in[2] = {x, e};
    ct_tensor *out = ct_pointwise(&spec, 2, in, NULL, NULL);
    if (!out) return NULL;
    ct_node *n = ct_node_record(CT_OP_pow, 2, in, 1);
    if (n) {
        ct_node_save(n, SV_BASE, x, false);
        ct_node_save(n, SV_EXPONENT, e, false);
        if (n->needs_grad[1]) ct_node_save(n, SV_RESULT, out, true);
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    CT_TRACE(CT_OP_pow, 2, in, 1, &out);
    return ct_ret(out);
}

/* The dtype of x op number, and x cast to it (a new reference; x itself retained when
 * it already has that dtype).  Only integer and bool tensors change dtype here, and
 * those never require grad. */
static ct_tensor *promote_with_number(const char *op, ct_tensor *x, double v, ct_dtype *rt) {
    ct_tensor *w = ct_wrap_scalar(v, x);
    if (!w) return NULL;
    ct_tensor *in[2] = {x, w};
    *rt = ct_result_type(2, in);
    ct_release(w);
    return *rt == x->dtype ? ct_retain(x) : ct_cast_new(op, x, *rt);
}

static const ct_unary_spec POW_SCALAR = {CT_OP_pow_scalar, CT_PW_PROMOTE, CT_SAVE_INPUT};
static const ct_unary_spec RPOW_SCALAR = {CT_OP_rpow_scalar, CT_PW_PROMOTE, CT_SAVE_OUTPUT};

ct_tensor *ct_pow_scalar(ct_tensor *x, double e) {
    if (!ct_alive("ct_pow_scalar", 1, x)) return NULL;
    if (!x) return NULL;
    ct_dtype rt;
    ct_tensor *xc = promote_with_number("ct_pow", x, e, &rt);
    if (!xc) return NULL;
    if (!ct_dtype_is_floating(rt) && e < 0) {
        ct_release(xc);
        ct_error("ct_pow_scalar: Integers to negative integer powers are not allowed.");
        return NULL;
    }
    ct_tensor *out = ct_unary_op(&POW_SCALAR, xc, &(ct_pw_args){.a = e}, false);
    ct_release(xc);
    return out;
}

ct_tensor *ct_rpow_scalar(ct_tensor *x, double base) {
    if (!ct_alive("ct_rpow_scalar", 1, x)) return NULL;
    if (!x) return NULL;
    ct_dtype rt;
    ct_tensor *xc = promote_with_number("ct_pow", x, base, &rt);
    if (!xc) return NULL;
    ct_tensor *out = ct_unary_op(&RPOW_SCALAR, xc, &(ct_pw_args){.a = base}, false);
    ct_release(xc);
    return out;
}

/* d/dx: where(e == 0, 0, g * e * x^(e-1));
 * d/de: g * where(x == 0 & e >= 0, 0, out * log(x)). */
bool pow_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = ct_node_saved(n, SV_BASE), *e = ct_node_saved(n, SV_EXPONENT);
    if (!x || !e) return false;
    if (n->needs_grad[0]) {
        ct_tensor *d = ct_mul(go[0], ct_mul(e, ct_pow(x, ct_sub_scalar(e, 1))));
        if (!(gi[0] = ct_mask_grad(ct_ne_scalar(e, 0), d))) return false;
    }
    if (n->needs_grad[1]) {
        ct_tensor *out = ct_node_saved(n, SV_RESULT);
        if (!out) return false;
        ct_tensor *zero_base = ct_logical_and(ct_eq_scalar(x, 0), ct_ge_scalar(e, 0));
        ct_tensor *d = ct_mask_grad(ct_logical_not(zero_base), ct_mul(out, ct_log(x)));
        if (!(gi[1] = ct_mul(go[0], d))) return false;
    }
    return true;
}

/* 0 when e == 0, else g * e * x^(e-1). */
bool pow_scalar_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    double e = n->attrs.pow_scalar.exponent;
    if (e == 0) return (gi[0] = ct_zeros_like_with(go[0], (ct_tensor_options){0})) != NULL;
    ct_tensor *x = ct_node_saved(n, SV_BASE);
    return (gi[0] = ct_mul(go[0], ct_mul_scalar(ct_pow_scalar(x, e - 1), e))) != NULL;
}

/* g * out * log(base); for base 0: 0 where x >= 0, -inf where x < 0 (out is inf). */
bool rpow_scalar_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    double base = n->attrs.rpow_scalar.self;
    ct_tensor *out = ct_node_saved(n, SV_SCALAR_POW_RESULT);
    if (!out) return false;
    if (base != 0) return (gi[0] = ct_mul(go[0], ct_mul_scalar(out, log(base)))) != NULL;
    ct_tensor *d = ct_mul_scalar(out, -INFINITY);
    return (gi[0] = ct_mul(go[0], ct_mask_grad(ct_gt_scalar(out, 1), d))) != NULL;
}
