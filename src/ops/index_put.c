/* index_put_ (t[indices] = values / += values), forward and backward.
 *
 * Supported: one index tensor, either int64 indexing dim 0 (any shape, negative
 * values count from the end) or a bool/uint8 mask over t's leading dims.  Both are
 * reduced to the same plan: the selected rows of t's leading k dims (k = 1 for an
 * int64 index), each a sub-tensor over the remaining dims. */
#include <string.h>

#include "autograd/node.h"
#include "cpu/index.h"
#include "ops/index_util.h"
#include "ops/pointwise.h"

typedef struct {
    int k;               /* leading dims the index covers */
    ct_tensor *linear;   /* int64, the rows' C-order positions over the leading dims,
                            shaped like the index (int64) or [count] (mask) */
    ct_tensor *offsets;  /* int64 [count]: element offsets of the rows in t */
} put_plan;

static bool plan_int(const char *op, ct_tensor *t, ct_tensor *index, put_plan *p) {
    if (t->ndim == 0) {
        ct_error("%s: cannot index a 0-d tensor with an int64 index (use a bool mask)", op);
        return false;
    }
    p->k = 1;
    p->linear = ct_cast_new(index, CT_I64); /* a copy: negative values are wrapped */
    if (!p->linear || !ct_index_check_range(op, p->linear, 0, t->sizes[0], true, NULL))
        return false;
    int64_t *lin = (int64_t *)ct_tensor_data(p->linear);
    ct_cpu_wrap_negative(lin, p->linear->numel, t->sizes[0]);
    p->offsets = ct_tensor_new(CT_SHAPE(p->linear->numel), CT_I64, CT_CPU);
    if (!p->offsets) return false;
    ct_tensor *scratch = ct_tensor_new(CT_SHAPE(p->linear->numel), CT_I64, CT_CPU);
    if (!scratch) return false;
    ct_cpu_row_offsets(lin, p->linear->numel, 1, t->strides, t->sizes,
                       (int64_t *)ct_tensor_data(p->offsets), (int64_t *)ct_tensor_data(scratch));
    ct_release(scratch);
    return true;
}

static bool plan_mask(const char *op, ct_tensor *t, ct_tensor *mask, put_plan *p) {
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    p->k = mask->ndim;
    for (int d = 0; d < mask->ndim; d++) {
        if (d >= t->ndim || mask->sizes[d] != t->sizes[d]) {
            ct_error("%s: The shape of the mask %s at index %d does not match the shape of the "
                     "indexed tensor %s at index %d", op,
                     ct_shape_str(mask->ndim, mask->sizes, a), d,
                     ct_shape_str(t->ndim, t->sizes, b), d);
            return false;
        }
    }
    ct_tensor *m = ct_cast_new(mask, CT_BOOL);
    if (!m) return false;
    const uint8_t *mb = (const uint8_t *)ct_tensor_data(m);
    int64_t count = ct_cpu_count_true(mb, m->numel);
    ct_tensor *coords = ct_tensor_new(CT_SHAPE(count, mask->ndim), CT_I64, CT_CPU);
    p->linear = ct_tensor_new(CT_SHAPE(count), CT_I64, CT_CPU);
    p->offsets = ct_tensor_new(CT_SHAPE(count), CT_I64, CT_CPU);
    bool ok = coords && p->linear && p->offsets;
    if (ok) {
        ct_cpu_nonzero_coords(mb, mask->ndim, mask->sizes, (int64_t *)ct_tensor_data(coords));
        ct_cpu_row_offsets((const int64_t *)ct_tensor_data(coords), count, mask->ndim,
                           t->strides, t->sizes, (int64_t *)ct_tensor_data(p->offsets),
                           (int64_t *)ct_tensor_data(p->linear));
    }
    ct_release(coords);
    ct_release(m);
    return ok;
}

/* The indexed shape: the index's shape (int64) or [count] (mask), then t's
 * remaining dims. */
static int indexed_shape(const ct_tensor *t, const put_plan *p, int64_t *shape) {
    int nd = p->linear->ndim;
    memcpy(shape, p->linear->sizes, sizeof(int64_t) * (size_t)nd);
    for (int d = p->k; d < t->ndim; d++) shape[nd++] = t->sizes[d];
    return nd;
}

ct_tensor *ct_index_put_(ct_tensor *t, int n_indices, ct_tensor *const *indices,
                         ct_tensor *values, bool accumulate) {
    static const char *op = "ct_index_put_";
    if (!t || !values || !indices) return NULL;
    if (n_indices != 1) {
        ct_error("%s: only one index tensor is supported (got %d); index dim 0 with an int64 "
                 "tensor or the leading dims with a bool mask", op, n_indices);
        return NULL;
    }
    ct_tensor *index = indices[0];
    if (!index) return NULL;
    if (!ct_check_same_device(op, t, index) || !ct_check_same_device(op, t, values)) return NULL;
    if (values->dtype != t->dtype) {
        ct_error("%s: Index put requires the source and destination dtypes match, got %s for "
                 "the destination and %s for the source.", op, ct_dtype_name(t->dtype),
                 ct_dtype_name(values->dtype));
        return NULL;
    }
    bool is_mask = index->dtype == CT_BOOL || index->dtype == CT_U8;
    if (!is_mask && index->dtype != CT_I64) {
        ct_error("%s: tensors used as indices must be long, byte or bool tensors (got %s)", op,
                 ct_dtype_name(index->dtype));
        return NULL;
    }
    if (!ct_check_inplace_of(op, t, 1, &values)) return NULL;
    ct_put_fn k = (ct_put_fn)ct_kernel_for(CT_OP_index_put, t->storage->device, t->dtype);
    if (!k) return NULL;
    put_plan p = {0};
    ct_tensor *vals = NULL, *result = NULL;
    if (!(is_mask ? plan_mask(op, t, index, &p) : plan_int(op, t, index, &p))) goto done;
    int64_t shape[2 * CT_MAX_DIMS], bshape[CT_MAX_DIMS];
    int nd = indexed_shape(t, &p, shape), bnd;
    if (nd > CT_MAX_DIMS || !ct_broadcast_shapes(values->ndim, values->sizes, nd, shape, &bnd,
                                                 bshape) ||
        bnd != nd || memcmp(bshape, shape, sizeof(int64_t) * (size_t)nd)) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error("%s: shape mismatch: value tensor of shape %s cannot be broadcast to indexing "
                 "result of shape %s", op, ct_shape_str(values->ndim, values->sizes, a),
                 ct_shape_str(nd < CT_MAX_DIMS ? nd : CT_MAX_DIMS, shape, b));
        goto done;
    }
    if (!(vals = ct_index_broadcast_copy(values, nd, shape, t->dtype))) goto done;
    ct_put_args a = {
        .offsets = (const int64_t *)ct_tensor_data(p.offsets),
        .nrows = p.offsets->numel,
        .rest_ndim = t->ndim - p.k,
        .accumulate = accumulate,
    };
    memcpy(a.rest_sizes, t->sizes + p.k, sizeof(int64_t) * (size_t)a.rest_ndim);
    memcpy(a.rest_strides, t->strides + p.k, sizeof(int64_t) * (size_t)a.rest_ndim);
    if (vals->numel) k(ct_tensor_data(t), ct_tensor_data(vals), &a);
    ct_bump_version(t);
    ct_tensor *in[2] = {t, values};
    ct_node *n = ct_node_record(CT_OP_index_put, 2, in, 1);
    if (n) {
        n->iargs[0] = p.k;
        n->iargs[1] = accumulate;
        ct_node_save(n, 0, p.linear, false);
        ct_rebase_history(n, t);
        ct_release(n);
    }
    result = ct_retain(t);
done:
    ct_release(vals);
    ct_release(p.linear);
    ct_release(p.offsets);
    return result ? ct_ret(result) : NULL;
}

/* IndexPutBackward0: self gets grad with the written rows zeroed (all of grad when
 * accumulating); values get the written rows of grad, in the indexed shape (the
 * engine sums broadcast values down).  Both through t's leading dims flattened. */
bool index_put_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *lin = ct_node_saved(n, 0);
    if (!lin) return false;
    const ct_input_meta *m = &n->in_meta[0];
    int k = (int)n->iargs[0];
    ct_shape flat = {.ndim = 1 + m->ndim - k};
    flat.d[0] = 1;
    for (int d = 0; d < k; d++) flat.d[0] *= m->sizes[d];
    memcpy(flat.d + 1, m->sizes + k, sizeof(int64_t) * (size_t)(m->ndim - k));
    ct_tensor *g = ct_reshape(go[0], flat);
    ct_tensor *row_idx = ct_reshape(lin, CT_SHAPE(-1));
    if (!g || !row_idx) return false;
    if (n->needs_grad[0]) {
        if (n->iargs[1]) {
            gi[0] = go[0];
        } else {
            ct_tensor *zero = ct_zeros(CT_SHAPE(), .dtype = go[0]->dtype);
            ct_tensor *c = ct_clone(g);
            if (!(gi[0] = ct_reshape(ct_index_put_(c, 1, &row_idx, zero, false),
                                     ct_index_input_shape(n, 0))))
                return false;
        }
    }
    if (n->needs_grad[1]) {
        ct_shape r = {.ndim = lin->ndim + m->ndim - k};
        memcpy(r.d, lin->sizes, sizeof(int64_t) * (size_t)lin->ndim);
        memcpy(r.d + lin->ndim, m->sizes + k, sizeof(int64_t) * (size_t)(m->ndim - k));
        if (!(gi[1] = ct_reshape(ct_index_select(g, 0, row_idx), r))) return false;
    }
    return true;
}
