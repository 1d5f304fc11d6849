#include <string.h>

#include "autograd/node.h"
#include "ops/reduce_plan.h"

bool ct_reduce_plan_make(const char *op, const ct_tensor *t, ct_dims dims, bool keepdim,
                         ct_reduce_plan *p) {
    memset(p, 0, sizeof *p);
    if (dims.n == 0) {
        for (int d = 0; d < t->ndim; d++) p->reduced[d] = true;
    }
    for (int i = 0; i < dims.n; i++) {
        int d = ct_wrap_dim(op, dims.d[i], t->ndim);
        if (d < 0) return false;
        if (t->ndim == 0) continue;
        if (p->reduced[d]) {
            ct_error("%s: dim %d appears multiple times in the list of dims", op, d);
            return false;
        }
        p->reduced[d] = true;
    }
    p->M = 1;
    p->R = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (p->reduced[d]) {
            p->R *= t->sizes[d];
            p->kept_sizes[d] = 1;
            if (keepdim) p->out_sizes[p->out_ndim++] = 1;
        } else {
            p->M *= t->sizes[d];
            p->kept_sizes[d] = t->sizes[d];
            p->out_sizes[p->out_ndim++] = t->sizes[d];
        }
    }
    return true;
}

ct_tensor *ct_reduce_input(ct_tensor *t, const ct_reduce_plan *p) {
    int64_t sizes[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < t->ndim; d++)
            if (p->reduced[d] == (pass == 1)) {
                sizes[n] = t->sizes[d];
                strides[n++] = t->strides[d];
            }
    ct_tensor *v = ct_tensor_view_of(t, n, sizes, strides, t->offset);
    if (!v || ct_tensor_is_contiguous(v)) return v;
    ct_tensor *c = ct_cast_new(v, v->dtype);
    ct_release(v);
    return c;
}

ct_tensor *ct_reduce_grad_expand(ct_tensor *g, const ct_node *n, bool keepdim) {
    const ct_input_meta *m = &n->in_meta[0];
    ct_shape kept = {.ndim = m->ndim}, full = {.ndim = m->ndim};
    memcpy(full.d, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    /* Reduced dims were recorded in iargs as a bit mask. */
    for (int d = 0; d < m->ndim; d++) kept.d[d] = (n->iargs[0] >> d & 1) ? 1 : m->sizes[d];
    ct_tensor *r = keepdim ? g : ct_reshape(g, kept);
    return ct_expand(r, full);
}
