/* Factories: empty, zeros, ones, full, their *_like forms, from C data; fill_, zero_;
 * arange, linspace, eye. */
#include <math.h>

#include "autograd/node.h"
#include "ops/internal.h"
#include "kernels/range.h"
#include "ops/pointwise.h"
#include "ops/trace.h"

static ct_dtype pick_dtype(ct_dtype given, ct_dtype fallback) {
    return given != CT_DTYPE_UNSET ? given : fallback;
}
static ct_device pick_device(ct_device given, ct_device fallback) {
    return given.type != CT_DEV_UNSET ? given : fallback;
}

/* Writes value into every element of t (any dtype, any strides) with t's backend:
 * converted to t's dtype here, on the host; an integral value exactly, however large,
 * into an int64 tensor. */
void ct_fill_raw(ct_tensor *t, double value) {
    char v[8];
    ct_store_f64(v, t->dtype, value);
    if (t->dtype == CT_I64 && fabs(value) < 0x1p63 && value == (double)(int64_t)value)
        ct_store_i64(v, t->dtype, (int64_t)value);
    ct_fill_into(t, v);
}

/* Sets requires_grad on a fresh factory result, refusing non-float dtypes. */
ct_tensor *ct_factory_finish(const char *op, ct_tensor *t, bool requires_grad) {
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

ct_tensor *ct_factory_new(const char *op, ct_shape shape, ct_tensor_options o) {
    return ct_tensor_new(op, shape, pick_dtype(o.dtype, ct_get_default_dtype()),
                         pick_device(o.device, CT_CPU));
}

ct_tensor *ct_empty_with(ct_shape shape, ct_tensor_options o) {
    return ct_factory_finish("ct_empty", ct_factory_new("ct_empty", shape, o), o.requires_grad);
}

/* full, ones, scalar_tensor: a new tensor of the value, errors naming op. */
static ct_tensor *full_named(const char *op, ct_shape shape, double value, ct_tensor_options o) {
    ct_tensor *t = ct_factory_new(op, shape, o);
    if (t) ct_fill_raw(t, value);
    return ct_factory_finish(op, t, o.requires_grad);
}

ct_tensor *ct_full_with(ct_shape shape, double value, ct_tensor_options o) {
    return full_named("ct_full", shape, value, o);
}

ct_tensor *ct_zeros_with(ct_shape shape, ct_tensor_options o) {
    ct_tensor *t = ct_factory_new("ct_zeros", shape, o);
    if (t) ct_fill_raw(t, 0);
    return ct_factory_finish("ct_zeros", t, o.requires_grad);
}

ct_tensor *ct_ones_with(ct_shape shape, ct_tensor_options o) {
    return full_named("ct_ones", shape, 1, o);
}

/* *_like: the input's shape, dtype and device unless the options say otherwise. */
ct_tensor_options ct_like_options(const ct_tensor *t, ct_tensor_options o) {
    o.dtype = pick_dtype(o.dtype, t->dtype);
    o.device = pick_device(o.device, t->storage->device);
    return o;
}
ct_tensor *ct_empty_like_with(const ct_tensor *t, ct_tensor_options o) {
    if (!ct_alive("ct_empty_like", 1, t)) return NULL;
    return t ? ct_empty_with(ct_shape_of(t), ct_like_options(t, o)) : NULL;
}
ct_tensor *ct_zeros_like_with(const ct_tensor *t, ct_tensor_options o) {
    if (!ct_alive("ct_zeros_like", 1, t)) return NULL;
    return t ? ct_zeros_with(ct_shape_of(t), ct_like_options(t, o)) : NULL;
}
ct_tensor *ct_ones_like_with(const ct_tensor *t, ct_tensor_options o) {
    if (!ct_alive("ct_ones_like", 1, t)) return NULL;
    return t ? ct_ones_with(ct_shape_of(t), ct_like_options(t, o)) : NULL;
}
ct_tensor *ct_full_like_with(const ct_tensor *t, double value, ct_tensor_options o) {
    if (!ct_alive("ct_full_like", 1, t)) return NULL;
    return t ? ct_full_with(ct_shape_of(t), value, ct_like_options(t, o)) : NULL;
}

ct_tensor *ct_scalar_tensor_with(double v, ct_tensor_options o) {
    return full_named("ct_scalar_tensor", CT_SHAPE(), v, o);
}

ct_tensor *ct_tensor_from_with(const void *data, ct_dtype dtype, ct_shape shape, ct_tensor_options o) {
    if (!data) {
        ct_error("ct_tensor_from: data is NULL");
        return NULL;
    }
    ct_tensor *t = ct_tensor_new("ct_tensor_from", shape, pick_dtype(o.dtype, dtype),
                                 pick_device(o.device, CT_CPU));
    /* the caller's memory as a host tensor, copied in by t's backend */
    ct_tensor *src = t ? ct_blob_new((void *)data, dtype, shape, NULL, NULL, NULL) : NULL;
    if (src) {
        ct_copy_into(t, src);
        ct_release(src);
    } else if (t) {
        ct_release(t);
        t = NULL;
    }
    return ct_factory_finish("ct_tensor_from", t, o.requires_grad);
}

ct_tensor *ct_fill_(ct_tensor *t, double value) {
    if (!ct_alive("ct_fill_", 1, t)) return NULL;
    if (!t || !ct_check_inplace("ct_fill_", t)) return NULL;
    ct_fill_raw(t, value);
    ct_bump_version(t);
    ct_node *n = ct_node_record(CT_OP_fill, 1, &t, 1);
    if (n) {
        ct_rebase_history(n, t);
        ct_release(n);
    }
    CT_TRACE_ATTRS(CT_OP_fill, 1, &t, 1, &t, &(ct_fill_attrs){value});
    return ct_ret(ct_retain(t));
}

/* The old values no longer matter: their gradient is zero. */
bool fill_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    return (gi[0] = ct_zeros_like_with(go[0], (ct_tensor_options){0})) != NULL;
}

ct_tensor *ct_zero_(ct_tensor *t) {
    if (!ct_alive("ct_zero_", 1, t)) return NULL;
    if (!t) return NULL;
    return ct_fill_(t, 0);
}

/* ---- ranges ------------------------------------------------------------- */

/* Runs a range kernel (arange, linspace) over a fresh contiguous t. */
static bool run_range(ct_op_id op, ct_tensor *t, const ct_range_args *a) {
    ct_range_kernel k = ct_kernel_range_for(op, t->storage->device, t->dtype);
    if (k) k(ct_tensor_data(t), t->numel, a);
    return k != NULL;
}

static ct_tensor *finish_range(const char *op, ct_op_id kind, ct_tensor *t,
                               const ct_range_args *a, bool requires_grad) {
    if (t && !run_range(kind, t, a)) {
        ct_release(t);
        return NULL;
    }
    return ct_factory_finish(op, t, requires_grad);
}

ct_tensor *ct_arange_with(ct_scalar start, ct_scalar end, ct_scalar step, ct_tensor_options o) {
    if (o.dtype == CT_DTYPE_UNSET)
        o.dtype = start.is_int && end.is_int && step.is_int ? CT_I64 : ct_get_default_dtype();
    bool integral = !ct_dtype_is_floating(o.dtype);
    double rs = start.is_int ? (double)start.i : start.f, re = end.is_int ? (double)end.i : end.f;
    double rst = step.is_int ? (double)step.i : step.f;
    /* Checked before any conversion to an integer (Note [Float to integer]). */
    if (!isfinite(rs) || !isfinite(re)) {
        ct_error("ct_arange: unsupported range: %g -> %g", rs, re);
        return NULL;
    }
    if (!(rst > 0 || rst < 0) || !isfinite(rst)) {
        ct_error("ct_arange: step must be nonzero and finite (got %g)", rst);
        return NULL;
    }
    if (integral && !(fabs(rs) < 0x1p63 && fabs(re) < 0x1p63 && fabs(rst) < 0x1p63)) {
        ct_error("ct_arange: a bound or step does not fit %s (%g -> %g, step %g)",
                 ct_dtype_name(o.dtype), rs, re, rst);
        return NULL;
    }
    /* PyTorch converts the arguments to the result's accumulate type first. */
    double s = integral ? (double)(start.is_int ? start.i : (int64_t)start.f) : start.f;
    double e = integral ? (double)(end.is_int ? end.i : (int64_t)end.f) : end.f;
    double st = integral ? (double)(step.is_int ? step.i : (int64_t)step.f) : step.f;
    if (!(st > 0 || st < 0)) {
        ct_error("ct_arange: step must be nonzero");
        return NULL;
    }
    if (!((st > 0 && e >= s) || (st < 0 && e <= s))) {
        ct_error("ct_arange: upper bound and larger bound inconsistent with step sign");
        return NULL;
    }
    double n = ceil((e - s) / st);
    if (!(n >= 0 && n <= 9.2e18)) {
        ct_error("ct_arange: invalid size, possible overflow? (got %g elements)", n);
        return NULL;
    }
    ct_range_args a = {.start = s, .step = st, .istart = ct_f64_to_i64(s), .istep = ct_f64_to_i64(st)};
    if (integral && start.is_int && step.is_int) {
        a.istart = start.i; /* exact beyond 2^53 */
        a.istep = step.i;
    }
    ct_tensor *out = finish_range("ct_arange", CT_OP_arange,
                                  ct_factory_new("ct_arange", CT_SHAPE((int64_t)n), o), &a,
                                  o.requires_grad);
    if (out)
        CT_TRACE_ATTRS(CT_OP_arange, 0, NULL, 1, &out,
                       &(ct_arange_attrs){s, e, st, o.dtype, o.device});
    return out;
}

ct_tensor *ct_linspace_with(double start, double end, int64_t steps, ct_tensor_options o) {
    if (steps < 0) {
        ct_error("ct_linspace: number of steps must be non-negative (got %lld)", (long long)steps);
        return NULL;
    }
    /* one step is [start] (PyTorch fills it), not the formula's [end] */
    ct_range_args a = {.start = start, .end = steps == 1 ? start : end};
    ct_tensor *out = finish_range("ct_linspace", CT_OP_linspace,
                                  ct_factory_new("ct_linspace", CT_SHAPE(steps), o), &a,
                                  o.requires_grad);
    if (out)
        CT_TRACE_ATTRS(CT_OP_linspace, 0, NULL, 1, &out,
                       &(ct_linspace_attrs){start, end, steps, o.dtype, o.device});
    return out;
}

ct_tensor *ct_eye_with(int64_t n, int64_t m, ct_tensor_options o) {
    if (n < 0 || m < 0) {
        ct_error("ct_eye: %s must be greater or equal to 0, got %lld", n < 0 ? "n" : "m",
                 (long long)(n < 0 ? n : m));
        return NULL;
    }
    ct_tensor *t = ct_factory_new("ct_eye", CT_SHAPE(n, m), o);
    if (!t) return NULL;
    ct_fill_raw(t, 0);
    int64_t k = n < m ? n : m, stride = m + 1; /* the diagonal as a strided view */
    ct_tensor *diag = ct_tensor_view_of(t, 1, &k, &stride, 0);
    if (!diag) {
        ct_release(t);
        return NULL;
    }
    ct_fill_raw(diag, 1);
    ct_release(diag);
    return ct_factory_finish("ct_eye", t, o.requires_grad);
}
