/* Rows along a dim: index_select, index_add and embedding (forward and backward). */
#include <string.h>

#include "autograd/node.h"
#include "ops/index_util.h"
#include "ops/trace.h"
#include "ops/options.h"

/* Saved tensor: the index. */
enum { SV_INDEX };

/* The [outer, n, inner] geometry of a (contiguous) tensor around dim. */
static void rows_geometry(const ct_tensor *t, int dim, ct_rows_args *a) {
    a->outer = 1;
    a->inner = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (d < dim) a->outer *= t->sizes[d];
        if (d > dim) a->inner *= t->sizes[d];
    }
    a->elsize = ct_dtype_size(t->dtype);
}

/* The forward shared by index_select and embedding: rows idx (checked) of t along
 * dim into a new tensor of shape s, recorded as opid (saving idx; index_select keeps
 * iarg, the dim wrapped, in node->state.dim).
 * Registered result or NULL. */
static ct_tensor *select_rows(ct_op_id opid, ct_tensor *t, int dim, ct_tensor *idx, ct_shape s,
                              int64_t iarg) {
    ct_rows_fn k = ct_kernel_rows_for(CT_OP_index_select, t->storage->device, t->dtype);
    ct_tensor *src = k ? ct_index_contig(ct_ops[opid].fn, t) : NULL;
    ct_tensor *out = src ? ct_tensor_new(ct_ops[opid].fn, s, t->dtype, t->storage->device) : NULL;
    if (out && out->numel) {
        ct_rows_args a;
        rows_geometry(src, dim, &a);
        a.src_n = ct_index_dim_size(src, dim);
        a.dst_n = a.nindex = idx->numel;
        a.index = (const int64_t *)ct_tensor_data(idx);
        k(ct_tensor_data(out), ct_tensor_data(src), &a);
    }
    ct_release(src);
    if (!out) return NULL;
    ct_tensor *in[2] = {t, NULL};
    ct_node *n = ct_record1(opid, out, 2, in);
    if (n) {
        if (opid == CT_OP_index_select) n->state.dim = iarg;
        ct_node_save(n, SV_INDEX, idx, false);
    }
    return ct_ret(out);
}

ct_tensor *ct_index_select(ct_tensor *t, int64_t dim, ct_tensor *index) {
    if (!ct_alive("ct_index_select", 1, t) || !ct_alive("ct_index_select", 3, index)) return NULL;
    static const char *op = "ct_index_select";
    if (!t || !index) return NULL;
    int d = ct_wrap_dim(op, dim, t->ndim);
    if (d < 0 || !ct_check_same_device(op, t, index)) return NULL;
    if (index->ndim > 1) {
        ct_error("%s: index_select(): Index is supposed to be a vector (got a %dD index)", op,
                 index->ndim);
        return NULL;
    }
    if (t->ndim == 0 && index->numel != 1) {
        ct_error("%s: index_select(): Index to scalar can have only 1 value, got %lld value(s)",
                 op, (long long)index->numel);
        return NULL;
    }
    ct_tensor *idx = ct_index_i64(op, index, true,
                                  "index_select(): Expected dtype int32 or int64 for index");
    if (!idx) return NULL;
    ct_tensor *out = NULL;
    if (ct_index_check_range(op, idx, d, ct_index_dim_size(t, d), false,
                             "index out of range in self")) {
        ct_shape s = ct_shape_of(t);
        if (s.ndim) s.d[d] = idx->numel;
        out = select_rows(CT_OP_index_select, t, d, idx, s, d);
    }
    ct_release(idx);
    if (out) CT_TRACE_ATTRS(CT_OP_index_select, 2, ((ct_tensor *[]){t, index}), 1, &out,
                            &(ct_index_select_attrs){dim});
    return out;
}

/* IndexSelectBackward0: zeros(self).index_add(dim, index, grad). */
bool index_select_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *idx = ct_node_saved(n, SV_INDEX);
    if (!idx) return false;
    ct_tensor *z =
        ct_zeros(ct_index_input_shape(n, 0), .dtype = go[0]->dtype, .device = go[0]->storage->device);
    return (gi[0] = ct_index_add(z, n->state.dim, idx, go[0], 1)) != NULL;
}

ct_tensor *ct_index_add(ct_tensor *t, int64_t dim, ct_tensor *index, ct_tensor *source,
                        double alpha) {
    if (!ct_alive("ct_index_add", 1, t) || !ct_alive("ct_index_add", 3, index) ||
        !ct_alive("ct_index_add", 4, source))
        return NULL;
    static const char *op = "ct_index_add";
    if (!t || !index || !source) return NULL;
    int d = ct_wrap_dim(op, dim, t->ndim);
    if (d < 0 || !ct_check_same_device(op, t, index) || !ct_check_same_device(op, t, source))
        return NULL;
    if (t->dtype != source->dtype) {
        ct_error("%s: index_add_(): self (%s) and source (%s) must have the same scalar type",
                 op, ct_dtype_name(t->dtype), ct_dtype_name(source->dtype));
        return NULL;
    }
    if (index->ndim > 1) {
        ct_error("%s: index_add_(): Index is supposed to be a vector (got a %dD index)", op,
                 index->ndim);
        return NULL;
    }
    /* source matches self apart from dim, where it has one slice per index. */
    int64_t src_dim = source->ndim ? source->sizes[source->ndim > d ? d : 0] : 1;
    if (source->ndim != t->ndim && !(source->ndim <= 1 && t->ndim <= 1)) {
        ct_error("%s: index_add_(): source must have the same number of dimensions as self "
                 "(got %d, expected %d)", op, source->ndim, t->ndim);
        return NULL;
    }
    if (index->numel != src_dim) {
        ct_error("%s: index_add_(): Number of indices (%lld) should be equal to "
                 "source.size(dim): (%lld), for dim: %d", op, (long long)index->numel,
                 (long long)src_dim, d);
        return NULL;
    }
    for (int k = 0; k < t->ndim && source->ndim == t->ndim; k++) {
        if (k != d && source->sizes[k] != t->sizes[k]) {
            ct_error("%s: index_add_(): source.size(%d) (%lld) must match self.size(%d) (%lld)",
                     op, k, (long long)source->sizes[k], k, (long long)t->sizes[k]);
            return NULL;
        }
    }
    ct_rows_fn kern = ct_kernel_rows_for(CT_OP_index_add, t->storage->device, t->dtype);
    if (!kern) return NULL;
    ct_tensor *idx = ct_index_i64(op, index, true,
                                  "index_add_(): Expected dtype int32/int64 for index");
    if (!idx) return NULL;
    ct_tensor *out = NULL, *src = NULL;
    if (!ct_index_check_range(op, idx, d, ct_index_dim_size(t, d), false,
                              "index out of range in self"))
        goto done;
    out = ct_cast_new("ct_index_add", t, t->dtype);
    src = out ? ct_index_contig("ct_index_add", source) : NULL;
    if (!src) {
        ct_release(out);
        out = NULL;
        goto done;
    }
    ct_rows_args a;
    rows_geometry(t, d, &a);
    a.dst_n = ct_index_dim_size(t, d);
    a.src_n = a.nindex = idx->numel;
    a.index = (const int64_t *)ct_tensor_data(idx);
    a.alpha = alpha;
    a.ialpha = (int64_t)alpha; /* integer tensors truncate alpha, as PyTorch does */
    if (idx->numel && out->numel) kern(ct_tensor_data(out), ct_tensor_data(src), &a);
    ct_tensor *in[3] = {t, NULL, source};
    ct_node *n = ct_record1(CT_OP_index_add, out, 3, in);
    ct_index_add_attrs at = {dim, alpha};
    if (n) {
        n->attrs.index_add = at;
        ct_node_save(n, SV_INDEX, idx, false);
    }
    CT_TRACE_ATTRS(CT_OP_index_add, 3, ((ct_tensor *[]){t, index, source}), 1, &out, &at);
done:
    ct_release(src);
    ct_release(idx);
    return out ? ct_ret(out) : NULL;
}

/* IndexAddBackward0: self gets grad; source gets alpha * grad.index_select(dim, index). */
bool index_add_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    if (n->needs_grad[0]) gi[0] = go[0];
    if (n->needs_grad[2]) {
        ct_tensor *idx = ct_node_saved(n, SV_INDEX);
        if (!idx) return false;
        const ct_index_add_attrs *a = &n->attrs.index_add;
        ct_tensor *g = ct_index_select(go[0], a->dim, idx);
        if (g && a->alpha != 1) g = ct_mul_scalar(g, a->alpha);
        if (g && n->in_meta[2].ndim != g->ndim) /* a 0-d source */
            g = ct_reshape(g, ct_index_input_shape(n, 2));
        if (!(gi[2] = g)) return false;
    }
    return true;
}

/* F.embedding's max_norm (ctorch/layers.h), composed of ops. */
int (ct_embedding_renorm_)(ct_tensor *weight, ct_tensor *indices, double max_norm, double norm_type) {
    if (!ct_alive("ct_embedding_renorm_", 1, weight) ||
        !ct_alive("ct_embedding_renorm_", 2, indices))
        return -1;
    if (!weight || !indices) return -1;
    int rc = -1;
    CT_NO_GRAD {
        CT_SCOPE {
            /* Rows referenced at least once, then their norms; only those above
             * max_norm are scaled by max_norm / (norm + 1e-7), as PyTorch does. */
            int64_t num = ct_size(weight, 0);
            ct_tensor *idx = ct_reshape(indices, CT_SHAPE(-1));
            ct_tensor_options wo = {.dtype = ct_dtype_of(weight), .device = ct_device_of(weight)};
            ct_tensor *used = ct_index_add(ct_zeros_with(CT_SHAPE(num), wo), 0, idx,
                                           ct_ones_with(ct_shape_of(idx), wo), 1);
            ct_tensor *norms = ct_norm(weight, .p = CT_SOME(norm_type), .dims = CT_DIMS(1));
            ct_tensor *over = ct_logical_and(ct_gt_scalar(used, 0), ct_gt_scalar(norms, max_norm));
            ct_tensor *scale = ct_div(ct_full_like(norms, max_norm), ct_add_scalar(norms, 1e-7));
            scale = ct_where(over, scale, ct_ones_like(norms));
            if (ct_mul_(weight, ct_unsqueeze(scale, 1))) rc = 0;
        }
    }
    return rc;
}

ct_tensor *ct_embedding_with(ct_tensor *indices, ct_tensor *weight, ct_embedding_options o) {
    if (!ct_alive("ct_embedding", 1, indices) || !ct_alive("ct_embedding", 2, weight)) return NULL;
    static const char *op = "ct_embedding";
    if (!weight || !indices) return NULL;
    if (o.dtype != CT_DTYPE_UNSET) {
        ct_error("%s: dtype is an option of nn.Embedding (F.embedding's result has weight's "
                 "dtype)", op);
        return NULL;
    }
    if (o.sparse) {
        ct_error("%s: sparse=True is not supported: ctorch has no sparse tensors (the gradient "
                 "of weight is dense with sparse=False)", op);
        return NULL;
    }
    if (!ct_check_same_device(op, weight, indices)) return NULL;
    if (weight->ndim != 2) {
        ct_error("%s: 'weight' must be 2-D (got %dD)", op, weight->ndim);
        return NULL;
    }
    if (indices->ndim + 1 > CT_MAX_DIMS) {
        ct_error("%s: indices have too many dimensions (%d)", op, indices->ndim);
        return NULL;
    }
    int64_t num = weight->sizes[0], dim = weight->sizes[1], padding_idx;
    if (!ct_embedding_padding(op, o.padding_idx, num, &padding_idx)) return NULL;
    char expect[160];
    snprintf(expect, sizeof expect, "Expected tensor for argument #1 'indices' to have one of "
             "the following scalar types: Long, Int; but got %s instead",
             ct_dtype_name(indices->dtype));
    ct_tensor *idx = ct_index_i64(op, indices, true, expect);
    if (!idx) return NULL;
    ct_tensor *out = NULL;
    if (ct_index_check_range(op, idx, 0, num, false, "index out of range in self") &&
        (o.max_norm <= 0 ||
         !ct_embedding_renorm_(weight, idx, o.max_norm, ct_zero_or(o.norm_type, 2)))) {
        ct_shape s = ct_shape_of(indices);
        s.d[s.ndim++] = dim;
        out = select_rows(CT_OP_embedding, weight, 0, idx, s, padding_idx);
    }
    ct_release(idx);
    ct_embedding_attrs at = {padding_idx, o.scale_grad_by_freq, false};
    if (out && out->grad_fn) out->grad_fn->attrs.embedding = at;
    if (out) CT_TRACE_ATTRS(CT_OP_embedding, 2, ((ct_tensor *[]){weight, indices}), 1, &out, &at);
    return out;
}

/* EmbeddingBackward0: the gradient rows added into zeros(weight) at their indices,
 * rows of padding_idx left out (masked to zero first), each divided by the count of
 * its index in indices with scale_grad_by_freq.  Written with ops, so it is
 * differentiable in grad. */
bool embedding_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *idx = ct_node_saved(n, SV_INDEX);
    if (!idx) return false;
    const ct_input_meta *m = &n->in_meta[0];
    int64_t num = m->sizes[0], dim = m->sizes[1];
    ct_tensor *flat = ct_reshape(idx, CT_SHAPE(-1));
    ct_tensor *g = ct_reshape(go[0], CT_SHAPE(idx->numel, dim));
    const ct_embedding_attrs *a = &n->attrs.embedding;
    if (a->padding_idx >= 0 && flat && g) {
        ct_tensor *pad = ct_unsqueeze(ct_eq_scalar(flat, (double)a->padding_idx), 1);
        if (!pad) return false;
        g = ct_masked_fill(g, pad, 0);
    }
    ct_device dev = go[0]->storage->device;
    ct_tensor *z = ct_zeros(CT_SHAPE(num, dim), .dtype = go[0]->dtype, .device = dev);
    if (a->scale_grad_by_freq && flat && g) {
        ct_tensor *counts =
            ct_index_add(ct_zeros(CT_SHAPE(num), .dtype = go[0]->dtype, .device = dev), 0, flat,
                         ct_ones(CT_SHAPE(flat->numel), .dtype = go[0]->dtype, .device = dev), 1);
        g = ct_div(g, ct_unsqueeze(ct_index_select(counts, 0, flat), 1));
    }
    return (gi[0] = ct_index_add(z, 0, flat, g, 1)) != NULL;
}
