#include <string.h>

#include "autograd/node.h"
#include "kernels/reduce.h"
#include "kernels/reduce_mask.h"
#include "ops/pointwise.h"
#include "ops/reduce_plan.h"
#include "ops/trace.h"

bool ct_reduce_plan_make(const char *op, const ct_tensor *t, ct_dims dims, bool keepdim,
                         ct_reduce_plan *p) {
    memset(p, 0, sizeof *p);
    if (dims.n < 0 || dims.n > CT_MAX_DIMS) {
        ct_error("%s: invalid number of dims %d", op, dims.n);
        return false;
    }
    if (dims.n == 0) {
        for (int d = 0; d < t->ndim; d++) p->reduced[d] = true;
    }
    bool seen0 = false; /* a 0-d tensor accepts dim 0 / -1, once */
    for (int i = 0; i < dims.n; i++) {
        int d = ct_wrap_dim(op, dims.d[i], t->ndim);
        if (d < 0) return false;
        if (t->ndim == 0 ? seen0 : p->reduced[d]) {
            ct_error("%s: dim %d appears multiple times in the list of dims", op, d);
            return false;
        }
        if (t->ndim == 0) seen0 = true;
        else p->reduced[d] = true;
    }
    p->M = 1;
    p->R = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (p->reduced[d]) {
            p->R *= t->sizes[d];
            p->kept_sizes[d] = 1;
            p->mask |= (int64_t)1 << d;
            if (keepdim) p->out_sizes[p->out_ndim++] = 1;
        } else {
            p->M *= t->sizes[d];
            p->kept_sizes[d] = t->sizes[d];
            p->out_sizes[p->out_ndim++] = t->sizes[d];
        }
    }
    return true;
}

/* t's dims reordered: kept dims then reduced ones (or reduced first), as a view. */
static ct_tensor *reordered(ct_tensor *t, const ct_reduce_plan *p, bool reduced_first) {
    int64_t sizes[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < t->ndim; d++)
            if (p->reduced[d] == ((pass == 1) != reduced_first)) {
                sizes[n] = t->sizes[d];
                strides[n++] = t->strides[d];
            }
    return ct_tensor_view_of(t, n, sizes, strides, t->offset);
}

ct_tensor *ct_reduce_input(const char *op, ct_tensor *t, const ct_reduce_plan *p) {
    ct_tensor *v = reordered(t, p, false);
    if (!v || ct_tensor_is_contiguous(v)) return v;
    ct_tensor *c = ct_cast_new(op, v, v->dtype);
    ct_release(v);
    return c;
}

/* Kept dims, then reduced, then kept (size-1 dims ignored): [M1, R, M2] of t as is. */
static bool blocked(const ct_tensor *t, const ct_reduce_plan *p, int64_t *M1, int64_t *M2) {
    int state = 0;
    *M1 = *M2 = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == 1) continue;
        if (p->reduced[d]) {
            if (state == 2) return false;
            state = 1;
        } else if (state == 0) {
            *M1 *= t->sizes[d];
        } else {
            state = 2;
            *M2 *= t->sizes[d];
        }
    }
    return true;
}

ct_tensor *ct_reduce_layout(const char *op, ct_tensor *t, const ct_reduce_plan *p, int64_t *M1,
                            int64_t *M2) {
    if (ct_tensor_is_contiguous(t) && blocked(t, p, M1, M2)) return ct_retain(t);
    /* A permuted input (a transpose) may still be one block, reduced dims leading. */
    ct_tensor *v = reordered(t, p, true);
    if (v && ct_tensor_is_contiguous(v)) {
        *M1 = 1;
        *M2 = p->M;
        return v;
    }
    ct_release(v);
    *M1 = p->M;
    *M2 = 1;
    return ct_reduce_input(op, t, p);
}

ct_tensor *ct_reduce_block(const char *op, ct_tensor *t, const ct_reduce_plan *p, ct_dtype k,
                           int64_t *M1, int64_t *M2) {
    ct_tensor *src = t->dtype == k ? ct_retain(t) : ct_cast_new(op, t, k);
    ct_tensor *x = src ? ct_reduce_layout(op, src, p, M1, M2) : NULL;
    ct_release(src);
    return x;
}

ct_shape ct_reduce_out_shape(const ct_reduce_plan *p) {
    ct_shape s = {.ndim = p->out_ndim};
    memcpy(s.d, p->out_sizes, sizeof(int64_t) * (size_t)p->out_ndim);
    return s;
}

ct_tensor *ct_reduce_run(ct_op_id op, ct_tensor *t, const ct_reduce_plan *p, ct_dtype kin,
                         ct_dtype kout, ct_dtype out_dt, const void *ctx) {
    ct_reduce_fn k = ct_kernel_reduce_for(op, t->storage->device, kin);
    if (!k) return NULL;
    int64_t M1, M2;
    ct_tensor *x = ct_reduce_block(ct_ops[op].fn, t, p, kin, &M1, &M2);
    if (!x) return NULL;
    ct_tensor *out = ct_tensor_new(ct_ops[op].fn, ct_reduce_out_shape(p), kout, t->storage->device);
    if (out) k(ct_tensor_data(x), ct_tensor_data(out), M1, p->R, M2, ctx);
    ct_release(x);
    return ct_cast_result(ct_ops[op].fn, out, out_dt);
}

void ct_reduce_trace(ct_op_id op, ct_tensor *t, ct_tensor *out, ct_dims dims, bool keepdim,
                     ct_dtype dtype) {
    if (!out || !ct_trace_active) return;
    ct_op_attrs at;
    ct_dims d = ct_attr_dims(dims.n ? dims.n : -1, dims.d);
    if (ct_schema_of(op)->n_attrs == 3) /* sum, mean, prod (alike): dim, keepdim, dtype */
        at.sum = (ct_sum_attrs){d, keepdim, dtype};
    else /* all, any (alike): dim, keepdim */
        at.all = (ct_all_attrs){d, keepdim};
    CT_TRACE_ATTRS(op, 1, &t, 1, &out, &at);
}

ct_node *ct_reduce_record(ct_op_id op, ct_tensor *out, ct_tensor *t, const ct_reduce_plan *p,
                          bool keepdim) {
    ct_node *n = ct_record1(op, out, 1, &t);
    if (n) {
        n->state.reduce.mask = p->mask;
        n->state.reduce.keepdim = keepdim;
    }
    return n;
}

const char *ct_dtype_torch_name(ct_dtype t) {
    switch (t) {
    case CT_F32: return "Float";
    case CT_F64: return "Double";
    case CT_F16: return "Half";
    case CT_BF16: return "BFloat16";
    case CT_I64: return "Long";
    case CT_I32: return "Int";
    case CT_I16: return "Short";
    case CT_U8: return "Byte";
    case CT_I8: return "Char";
    case CT_BOOL: return "Bool";
    default: return "?";
    }
}

static ct_shape kept_shape(const ct_node *n) {
    const ct_input_meta *m = &n->in_meta[0];
    ct_shape kept = {.ndim = m->ndim};
    for (int d = 0; d < m->ndim; d++) kept.d[d] = (n->state.reduce.mask >> d & 1) ? 1 : m->sizes[d];
    return kept;
}

ct_dims ct_reduce_dims_of(const ct_node *n) {
    ct_dims dims = {0};
    for (int d = 0; d < n->in_meta[0].ndim; d++)
        if (n->state.reduce.mask >> d & 1) dims.d[dims.n++] = d;
    return dims;
}

ct_tensor *ct_reduce_kept(ct_tensor *g, const ct_node *n) {
    if (!g) return NULL;
    if (n->state.reduce.keepdim) return ct_ret(ct_retain(g));
    return ct_reshape(g, kept_shape(n));
}

ct_tensor *ct_reduce_grad_expand(ct_tensor *g, const ct_node *n, bool keepdim) {
    const ct_input_meta *m = &n->in_meta[0];
    ct_shape full = {.ndim = m->ndim};
    memcpy(full.d, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    ct_tensor *r = keepdim ? g : ct_reshape(g, kept_shape(n));
    return ct_expand(r, full);
}

ct_tensor *ct_reduce_mask(ct_tensor *a, ct_tensor *b, int kind) {
    static const ct_pw_spec spec = {CT_OP_reduce_mask, CT_PW_PROMOTE_FLOAT, 0};
    static const char *const modes[] = {[CT_MASK_EQ] = "eq", [CT_MASK_ABS_EQ] = "abs_eq",
                                         [CT_MASK_SIGN] = "sign"};
    ct_pw_args args = {.i = kind};
    ct_tensor *in[2] = {a, b};
    ct_tensor *out = ct_pointwise(&spec, 2, in, NULL, &args);
    if (out)
        CT_TRACE_ATTRS(CT_OP_reduce_mask, 2, in, 1, &out, &(ct_reduce_mask_attrs){modes[kind]});
    return ct_ret(out);
}
