/* sort and topk: a stable sort of each row along dim (values and int64 indices), and
 * their backward (the gradient scattered back to where each value came from). */
#include <string.h>

#include "autograd/node.h"
#include "kernels/index.h"
#include "ops/index_util.h"
#include "ops/trace.h"

/* Saved tensor: the indices of the values. */
enum { SV_INDICES };

static const ct_values_indices NONE = {NULL, NULL};

/* The first k of every sorted row of t along dim; records op's node. */
static ct_values_indices sort_rows(ct_op_id opid, const char *op, ct_tensor *t, int64_t dim,
                                   int64_t k, bool descending) {
    int d = ct_wrap_dim(op, dim, t->ndim);
    if (d < 0) return NONE;
    int64_t n = ct_index_dim_size(t, d);
    if (k < 0 || k > n) {
        ct_error("%s: selected index k out of range (k = %lld, size %lld along dim %d)", op,
                 (long long)k, (long long)n, d);
        return NONE;
    }
    ct_sort_fn kern = ct_kernel_sort_for(CT_OP_sort, t->storage->device, t->dtype);
    if (!kern) return NONE;
    ct_shape s = ct_shape_of(t);
    if (s.ndim) s.d[d] = k;
    ct_tensor *src = ct_index_contig(op, t);
    ct_tensor *vals = src ? ct_tensor_new(op, s, t->dtype, t->storage->device) : NULL;
    ct_tensor *idx = vals ? ct_tensor_new(op, s, CT_I64, t->storage->device) : NULL;
    if (!idx) {
        ct_release(src);
        ct_release(vals);
        return NONE;
    }
    ct_sort_args a = {.outer = 1, .inner = 1, .n = n, .k = k, .descending = descending};
    for (int j = 0; j < t->ndim; j++) {
        if (j < d) a.outer *= t->sizes[j];
        if (j > d) a.inner *= t->sizes[j];
    }
    if (vals->numel) kern(ct_tensor_data(src), ct_tensor_data(vals), (int64_t *)ct_tensor_data(idx), &a);
    ct_release(src);
    ct_node *node = ct_record1(opid, vals, 1, &t);
    if (node) {
        node->state.dim = d;
        ct_node_save(node, SV_INDICES, idx, false);
    }
    if (opid == CT_OP_sort)
        CT_TRACE_ATTRS(opid, 1, &t, 2, ((ct_tensor *[]){vals, idx}),
                       &(ct_sort_attrs){d, descending});
    else
        CT_TRACE_ATTRS(opid, 1, &t, 2, ((ct_tensor *[]){vals, idx}),
                       &(ct_topk_attrs){k, d, descending, true});
    return (ct_values_indices){ct_ret(vals), ct_ret(idx)};
}

ct_values_indices ct_sort_with(ct_tensor *t, int64_t dim, ct_sort_options o) {
    if (!ct_alive("ct_sort", 1, t)) return (ct_values_indices){0};
    if (!t) return NONE;
    int d = ct_wrap_dim("ct_sort", dim, t->ndim);
    if (d < 0) return NONE;
    return sort_rows(CT_OP_sort, "ct_sort", t, d, ct_index_dim_size(t, d), o.descending);
}

ct_values_indices ct_topk_with(ct_tensor *t, int64_t k, int64_t dim, ct_topk_options o) {
    if (!ct_alive("ct_topk", 1, t)) return (ct_values_indices){0};
    if (!t) return NONE;
    return sort_rows(CT_OP_topk, "ct_topk", t, dim, k, !o.smallest);
}

/* SortBackward0 / TopkBackward0: zeros(self).scatter(dim, indices, grad). */
static bool scatter_back(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *idx = ct_node_saved(n, SV_INDICES);
    if (!idx) return false;
    ct_tensor *z =
        ct_zeros(ct_index_input_shape(n, 0), .dtype = go[0]->dtype, .device = go[0]->storage->device);
    return (gi[0] = ct_scatter(z, n->state.dim, idx, go[0])) != NULL;
}

bool sort_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return scatter_back(n, go, gi); }
bool topk_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return scatter_back(n, go, gi); }
