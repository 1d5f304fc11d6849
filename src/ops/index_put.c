/* index_put_ (t[indices] = values / += values), out of place index_put, and
 * IndexPutBackward0.  The indices are planned as for ct_index (index_advanced.c):
 * several index tensors, NULL for a whole dim, bool masks, broadcasting. */
#include <string.h>

#include "autograd/node.h"
#include "ops/index_util.h"
#include "ops/pointwise.h"

ct_tensor *ct_index_put__with(ct_tensor *t, int n_indices, ct_tensor *const *indices,
                              ct_tensor *values, ct_index_put_options o) {
    if (!ct_alive("ct_index_put_", 1, t) || !ct_all_alive("ct_index_put_", 3, indices, n_indices) ||
        !ct_alive("ct_index_put_", 4, values))
        return NULL;
    static const char *op = "ct_index_put_";
    if (!t || !values) return NULL;
    if (n_indices > 0 && !indices) {
        ct_error("%s: the list of %d indices is NULL", op, n_indices);
        return NULL;
    }
    if (!ct_check_same_device(op, t, values)) return NULL;
    if (values->dtype != t->dtype) {
        ct_error("%s: Index put requires the source and destination dtypes match, got %s for "
                 "the destination and %s for the source.", op, ct_dtype_name(t->dtype),
                 ct_dtype_name(values->dtype));
        return NULL;
    }
    if (!ct_check_inplace_of(op, t, 1, &values)) return NULL;
    ct_put_fn k = ct_kernel_index_put_for(CT_OP_index_put, t->storage->device, t->dtype);
    ct_adv_index p;
    if (!k || !ct_adv_index_plan(op, t, n_indices, indices, &p)) return NULL;
    ct_tensor *vals = NULL, *result = NULL;
    int64_t shape[CT_MAX_DIMS], bshape[CT_MAX_DIMS], front[CT_MAX_DIMS];
    int nd = ct_adv_result_shape(&p.g, shape), bnd;
    if (!ct_broadcast_shapes(values->ndim, values->sizes, nd, shape, &bnd, bshape) ||
        bnd != nd || memcmp(bshape, shape, sizeof(int64_t) * (size_t)nd)) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error("%s: shape mismatch: value tensor of shape %s cannot be broadcast to indexing "
                 "result of shape %s", op, ct_shape_str(values->ndim, values->sizes, a),
                 ct_shape_str(nd, shape, b));
        goto done;
    }
    ct_dims perm;
    ct_adv_front_shape(&p.g, front, &perm);
    if (!(vals = ct_index_broadcast_copy(op, values, nd, shape, perm.d, t->dtype))) goto done;
    p.rows.accumulate = o.accumulate;
    if (vals->numel) k(ct_tensor_data(t), ct_tensor_data(vals), &p.rows);
    ct_bump_version(t);
    ct_tensor *in[2] = {t, values};
    ct_node *n = ct_node_record(CT_OP_index_put, 2, in, 1);
    if (n) {
        ct_adv_save(n, &p);
        n->attrs.index_put.accumulate = o.accumulate;
        ct_rebase_history(n, t);
        ct_release(n);
    }
    result = ct_retain(t);
    ct_index_trace(CT_OP_index_put, t, n_indices, indices, values, t, o.accumulate);
done:
    ct_release(vals);
    ct_adv_index_free(&p);
    return result ? ct_ret(result) : NULL;
}

ct_tensor *ct_index_put_with(ct_tensor *t, int n_indices, ct_tensor *const *indices,
                             ct_tensor *values, ct_index_put_options o) {
    if (!ct_alive("ct_index_put", 1, t) || !ct_all_alive("ct_index_put", 3, indices, n_indices) ||
        !ct_alive("ct_index_put", 4, values))
        return NULL;
    if (!t) return NULL;
    ct_tensor *out = NULL;
    CT_SCOPE { out = ct_keep(ct_index_put__with(ct_clone(t), n_indices, indices, values, o)); }
    return out;
}

/* IndexPutBackward0: self gets grad with the written positions zeroed (all of grad
 * when accumulating); values get grad[indices] (the engine sums broadcast values
 * down).  Both through the rows frame. */
bool index_put_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *lin = ct_node_saved(n, CT_ADV_SAVED_LINEAR);
    if (!lin) return false;
    ct_adv_geom g = ct_adv_geom_of(n, lin);
    ct_tensor *rows = ct_adv_to_rows(go[0], &g, CT_ADV_SELF);
    ct_tensor *row_idx = ct_reshape(lin, CT_SHAPE(lin->numel));
    if (!rows || !row_idx) return false;
    if (n->needs_grad[0]) {
        if (n->attrs.index_put.accumulate) {
            gi[0] = go[0];
        } else {
            ct_tensor *zero = ct_zeros(CT_SHAPE(), .dtype = go[0]->dtype, .device = go[0]->storage->device);
            ct_tensor *c = ct_index_put_(ct_clone(rows), 1, &row_idx, zero);
            if (!(gi[0] = ct_adv_from_rows(c, &g, CT_ADV_SELF))) return false;
        }
    }
    if (n->needs_grad[1]) {
        ct_tensor *picked = ct_index_select(rows, 0, row_idx);
        if (!(gi[1] = ct_adv_from_rows(picked, &g, CT_ADV_RESULT))) return false;
    }
    return true;
}
