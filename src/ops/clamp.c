/* clamp with numbers (ClampBackward1, also in place) and with tensor bounds
 * (ClampBackward0). */
#include <math.h>
#include <stdio.h>

#include "ops/host.h"
#include "ops/trace.h"
#include "ops/unary.h"

/* Saved tensors: the input; clamp_tensor's min and max too (its inputs' order). */
enum { SV_INPUT, SV_MIN, SV_MAX };

/* The range of an integer dtype, as doubles. */
static void int_range(ct_dtype t, double *lo, double *hi) {
    switch (t) {
    case CT_U8: *lo = 0, *hi = 255; break;
    case CT_I8: *lo = -128, *hi = 127; break;
    case CT_I16: *lo = -32768, *hi = 32767; break;
    case CT_I32: *lo = -2147483648.0, *hi = 2147483647.0; break;
    case CT_BOOL: *lo = 0, *hi = 1; break;
    default: *lo = -9223372036854775808.0, *hi = 9223372036854775807.0; break;
    }
}

static const ct_unary_spec CLAMP = {CT_OP_clamp, CT_PW_PROMOTE, CT_SAVE_INPUT};

static ct_tensor *clamp_scalar(ct_tensor *x, ct_clamp_options o, bool inplace) {
    if (!x) return NULL;
    const char *name = inplace ? "ct_clamp_" : "ct_clamp";
    if (!o.min.set && !o.max.set) {
        ct_error("%s: At least one of 'min' or 'max' must not be None", name);
        return NULL;
    }
    /* The result dtype promotes x with the bounds as Python numbers. */
    ct_tensor *in[3] = {x, NULL, NULL};
    int k = 1;
    bool ok = true;
    if (o.min.set) ok = (in[k++] = ct_wrap_scalar(o.min.v, x)) != NULL;
    if (ok && o.max.set) ok = (in[k++] = ct_wrap_scalar(o.max.v, x)) != NULL;
    ct_dtype rt = ok ? ct_result_type(k, in) : CT_DTYPE_UNSET;
    ct_release(in[1]);
    ct_release(in[2]);
    if (!ok) return NULL;
    if (!ct_dtype_is_floating(rt)) {
        double lo, hi;
        int_range(rt, &lo, &hi);
        if ((o.min.set && (o.min.v < lo || o.min.v > hi)) ||
            (o.max.set && (o.max.v < lo || o.max.v > hi))) {
            ct_error("%s: value cannot be converted to type %s without overflow", name,
                     ct_dtype_name(rt));
            return NULL;
        }
    }
    ct_pw_args args = {.a = o.min.v, .b = o.max.v, .has_a = o.min.set, .has_b = o.max.set};
    if (inplace) {
        if (rt != x->dtype && !(ct_dtype_is_floating(rt) && ct_dtype_is_floating(x->dtype)) &&
            ct_promote_types(rt, x->dtype) != x->dtype) {
            ct_error("%s: result type %s can't be cast to the desired output type %s", name,
                     ct_dtype_name(rt), ct_dtype_name(x->dtype));
            return NULL;
        }
        return ct_unary_op(&CLAMP, x, &args, true);
    }
    /* Only integer and bool tensors change dtype here; they never require grad. */
    ct_tensor *xc = rt == x->dtype ? ct_retain(x) : ct_cast_new("ct_clamp", x, rt);
    if (!xc) return NULL;
    ct_tensor *out = ct_unary_op(&CLAMP, xc, &args, false);
    ct_release(xc);
    return out;
}

ct_tensor *ct_clamp_with(ct_tensor *x, ct_clamp_options o) {
    if (!ct_alive("ct_clamp", 1, x)) return NULL;
    return clamp_scalar(x, o, false);
}
ct_tensor *ct_clamp_with_(ct_tensor *x, ct_clamp_options o) {
    if (!ct_alive("ct_clamp_with_", 1, x)) return NULL;
    return clamp_scalar(x, o, true);
}

/* g where min <= x <= max (only the given bounds). */
bool clamp_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = ct_node_saved(n, SV_INPUT);
    if (!x) return false;
    const ct_clamp_attrs *a = &n->attrs.clamp;
    ct_tensor *mask;
    if (a->min.some && a->max.some)
        mask = ct_logical_and(ct_ge_scalar(x, a->min.v), ct_le_scalar(x, a->max.v));
    else if (a->min.some)
        mask = ct_ge_scalar(x, a->min.v);
    else
        mask = ct_le_scalar(x, a->max.v);
    return (gi[0] = ct_mask_grad(mask, go[0])) != NULL;
}

/* A 0-d tensor of dtype t holding the lowest (or highest) value: a missing bound. */
static ct_tensor *open_bound(ct_dtype t, bool high) {
    double lo = -INFINITY, hi = INFINITY;
    if (!ct_dtype_is_floating(t)) int_range(t, &lo, &hi);
    ct_tensor *b = ct_tensor_new("ct_clamp", CT_SHAPE(), t, CT_CPU);
    ct_host_buf hb;
    void *v = b ? ct_host_write("ct_clamp", b, &hb) : NULL;
    if (!v) {
        ct_release(b);
        return NULL;
    }
    if (t == CT_I64) ct_store_i64(v, t, high ? INT64_MAX : INT64_MIN);
    else ct_store_f64(v, t, high ? hi : lo);
    ct_host_release(&hb);
    return b;
}

ct_tensor *ct_clamp_tensor(ct_tensor *x, ct_tensor *min, ct_tensor *max) {
    if (!ct_alive("ct_clamp_tensor", 1, x) || !ct_alive("ct_clamp_tensor", 2, min) ||
        !ct_alive("ct_clamp_tensor", 3, max))
        return NULL;
    if (!x) return NULL;
    if (!min && !max) {
        ct_error("ct_clamp_tensor: At least one of 'min' or 'max' must not be None");
        return NULL;
    }
    ct_tensor *given[3] = {x}, *owned[2] = {NULL, NULL};
    int k = 1;
    if (min) given[k++] = min;
    if (max) given[k++] = max;
    ct_dtype rt = ct_result_type(k, given);
    ct_tensor *lo = min ? min : (owned[0] = open_bound(rt, false));
    ct_tensor *hi = max ? max : (owned[1] = open_bound(rt, true));
    ct_tensor *out = NULL;
    if (lo && hi) {
        ct_pw_spec spec = {CT_OP_clamp_tensor, CT_PW_PROMOTE, 0};
        ct_tensor *in[3] = {x, lo, hi};
        out = ct_pointwise(&spec, 3, in, NULL, NULL);
    }
    ct_release(owned[0]);
    ct_release(owned[1]);
    if (!out) return NULL;
    ct_tensor *rec[3] = {x, min, max};
    ct_node *n = ct_node_record(CT_OP_clamp_tensor, 3, rec, 1);
    if (n) {
        for (int i = 0; i < 3; i++)
            if (rec[i]) ct_node_save(n, i, rec[i], false);
        n->state.clamp_tensor = (ct_clamp_tensor_state){min != NULL, max != NULL};
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    CT_TRACE(CT_OP_clamp_tensor, 3, rec, 1, &out);
    return ct_ret(out);
}

/* PyTorch's clamp_backward and clamp_backward_min_max: x gets g inside the bounds; min
 * gets g where x < min (and min < max), max where x > max (or max < min). */
bool clamp_tensor_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    bool has_min = n->state.clamp_tensor.has_min, has_max = n->state.clamp_tensor.has_max;
    ct_tensor *x = ct_node_saved(n, SV_INPUT);
    ct_tensor *lo = has_min ? ct_node_saved(n, SV_MIN) : NULL, *hi = has_max ? ct_node_saved(n, SV_MAX) : NULL;
    if (!x || (has_min && !lo) || (has_max && !hi)) return false;
    if (n->needs_grad[0]) {
        ct_tensor *mask = has_min && has_max ? ct_logical_and(ct_ge(x, lo), ct_le(x, hi))
                          : has_min          ? ct_ge(x, lo)
                                             : ct_le(x, hi);
        if (!(gi[0] = ct_mask_grad(mask, go[0]))) return false;
    }
    if (n->needs_grad[1]) {
        ct_tensor *mask = has_max ? ct_logical_and(ct_lt(x, lo), ct_lt(lo, hi)) : ct_lt(x, lo);
        if (!(gi[1] = ct_mask_grad(mask, go[0]))) return false;
    }
    if (n->needs_grad[2]) {
        ct_tensor *mask = has_min ? ct_logical_or(ct_gt(x, hi), ct_lt(hi, lo)) : ct_gt(x, hi);
        if (!(gi[2] = ct_mask_grad(mask, go[0]))) return false;
    }
    return true;
}
