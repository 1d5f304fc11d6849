/* Random kernels: uniform, normal, randint, bernoulli (scalar p and tensor p), and
 * randperm.  Element i draws from Philox block (seed, offset + i) only, so the split
 * across threads cannot change any value (Note [Random counters]). */
#include <omp.h>

#include "core/philox.h"
#include "cpu/kernel_util.h"
#include "cpu/random.h"

/* Runs BODY(i, blk) for i in [0, n), split across threads above CT_GRAIN elements. */
#define RNG_LOOP(n, a, BODY)                                                             \
    _Pragma("omp parallel for schedule(static) num_threads(ct_get_num_threads()) if((n) > CT_GRAIN)") \
    for (int64_t i = 0; i < (n); i++) {                                                  \
        ct_philox_block blk = ct_philox((a)->seed, (a)->offset + (uint64_t)i);          \
        BODY;                                                                            \
    }

/* Uniform with as many random mantissa bits as the type holds (PyTorch's rule), so
 * that rounding can never produce 1: float 24, half 11, bfloat16 8, double 53. */
static inline double unit(const ct_philox_block *b, int digits) {
    if (digits == 53) return ct_u53(b->w[0], b->w[1]);
    return (double)(b->w[0] >> (32 - digits)) * ldexp(1.0, -digits);
}

/* Box-Muller: u1 in (0, 1] keeps the log finite. */
static inline double gaussian(const ct_philox_block *b) {
    double u1 = 1.0 - ct_u53(b->w[0], b->w[1]), u2 = ct_u53(b->w[2], b->w[3]);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* An integer uniform on [0, range) from 64 bits (range 0 means 2^64): the high half
 * of r * range, whose bias is at most range / 2^64 (< 1e-9 for any range below 2^34,
 * far below anything a test or a training run can see). */
static inline uint64_t below(const ct_philox_block *b, uint64_t range) {
    uint64_t r = ((uint64_t)b->w[0] << 32) | b->w[1];
    if (range == 0) return r;
    return (uint64_t)(((unsigned __int128)r * range) >> 64);
}

static inline void put(void *o, ct_dtype dt, int64_t i, double v) {
    switch (dt) {
    case CT_F32: ((float *)o)[i] = (float)v; break;
    case CT_F64: ((double *)o)[i] = v; break;
    default: ct_store_f64((char *)o + i * (int64_t)ct_dtype_size(dt), dt, v);
    }
}

#define DIGITS(DT) ((DT) == CT_F64 ? 53 : (DT) == CT_F32 ? 24 : (DT) == CT_F16 ? 11 : 8)

#define FLOAT_KERNELS(DT, T, SFX)                                                        \
    static void uniform_##SFX(void *o, int64_t n, const ct_rng_args *a) {               \
        const double lo = a->a, span = a->b - a->a;                                      \
        RNG_LOOP(n, a, put(o, DT, i, lo + unit(&blk, DIGITS(DT)) * span))                \
    }                                                                                    \
    static void normal_##SFX(void *o, int64_t n, const ct_rng_args *a) {                \
        const double mean = a->a, std = a->b;                                            \
        RNG_LOOP(n, a, put(o, DT, i, mean + std * gaussian(&blk)))                       \
    }                                                                                    \
    static void bernoulli_##SFX(void *o, int64_t n, const ct_rng_args *a) {             \
        const double *p = a->p;                                                          \
        RNG_LOOP(n, a, put(o, DT, i, ct_u53(blk.w[0], blk.w[1]) < p[i] ? 1.0 : 0.0))     \
    }
CT_FLOAT_TYPES(FLOAT_KERNELS)
CT_REDUCED_TYPES(FLOAT_KERNELS)

#define ALL_KERNELS(DT, T, SFX)                                                          \
    static void randint_##SFX(void *o, int64_t n, const ct_rng_args *a) {               \
        if (DT == CT_I64) {                                                              \
            int64_t *out = o;                                                            \
            RNG_LOOP(n, a, out[i] = (int64_t)((uint64_t)a->low + below(&blk, a->range))) \
        } else {                                                                         \
            RNG_LOOP(n, a, put(o, DT, i, (double)(a->low + (int64_t)below(&blk, a->range)))) \
        }                                                                                \
    }                                                                                    \
    static void bernoulli_scalar_##SFX(void *o, int64_t n, const ct_rng_args *a) {      \
        const double p = a->a, v = a->b;                                                 \
        RNG_LOOP(n, a, put(o, DT, i, ct_u53(blk.w[0], blk.w[1]) < p ? v : 0.0))          \
    }
CT_FOREACH_DTYPE_SFX(ALL_KERNELS)

/* randperm: Fisher-Yates, where step i (n-1 down to 1) swaps i with j uniform on
 * [0, i], drawn from block offset + i.  Sequential by nature; out is int64. */
static void randperm_i64(void *o, int64_t n, const ct_rng_args *a) {
    int64_t *out = o;
    for (int64_t i = 0; i < n; i++) out[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        ct_philox_block blk = ct_philox(a->seed, a->offset + (uint64_t)i);
        int64_t j = (int64_t)below(&blk, (uint64_t)i + 1), t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
}

#define FLOAT_ENTRY(DT, T, SFX)                                                          \
    {CT_OP_uniform, DT, (ct_kernel)uniform_##SFX}, {CT_OP_normal, DT, (ct_kernel)normal_##SFX}, \
        {CT_OP_bernoulli, DT, (ct_kernel)bernoulli_##SFX},
#define ALL_ENTRY(DT, T, SFX)                                                            \
    {CT_OP_randint, DT, (ct_kernel)randint_##SFX},                                       \
        {CT_OP_bernoulli_scalar, DT, (ct_kernel)bernoulli_scalar_##SFX},
const ct_kernel_entry ct_cpu_random_kernels[] = {
    CT_FLOAT_TYPES(FLOAT_ENTRY) CT_REDUCED_TYPES(FLOAT_ENTRY) CT_FOREACH_DTYPE_SFX(ALL_ENTRY)
    {CT_OP_randperm, CT_I64, (ct_kernel)randperm_i64},
    {0, 0, NULL}};
