/* Helpers shared by the indexing ops: see index_util.h. */
#include <string.h>

#include "autograd/node.h"
#include "ops/host.h"
#include "ops/host_index.h"
#include "ops/index_util.h"
#include "ops/trace.h"

ct_tensor *ct_index_i64(const char *op, ct_tensor *index, bool allow_int32, const char *expect) {
    if (index->dtype != CT_I64 && !(allow_int32 && index->dtype == CT_I32)) {
        ct_error("%s: %s (got %s)", op, expect, ct_dtype_name(index->dtype));
        return NULL;
    }
    if (index->dtype == CT_I64 && ct_tensor_is_contiguous(index)) return ct_retain(index);
    return ct_cast_new(op, index, CT_I64);
}

bool ct_index_check_values(const char *op, const int64_t *v, int64_t n, int dim, int64_t size,
                           bool allow_negative, const char *what) {
    int64_t bad = ct_host_find_out_of_range(v, n, allow_negative ? -size : 0, size);
    if (bad < 0) return true;
    ct_error("%s: %s%sindex %lld is out of bounds for dimension %d with size %lld", op,
             what ? what : "", what ? ": " : "", (long long)v[bad], dim, (long long)size);
    return false;
}

bool ct_index_check_range(const char *op, const ct_tensor *idx, int dim, int64_t size,
                          bool allow_negative, const char *what) {
    if (!ct_has_values(idx)) return true; /* no values to check, as PyTorch's meta */
    ct_host_buf hb;
    const int64_t *v = ct_host_read(op, idx, CT_I64, &hb);
    bool ok = v && ct_index_check_values(op, v, idx->numel, dim, size, allow_negative, what);
    ct_host_release(&hb);
    return ok;
}

ct_tensor *ct_index_at_least_1d(ct_tensor *t) {
    if (t->ndim > 0) return ct_tensor_view_of(t, t->ndim, t->sizes, t->strides, t->offset);
    int64_t one = 1;
    return ct_tensor_view_of(t, 1, &one, &one, t->offset);
}

ct_tensor *ct_index_restride(ct_tensor *t, const ct_tensor *index, int dim, int64_t dim_size,
                             int64_t dim_stride) {
    int64_t sizes[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    for (int d = 0; d < index->ndim; d++) {
        sizes[d] = d == dim ? dim_size : index->sizes[d];
        strides[d] = d == dim ? dim_stride : t->strides[d];
    }
    return ct_tensor_view_of(t, index->ndim, sizes, strides, t->offset);
}

ct_tensor *ct_index_contig(const char *op, ct_tensor *t) {
    return ct_tensor_is_contiguous(t) ? ct_retain(t) : ct_cast_new(op, t, t->dtype);
}

ct_tensor *ct_index_broadcast_copy(const char *op, ct_tensor *t, int ndim, const int64_t *sizes,
                                   const int64_t *perm, ct_dtype dtype) {
    int64_t strides[CT_MAX_DIMS], ps[CT_MAX_DIMS], pz[CT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        int td = d - (ndim - t->ndim);
        strides[d] = td < 0 || t->sizes[td] != sizes[d] ? 0 : t->strides[td];
    }
    for (int d = 0; d < ndim; d++) {
        pz[d] = sizes[perm ? perm[d] : d];
        ps[d] = strides[perm ? perm[d] : d];
    }
    ct_tensor *v = ct_tensor_view_of(t, ndim, pz, ps, t->offset);
    if (!v) return NULL;
    ct_tensor *c = ct_cast_new(op, v, dtype);
    ct_release(v);
    return c;
}

ct_shape ct_index_input_shape(const ct_node *n, int i) {
    ct_shape s = {.ndim = n->in_meta[i].ndim};
    memcpy(s.d, n->in_meta[i].sizes, sizeof(int64_t) * (size_t)s.ndim);
    return s;
}

void ct_index_trace(ct_op_id op, ct_tensor *t, int n, ct_tensor *const *indices,
                    ct_tensor *values, ct_tensor *out, bool accumulate) {
    if (!ct_trace_active || !out || n < 0 || n > CT_MAX_DIMS) return;
    ct_tensor *in[CT_MAX_DIMS + 2] = {t};
    for (int i = 0; i < n; i++) in[1 + i] = indices[i];
    if (values) {
        in[1 + n] = values;
        CT_TRACE_ATTRS(op, n + 2, in, 1, &out, &(ct_index_put_attrs){accumulate});
    } else {
        CT_TRACE(op, n + 1, in, 1, &out);
    }
}
