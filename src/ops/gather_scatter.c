/* gather, scatter (tensor and value), scatter_add: forward and backward.
 *
 * Note [Scatter columns]: scatter-type kernels walk one column along dim per
 * iterator element, so a column (where duplicate indices collide) is never split
 * across threads.  scatter_add therefore adds duplicates in index order for any
 * thread count; scatter keeps the last written value, while PyTorch documents the
 * choice as undefined. */
#include <string.h>

#include "autograd/node.h"
#include "core/iter.h"
#include "ops/index_util.h"
#include "ops/trace.h"

/* Saved tensor: the index. */
enum { SV_INDEX };

/* PyTorch's checks of gather/scatter arguments; src NULL for gather and the value
 * form.  `py` is PyTorch's op name used in its messages ("gather", "scatter"). */
static bool check_args(const char *op, const char *py, ct_tensor *t, int d, ct_tensor *index,
                       ct_tensor *src, bool is_gather) {
    if (!ct_check_same_device(op, t, index) || (src && !ct_check_same_device(op, t, src)))
        return false;
    if (index->dtype != CT_I64) {
        ct_error("%s: %s(): Expected dtype int64 for index (got %s)", op, py,
                 ct_dtype_name(index->dtype));
        return false;
    }
    if (src && src->dtype != t->dtype) {
        ct_error("%s: %s(): Expected self.dtype to be equal to src.dtype (got %s and %s)", op, py,
                 ct_dtype_name(t->dtype), ct_dtype_name(src->dtype));
        return false;
    }
    int nd = t->ndim ? t->ndim : 1;
    if ((index->ndim ? index->ndim : 1) != nd) {
        ct_error("%s: Index tensor must have the same number of dimensions as input tensor "
                 "(got %d and %d)", op, index->ndim, t->ndim);
        return false;
    }
    if (src && (src->ndim ? src->ndim : 1) != nd) {
        ct_error("%s: Index tensor must have the same number of dimensions as src tensor "
                 "(got %d and %d)", op, index->ndim, src->ndim);
        return false;
    }
    if (index->numel == 0) return true;
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX], c[CT_SHAPE_STR_MAX];
    for (int k = 0; k < index->ndim; k++) {
        bool bad_self = k != d && index->sizes[k] > t->sizes[k];
        bool bad_src = src && index->sizes[k] > src->sizes[k];
        if (!bad_self && !bad_src) continue;
        ct_shape_str(index->ndim, index->sizes, a);
        ct_shape_str(t->ndim, t->sizes, b);
        if (is_gather)
            ct_error("%s: Size does not match at dimension %d expected index %s to be smaller "
                     "than self %s apart from dimension %d", op, k, a, b, d);
        else if (src)
            ct_error("%s: Expected index %s to be smaller than self %s apart from dimension %d "
                     "and to be smaller size than src %s", op, a, b, d,
                     ct_shape_str(src->ndim, src->sizes, c));
        else
            ct_error("%s: Expected index %s to be smaller than self %s apart from dimension %d",
                     op, a, b, d);
        return false;
    }
    ct_tensor *idx = ct_index_i64(op, index, false, "");
    bool ok = idx && ct_index_check_range(op, idx, d, ct_index_dim_size(t, d), false, NULL);
    ct_release(idx);
    return ok;
}

static ct_tensor *gather_impl(ct_tensor *t, int64_t dim, ct_tensor *index) {
    static const char *op = "ct_gather";
    int d = ct_wrap_dim(op, dim, t->ndim);
    if (d < 0 || !check_args(op, "gather", t, d, index, NULL, true)) return NULL;
    ct_loop_fn k = ct_kernel_loop_for(CT_OP_gather, t->storage->device, t->dtype);
    ct_tensor *out =
        k ? ct_tensor_new("ct_gather", ct_shape_of(index), t->dtype, t->storage->device) : NULL;
    if (!out) return NULL;
    if (out->numel) {
        ct_tensor *o1 = ct_index_at_least_1d(out), *i1 = ct_index_at_least_1d(index);
        ct_tensor *t1 = ct_index_at_least_1d(t);
        /* self seen with index's shape, not moving along dim: the kernel adds
         * index * stride itself. */
        ct_tensor *self_r = ct_index_restride(t1, i1, d, i1->sizes[d], 0);
        ct_scatter_args a = {.self_stride = t1->strides[d] * (int64_t)ct_dtype_size(t->dtype)};
        ct_tensor *ops[3] = {o1, i1, self_r};
        ct_iter it;
        ct_iter_init(&it, 3, ops, i1->ndim, i1->sizes);
        ct_iter_run(&it, k, &a);
        ct_release(o1);
        ct_release(i1);
        ct_release(t1);
        ct_release(self_r);
    }
    return out;
}

ct_tensor *ct_gather(ct_tensor *t, int64_t dim, ct_tensor *index) {
    if (!ct_alive("ct_gather", 1, t) || !ct_alive("ct_gather", 3, index)) return NULL;
    if (!t || !index) return NULL;
    ct_tensor *out = gather_impl(t, dim, index);
    if (!out) return NULL;
    ct_tensor *in[2] = {t, NULL};
    ct_node *n = ct_record1(CT_OP_gather, out, 2, in);
    if (n) {
        n->state.dim = ct_wrap_dim("ct_gather", dim, t->ndim);
        ct_node_save(n, SV_INDEX, index, false);
    }
    CT_TRACE_ATTRS(CT_OP_gather, 2, ((ct_tensor *[]){t, index}), 1, &out,
                   &(ct_gather_attrs){dim, false});
    return ct_ret(out);
}

/* The forward of every scatter form: out = clone(t), then the column kernel. */
static ct_tensor *scatter_impl(ct_op_id opid, const char *op, const char *py, ct_tensor *t,
                               int64_t dim, ct_tensor *index, ct_tensor *src, double value) {
    int d = ct_wrap_dim(op, dim, t->ndim);
    if (d < 0 || !check_args(op, py, t, d, index, src, false)) return NULL;
    ct_loop_fn k = ct_kernel_loop_for(opid, t->storage->device, t->dtype);
    ct_tensor *out = k ? ct_cast_new(op, t, t->dtype) : NULL;
    if (!out || index->numel == 0) return out;
    ct_tensor *o1 = ct_index_at_least_1d(out), *i1 = ct_index_at_least_1d(index);
    ct_tensor *s1 = src ? ct_index_at_least_1d(src) : NULL;
    int64_t es = (int64_t)ct_dtype_size(t->dtype);
    ct_scatter_args a = {
        .self_stride = o1->strides[d] * es,
        .index_stride = i1->strides[d] * (int64_t)sizeof(int64_t),
        .src_stride = s1 ? s1->strides[d] * es : 0,
        .n = i1->sizes[d],
    };
    if (!src) ct_store_f64(a.value, t->dtype, value);
    /* Every operand seen with index's shape and size 1 along dim (the kernel walks
     * dim itself; see Note [Scatter columns]). */
    ct_tensor *ops[3] = {ct_index_restride(o1, i1, d, 1, 0), ct_index_restride(i1, i1, d, 1, 0),
                         s1 ? ct_index_restride(s1, i1, d, 1, 0) : NULL};
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, i1->sizes, sizeof shape);
    shape[d] = 1;
    ct_iter it;
    ct_iter_init(&it, src ? 3 : 2, ops, i1->ndim, shape);
    ct_iter_run(&it, k, &a);
    for (int j = 0; j < 3; j++) ct_release(ops[j]);
    ct_release(o1);
    ct_release(i1);
    ct_release(s1);
    return out;
}

/* Records a scatter-type node (inputs self, index, src; scatter_value: value). */
static ct_tensor *scatter_record(ct_op_id opid, ct_tensor *out, ct_tensor *t, int64_t dim,
                                 ct_tensor *index, ct_tensor *src, double value) {
    if (!out) return NULL;
    ct_tensor *in[3] = {t, NULL, src};
    ct_node *n = ct_record1(opid, out, src ? 3 : 2, in);
    if (n) {
        n->state.dim = ct_wrap_dim("ct_scatter", dim, t->ndim);
        ct_node_save(n, SV_INDEX, index, false);
    }
    if (src) /* scatter's and scatter_add's attributes are alike */
        CT_TRACE_ATTRS(opid, 3, ((ct_tensor *[]){t, index, src}), 1, &out,
                       &(ct_scatter_attrs){dim});
    else
        CT_TRACE_ATTRS(opid, 2, ((ct_tensor *[]){t, index}), 1, &out,
                       &(ct_scatter_value_attrs){dim, value});
    return ct_ret(out);
}

ct_tensor *ct_scatter(ct_tensor *t, int64_t dim, ct_tensor *index, ct_tensor *src) {
    if (!ct_alive("ct_scatter", 1, t) || !ct_alive("ct_scatter", 3, index) ||
        !ct_alive("ct_scatter", 4, src))
        return NULL;
    if (!t || !index || !src) return NULL;
    ct_tensor *out = scatter_impl(CT_OP_scatter, "ct_scatter", "scatter", t, dim, index, src, 0);
    return scatter_record(CT_OP_scatter, out, t, dim, index, src, 0);
}

ct_tensor *ct_scatter_value(ct_tensor *t, int64_t dim, ct_tensor *index, double value) {
    if (!ct_alive("ct_scatter_value", 1, t) || !ct_alive("ct_scatter_value", 3, index)) return NULL;
    if (!t || !index) return NULL;
    ct_tensor *out = scatter_impl(CT_OP_scatter_value, "ct_scatter_value", "scatter", t, dim,
                                  index, NULL, value);
    return scatter_record(CT_OP_scatter_value, out, t, dim, index, NULL, value);
}

ct_tensor *ct_scatter_add(ct_tensor *t, int64_t dim, ct_tensor *index, ct_tensor *src) {
    if (!ct_alive("ct_scatter_add", 1, t) || !ct_alive("ct_scatter_add", 3, index) ||
        !ct_alive("ct_scatter_add", 4, src))
        return NULL;
    if (!t || !index || !src) return NULL;
    ct_tensor *out = scatter_impl(CT_OP_scatter_add, "ct_scatter_add", "scatter_add", t, dim,
                                  index, src, 0);
    return scatter_record(CT_OP_scatter_add, out, t, dim, index, src, 0);
}

/* ---- backward formulas ------------------------------------------------- */

/* GatherBackward0: zeros(self).scatter_add(dim, index, grad). */
bool gather_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *index = ct_node_saved(n, SV_INDEX);
    if (!index) return false;
    ct_tensor *z =
        ct_zeros(ct_index_input_shape(n, 0), .dtype = go[0]->dtype, .device = go[0]->storage->device);
    return (gi[0] = ct_scatter_add(z, n->state.dim, index, go[0])) != NULL;
}

/* The gradient of src: grad.gather(dim, index), placed into zeros(src) when src is
 * larger than index (a scatter with the identity index along dim). */
static ct_tensor *src_grad(ct_node *n, ct_tensor *go, ct_tensor *index) {
    int d = (int)n->state.dim;
    ct_tensor *g = ct_gather(go, d, index);
    const ct_input_meta *m = &n->in_meta[2];
    if (!g || (m->ndim == index->ndim &&
               !memcmp(m->sizes, index->sizes, sizeof(int64_t) * (size_t)m->ndim)))
        return g;
    /* ident: index's shape, each element its position along d */
    ct_shape along = {.ndim = index->ndim};
    for (int k = 0; k < index->ndim; k++) along.d[k] = k == d ? index->sizes[k] : 1;
    ct_tensor *ident;
    if (index->ndim) {
        ct_tensor *pos = ct_arange(index->sizes[d], .device = index->storage->device);
        ident = ct_expand(ct_reshape(pos, along), ct_shape_of(index));
    } else {
        ident = ct_zeros_like(index); /* a 0-d index: position 0 */
    }
    if (!ident) return NULL;
    return ct_scatter(ct_zeros(ct_index_input_shape(n, 2), .dtype = go->dtype,
                               .device = go->storage->device),
                      d, ident, g);
}

/* ScatterBackward0: self gets grad with the scattered positions zeroed; src gets
 * grad.gather(dim, index). */
bool scatter_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *index = ct_node_saved(n, SV_INDEX);
    if (!index) return false;
    if (n->needs_grad[0] && !(gi[0] = ct_scatter_value(go[0], n->state.dim, index, 0)))
        return false;
    if (n->needs_grad[2] && !(gi[2] = src_grad(n, go[0], index))) return false;
    return true;
}

/* ScatterBackward1 */
bool scatter_value_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *index = ct_node_saved(n, SV_INDEX);
    if (!index) return false;
    return (gi[0] = ct_scatter_value(go[0], n->state.dim, index, 0)) != NULL;
}

/* ScatterAddBackward0: self gets grad; src gets grad.gather(dim, index). */
bool scatter_add_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    if (n->needs_grad[0]) gi[0] = go[0];
    if (n->needs_grad[2]) {
        ct_tensor *index = ct_node_saved(n, SV_INDEX);
        if (!index || !(gi[2] = src_grad(n, go[0], index))) return false;
    }
    return true;
}
