/* Index-producing ops without gradients: nonzero and one_hot. */
#include <string.h>

#include "cpu/index.h"
#include "ops/index_util.h"
#include "ops/trace.h"

ct_tensor *ct_nonzero_new(ct_tensor *t) {
    if (ct_meta_data_dependent("ct_nonzero", t)) return NULL;
    ct_tensor *m = t->dtype == CT_BOOL ? ct_index_contig("ct_nonzero", t)
                                       : ct_cast_new("ct_nonzero", t, CT_BOOL);
    if (!m) return NULL;
    const uint8_t *mb = (const uint8_t *)ct_tensor_data(m);
    int64_t count = ct_cpu_count_true(mb, m->numel);
    ct_tensor *out =
        ct_tensor_new("ct_nonzero", CT_SHAPE(count, t->ndim), CT_I64, t->storage->device);
    if (out) ct_cpu_nonzero_coords(mb, t->ndim, t->sizes, (int64_t *)ct_tensor_data(out));
    ct_release(m);
    return out;
}

ct_tensor *ct_nonzero(ct_tensor *t) {
    ct_tensor *out = t ? ct_nonzero_new(t) : NULL;
    if (out) CT_TRACE(CT_OP_nonzero, 1, &t, 1, &out);
    return out ? ct_ret(out) : NULL;
}

ct_tensor *ct_one_hot(ct_tensor *t, int64_t num_classes) {
    static const char *op = "ct_one_hot";
    if (!t) return NULL;
    if (t->dtype != CT_I64) {
        ct_error("%s: one_hot is only applicable to index tensor. (got %s, expected int64)", op,
                 ct_dtype_name(t->dtype));
        return NULL;
    }
    if (t->ndim + 1 > CT_MAX_DIMS) {
        ct_error("%s: input has too many dimensions (%d)", op, t->ndim);
        return NULL;
    }
    ct_tensor *idx = ct_index_contig("ct_one_hot", t);
    if (!idx) return NULL;
    const int64_t given = num_classes; /* as passed (-1: inferred), for the record hook */
    const int64_t *v = (const int64_t *)ct_tensor_data(idx);
    ct_tensor *out = NULL;
    bool meta = ct_tensor_is_meta(t); /* no values: no inferred count, no range check */
    if (num_classes == -1 && meta) {
        ct_meta_data_dependent(op, t);
        goto done;
    }
    if (num_classes == -1) {
        if (t->numel == 0) {
            ct_error("%s: Can not infer total number of classes from empty tensor.", op);
            goto done;
        }
        num_classes = ct_cpu_max_i64(v, idx->numel) + 1;
    }
    int64_t bad =
        meta ? -1 : ct_cpu_find_out_of_range(v, idx->numel, 0, num_classes > 0 ? num_classes : 0);
    if (bad >= 0) {
        if (v[bad] < 0)
            ct_error("%s: Class values must be non-negative. (got %lld)", op, (long long)v[bad]);
        else
            ct_error("%s: Class values must be smaller than num_classes. (got %lld, num_classes "
                     "%lld)", op, (long long)v[bad], (long long)num_classes);
        goto done;
    }
    if (num_classes < 0) { /* only reachable with an empty input */
        ct_error("%s: num_classes should be -1 or non-negative (got %lld)", op,
                 (long long)num_classes);
        goto done;
    }
    ct_shape s = ct_shape_of(t);
    s.d[s.ndim++] = num_classes;
    out = ct_zeros(s, .dtype = CT_I64, .device = t->storage->device);
    if (out && !meta) ct_cpu_one_hot(v, idx->numel, num_classes, (int64_t *)ct_tensor_data(out));
done:
    ct_release(idx);
    if (out) CT_TRACE(CT_OP_one_hot, 1, &t, 1, &out, CT_V_INT(given));
    return out; /* registered by ct_zeros */
}
