/* Reductions: sum, mean, prod, all, any (and the engine's sum_to_size). */
#include <string.h>

#include "autograd/node.h"
#include "kernels/reduce.h"
#include "ops/reduce_plan.h"
#include "ops/trace.h"
#include "ops/autocast.h"

/* Saved tensors of prod. */
enum { SV_SELF, SV_RESULT };

static ct_dtype arith_result(const ct_tensor *t, ct_dtype given) {
    return given ? given : ct_dtype_is_floating(t->dtype) ? t->dtype : CT_I64;
}

/* PyTorch names the all-dims form of sum/mean/prod differently (SumBackward0). */
static void name_all_dims(ct_node *n, ct_reduce_options o, const char *name) {
    if (n && o.dims.n == 0) n->name = name;
}

/* The forward shared by sum and prod: plan, PyTorch's result dtype, kernel.  Returns
 * an unregistered tensor (NULL with the error set) and fills plan and out_dt. */
static ct_tensor *arith_reduce(ct_op_id op, const char *name, ct_tensor *t, ct_reduce_options o,
                               ct_reduce_plan *p, ct_dtype *out_dt) {
    if (!t || !ct_reduce_plan_make(name, t, o.dims, o.keepdim, p)) return NULL;
    ct_dtype kin, kout;
    *out_dt = arith_result(t, o.dtype);
    ct_reduce_kernel_dtypes(op, t->storage->device, t->dtype, *out_dt, &kin, &kout);
    return ct_reduce_run(op, t, p, kin, kout, *out_dt, NULL);
}

ct_tensor *ct_sum_with(ct_tensor *t, ct_reduce_options o) {
    if (!ct_alive("ct_sum", 1, t)) return NULL;
    ct_reduce_plan p;
    ct_dtype out_dt;
    ct_tensor *out = arith_reduce(CT_OP_sum, "ct_sum", t, o, &p, &out_dt);
    if (!out) return NULL;
    if (ct_dtype_is_floating(out_dt))
        name_all_dims(ct_reduce_record(CT_OP_sum, out, t, &p, o.keepdim), o, "SumBackward0");
    if (__builtin_expect(ct_trace_active != 0, 0))
        ct_reduce_trace(CT_OP_sum, t, out, o.dims, o.keepdim, o.dtype);
    return ct_ret(out);
}

bool sum_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_reduce_grad_expand(go[0], n, n->state.reduce.keepdim)) != NULL;
}

ct_tensor *ct_mean_with(ct_tensor *t, ct_reduce_options o) {
    if (!ct_alive("ct_mean", 1, t)) return NULL;
    if (!t) return NULL;
    ct_dtype out_dt = o.dtype ? o.dtype : t->dtype;
    if (!ct_dtype_is_floating(out_dt)) {
        ct_error("ct_mean: mean(): could not infer output dtype. %s dtype must be either a "
                 "floating point or complex dtype. Got: %s", o.dtype ? "Optional" : "Input",
                 ct_dtype_torch_name(out_dt));
        return NULL;
    }
    ct_reduce_plan p;
    if (!ct_reduce_plan_make("ct_mean", t, o.dims, o.keepdim, &p)) return NULL;
    /* The kernel divides the double sum by R (0 / 0: NaN for an empty reduction). */
    ct_dtype k = ct_compute_dtype_for(CT_OP_mean, t->storage->device, out_dt);
    double scale = 1.0 / (double)p.R;
    ct_tensor *out = ct_reduce_run(CT_OP_mean, t, &p, k, k, out_dt, &scale);
    if (!out) return NULL;
    ct_node *n = ct_reduce_record(CT_OP_mean, out, t, &p, o.keepdim);
    name_all_dims(n, o, "MeanBackward0");
    if (n) n->state.reduce.scale = (double)p.R;
    if (__builtin_expect(ct_trace_active != 0, 0))
        ct_reduce_trace(CT_OP_mean, t, out, o.dims, o.keepdim, o.dtype);
    return ct_ret(out);
}

bool mean_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *g = ct_reduce_grad_expand(go[0], n, n->state.reduce.keepdim);
    return (gi[0] = ct_div_scalar(g, n->state.reduce.scale)) != NULL;
}

ct_tensor *ct_prod_with(ct_tensor *t, ct_reduce_options o) {
    if (!ct_alive("ct_prod", 1, t)) return NULL;
    CT_AUTOCAST_OP(CT_OP_prod, ct_prod_with(t, o), t);
    ct_reduce_plan p;
    ct_dtype out_dt;
    ct_tensor *out = arith_reduce(CT_OP_prod, "ct_prod", t, o, &p, &out_dt);
    if (!out) return NULL;
    if (ct_dtype_is_floating(out_dt)) {
        ct_node *n = ct_reduce_record(CT_OP_prod, out, t, &p, o.keepdim);
        name_all_dims(n, o, "ProdBackward0");
        if (n) {
            ct_node_save(n, SV_SELF, t, false);
            ct_node_save(n, SV_RESULT, out, true);
        }
    }
    if (__builtin_expect(ct_trace_active != 0, 0))
        ct_reduce_trace(CT_OP_prod, t, out, o.dims, o.keepdim, o.dtype);
    return ct_ret(out);
}

/* With zeros in x, result / x is no gradient: the product of the others is the
 * exclusive cumprod from the left times the one from the right (PyTorch's
 * prod_safe_zeros_backward), along the reduced dims flattened into the last. */
static ct_tensor *prod_others(ct_tensor *x, const ct_node *n) {
    int nd = x->ndim;
    ct_dims perm = {.n = nd}, inv = {.n = nd};
    ct_shape flat = {.ndim = 2}, permuted = {.ndim = nd};
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < nd; d++)
            if ((int)((n->state.reduce.mask >> d) & 1) == pass) perm.d[k++] = d;
    flat.d[0] = flat.d[1] = 1;
    for (int i = 0; i < nd; i++) {
        inv.d[perm.d[i]] = i;
        permuted.d[i] = x->sizes[perm.d[i]];
        flat.d[(n->state.reduce.mask >> perm.d[i]) & 1] *= x->sizes[perm.d[i]];
    }
    ct_tensor *xf = ct_reshape(ct_permute(x, perm), flat);
    ct_tensor *others = ct_mul(ct_scan(CT_OP_cumprod, xf, 1, false, true, 0),
                               ct_scan(CT_OP_cumprod, xf, 1, true, true, 0));
    return ct_permute(ct_reshape(others, permuted), inv);
}

bool prod_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = ct_node_saved(n, SV_SELF), *y = ct_node_saved(n, SV_RESULT);
    if (!x || !y) return false;
    ct_tensor *g = ct_reduce_kept(go[0], n);
    bool nonzero = true;
    /* meta: no values, so the formula that holds for zeros too */
    if (ct_tensor_is_meta(x)) nonzero = false;
    else CT_NO_GRAD { nonzero = x->numel == 0 || ct_item(ct_all(x)) != 0; }
    if (nonzero) gi[0] = ct_div(ct_mul(g, ct_reduce_kept(y, n)), x);
    else gi[0] = ct_mul(g, prod_others(x, n));
    return gi[0] != NULL;
}

/* all / any: bool results (uint8 for uint8 inputs, as PyTorch). */
static ct_tensor *logical(ct_op_id op, const char *name, ct_tensor *t, ct_reduce_options o) {
    if (!t) return NULL;
    ct_reduce_plan p;
    if (!ct_reduce_plan_make(name, t, o.dims, o.keepdim, &p)) return NULL;
    ct_dtype out_dt = t->dtype == CT_U8 ? CT_U8 : CT_BOOL;
    ct_tensor *out = ct_reduce_run(op, t, &p, ct_compute_dtype_for(op, t->storage->device, t->dtype), CT_BOOL, out_dt, NULL);
    if (__builtin_expect(ct_trace_active != 0, 0))
        ct_reduce_trace(op, t, out, o.dims, o.keepdim, CT_DTYPE_UNSET);
    return ct_ret(out);
}
ct_tensor *ct_all_with(ct_tensor *t, ct_reduce_options o) {
    if (!ct_alive("ct_all", 1, t)) return NULL;
    return logical(CT_OP_all, "ct_all", t, o);
}
ct_tensor *ct_any_with(ct_tensor *t, ct_reduce_options o) {
    if (!ct_alive("ct_any", 1, t)) return NULL;
    return logical(CT_OP_any, "ct_any", t, o);
}

ct_tensor *ct_sum_to_size(ct_tensor *g, int ndim, const int64_t *sizes) {
    /* Leading dims that broadcasting added are summed away; dims of size 1 that were
     * expanded are summed with keepdim. */
    int lead = g->ndim - ndim;
    ct_dims dims = {0};
    bool keep_only = lead == 0;
    for (int d = 0; d < g->ndim; d++)
        if (d < lead || (sizes[d - lead] == 1 && g->sizes[d] != 1)) dims.d[dims.n++] = d;
    if (dims.n == 0) return g;
    ct_tensor *out = NULL;
    CT_SCOPE {
        ct_tensor *s = ct_sum_with(g, (ct_reduce_options){.dims = dims, .keepdim = true});
        ct_shape target = {.ndim = ndim};
        memcpy(target.d, sizes, sizeof(int64_t) * (size_t)ndim);
        out = ct_keep(keep_only ? s : ct_reshape(s, target));
    }
    return out;
}
