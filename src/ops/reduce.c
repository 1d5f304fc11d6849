/* Reductions: sum (and the engine's sum_to_size). */
#include <string.h>

#include "autograd/node.h"
#include "cpu/reduce.h"
#include "ops/reduce_plan.h"

static int64_t dims_mask(const ct_reduce_plan *p, int ndim) {
    int64_t mask = 0;
    for (int d = 0; d < ndim; d++)
        if (p->reduced[d]) mask |= (int64_t)1 << d;
    return mask;
}

ct_tensor *ct_sum_with(ct_tensor *t, ct_reduce_options o) {
    if (!t) return NULL;
    ct_reduce_plan p;
    if (!ct_reduce_plan_make("ct_sum", t, o.dims, o.keepdim, &p)) return NULL;
    ct_dtype out_dt = o.dtype ? o.dtype : ct_dtype_is_floating(t->dtype) ? t->dtype : CT_I64;
    /* Accumulate in the output dtype; reduced floats go through float32. */
    ct_dtype acc = (out_dt == CT_F16 || out_dt == CT_BF16) ? CT_F32 : out_dt;
    ct_reduce_fn k = (ct_reduce_fn)ct_kernel_for(CT_OP_sum, t->storage->device,
                                                 ct_dtype_is_floating(acc) ? acc : t->dtype);
    if (!k) return NULL;
    ct_tensor *src = t;
    if (ct_dtype_is_floating(acc) && t->dtype != acc) src = ct_cast_new(t, acc);
    ct_tensor *x = src ? ct_reduce_input(src, &p) : NULL;
    if (src != t) ct_release(src);
    if (!x) return NULL;
    ct_dtype kout = ct_dtype_is_floating(acc) ? acc : CT_I64;
    ct_shape s = {.ndim = p.out_ndim};
    memcpy(s.d, p.out_sizes, sizeof(int64_t) * (size_t)p.out_ndim);
    ct_tensor *out = ct_tensor_new(s, kout, t->storage->device);
    if (out) {
        if (p.R == 0)
            memset(ct_tensor_data(out), 0, (size_t)out->numel * ct_dtype_size(kout));
        else
            k(ct_tensor_data(x), ct_tensor_data(out), p.M, p.R, NULL);
    }
    ct_release(x);
    if (out && kout != out_dt) {
        ct_tensor *c = ct_cast_new(out, out_dt);
        ct_release(out);
        out = c;
    }
    if (!out) return NULL;
    if (ct_dtype_is_floating(out_dt)) {
        ct_node *n = ct_record1(CT_OP_sum, out, 1, &t);
        if (n) {
            n->iargs[0] = dims_mask(&p, t->ndim);
            n->iargs[1] = o.keepdim;
        }
    }
    return ct_ret(out);
}

bool sum_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_reduce_grad_expand(go[0], n, n->iargs[1])) != NULL;
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
