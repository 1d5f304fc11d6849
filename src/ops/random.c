/* Random ops: the factories rand, randn, randint, randperm (and *_like), bernoulli,
 * the in-place samplers normal_, uniform_, bernoulli_, and dropout.  Every op reserves
 * one generator counter per element (Note [Random counters] in core/generator.h). */
#include <math.h>

#include "autograd/node.h"
#include "core/generator.h"
#include "cpu/random.h"
#include "ops/internal.h"
#include "ops/pointwise.h"

/* Runs op's kernel over every element of t (any strides) with counters reserved from
 * g.  The kernel writes contiguous memory: a strided t is filled through a copy, so
 * element i (in C order) always draws from counter offset + i. */
static bool sample(ct_op_id op, ct_tensor *t, ct_rng_args *a, ct_generator *g) {
    ct_rng_kernel k = (ct_rng_kernel)ct_kernel_for(op, t->storage->device, t->dtype);
    if (!k) return false;
    a->offset = ct_generator_reserve(ct_generator_or_default(g), (uint64_t)t->numel, &a->seed);
    if (ct_tensor_is_contiguous(t)) {
        k(ct_tensor_data(t), t->numel, a);
        return true;
    }
    ct_tensor *tmp = ct_tensor_new(ct_shape_of(t), t->dtype, t->storage->device);
    if (!tmp) return false;
    k(ct_tensor_data(tmp), tmp->numel, a);
    ct_copy_into(t, tmp);
    ct_release(tmp);
    return true;
}

static bool check_floating(const char *op, const char *what, ct_dtype dt) {
    if (ct_dtype_is_floating(dt)) return true;
    ct_error("%s: expected a floating point %s (got %s)", op, what, ct_dtype_name(dt));
    return false;
}

/* ---- factories ---------------------------------------------------------- */

static ct_tensor *random_factory(const char *name, ct_op_id op, ct_shape shape,
                                 ct_tensor_options o, ct_rng_args a) {
    ct_tensor *t = ct_factory_new(shape, o);
    if (!t) return NULL;
    if (op != CT_OP_randint && !check_floating(name, "dtype", t->dtype)) {
        ct_release(t);
        return NULL;
    }
    if (!sample(op, t, &a, o.generator)) {
        ct_release(t);
        return NULL;
    }
    return ct_factory_finish(name, t, o.requires_grad);
}

ct_tensor *ct_rand_with(ct_shape shape, ct_tensor_options o) {
    return random_factory("ct_rand", CT_OP_uniform, shape, o, (ct_rng_args){.a = 0, .b = 1});
}

ct_tensor *ct_randn_with(ct_shape shape, ct_tensor_options o) {
    return random_factory("ct_randn", CT_OP_normal, shape, o, (ct_rng_args){.a = 0, .b = 1});
}

/* The C++ type names PyTorch's range checks print, and the dtype's exact range. */
static const char *cpp_name(ct_dtype dt) {
    switch (dt) {
    case CT_I64: return "long";
    case CT_I32: return "int";
    case CT_I16: return "short";
    case CT_U8: return "unsigned char";
    case CT_I8: return "signed char";
    case CT_BOOL: return "bool";
    case CT_F32: return "float";
    case CT_F64: return "double";
    case CT_F16: return "c10::Half";
    default: return "c10::BFloat16";
    }
}
static void dtype_range(ct_dtype dt, double *lo, double *hi) {
    switch (dt) {
    case CT_I32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case CT_I16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case CT_U8: *lo = 0, *hi = UINT8_MAX; break;
    case CT_I8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case CT_BOOL: *lo = 0, *hi = 1; break;
    /* floats: integers are exact up to 2^digits */
    case CT_F32: *lo = -0x1p24, *hi = 0x1p24; break;
    case CT_F64: *lo = -0x1p53, *hi = 0x1p53; break;
    case CT_F16: *lo = -0x1p11, *hi = 0x1p11; break;
    case CT_BF16: *lo = -0x1p8, *hi = 0x1p8; break;
    default: *lo = -INFINITY, *hi = INFINITY; /* int64 holds every int64 */
    }
}

ct_tensor *ct_randint_with(int64_t low, int64_t high, ct_shape shape, ct_tensor_options o) {
    if (low >= high) {
        ct_error("ct_randint: random_ expects 'from' to be less than 'to', but got from=%lld "
                 ">= to=%lld", (long long)low, (long long)high);
        return NULL;
    }
    if (o.dtype == CT_DTYPE_UNSET) o.dtype = CT_I64;
    double lo, hi;
    dtype_range(o.dtype, &lo, &hi);
    if ((double)low < lo || (double)low > hi) {
        ct_error("ct_randint: from is out of bounds for %s (got %lld)", cpp_name(o.dtype),
                 (long long)low);
        return NULL;
    }
    if ((double)(high - 1) < lo || (double)(high - 1) > hi) {
        ct_error("ct_randint: to - 1 is out of bounds for %s (got %lld)", cpp_name(o.dtype),
                 (long long)(high - 1));
        return NULL;
    }
    ct_rng_args a = {.low = low, .range = (uint64_t)high - (uint64_t)low};
    return random_factory("ct_randint", CT_OP_randint, shape, o, a);
}

ct_tensor *ct_randperm_with(int64_t n, ct_tensor_options o) {
    if (o.dtype == CT_DTYPE_UNSET) o.dtype = CT_I64;
    double lo, hi;
    dtype_range(o.dtype, &lo, &hi);
    if (n > 0 && (double)(n - 1) > hi) {
        ct_error("ct_randperm: n is too large for result tensor type: '%s' (got n=%lld)",
                 ct_dtype_name(o.dtype), (long long)n);
        return NULL;
    }
    ct_tensor *perm = ct_tensor_new(CT_SHAPE(n), CT_I64, CT_CPU);
    if (!perm) return NULL;
    if (!sample(CT_OP_randperm, perm, &(ct_rng_args){0}, o.generator)) {
        ct_release(perm);
        return NULL;
    }
    ct_tensor *t = perm;
    if (o.dtype != CT_I64 || (o.device.type != CT_DEV_UNSET && o.device.type != CT_DEV_CPU)) {
        t = ct_factory_new(CT_SHAPE(n), o);
        if (t) ct_copy_into(t, perm);
        ct_release(perm);
    }
    return ct_factory_finish("ct_randperm", t, o.requires_grad);
}

ct_tensor *ct_rand_like_with(const ct_tensor *t, ct_tensor_options o) {
    return t ? ct_rand_with(ct_shape_of(t), ct_like_options(t, o)) : NULL;
}
ct_tensor *ct_randn_like_with(const ct_tensor *t, ct_tensor_options o) {
    return t ? ct_randn_with(ct_shape_of(t), ct_like_options(t, o)) : NULL;
}
ct_tensor *ct_randint_like_with(const ct_tensor *t, int64_t low, int64_t high,
                                ct_tensor_options o) {
    return t ? ct_randint_with(low, high, ct_shape_of(t), ct_like_options(t, o)) : NULL;
}

/* ---- bernoulli ---------------------------------------------------------- */

ct_tensor *ct_bernoulli_with(ct_tensor *p, ct_random_options o) {
    if (!p) return NULL;
    if (!check_floating("ct_bernoulli", "tensor of probabilities", p->dtype)) return NULL;
    ct_tensor *pd = ct_cast_new(p, CT_F64); /* contiguous doubles for the kernel */
    if (!pd) return NULL;
    const double *pv = (const double *)ct_tensor_data(pd);
    for (int64_t i = 0; i < pd->numel; i++)
        if (!(pv[i] >= 0 && pv[i] <= 1)) {
            ct_error("ct_bernoulli: Expected p_in >= 0 && p_in <= 1 to be true, but got false "
                     "(p[%lld] = %g)", (long long)i, pv[i]);
            ct_release(pd);
            return NULL;
        }
    ct_tensor *out = ct_tensor_new(ct_shape_of(p), p->dtype, p->storage->device);
    if (!out || !sample(CT_OP_bernoulli, out, &(ct_rng_args){.p = pv}, o.generator)) {
        ct_release(out);
        ct_release(pd);
        return NULL;
    }
    ct_release(pd);
    ct_record1(CT_OP_bernoulli, out, 1, &p);
    return ct_ret(out);
}

static bool check_p(const char *op, double p) {
    if (p >= 0 && p <= 1) return true;
    ct_error("%s: bernoulli_ expects p to be in [0, 1], but got p=%g", op, p);
    return false;
}

ct_tensor *ct_bernoulli_p_with(ct_tensor *t, double p, ct_random_options o) {
    if (!t || !check_p("ct_bernoulli_p", p)) return NULL;
    ct_tensor *out = ct_tensor_new(ct_shape_of(t), t->dtype, t->storage->device);
    if (!out || !sample(CT_OP_bernoulli_scalar, out, &(ct_rng_args){.a = p, .b = 1}, o.generator)) {
        ct_release(out);
        return NULL;
    }
    return ct_ret(out);
}

/* ---- in place ----------------------------------------------------------- */

/* Refills t; a t that requires grad gets a node whose gradient is zero. */
static ct_tensor *sample_inplace(const char *name, ct_op_id op, ct_tensor *t, ct_rng_args a,
                                 ct_generator *g) {
    if (!ct_check_inplace(name, t) || !sample(op, t, &a, g)) return NULL;
    ct_bump_version(t);
    ct_node *n = ct_node_record(op, 1, &t, 1);
    if (n) {
        ct_node_set_output(n, t, 0);
        ct_release(n);
    }
    return ct_ret(ct_retain(t));
}

ct_tensor *ct_bernoulli__with(ct_tensor *t, double p, ct_random_options o) {
    if (!t || !check_p("ct_bernoulli_", p)) return NULL;
    return sample_inplace("ct_bernoulli_", CT_OP_bernoulli_scalar, t,
                          (ct_rng_args){.a = p, .b = 1}, o.generator);
}

ct_tensor *ct_normal__with(ct_tensor *t, double mean, double std, ct_random_options o) {
    if (!t || !check_floating("ct_normal_", "tensor", t->dtype)) return NULL;
    if (!(std >= 0)) {
        ct_error("ct_normal_: normal expects std >= 0.0, but found std %g", std);
        return NULL;
    }
    return sample_inplace("ct_normal_", CT_OP_normal, t, (ct_rng_args){.a = mean, .b = std},
                          o.generator);
}

ct_tensor *ct_uniform__with(ct_tensor *t, double from, double to, ct_random_options o) {
    if (!t || !check_floating("ct_uniform_", "tensor", t->dtype)) return NULL;
    if (!(from <= to)) {
        ct_error("ct_uniform_: uniform_ expects to return a [from, to) range, but found "
                 "from=%g > to=%g", from, to);
        return NULL;
    }
    return sample_inplace("ct_uniform_", CT_OP_uniform, t, (ct_rng_args){.a = from, .b = to},
                          o.generator);
}

/* The samples do not depend on the old values (or on p): the gradient is zero. */
static bool zero_backward(ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_zeros_like_with(go[0], (ct_tensor_options){0})) != NULL;
}
bool normal_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    return zero_backward(go, gi);
}
bool uniform_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    return zero_backward(go, gi);
}
bool bernoulli_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    return zero_backward(go, gi);
}
bool bernoulli_scalar_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    return zero_backward(go, gi);
}

/* ---- dropout ------------------------------------------------------------ */

ct_tensor *ct_dropout_with(ct_tensor *x, double p, bool training, ct_dropout_options o) {
    if (!x) return NULL;
    const char *name = o.inplace ? "ct_dropout_" : "ct_dropout";
    if (!(p >= 0 && p <= 1)) {
        ct_error("%s: dropout probability has to be between 0 and 1, but got %g", name, p);
        return NULL;
    }
    /* PyTorch returns the input itself here (no node). */
    if (!training || p == 0 || x->numel == 0) return ct_ret(ct_retain(x));
    if (!check_floating(name, "tensor", x->dtype)) return NULL;
    if (o.inplace && !ct_check_inplace(name, x)) return NULL;
    /* mask = bernoulli(1 - p) / (1 - p), as PyTorch's _dropout_impl */
    ct_tensor *mask = ct_tensor_new(ct_shape_of(x), x->dtype, x->storage->device);
    ct_rng_args a = {.a = 1 - p, .b = p == 1 ? 0 : 1 / (1 - p)};
    if (!mask || !sample(CT_OP_bernoulli_scalar, mask, &a, o.generator)) {
        ct_release(mask);
        return NULL;
    }
    ct_tensor *in[2] = {x, mask};
    const ct_pw_spec mul = {CT_OP_mul, CT_PW_PROMOTE, 0};
    ct_tensor *out = ct_pointwise(&mul, 2, in, o.inplace ? x : NULL, &(ct_pw_args){.a = 1, .i = 1});
    if (out) {
        ct_node *n = ct_node_record(CT_OP_dropout, 1, &x, 1);
        if (n) {
            ct_node_save(n, 0, mask, false);
            ct_node_set_output(n, out, 0);
            ct_release(n);
        }
    }
    ct_release(mask);
    return ct_ret(out);
}

bool dropout_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_mul(go[0], ct_node_saved(n, 0))) != NULL;
}
