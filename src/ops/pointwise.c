#include <math.h>
#include <string.h>

#include "ctorch/autograd.h"
#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/pointwise.h"

static ct_dtype combine(ct_dtype higher, ct_dtype lower) {
    if (higher == CT_DTYPE_UNSET) return lower;
    if (lower == CT_DTYPE_UNSET) return higher;
    if (ct_dtype_is_floating(higher)) return higher;
    if (higher == CT_BOOL || ct_dtype_is_floating(lower)) return ct_promote_types(higher, lower);
    return higher;
}

static ct_dtype promote_into(ct_dtype acc, ct_dtype t) {
    return acc == CT_DTYPE_UNSET ? t : ct_promote_types(acc, t);
}

ct_dtype ct_result_type(int n, ct_tensor *const *inputs) {
    ct_dtype dim = CT_DTYPE_UNSET, zero = CT_DTYPE_UNSET, wrapped = CT_DTYPE_UNSET;
    for (int i = 0; i < n; i++) {
        const ct_tensor *t = inputs[i];
        if (t->wrapped_number) {
            ct_dtype w = t->dtype;
            if (ct_dtype_is_floating(w)) w = ct_get_default_dtype();
            else if (w != CT_BOOL) w = CT_I64;
            wrapped = promote_into(wrapped, w);
        } else if (t->ndim == 0) {
            zero = promote_into(zero, t->dtype);
        } else {
            dim = promote_into(dim, t->dtype);
        }
    }
    return combine(dim, combine(zero, wrapped));
}

ct_tensor *ct_wrap_scalar(double v, const ct_tensor *like) {
    ct_dtype dt;
    if (like && ct_dtype_is_floating(like->dtype))
        dt = like->dtype;
    else if (v == floor(v) && fabs(v) < 9.2e18)
        dt = CT_I64;
    else
        dt = ct_get_default_dtype();
    ct_tensor *t = ct_tensor_new("ct_scalar_tensor", CT_SHAPE(), dt, CT_CPU);
    if (!t) return NULL;
    ct_store_f64(ct_tensor_data(t), dt, v);
    t->wrapped_number = true;
    return t;
}

bool ct_check_no_internal_overlap(const char *op, const ct_tensor *t) {
    /* A stride of 0 over a dim of 2 or more (expand) makes one write land on several
     * elements: the result would depend on the order of the writes. */
    for (int i = 0; i < t->ndim; i++) {
        if (t->strides[i] == 0 && t->sizes[i] > 1) {
            ct_error("%s: unsupported operation: more than one element of the written-to tensor "
                     "refers to a single memory location. Please clone() the tensor before "
                     "performing the operation.",
                     op);
            return false;
        }
    }
    return true;
}

bool ct_check_inplace_of(const char *op, ct_tensor *t, int n, ct_tensor *const *inputs) {
    if (!ct_check_no_internal_overlap(op, t)) return false;
    if (ct_is_grad_enabled() && !t->grad_fn && t->requires_grad) {
        ct_error("%s: a leaf Variable that requires grad is being used in an in-place operation.",
                 op);
        return false;
    }
    /* Views: see Note [In-place on views] (autograd/node.h). */
    return !t->view_kind || ct_view_check_inplace(op, t, n, inputs);
}

bool ct_check_inplace(const char *op, ct_tensor *t) { return ct_check_inplace_of(op, t, 0, NULL); }

static const char *op_name(const ct_pw_spec *s) { return ct_ops[s->op].name; }

/* The per-op fast path: a new output from inputs of one shape, dtype and device, all
 * contiguous (no wrapped numbers), computes in that dtype over one flat run, without
 * the general set-up.  False when it does not apply (the general path then decides);
 * else *res is the result, or NULL with the error the general path would give. */
static bool same_shape_fast(const ct_pw_spec *spec, int n_in, ct_tensor *const *inputs,
                            const ct_pw_args *args, ct_tensor **res) {
    const ct_tensor *a = inputs[0];
    ct_dtype dt = a->dtype;
    ct_device dev = a->storage->device;
    if (ct_compute_dtype_for(spec->op, dev, dt) != dt ||
        (spec->result == CT_PW_PROMOTE_FLOAT && !ct_dtype_is_floating(dt)))
        return false;
    for (int i = 0; i < n_in; i++) {
        const ct_tensor *t = inputs[i];
        if (t->wrapped_number || t->dtype != dt || !ct_same_device(t->storage->device, dev) ||
            (i && (t->ndim != a->ndim ||
                   memcmp(t->sizes, a->sizes, sizeof(int64_t) * (size_t)a->ndim))) ||
            !ct_tensor_is_contiguous(t))
            return false;
    }
    *res = NULL;
    ct_loop_fn kernel = ct_kernel_loop_for(spec->op, dev, dt);
    if (!kernel) return true;
    ct_tensor *out = ct_tensor_new_dims(ct_ops[spec->op].fn, a->ndim, a->sizes,
                                        spec->result == CT_PW_BOOL ? CT_BOOL : dt, dev);
    *res = out;
    if (!out || !out->numel) return true;
    ct_iter it;
    ct_iter_init_flat(&it, out, n_in, inputs, out->numel);
    ct_iter_run(&it, kernel, args);
    return true;
}

/* The common device of an op (PyTorch's TensorIterator): that of the first operand
 * not on the cpu among out and the inputs (*first; NULL when all are on the cpu).
 * Every operand must be on it, except 0-d cpu inputs (wrapped numbers among them),
 * which go to any device as values (cpu scalars, core/iter.h).  Returns the first
 * operand that is not, or NULL. */
static const ct_tensor *off_device(int n_in, ct_tensor *const *inputs, const ct_tensor *out,
                                   const ct_tensor **first) {
    const ct_tensor *f = out && out->storage->device.type != CT_DEV_CPU ? out : NULL;
    for (int i = 0; i < n_in && !f; i++)
        if (inputs[i]->storage->device.type != CT_DEV_CPU) f = inputs[i];
    *first = f;
    if (!f) return NULL; /* all on the cpu */
    ct_device d = f->storage->device;
    if (out && !ct_same_device(out->storage->device, d)) return out;
    for (int i = 0; i < n_in; i++) {
        const ct_tensor *t = inputs[i];
        ct_device td = t->storage->device;
        if (!ct_same_device(td, d) && !(t->ndim == 0 && td.type == CT_DEV_CPU)) return t;
    }
    return NULL;
}

ct_tensor *ct_pointwise(const ct_pw_spec *spec, int n_in, ct_tensor *const *inputs,
                        ct_tensor *out, const ct_pw_args *args) {
    /* The op's name is formatted only when an error needs it: this runs per op. */
    char name[64];
    name[0] = 0;
#define NAME() (name[0] ? name : (snprintf(name, sizeof name, "ct_%s", op_name(spec)), name))
    for (int i = 0; i < n_in; i++)
        if (!inputs[i]) return NULL;
    ct_tensor *fast;
    if (!out && same_shape_fast(spec, n_in, inputs, args, &fast)) return fast;
    if (out && (ct_is_grad_enabled() && (out->requires_grad || out->view_kind)
                    ? !ct_check_inplace_of(NAME(), out, n_in, inputs)
                    : !ct_check_no_internal_overlap(NAME(), out)))
        return NULL;
    const ct_tensor *first, *bad = off_device(n_in, inputs, out, &first);
    if (bad) {
        ct_check_same_device(NAME(), first, bad);
        return NULL;
    }
    ct_device dev = first ? first->storage->device : CT_CPU;
    /* Broadcast shape; inputs of one shape (the common case) need no work. */
    int ndim = inputs[0]->ndim;
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, inputs[0]->sizes, sizeof(int64_t) * (size_t)ndim);
    bool same = true;
    for (int i = 1; i < n_in && same; i++)
        same = inputs[i]->ndim == ndim &&
               !memcmp(inputs[i]->sizes, shape, sizeof(int64_t) * (size_t)ndim);
    for (int i = 1; i < n_in && !same; i++) {
        const ct_tensor *t = inputs[i];
        int64_t prev[CT_MAX_DIMS];
        memcpy(prev, shape, sizeof shape);
        int pn = ndim;
        if (!ct_broadcast_shapes(pn, prev, t->ndim, t->sizes, &ndim, shape)) {
            /* Name the first dim that disagrees, as PyTorch does. */
            int n = pn > t->ndim ? pn : t->ndim;
            for (int d = n - 1; d >= 0; d--) {
                int64_t a = d - (n - pn) >= 0 ? prev[d - (n - pn)] : 1;
                int64_t b = d - (n - t->ndim) >= 0 ? t->sizes[d - (n - t->ndim)] : 1;
                if (a != b && a != 1 && b != 1) {
                    ct_error("%s: The size of tensor a (%lld) must match the size of tensor b "
                             "(%lld) at non-singleton dimension %d", NAME(), (long long)a,
                             (long long)b, d);
                    break;
                }
            }
            return NULL;
        }
    }
    /* Dtypes: compute dtype from the promoted inputs. */
    int p0 = spec->first_input;
    ct_dtype compute = spec->result == CT_PW_FIRST ? inputs[p0]->dtype
                                                   : ct_result_type(n_in - p0, inputs + p0);
    if (spec->result == CT_PW_PROMOTE_FLOAT && !ct_dtype_is_floating(compute))
        compute = ct_get_default_dtype();
    ct_dtype result = spec->result == CT_PW_BOOL ? CT_BOOL : compute;
    if (out) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        if (out->ndim != ndim || memcmp(out->sizes, shape, sizeof(int64_t) * (size_t)ndim)) {
            ct_error("%s: output with shape %s doesn't match the broadcast shape %s", NAME(),
                     ct_shape_str(out->ndim, out->sizes, a), ct_shape_str(ndim, shape, b));
            return NULL;
        }
        if (ct_promote_types(result, out->dtype) != out->dtype &&
            !(ct_dtype_is_floating(out->dtype) && ct_dtype_is_floating(result))) {
            ct_error("%s: result type %s can't be cast to the desired output type %s", NAME(),
                     ct_dtype_name(result), ct_dtype_name(out->dtype));
            return NULL;
        }
    }
    ct_dtype kdtype = ct_compute_dtype_for(spec->op, dev, compute);
    ct_loop_fn kernel = ct_kernel_loop_for(spec->op, dev, kdtype);
    if (!kernel) {
        /* Report the user's dtype, not the internal float32 one. */
        if (kdtype != compute) {
            ct_clear_error();
            ct_kernel_loop_for(spec->op, dev, compute);
        }
        return NULL;
    }
    ct_dtype kresult = spec->result == CT_PW_BOOL ? CT_BOOL : kdtype;

    /* Operands: cast inputs to the kernel's dtype where they differ; the output is
     * written directly when its dtype is the kernel's, else through a temporary. */
    ct_tensor *ops[CT_ITER_MAX_OPERANDS] = {0};
    ct_tensor *owned[CT_ITER_MAX_OPERANDS] = {0};
    ct_tensor *result_t = out;
    bool ok = true;
    if (out && out->dtype == kresult) {
        ops[0] = out;
    } else {
        ct_shape s = {.ndim = ndim};
        memcpy(s.d, shape, sizeof(int64_t) * (size_t)ndim);
        ops[0] = owned[0] = ct_tensor_new(ct_ops[spec->op].fn, s, kresult, dev);
        ok = ops[0] != NULL;
    }
    for (int i = 0; ok && i < n_in; i++) {
        ct_tensor *t = inputs[i];
        ct_dtype want = i < p0 ? t->dtype : kdtype;
        if (t->dtype == want) {
            ops[i + 1] = t;
        } else {
            ops[i + 1] = owned[i + 1] = ct_cast_new(ct_ops[spec->op].fn, t, want);
            ok = ops[i + 1] != NULL;
        }
    }
    if (ok) {
        ct_iter it;
        ct_iter_init(&it, n_in + 1, ops, ndim, shape);
        ct_iter_run(&it, kernel, args);
        if (!out) {
            if (kresult == result) {
                result_t = ops[0]; /* the temporary is the result: keep its reference */
                owned[0] = NULL;
            } else {
                result_t = ct_cast_new(ct_ops[spec->op].fn, ops[0], result);
                ok = result_t != NULL;
            }
        } else {
            if (ops[0] != out) ct_copy_into(out, ops[0]);
            ct_bump_version(out);
            ct_retain(out);
        }
    }
    for (int i = 0; i <= n_in; i++) ct_release(owned[i]);
    return ok ? result_t : NULL;
#undef NAME
}
