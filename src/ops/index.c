/* Index-producing ops without gradients: nonzero and one_hot. */
#include <string.h>

#include "ops/host.h"
#include "ops/host_index.h"
#include "ops/index_util.h"
#include "ops/trace.h"

ct_tensor *ct_nonzero_new(ct_tensor *t) {
    static const char *op = "ct_nonzero";
    ct_host_buf mb, ob;
    const uint8_t *m = ct_host_read(op, t, CT_BOOL, &mb); /* meta: no values, no shape */
    if (!m) return NULL;
    int64_t count = ct_host_count_true(m, t->numel);
    ct_tensor *out = ct_tensor_new(op, CT_SHAPE(count, t->ndim), CT_I64, t->storage->device);
    int64_t *o = out ? ct_host_write(op, out, &ob) : NULL;
    if (o) {
        ct_host_nonzero_coords(m, t->ndim, t->sizes, o);
        ct_host_release(&ob);
    } else {
        ct_release(out);
        out = NULL;
    }
    ct_host_release(&mb);
    return out;
}

ct_tensor *ct_nonzero(ct_tensor *t) {
    if (!ct_alive("ct_nonzero", 1, t)) return NULL;
    ct_tensor *out = t ? ct_nonzero_new(t) : NULL;
    if (out) CT_TRACE(CT_OP_nonzero, 1, &t, 1, &out);
    return out ? ct_ret(out) : NULL;
}

ct_tensor *ct_one_hot(ct_tensor *t, int64_t num_classes) {
    if (!ct_alive("ct_one_hot", 1, t)) return NULL;
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
    const int64_t given = num_classes; /* as passed (-1: inferred), for the record hook */
    if (t->numel && !ct_has_values(t)) { /* PyTorch 1.13 refuses a meta input, classes given or not */
        ct_error("%s: Can not infer total number of classes from meta tensor.", op);
        return NULL;
    }
    ct_host_buf ib = {0}, ob;
    const int64_t *v = t->numel ? ct_host_read(op, t, CT_I64, &ib) : NULL;
    ct_tensor *out = NULL;
    if (t->numel && !v) return NULL;
    if (num_classes == -1) {
        if (t->numel == 0) {
            ct_error("%s: Can not infer total number of classes from empty tensor.", op);
            goto done;
        }
        num_classes = ct_host_max_i64(v, t->numel) + 1;
    }
    int64_t bad = v ? ct_host_find_out_of_range(v, t->numel, 0, num_classes > 0 ? num_classes : 0) : -1;
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
    out = ct_empty(s, .dtype = CT_I64, .device = t->storage->device);
    int64_t *o = out && v ? ct_host_write(op, out, &ob) : NULL; /* empty: nothing to write */
    if (o) {
        ct_host_one_hot(v, t->numel, num_classes, o);
        ct_host_release(&ob);
    } else if (v) {
        out = NULL; /* registered by ct_empty */
    }
done:
    ct_host_release(&ib);
    if (out) CT_TRACE_ATTRS(CT_OP_one_hot, 1, &t, 1, &out, &(ct_one_hot_attrs){given});
    return out; /* registered by ct_empty */
}
