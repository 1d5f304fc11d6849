/* var, std, vector norms, logsumexp. */
#include <math.h>
#include <string.h>

#include "autograd/node.h"
#include "kernels/reduce.h"
#include "kernels/reduce_mask.h"
#include "kernels/softmax.h"
#include "ops/pointwise.h"
#include "ops/options.h"
#include "ops/reduce_plan.h"
#include "ops/trace.h"

/* Saved tensors: the input, and the result where the formula reuses it. */
enum { SV_SELF, SV_RESULT };

/* ---- var / std -------------------------------------------------------- */

/* Two passes: the mean, then the squared deviations summed in double (cancellation
 * of a one-pass formula would lose the small variance of large values). */
static ct_tensor *var_std(ct_op_id op, const char *name, ct_tensor *t, ct_var_options o) {
    if (!t) return NULL;
    if (!ct_dtype_is_floating(t->dtype)) {
        ct_error("%s: std and var only support floating point and complex dtypes (got %s)",
                 name, ct_dtype_name(t->dtype));
        return NULL;
    }
    ct_reduce_plan p;
    if (!ct_reduce_plan_make(name, t, o.dims, o.keepdim, &p)) return NULL;
    double c = ct_opt_or(o.correction, 1);
    double denom = fmax(0.0, (double)p.R - c);
    ct_tensor *out = NULL;
    ct_trace_mute(); /* var and std report themselves, not the ops they are made of */
    CT_SCOPE {
        CT_NO_GRAD {
            /* sqrt(sum d^2) by the norm kernel (squared for var: 2 ulp). */
            ct_tensor *d = ct_sub(t, ct_mean_with(t, (ct_reduce_options){.dims = o.dims,
                                                                         .keepdim = true}));
            ct_norm_options no = {.dims = o.dims, .keepdim = o.keepdim};
            ct_tensor *nrm = ct_norm_with(d, no);
            out = op == CT_OP_var ? ct_div_scalar(ct_mul(nrm, nrm), denom)
                                  : ct_div_scalar(nrm, sqrt(denom));
            ct_retain(out);
        }
    }
    ct_trace_unmute();
    if (!out) return NULL;
    ct_node *n = ct_reduce_record(op, out, t, &p, o.keepdim);
    if (n) {
        n->state.reduce.scale = denom;
        ct_node_save(n, SV_SELF, t, false);
        if (op == CT_OP_std) ct_node_save(n, SV_RESULT, out, true);
    }
    CT_TRACE_ATTRS(op, 1, &t, 1, &out, /* var's and std's are alike */
                   &(ct_var_attrs){ct_attr_dims(o.dims.n ? o.dims.n : -1, o.dims.d),
                                   CT_ATTR_SOME(c), o.keepdim});
    return ct_ret(out);
}

ct_tensor *ct_var_with(ct_tensor *t, ct_var_options o) {
    if (!ct_alive("ct_var", 1, t)) return NULL;
    return var_std(CT_OP_var, "ct_var", t, o);
}
ct_tensor *ct_std_with(ct_tensor *t, ct_var_options o) {
    if (!ct_alive("ct_std", 1, t)) return NULL;
    return var_std(CT_OP_std, "ct_std", t, o);
}

/* d var / dx = 2 (x - mean) / (N - correction). */
static ct_tensor *centered(ct_tensor *x, const ct_node *n) {
    return ct_sub(x, ct_mean_with(x, (ct_reduce_options){.dims = ct_reduce_dims_of(n), .keepdim = true}));
}

bool var_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = ct_node_saved(n, SV_SELF);
    if (!x) return false;
    ct_tensor *g = ct_mul_scalar(ct_reduce_kept(go[0], n), 2.0 / n->state.reduce.scale);
    return (gi[0] = ct_mul(g, centered(x, n))) != NULL;
}

/* d std / dx = (x - mean) / ((N - correction) std); 0 where std == 0 (x == mean). */
bool std_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = ct_node_saved(n, SV_SELF), *y = ct_node_saved(n, SV_RESULT);
    if (!x || !y) return false;
    ct_tensor *s = ct_reduce_kept(y, n);
    ct_tensor *safe = ct_add(s, ct_reduce_mask(s, ct_ret(ct_wrap_scalar(0, s)), CT_MASK_EQ));
    ct_tensor *g = ct_div(ct_reduce_kept(go[0], n), ct_mul_scalar(safe, n->state.reduce.scale));
    return (gi[0] = ct_mul(g, centered(x, n))) != NULL;
}

/* ---- vector norms ----------------------------------------------------- */

ct_tensor *ct_norm_with(ct_tensor *t, ct_norm_options o) {
    if (!ct_alive("ct_norm", 1, t)) return NULL;
    if (!t) return NULL;
    if (!ct_dtype_is_floating(t->dtype)) {
        ct_error("ct_norm: linalg.vector_norm: Expected a floating point or complex tensor "
                 "as input. Got %s", ct_dtype_torch_name(t->dtype));
        return NULL;
    }
    double pv = ct_opt_or(o.p, 2);
    ct_norm_kind kind;
    if (pv == 0) kind = CT_NORM_L0;
    else if (pv == 1) kind = CT_NORM_L1;
    else if (pv == 2) kind = CT_NORM_L2;
    else if (pv == INFINITY) kind = CT_NORM_LINF;
    else if (pv == -INFINITY) kind = CT_NORM_LNINF;
    else {
        ct_error("ct_norm: p = %g is not supported (expected 0, 1, 2, INFINITY or -INFINITY)", pv);
        return NULL;
    }
    ct_reduce_plan p;
    if (!ct_reduce_plan_make("ct_norm", t, o.dims, o.keepdim, &p)) return NULL;
    if ((kind == CT_NORM_LINF || kind == CT_NORM_LNINF) && p.R == 0 && p.M > 0) {
        ct_error("ct_norm: linalg.vector_norm cannot compute the %g norm on an empty tensor "
                 "because the operation does not have an identity", pv);
        return NULL;
    }
    ct_dtype k = ct_compute_dtype_for(CT_OP_norm, t->storage->device, t->dtype);
    ct_tensor *out = ct_reduce_run(CT_OP_norm, t, &p, k, k, t->dtype, &kind);
    if (!out) return NULL;
    ct_node *n = ct_reduce_record(CT_OP_norm, out, t, &p, o.keepdim);
    if (n) {
        n->state.reduce.kind = kind;
        ct_node_save(n, SV_SELF, t, false);
        ct_node_save(n, SV_RESULT, out, true);
    }
    CT_TRACE_ATTRS(CT_OP_norm, 1, &t, 1, &out,
                   &(ct_norm_attrs){pv, ct_attr_dims(o.dims.n ? o.dims.n : -1, o.dims.d),
                                    o.keepdim, CT_DTYPE_UNSET});
    return ct_ret(out);
}

bool norm_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = ct_node_saved(n, SV_SELF), *y = ct_node_saved(n, SV_RESULT);
    if (!x || !y) return false;
    ct_tensor *g = ct_reduce_kept(go[0], n), *yk = ct_reduce_kept(y, n);
    switch ((ct_norm_kind)n->state.reduce.kind) {
    case CT_NORM_L0:
        gi[0] = ct_mul_scalar(ct_expand(g, ct_shape_of(x)), 0);
        break;
    case CT_NORM_L1:
        gi[0] = ct_mul(g, ct_reduce_mask(x, x, CT_MASK_SIGN));
        break;
    case CT_NORM_L2: { /* g x / norm, 0 where the norm is 0 (then x is 0 too) */
        ct_tensor *safe = ct_add(yk, ct_reduce_mask(yk, ct_ret(ct_wrap_scalar(0, yk)), CT_MASK_EQ));
        gi[0] = ct_mul(ct_div(g, safe), x);
    } break;
    default: { /* +-inf: split evenly among the elements whose |x| is the norm */
        ct_tensor *mask = ct_reduce_mask(x, yk, CT_MASK_ABS_EQ);
        ct_tensor *count = ct_sum_with(mask, (ct_reduce_options){.dims = ct_reduce_dims_of(n),
                                                                 .keepdim = true});
        ct_tensor *w = ct_div(ct_mul(mask, ct_reduce_mask(x, x, CT_MASK_SIGN)), count);
        gi[0] = ct_mul(g, w);
    } break;
    }
    return gi[0] != NULL;
}

/* ---- logsumexp -------------------------------------------------------- */

/* max + log(sum(exp(x - max))) by the fused softmax kernel; integers compute in the
 * default float dtype. */
ct_tensor *ct_logsumexp_with(ct_tensor *t, ct_reduce_options o) {
    if (!ct_alive("ct_logsumexp", 1, t)) return NULL;
    if (!t) return NULL;
    ct_reduce_plan p;
    if (!ct_reduce_plan_make("ct_logsumexp", t, o.dims, o.keepdim, &p)) return NULL;
    ct_dtype out_dt = ct_dtype_is_floating(t->dtype) ? t->dtype : ct_get_default_dtype();
    ct_dtype k = ct_compute_dtype_for(CT_OP_softmax, t->storage->device, out_dt);
    ct_softmax_fn fn = ct_kernel_softmax_for(CT_OP_softmax, t->storage->device, k);
    if (!fn) return NULL;
    int64_t M1 = 0, M2 = 0;
    ct_tensor *x = ct_reduce_block("ct_logsumexp", t, &p, k, &M1, &M2);
    if (!x) return NULL;
    ct_tensor *out = ct_tensor_new("ct_logsumexp", ct_reduce_out_shape(&p), k, t->storage->device);
    if (out) fn(CT_LOGSUMEXP, ct_tensor_data(x), NULL, ct_tensor_data(out), M1, p.R, M2);
    ct_release(x);
    out = ct_cast_result("ct_logsumexp", out, out_dt);
    if (!out) return NULL;
    ct_node *n = ct_reduce_record(CT_OP_logsumexp, out, t, &p, o.keepdim);
    if (n) {
        ct_node_save(n, SV_SELF, t, false);
        ct_node_save(n, SV_RESULT, out, true);
    }
    CT_TRACE_ATTRS(CT_OP_logsumexp, 1, &t, 1, &out, &(ct_logsumexp_attrs){o.dims, o.keepdim});
    return ct_ret(out);
}

/* d/dx = exp(x - logsumexp) (the softmax). */
bool logsumexp_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = ct_node_saved(n, SV_SELF), *y = ct_node_saved(n, SV_RESULT);
    if (!x || !y) return false;
    ct_tensor *sm = ct_exp(ct_sub(x, ct_reduce_kept(y, n)));
    return (gi[0] = ct_mul(ct_reduce_kept(go[0], n), sm)) != NULL;
}
