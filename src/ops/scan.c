/* cumsum and cumprod (with the reverse / exclusive variants their backward formulas
 * use). */
#include <string.h>

#include "autograd/node.h"
#include "kernels/scan.h"
#include "ops/reduce_plan.h"
#include "ops/trace.h"

/* Saved tensors of cumprod. */
enum { SV_SELF, SV_RESULT };

/* t's data as a contiguous [M1, L, M2] block around dim (a copy when t is not
 * contiguous or not of dtype k); unregistered. */
static ct_tensor *scan_block(const char *op, ct_tensor *t, int dim, ct_dtype k, int64_t *M1,
                             int64_t *L, int64_t *M2) {
    *M1 = *M2 = 1;
    *L = t->ndim ? t->sizes[dim] : 1;
    for (int d = 0; d < t->ndim; d++) {
        if (d < dim) *M1 *= t->sizes[d];
        if (d > dim) *M2 *= t->sizes[d];
    }
    if (t->dtype == k && ct_tensor_is_contiguous(t)) return ct_retain(t);
    return ct_cast_new(op, t, k);
}

ct_tensor *ct_scan(ct_op_id op, ct_tensor *t, int64_t dim, bool reverse, bool exclusive,
                   ct_dtype dtype) {
    if (!t) return NULL;
    const char *name = op == CT_OP_cumsum ? "ct_cumsum" : "ct_cumprod";
    int d = ct_wrap_dim(name, dim, t->ndim);
    if (d < 0) return NULL;
    ct_dtype out_dt = dtype ? dtype : ct_dtype_is_floating(t->dtype) ? t->dtype : CT_I64;
    ct_dtype kin, kout;
    ct_reduce_kernel_dtypes(op, t->storage->device, t->dtype, out_dt, &kin, &kout);
    ct_scan_fn fn = ct_kernel_scan_for(op, t->storage->device, kin);
    if (!fn) return NULL;
    int64_t M1, L, M2;
    ct_tensor *x = scan_block(ct_ops[op].fn, t, d, kin, &M1, &L, &M2);
    if (!x) return NULL;
    ct_tensor *out = ct_tensor_new(ct_ops[op].fn, ct_shape_of(t), kout, t->storage->device);
    ct_scan_args args = {reverse, exclusive};
    if (out) fn(ct_tensor_data(x), ct_tensor_data(out), M1, L, M2, &args);
    ct_release(x);
    out = ct_cast_result(ct_ops[op].fn, out, out_dt);
    if (!out) return NULL;
    if (ct_dtype_is_floating(out_dt)) {
        ct_node *n = ct_record1(op, out, 1, &t);
        if (n) {
            n->state.scan = (ct_scan_state){(int)d, reverse, exclusive};
            if (op == CT_OP_cumprod) {
                ct_node_save(n, SV_SELF, t, false);
                ct_node_save(n, SV_RESULT, out, true);
            }
        }
    }
    /* (the reversed and exclusive scans of backward formulas report as the op too) */
    CT_TRACE_ATTRS(op, 1, &t, 1, &out, &(ct_cumsum_attrs){dim, dtype}); /* cumprod's alike */
    return ct_ret(out);
}

ct_tensor *ct_cumsum_with(ct_tensor *t, int64_t dim, ct_scan_options o) {
    if (!ct_alive("ct_cumsum", 1, t)) return NULL;
    return ct_scan(CT_OP_cumsum, t, dim, false, false, o.dtype);
}
ct_tensor *ct_cumprod_with(ct_tensor *t, int64_t dim, ct_scan_options o) {
    if (!ct_alive("ct_cumprod", 1, t)) return NULL;
    return ct_scan(CT_OP_cumprod, t, dim, false, false, o.dtype);
}

/* The transpose of a running sum is the running sum the other way. */
bool cumsum_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    const ct_scan_state *s = &n->state.scan;
    gi[0] = ct_scan(CT_OP_cumsum, go[0], s->dim, !s->reverse, s->exclusive, 0);
    return gi[0] != NULL;
}

/* See Note [cumprod gradient with zeros] (cpu/scan.c): the kernel is exact with
 * zeros but not differentiable, so when the backward itself is recorded
 * (create_graph) the formula is written with ops: reversed cumsum(g * y) / x, valid
 * without zeros. */
bool cumprod_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = ct_node_saved(n, SV_SELF), *y = ct_node_saved(n, SV_RESULT);
    if (!x || !y) return false;
    int dim = n->state.scan.dim;
    bool rev = n->state.scan.reverse, excl = n->state.scan.exclusive;
    if (ct_is_grad_enabled()) {
        bool nonzero = true;
        if (!ct_tensor_is_meta(x)) /* meta: no values to check */
            CT_NO_GRAD { nonzero = x->numel == 0 || ct_item(ct_all(x)) != 0; }
        if (!nonzero) {
            ct_error("ct_cumprod: double backward of cumprod at an input with zeros is not "
                     "implemented");
            return false;
        }
        gi[0] = ct_div(ct_scan(CT_OP_cumsum, ct_mul(go[0], y), dim, !rev, excl, 0), x);
        return gi[0] != NULL;
    }
    ct_dtype k = ct_compute_dtype_for(CT_OP_cumprod_grad, x->storage->device, x->dtype);
    ct_cumprod_grad_fn fn = ct_kernel_cumprod_grad_for(CT_OP_cumprod_grad,
                                                              x->storage->device, k);
    if (!fn) return false;
    int64_t M1, L, M2;
    ct_tensor *xb = scan_block(ct_ops[n->op].fn, x, dim, k, &M1, &L, &M2);
    ct_tensor *gb = xb ? scan_block(ct_ops[n->op].fn, go[0], dim, k, &M1, &L, &M2) : NULL;
    ct_tensor *out =
        gb ? ct_tensor_new(ct_ops[n->op].fn, ct_shape_of(x), k, x->storage->device) : NULL;
    ct_scan_args args = {rev, excl};
    if (out) fn(ct_tensor_data(xb), ct_tensor_data(gb), ct_tensor_data(out), M1, L, M2, &args);
    ct_release(xb);
    ct_release(gb);
    if (out)
        CT_TRACE_ATTRS(CT_OP_cumprod_grad, 3, ((ct_tensor *[]){go[0], x, y}), 1, &out,
                       &(ct_cumprod_grad_attrs){dim});
    gi[0] = out ? ct_ret(out) : NULL;
    return gi[0] != NULL;
}
