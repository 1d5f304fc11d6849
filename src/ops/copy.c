/* Copies and conversions: to (dtype/device), contiguous, clone, copy_, detach, and
 * reading values out (item, copy_to_buffer). */
#include <math.h>
#include <string.h>

#include "autograd/node.h"
#include "core/warn.h"
#include "ops/host.h"
#include "ops/internal.h"
#include "ops/pointwise.h"
#include "ops/trace.h"

ct_tensor *ct_cast_new(const char *op, const ct_tensor *t, ct_dtype dtype) {
    ct_tensor *out = ct_tensor_new(op, ct_shape_of(t), dtype, t->storage->device);
    if (out) ct_copy_into(out, t);
    return out;
}

/* A converted copy recorded as op (ToCopyBackward0 / CloneBackward0): the engine casts
 * the gradient back to the input's dtype, so both backward formulas pass it through. */
static ct_tensor *copy_new(const char *name, ct_op_id op, ct_tensor *t, ct_dtype dtype,
                           ct_device dev) {
    ct_tensor *out = ct_tensor_new(name, ct_shape_of(t), dtype, dev);
    if (!out) return NULL;
    ct_copy_into(out, t);
    if (ct_dtype_is_floating(dtype)) ct_record1(op, out, 1, &t);
    if (op == CT_OP_to_copy)
        CT_TRACE_ATTRS(op, 1, &t, 1, &out, &(ct_to_copy_attrs){dtype, dev, false});
    else
        CT_TRACE(op, 1, &t, 1, &out);
    return out;
}
static ct_tensor *copy_as(const char *name, ct_op_id op, ct_tensor *t, ct_dtype dtype,
                          ct_device dev) {
    return ct_ret(copy_new(name, op, t, dtype, dev));
}

ct_tensor *ct_to_dtype_new(const char *op, ct_tensor *t, ct_dtype dtype) {
    return copy_new(op, CT_OP_to_copy, t, dtype, t->storage->device);
}

ct_tensor *ct_to_with(ct_tensor *t, ct_to_options o) {
    if (!ct_alive("ct_to", 1, t)) return NULL;
    if (!t) return NULL;
    ct_dtype dtype = o.dtype != CT_DTYPE_UNSET ? o.dtype : t->dtype;
    ct_device dev = o.device.type != CT_DEV_UNSET ? o.device : t->storage->device;
    if (dtype <= CT_DTYPE_UNSET || dtype >= CT_NUM_DTYPES) {
        ct_error("ct_to: invalid dtype %d", (int)dtype);
        return NULL;
    }
    if (!o.copy && dtype == t->dtype && ct_device_eq(dev, t->storage->device))
        return ct_ret(ct_retain(t));
    if (ct_tensor_is_meta(t) && dev.type != CT_DEV_META) {
        char to[16];
        ct_error("ct_to: cannot copy out of a meta tensor to %s: it has no data",
                 ct_device_str(dev, to));
        return NULL;
    }
    if (!ct_device_available(dev)) {
        char from[16], to[16];
        ct_error("ct_to: cannot copy a tensor from %s to %s: no backend for device %s in this "
                 "build of ctorch", ct_device_str(t->storage->device, from),
                 ct_device_str(dev, to), to);
        return NULL;
    }
    return copy_as("ct_to", CT_OP_to_copy, t, dtype, dev);
}

ct_tensor *ct_contiguous(ct_tensor *t) {
    if (!ct_alive("ct_contiguous", 1, t)) return NULL;
    if (!t) return NULL;
    if (ct_tensor_is_contiguous(t)) return ct_ret(ct_retain(t));
    return copy_as("ct_contiguous", CT_OP_clone, t, t->dtype, t->storage->device);
}

ct_tensor *ct_clone(ct_tensor *t) {
    if (!ct_alive("ct_clone", 1, t)) return NULL;
    if (!t) return NULL;
    return copy_as("ct_clone", CT_OP_clone, t, t->dtype, t->storage->device);
}

bool to_copy_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    gi[0] = go[0];
    return true;
}

bool clone_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    gi[0] = go[0];
    return true;
}

/* dst.copy_(src): src broadcast to dst's shape and converted to its dtype. */
ct_tensor *ct_copy_(ct_tensor *dst, ct_tensor *src) {
    if (!ct_alive("ct_copy_", 1, dst) || !ct_alive("ct_copy_", 2, src)) return NULL;
    if (!dst || !src) return NULL;
    if (!ct_check_inplace_of("ct_copy_", dst, 1, &src) || !ct_check_same_device("ct_copy_", dst, src))
        return NULL;
    int nd;
    int64_t shape[CT_MAX_DIMS];
    if (!ct_broadcast_shapes(dst->ndim, dst->sizes, src->ndim, src->sizes, &nd, shape) ||
        nd != dst->ndim || memcmp(shape, dst->sizes, sizeof(int64_t) * (size_t)nd)) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error("ct_copy_: the size of src %s must be broadcastable to dst %s",
                 ct_shape_str(src->ndim, src->sizes, a), ct_shape_str(dst->ndim, dst->sizes, b));
        return NULL;
    }
    /* Overlap: copy through a temporary when src shares dst's storage. */
    ct_tensor *from = src;
    if (src->storage == dst->storage) {
        from = ct_cast_new("ct_copy_", src, src->dtype);
        if (!from) return NULL;
    } else {
        ct_retain(from);
    }
    ct_copy_into(dst, from);
    ct_release(from);
    ct_bump_version(dst);
    ct_tensor *in[2] = {dst, src};
    ct_node *n = ct_node_record(CT_OP_copy, 2, in, 1);
    if (n) {
        ct_rebase_history(n, dst);
        ct_release(n);
    }
    CT_TRACE_ATTRS(CT_OP_copy, 2, in, 1, &dst, &(ct_copy_attrs){false});
    return ct_ret(ct_retain(dst));
}

/* CopyBackwards: dst's old values are gone (zero gradient); src gets grad. */
bool copy_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    if (n->needs_grad[0] && !(gi[0] = ct_zeros_like_with(go[0], (ct_tensor_options){0}))) return false;
    if (n->needs_grad[1]) gi[1] = go[0];
    return true;
}

ct_tensor *ct_detach(ct_tensor *t) {
    if (!ct_alive("ct_detach", 1, t)) return NULL;
    if (!t) return NULL;
    ct_tensor *d = ct_tensor_view_of(t, t->ndim, t->sizes, t->strides, t->offset);
    if (!d) return NULL;
    /* shares data like a view, but is a fresh leaf and the root of its own views
     * (Note [In-place on views]) */
    ct_release(d->base);
    d->base = NULL;
    return ct_ret(d);
}

int ct_copy_to_buffer(const ct_tensor *t, void *dst, ct_dtype dtype, size_t dst_bytes) {
    if (!ct_alive("ct_copy_to_buffer", 1, t)) return -1;
    ct_note_value_read();
    if (!t) return -1;
    if (!dst) {
        ct_error("ct_copy_to_buffer: dst is NULL");
        return -1;
    }
    size_t need = (size_t)t->numel * ct_dtype_size(dtype);
    if (dst_bytes < need) {
        ct_error("ct_copy_to_buffer: buffer of %zu bytes is too small for %lld elements of %s "
                 "(%zu bytes needed)", dst_bytes, (long long)t->numel, ct_dtype_name(dtype), need);
        return -1;
    }
    if (t->storage->device.type != CT_DEV_CPU) {
        ct_error("ct_copy_to_buffer: tensor is not on the cpu; call ct_to(t, .device = CT_CPU) "
                 "first");
        return -1;
    }
    ct_tensor *view = ct_blob_new(dst, dtype, ct_shape_of(t), NULL, NULL, NULL);
    if (!view) return -1;
    ct_copy_into(view, t);
    ct_release(view);
    return 0;
}

/* The value of a one-element tensor, read on the host: f64 or i64 (exact for large
 * integers); false with the error set. */
static bool item_value(const char *op, const ct_tensor *t, ct_dtype as, void *value) {
    if (!t) return false;
    if (t->numel != 1) {
        ct_error("%s: a Tensor with %lld elements cannot be converted to Scalar", op,
                 (long long)t->numel);
        return false;
    }
    ct_host_buf hb;
    const void *v = ct_host_read(op, t, CT_DTYPE_UNSET, &hb);
    if (!v) return false;
    double d = ct_load_f64(v, t->dtype);
    bool fits = true;
    if (as == CT_I64 && ct_dtype_is_floating(t->dtype)) {
        /* As Python's int(): NaN and infinity have no integer value; nor has a float
         * beyond int64's range here. */
        fits = false;
        if (isnan(d)) ct_error("%s: cannot convert float NaN to integer", op);
        else if (isinf(d)) ct_error("%s: cannot convert float infinity to integer", op);
        else if (!(d >= -0x1p63 && d < 0x1p63)) ct_error("%s: value %g is out of range for int64", op, d);
        else fits = true;
    }
    if (fits && as == CT_I64) *(int64_t *)value = ct_load_i64(v, t->dtype);
    else if (fits) *(double *)value = d;
    ct_host_release(&hb);
    return fits;
}

double ct_item(const ct_tensor *t) {
    if (!ct_alive("ct_item", 1, t)) return NAN;
    ct_note_value_read();
    double v;
    return item_value("ct_item", t, CT_F64, &v) ? v : NAN;
}

int64_t ct_item_int(const ct_tensor *t) {
    if (!ct_alive("ct_item_int", 1, t)) return 0;
    ct_note_value_read();
    int64_t v;
    return item_value("ct_item_int", t, CT_I64, &v) ? v : 0;
}
