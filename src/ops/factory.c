/* Factories: empty, zeros, ones, full, their *_like forms, from C data; fill_, zero_. */
#include <string.h>

#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/pointwise.h"

static ct_dtype pick_dtype(ct_dtype given, ct_dtype fallback) {
    return given != CT_DTYPE_UNSET ? given : fallback;
}
static ct_device pick_device(ct_device given, ct_device fallback) {
    return given.type != CT_DEV_UNSET ? given : fallback;
}

/* Writes value into every element of t (any dtype, any strides). */
static void fill(ct_tensor *t, double value) {
    ct_loop_fn k = (ct_loop_fn)ct_kernel_for(CT_OP_fill, t->storage->device, t->dtype);
    CT_ASSERT(k);
    ct_pw_args args = {.a = value};
    if (value == (double)(int64_t)value) {
        args.i = (int64_t)value;
        args.has_b = true;
    }
    ct_iter it;
    ct_iter_init(&it, 1, &t, t->ndim, t->sizes);
    ct_iter_run(&it, k, &args);
}

/* Sets requires_grad on a fresh factory result, refusing non-float dtypes. */
static ct_tensor *finish(const char *op, ct_tensor *t, bool requires_grad) {
    if (!t) return NULL;
    if (requires_grad) {
        if (!ct_dtype_is_floating(t->dtype)) {
            ct_error("%s: Only Tensors of floating point dtype can require gradients (got %s)",
                     op, ct_dtype_name(t->dtype));
            ct_release(t);
            return NULL;
        }
        t->requires_grad = true;
    }
    return ct_ret(t);
}

static ct_tensor *make(ct_shape shape, ct_tensor_options o) {
    return ct_tensor_new(shape, pick_dtype(o.dtype, ct_get_default_dtype()),
                         pick_device(o.device, CT_CPU));
}

ct_tensor *ct_empty_with(ct_shape shape, ct_tensor_options o) {
    return finish("ct_empty", make(shape, o), o.requires_grad);
}

ct_tensor *ct_full_with(ct_shape shape, double value, ct_tensor_options o) {
    ct_tensor *t = make(shape, o);
    if (t) fill(t, value);
    return finish("ct_full", t, o.requires_grad);
}

ct_tensor *ct_zeros_with(ct_shape shape, ct_tensor_options o) {
    ct_tensor *t = make(shape, o);
    if (t) memset(t->storage->data, 0, t->storage->nbytes);
    return finish("ct_zeros", t, o.requires_grad);
}

ct_tensor *ct_ones_with(ct_shape shape, ct_tensor_options o) { return ct_full_with(shape, 1, o); }

/* *_like: the input's shape, dtype and device unless the options say otherwise. */
static ct_tensor_options like(const ct_tensor *t, ct_tensor_options o) {
    o.dtype = pick_dtype(o.dtype, t->dtype);
    o.device = pick_device(o.device, t->storage->device);
    return o;
}
ct_tensor *ct_empty_like_with(const ct_tensor *t, ct_tensor_options o) {
    return t ? ct_empty_with(ct_shape_of(t), like(t, o)) : NULL;
}
ct_tensor *ct_zeros_like_with(const ct_tensor *t, ct_tensor_options o) {
    return t ? ct_zeros_with(ct_shape_of(t), like(t, o)) : NULL;
}
ct_tensor *ct_ones_like_with(const ct_tensor *t, ct_tensor_options o) {
    return t ? ct_ones_with(ct_shape_of(t), like(t, o)) : NULL;
}
ct_tensor *ct_full_like_with(const ct_tensor *t, double value, ct_tensor_options o) {
    return t ? ct_full_with(ct_shape_of(t), value, like(t, o)) : NULL;
}

ct_tensor *ct_scalar_tensor_with(double v, ct_tensor_options o) { return ct_full_with(CT_SHAPE(), v, o); }

ct_tensor *ct_tensor_from_with(const void *data, ct_dtype dtype, ct_shape shape, ct_tensor_options o) {
    if (!data) {
        ct_error("ct_tensor_from: data is NULL");
        return NULL;
    }
    ct_tensor *src = ct_tensor_new(shape, dtype, CT_CPU);
    if (!src) return NULL;
    memcpy(src->storage->data, data, src->storage->nbytes);
    ct_dtype want = pick_dtype(o.dtype, dtype);
    ct_device dev = pick_device(o.device, CT_CPU);
    ct_tensor *t = src;
    if (want != dtype || dev.type != CT_DEV_CPU) {
        t = ct_tensor_new(shape, want, dev);
        if (t) ct_copy_into(t, src);
        ct_release(src);
    }
    return finish("ct_tensor_from", t, o.requires_grad);
}

ct_tensor *ct_fill_(ct_tensor *t, double value) {
    if (!t || !ct_check_inplace("ct_fill_", t)) return NULL;
    fill(t, value);
    ct_bump_version(t);
    ct_node *n = ct_node_record(CT_OP_fill, 1, &t, 1);
    if (n) {
        ct_node_set_output(n, t, 0);
        ct_release(n);
    }
    return ct_ret(ct_retain(t));
}

/* The old values no longer matter: their gradient is zero. */
bool fill_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    return (gi[0] = ct_zeros_like_with(go[0], (ct_tensor_options){0})) != NULL;
}

ct_tensor *ct_zero_(ct_tensor *t) {
    if (!t) return NULL;
    return ct_fill_(t, 0);
}
