/* Random ops: the factories rand, randn, randint, randperm (and *_like), bernoulli,
 * multinomial, and the in-place samplers normal_, uniform_, bernoulli_, random_,
 * exponential_.  Every op reserves one
 * generator counter per element (Note [Random counters] in core/generator.h). */
#include <math.h>

#include "autograd/node.h"
#include "core/generator.h"
#include "ops/host.h"
#include "ops/internal.h"
#include "ops/pointwise.h"
#include "ops/trace.h"
#include "ops/sample.h"

/* The kernel writes contiguous memory: a strided t is filled through a copy, so
 * element i (in C order) always draws from counter offset + i. */
bool ct_draw_random(ct_op_id op, ct_tensor *t, ct_rng_args *a, ct_generator *g) {
    ct_rng_kernel k = ct_kernel_random_for(op, t->storage->device, t->dtype);
    if (!k) return false;
    a->offset = ct_generator_reserve(ct_generator_or_default(g), (uint64_t)t->numel, &a->seed);
    if (ct_tensor_is_contiguous(t)) {
        k(ct_tensor_data(t), t->numel, a);
        return true;
    }
    ct_tensor *tmp = ct_tensor_new(ct_ops[op].fn, ct_shape_of(t), t->dtype, t->storage->device);
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
    if (!ct_option_alive(name, "generator", o.generator)) return NULL;
    ct_tensor *t = ct_factory_new(name, shape, o);
    if (!t) return NULL;
    if (op != CT_OP_randint && !check_floating(name, "dtype", t->dtype)) {
        ct_release(t);
        return NULL;
    }
    if (!ct_draw_random(op, t, &a, o.generator)) {
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

ct_tensor *ct_normal_with(double mean, double std, ct_shape shape, ct_tensor_options o) {
    if (!(std >= 0)) {
        ct_error("ct_normal: normal expects std >= 0.0, but found std %g", std);
        return NULL;
    }
    return random_factory("ct_normal", CT_OP_normal, shape, o, (ct_rng_args){.a = mean, .b = std});
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

/* random_'s checks: a non-empty [low, high) that the dtype can hold. */
static bool check_int_range(const char *op, int64_t low, int64_t high, ct_dtype dt) {
    if (low >= high) {
        ct_error("%s: random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                 op, (long long)low, (long long)high);
        return false;
    }
    double lo, hi;
    dtype_range(dt, &lo, &hi);
    if ((double)low < lo || (double)low > hi) {
        ct_error("%s: from is out of bounds for %s (got %lld)", op, cpp_name(dt), (long long)low);
        return false;
    }
    if ((double)(high - 1) < lo || (double)(high - 1) > hi) {
        ct_error("%s: to - 1 is out of bounds for %s (got %lld)", op, cpp_name(dt),
                 (long long)(high - 1));
        return false;
    }
    return true;
}

ct_tensor *ct_randint_with(int64_t low, int64_t high, ct_shape shape, ct_tensor_options o) {
    if (o.dtype == CT_DTYPE_UNSET) o.dtype = CT_I64;
    if (!check_int_range("ct_randint", low, high, o.dtype)) return NULL;
    ct_rng_args a = {.low = low, .range = (uint64_t)high - (uint64_t)low};
    ct_tensor *out = random_factory("ct_randint", CT_OP_randint, shape, o, a);
    if (out)
        CT_TRACE_ATTRS(CT_OP_randint, 0, NULL, 1, &out,
                       &(ct_randint_attrs){low, high, ct_attr_dims(shape.ndim, shape.d),
                                           o.generator, o.dtype, o.device});
    return out;
}

ct_tensor *ct_randperm_with(int64_t n, ct_tensor_options o) {
    if (!ct_option_alive("ct_randperm", "generator", o.generator)) return NULL;
    if (o.dtype == CT_DTYPE_UNSET) o.dtype = CT_I64;
    double lo, hi;
    dtype_range(o.dtype, &lo, &hi);
    if (n > 0 && (double)(n - 1) > hi) {
        ct_error("ct_randperm: n is too large for result tensor type: '%s' (got n=%lld)",
                 ct_dtype_name(o.dtype), (long long)n);
        return NULL;
    }
    ct_tensor *perm = ct_tensor_new("ct_randperm", CT_SHAPE(n), CT_I64, CT_CPU);
    if (!perm) return NULL;
    if (!ct_draw_random(CT_OP_randperm, perm, &(ct_rng_args){0}, o.generator)) {
        ct_release(perm);
        return NULL;
    }
    ct_tensor *t = perm;
    if (o.dtype != CT_I64 || (o.device.type != CT_DEV_UNSET && o.device.type != CT_DEV_CPU)) {
        t = ct_factory_new("ct_randperm", CT_SHAPE(n), o);
        if (t) ct_copy_into(t, perm);
        ct_release(perm);
    }
    ct_tensor *out = ct_factory_finish("ct_randperm", t, o.requires_grad);
    if (out)
        CT_TRACE_ATTRS(CT_OP_randperm, 0, NULL, 1, &out,
                       &(ct_randperm_attrs){n, o.generator, o.dtype, o.device});
    return out;
}

ct_tensor *ct_rand_like_with(const ct_tensor *t, ct_tensor_options o) {
    if (!ct_alive("ct_rand_like", 1, t)) return NULL;
    return t ? ct_rand_with(ct_shape_of(t), ct_like_options(t, o)) : NULL;
}
ct_tensor *ct_randn_like_with(const ct_tensor *t, ct_tensor_options o) {
    if (!ct_alive("ct_randn_like", 1, t)) return NULL;
    return t ? ct_randn_with(ct_shape_of(t), ct_like_options(t, o)) : NULL;
}
ct_tensor *ct_randint_like_with(const ct_tensor *t, int64_t low, int64_t high,
                                ct_tensor_options o) {
    if (!ct_alive("ct_randint_like", 1, t)) return NULL;
    return t ? ct_randint_with(low, high, ct_shape_of(t), ct_like_options(t, o)) : NULL;
}

/* ---- bernoulli ---------------------------------------------------------- */

/* PyTorch's check of bernoulli's probabilities pd (float64), skipped on meta as there. */
static bool probabilities_in_range(const ct_tensor *pd) {
    if (!ct_has_values(pd)) return true;
    ct_host_buf hb;
    const double *pv = ct_host_read("ct_bernoulli", pd, CT_F64, &hb);
    bool ok = pv != NULL;
    for (int64_t i = 0; ok && i < pd->numel; i++)
        if (!(pv[i] >= 0 && pv[i] <= 1)) {
            ct_error("ct_bernoulli: Expected p_in >= 0 && p_in <= 1 to be true, but got false "
                     "(p[%lld] = %g)", (long long)i, pv[i]);
            ok = false;
        }
    ct_host_release(&hb);
    return ok;
}

ct_tensor *ct_bernoulli_with(ct_tensor *p, ct_random_options o) {
    if (!ct_alive("ct_bernoulli", 1, p) || !ct_option_alive("ct_bernoulli", "generator", o.generator))
        return NULL;
    if (!p) return NULL;
    if (!check_floating("ct_bernoulli", "tensor of probabilities", p->dtype)) return NULL;
    ct_tensor *pd = ct_cast_new("ct_bernoulli", p, CT_F64); /* contiguous doubles for the kernel */
    if (!pd) return NULL;
    if (!probabilities_in_range(pd)) {
        ct_release(pd);
        return NULL;
    }
    const double *pv = (const double *)ct_tensor_data(pd); /* the kernel's operand */
    ct_tensor *out = ct_tensor_new("ct_bernoulli", ct_shape_of(p), p->dtype, p->storage->device);
    if (!out || !ct_draw_random(CT_OP_bernoulli, out, &(ct_rng_args){.p = pv}, o.generator)) {
        ct_release(out);
        ct_release(pd);
        return NULL;
    }
    ct_release(pd);
    ct_record1(CT_OP_bernoulli, out, 1, &p);
    CT_TRACE_ATTRS(CT_OP_bernoulli, 1, &p, 1, &out, &(ct_bernoulli_attrs){o.generator});
    return ct_ret(out);
}

static bool check_p(const char *op, double p) {
    if (p >= 0 && p <= 1) return true;
    ct_error("%s: bernoulli_ expects p to be in [0, 1], but got p=%g", op, p);
    return false;
}

ct_tensor *ct_bernoulli_p_with(ct_tensor *t, double p, ct_random_options o) {
    if (!ct_alive("ct_bernoulli_p", 1, t) ||
        !ct_option_alive("ct_bernoulli_p", "generator", o.generator))
        return NULL;
    if (!t || !check_p("ct_bernoulli_p", p)) return NULL;
    ct_tensor *out = ct_tensor_new("ct_bernoulli", ct_shape_of(t), t->dtype, t->storage->device);
    if (!out || !ct_draw_random(CT_OP_bernoulli_scalar, out, &(ct_rng_args){.a = p, .b = 1}, o.generator)) {
        ct_release(out);
        return NULL;
    }
    return ct_ret(out);
}

/* ---- multinomial -------------------------------------------------------- */

/* PyTorch's checks, in its order and words. */
static bool check_multinomial(const double *v, int64_t rows, int64_t ncat, int64_t n, bool repl) {
    bool fast = !repl || n == 1; /* PyTorch's exponential-race path checks differently */
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0;
        for (int64_t c = 0; c < ncat; c++) {
            double x = v[r * ncat + c];
            if (!(x >= 0) || isinf(x)) {
                ct_error(fast ? "ct_multinomial: probability tensor contains either `inf`, `nan` "
                                "or element < 0"
                         : !(x >= 0) ? "ct_multinomial: invalid multinomial distribution "
                                       "(encountering probability entry < 0)"
                                     : "ct_multinomial: invalid multinomial distribution "
                                       "(encountering probability entry = infinity or NaN)");
                return false;
            }
            sum += x;
        }
        if (!(sum > 0)) {
            ct_error("ct_multinomial: invalid multinomial distribution (sum of probabilities <= 0)");
            return false;
        }
    }
    return true;
}

ct_tensor *ct_multinomial_with(ct_tensor *probs, int64_t n, ct_multinomial_options o) {
    if (!ct_alive("ct_multinomial", 1, probs) ||
        !ct_option_alive("ct_multinomial", "generator", o.generator))
        return NULL;
    if (!probs) return NULL;
    if (probs->ndim < 1 || probs->ndim > 2) {
        ct_error("ct_multinomial: prob_dist must be 1 or 2 dim (got %d dims)", probs->ndim);
        return NULL;
    }
    if (!ct_dtype_is_floating(probs->dtype)) {
        ct_error("ct_multinomial: multinomial only supports floating-point dtypes for input, "
                 "got: %s", ct_dtype_name(probs->dtype));
        return NULL;
    }
    if (n <= 0) {
        ct_error("ct_multinomial: cannot sample n_sample <= 0 samples (got %lld)", (long long)n);
        return NULL;
    }
    int64_t ncat = probs->sizes[probs->ndim - 1], rows = probs->ndim == 2 ? probs->sizes[0] : 1;
    if (!o.replacement && n > ncat) {
        ct_error("ct_multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
                 "replacement (got %lld > %lld)", (long long)n, (long long)ncat);
        return NULL;
    }
    if (ncat > (1 << 24)) {
        ct_error("ct_multinomial: number of categories cannot exceed 2^24 (got %lld)", (long long)ncat);
        return NULL;
    }
    ct_multinomial_kernel k =
        ct_kernel_multinomial_for(CT_OP_multinomial, probs->storage->device, CT_F64);
    ct_tensor *pd = k ? ct_cast_new("ct_multinomial", probs, CT_F64) : NULL;
    if (!pd) return NULL;
    /* the check reads the values: as in PyTorch 1.13, not on meta */
    ct_host_buf hb;
    const double *hv = ct_host_read("ct_multinomial", pd, CT_F64, &hb);
    ct_tensor *out = NULL;
    bool ok = hv && check_multinomial(hv, rows, ncat, n, o.replacement);
    ct_host_release(&hb);
    const double *pv = (const double *)ct_tensor_data(pd); /* the kernel's operand */
    if (ok) {
        out = ct_tensor_new("ct_multinomial", probs->ndim == 2 ? CT_SHAPE(rows, n) : CT_SHAPE(n),
                            CT_I64, probs->storage->device);
    }
    if (out) {
        ct_multinomial_args a = {.probs = pv, .rows = rows, .ncat = ncat, .n = n,
                                 .replacement = o.replacement};
        uint64_t counters = (uint64_t)rows * (uint64_t)(o.replacement ? n : ncat);
        a.offset = ct_generator_reserve(ct_generator_or_default(o.generator), counters, &a.seed);
        k((int64_t *)ct_tensor_data(out), &a);
    }
    ct_release(pd);
    if (out)
        CT_TRACE_ATTRS(CT_OP_multinomial, 1, &probs, 1, &out,
                       &(ct_multinomial_attrs){n, o.replacement, o.generator});
    return ct_ret(out);
}

/* ---- in place ----------------------------------------------------------- */

/* Refills t; a t that requires grad gets a node whose gradient is zero. */
static ct_tensor *sample_inplace(const char *name, ct_op_id kernel, ct_op_id op, ct_tensor *t,
                                 ct_rng_args a, ct_generator *g) {
    if (!ct_option_alive(name, "generator", g) || !ct_check_inplace(name, t) ||
        !ct_draw_random(kernel, t, &a, g))
        return NULL;
    ct_bump_version(t);
    ct_node *n = ct_node_record(op, 1, &t, 1);
    if (n) {
        ct_rebase_history(n, t);
        ct_release(n);
    }
    if (__builtin_expect(ct_trace_active != 0, 0)) {
        ct_op_attrs at;
        if (op == CT_OP_uniform || op == CT_OP_normal) /* uniform's and normal's are alike */
            at.uniform = (ct_uniform_attrs){a.a, a.b, g};
        else if (op == CT_OP_random)
            at.random = (ct_random_attrs){a.low, CT_ATTR_SOME(a.low + (int64_t)a.range), g};
        else /* bernoulli_(p)'s and exponential_'s are alike */
            at.bernoulli_scalar = (ct_bernoulli_scalar_attrs){a.a, g};
        CT_TRACE_ATTRS(op, 1, &t, 1, &t, &at);
    }
    return ct_ret(ct_retain(t));
}

ct_tensor *ct_bernoulli__with(ct_tensor *t, double p, ct_random_options o) {
    if (!ct_alive("ct_bernoulli_", 1, t)) return NULL;
    if (!t || !check_p("ct_bernoulli_", p)) return NULL;
    return sample_inplace("ct_bernoulli_", CT_OP_bernoulli_scalar, CT_OP_bernoulli_scalar, t,
                          (ct_rng_args){.a = p, .b = 1}, o.generator);
}

ct_tensor *ct_normal__with(ct_tensor *t, double mean, double std, ct_random_options o) {
    if (!ct_alive("ct_normal_", 1, t)) return NULL;
    if (!t || !check_floating("ct_normal_", "tensor", t->dtype)) return NULL;
    if (!(std >= 0)) {
        ct_error("ct_normal_: normal expects std >= 0.0, but found std %g", std);
        return NULL;
    }
    return sample_inplace("ct_normal_", CT_OP_normal, CT_OP_normal, t, (ct_rng_args){.a = mean, .b = std},
                          o.generator);
}

ct_tensor *ct_uniform__with(ct_tensor *t, double from, double to, ct_random_options o) {
    if (!ct_alive("ct_uniform_", 1, t)) return NULL;
    if (!t || !check_floating("ct_uniform_", "tensor", t->dtype)) return NULL;
    if (!(from <= to)) {
        ct_error("ct_uniform_: uniform_ expects to return a [from, to) range, but found "
                 "from=%g > to=%g", from, to);
        return NULL;
    }
    return sample_inplace("ct_uniform_", CT_OP_uniform, CT_OP_uniform, t, (ct_rng_args){.a = from, .b = to},
                          o.generator);
}

ct_tensor *ct_random__with(ct_tensor *t, int64_t low, int64_t high, ct_random_options o) {
    if (!ct_alive("ct_random_", 1, t)) return NULL;
    if (!t || !check_int_range("ct_random_", low, high, t->dtype)) return NULL;
    ct_rng_args a = {.low = low, .range = (uint64_t)high - (uint64_t)low};
    return sample_inplace("ct_random_", CT_OP_randint, CT_OP_random, t, a, o.generator);
}

ct_tensor *ct_exponential__with(ct_tensor *t, double lambd, ct_random_options o) {
    if (!ct_alive("ct_exponential_", 1, t)) return NULL;
    if (!t || !check_floating("ct_exponential_", "tensor", t->dtype)) return NULL;
    if (!(lambd >= 0)) {
        ct_error("ct_exponential_: exponential_ expects lambda >= 0.0, but found lambda=%g", lambd);
        return NULL;
    }
    return sample_inplace("ct_exponential_", CT_OP_exponential, CT_OP_exponential, t,
                          (ct_rng_args){.a = lambd}, o.generator);
}

/* The samples do not depend on the old values (or on p): the gradient is zero. */
#define ZERO_BACKWARD(op)                                                           \
    bool op##_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {               \
        (void)n;                                                                    \
        return (gi[0] = ct_zeros_like_with(go[0], (ct_tensor_options){0})) != NULL; \
    }
ZERO_BACKWARD(normal)
ZERO_BACKWARD(uniform)
ZERO_BACKWARD(bernoulli)
ZERO_BACKWARD(bernoulli_scalar)
ZERO_BACKWARD(random)
ZERO_BACKWARD(exponential)
