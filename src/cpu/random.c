/* Random kernels: uniform, normal, exponential, randint, bernoulli (scalar p and
 * tensor p), randperm and multinomial.  Element i draws from Philox block
 * (seed, offset + i) only, so the split across threads cannot change any value
 * (Note [Random counters]).
 *
 * Each kernel is a loop over a range of elements with no dependence between
 * iterations (Philox is plain 32-bit integer arithmetic), which the compiler
 * vectorizes; ranges are spread over threads in fixed chunks.
 *
 * No kernel here traps on floating-point exceptions (none are ever enabled), and
 * telling the compiler so lets it turn the selects in these loops into vector blends
 * on AVX2 (without it, only AVX-512's masked instructions vectorize them). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include <omp.h>
#include <stdlib.h>

#include "core/philox.h"
#include "cpu/kernel_util.h"
#include "kernels/random.h"
#include "core/mem.h"
#include "cpu/kernel_oom.h"

#define CHUNK 8192

typedef void (*part_fn)(void *out, int64_t begin, int64_t end, const ct_rng_args *a);

/* Runs part over [0, n) in CHUNK pieces, on several threads above CT_GRAIN. */
static void run_parts(part_fn part, void *out, int64_t n, const ct_rng_args *a) {
    int64_t chunks = (n + CHUNK - 1) / CHUNK;
    int nt = ct_get_num_threads();
#pragma omp parallel for schedule(static) num_threads(nt) if (n > CT_GRAIN && nt > 1)
    for (int64_t c = 0; c < chunks; c++)
        part(out, c * CHUNK, c * CHUNK + CHUNK < n ? c * CHUNK + CHUNK : n, a);
}

/* PART(NAME, T, BODY): a vectorizable loop setting o[i] (T) from block `blk`, and the
 * kernel NAME that runs it over all n elements. */
#define PART(NAME, T, BODY)                                                              \
    CT_SIMD_PROC(NAME##_part, (void *out, int64_t begin, int64_t end,               \
                                    const ct_rng_args *a), (out, begin, end, a), {                              \
        T *restrict o = out;                                                             \
        const uint64_t seed = a->seed, offset = a->offset;                               \
        const uint32_t t = threshold(a->a);                                              \
        const bool all = a->a >= 1;                                                      \
        const double A = a->a, B = a->b;                                                 \
        const int64_t low = a->low;                                                      \
        const uint64_t range = a->range;                                                 \
        const double *restrict p = a->p;                                                 \
        (void)t, (void)all, (void)A, (void)B, (void)low, (void)range, (void)p;           \
        for (int64_t i = begin; i < end; i++) {                                          \
            ct_philox_block blk = ct_philox(seed, offset + (uint64_t)i);                 \
            BODY;                                                                        \
        }                                                                                \
    })                                                                                    \
    static void NAME(void *o, int64_t n, const ct_rng_args *a) { run_parts(NAME##_part, o, n, a); }

/* Uniform with as many random mantissa bits as the type holds (PyTorch's rule), so
 * that rounding can never produce 1: float 24, half 11, bfloat16 8, double 53. */
static inline float unit_bits(uint32_t w, int digits) {
    return (float)(w >> (32 - digits)) * (1.0f / (float)(1u << digits));
}

/* log and cos(2 pi u) with only arithmetic and bit operations, so that loops using
 * them vectorize (libm's are calls); within a few double ulps on the arguments
 * Box-Muller gives them (u in (0, 1]).
 *
 * log(x) = e ln2 + log(m), m in [sqrt(1/2), sqrt(2)): with s = (m-1)/(m+1),
 * log(m) = 2 (s + s^3/3 + s^5/5 + ...), |s| <= 0.172: eleven terms leave < 1e-19. */
static inline double log_e(double x) {
    uint64_t bits;
    memcpy(&bits, &x, 8);
    int32_t e = (int32_t)(bits >> 52) - 1023;
    uint64_t mb = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull; /* m in [1, 2) */
    double m;
    memcpy(&m, &mb, 8);
    bool big = m > 1.4142135623730951;
    m = big ? m * 0.5 : m;
    e = big ? e + 1 : e;
    double s = (m - 1.0) / (m + 1.0), z = s * s, poly = 1.0 / 23;
    for (int k = 10; k >= 0; k--) poly = 1.0 / (2 * k + 1) + z * poly;
    return (double)e * 0.6931471805599453 + 2.0 * s * poly;
}

/* cos(2 pi u) for u in [0, 1): reduce by symmetry to x = 2 pi t, t in [0, 1/8], then
 * Taylor polynomials of cos or sin on [0, pi/4] through x^18 / x^19 (next term
 * < 1e-20). */
static inline double cos_2pi(double u) {
    double t = u > 0.5 ? 1.0 - u : u;
    bool neg = t > 0.25;
    t = neg ? 0.5 - t : t;
    bool use_sin = t > 0.125;
    t = use_sin ? 0.25 - t : t;
    double x = 6.283185307179586 * t, z = x * x, c = 0, sn = 0;
    /* Horner from the highest term: cos sum_k (-z)^k / (2k)!, sin x sum_k (-z)^k / (2k+1)! */
    static const double inv_fact_even[10] = {1.0, 1.0 / 2, 1.0 / 24, 1.0 / 720, 1.0 / 40320,
        1.0 / 3628800, 1.0 / 479001600, 1.0 / 87178291200.0, 1.0 / 20922789888000.0,
        1.0 / 6402373705728000.0};
    static const double inv_fact_odd[10] = {1.0, 1.0 / 6, 1.0 / 120, 1.0 / 5040, 1.0 / 362880,
        1.0 / 39916800, 1.0 / 6227020800.0, 1.0 / 1307674368000.0, 1.0 / 355687428096000.0,
        1.0 / 121645100408832000.0};
    for (int k = 9; k >= 0; k--) {
        double sign = (k & 1) ? -1.0 : 1.0;
        c = sign * inv_fact_even[k] + z * c;
        sn = sign * inv_fact_odd[k] + z * sn;
    }
    double r = use_sin ? x * sn : c;
    return neg ? -r : r;
}

/* Box-Muller from one block: u1 in (0, 1] (53 bits: the tails reach 8.6 sigma, where
 * PyTorch's float path stops at 5.8) keeps the log finite.  Every dtype computes in
 * double and rounds once. */
static inline double gaussian(const ct_philox_block *b) {
    double u1 = 1.0 - ct_u53(b->w[0], b->w[1]), u2 = ct_u53(b->w[2], b->w[3]);
    return sqrt(-2.0 * log_e(u1)) * cos_2pi(u2);
}

/* An integer uniform on [0, range) from 64 bits (range 0 means 2^64): the high half
 * of r * range, whose bias is at most range / 2^64 (< 1e-9 for any range below 2^34,
 * far below anything a test or a training run can see). */
static inline uint64_t below(const ct_philox_block *b, uint64_t range) {
    uint64_t r = ((uint64_t)b->w[0] << 32) | b->w[1];
    if (range == 0) return r;
    return (uint64_t)(((unsigned __int128)r * range) >> 64);
}

/* Bernoulli with a scalar p: u < p for u = k 2^-32 uniform, tested in integers as
 * k < ceil(p 2^32) (exact: k < x <=> k < ceil(x) for integer k), 32-bit so that it
 * vectorizes; p is resolved to 2^-32 (PyTorch's float path: 2^-24).  p = 1 is
 * threshold 2^32, which no 32-bit k reaches: `all` covers it. */
static inline uint32_t threshold(double p) {
    /* p <= 0 (and NaN) is threshold 0, so the conversion below stays in range: the
     * kernels compute it for every distribution, uniform's negative bound included. */
    return p >= 1 || !(p > 0) ? 0 : (uint32_t)ceil(p * 0x1.0p32);
}
static inline bool hit_below(const ct_philox_block *b, uint32_t t, bool all) {
    return all | (b->w[0] < t);
}
static inline bool hit(const ct_philox_block *b, double p) { return ct_u53(b->w[0], b->w[1]) < p; }

/* below() for range <= 2^32 in 32x32-bit products (which vectorize): with
 * r = rh 2^32 + rl, floor(r range / 2^64) = (rh range + (rl range >> 32)) >> 32. */
static inline uint64_t below_small(const ct_philox_block *b, uint64_t range) {
    uint64_t rh = b->w[0], rl = b->w[1];
    return (rh * range + ((rl * range) >> 32)) >> 32;
}

/* ---- float32 and float64 ---- */
PART(uniform_f32, float, o[i] = (float)(A + (double)unit_bits(blk.w[0], 24) * (B - A)))
PART(uniform_f64, double, o[i] = A + ct_u53(blk.w[0], blk.w[1]) * (B - A))
PART(normal_f32, float, o[i] = (float)(A + B * gaussian(&blk)))
PART(normal_f64, double, o[i] = A + B * gaussian(&blk))
PART(exponential_f32, float, o[i] = (float)(-log_e(1.0 - ct_u53(blk.w[0], blk.w[1])) / A))
PART(exponential_f64, double, o[i] = -log_e(1.0 - ct_u53(blk.w[0], blk.w[1])) / A)
PART(bernoulli_f32, float, o[i] = hit(&blk, p[i]) ? 1.0f : 0.0f)
PART(bernoulli_f64, double, o[i] = hit(&blk, p[i]) ? 1.0 : 0.0)

/* ---- float16 and bfloat16: computed in float, stored converted ---- */
static inline void put_reduced(void *o, ct_dtype dt, int64_t i, float v) {
    if (dt == CT_F16) ((ct_half *)o)[i] = (ct_half)v;
    else ((ct_bf16 *)o)[i] = ct_float_to_bf16(v);
}
#define REDUCED(DT, T, SFX)                                                              \
    PART(uniform_##SFX, T,                                                               \
         put_reduced(o, DT, i,                                                           \
                     (float)(A + (double)unit_bits(blk.w[0], DT == CT_F16 ? 11 : 8) * (B - A)))) \
    PART(normal_##SFX, T, put_reduced(o, DT, i, (float)(A + B * gaussian(&blk))))        \
    PART(exponential_##SFX, T,                                                           \
         put_reduced(o, DT, i, (float)(-log_e(1.0 - ct_u53(blk.w[0], blk.w[1])) / A)))   \
    PART(bernoulli_##SFX, T, put_reduced(o, DT, i, hit(&blk, p[i]) ? 1.0f : 0.0f))
CT_REDUCED_TYPES(REDUCED)

/* ---- every dtype: randint, bernoulli with a scalar p (value B where it hits) ---- */
#define ALL(DT, T, SFX)                                                                  \
    PART(randint_big_##SFX, T, o[i] = (T)(int64_t)((uint64_t)low + below(&blk, range))) \
    PART(randint_small_##SFX, T,                                                         \
         o[i] = (T)(int64_t)((uint64_t)low + below_small(&blk, range)))                  \
    static void randint_##SFX(void *o, int64_t n, const ct_rng_args *a) {               \
        if (a->range != 0 && a->range <= (UINT64_C(1) << 32)) randint_small_##SFX(o, n, a); \
        else randint_big_##SFX(o, n, a);                                                 \
    }                                                                                    \
    PART(bernoulli_scalar_##SFX, T, o[i] = hit_below(&blk, t, all) ? (T)B : (T)0)
CT_FLOAT_TYPES(ALL)
CT_INT_TYPES(ALL)
CT_BOOL_TYPE(ALL)
PART(randint_f16, ct_half, o[i] = (ct_half)(double)(int64_t)((uint64_t)low + below(&blk, range)))
PART(bernoulli_scalar_f16, ct_half, o[i] = hit_below(&blk, t, all) ? (ct_half)B : (ct_half)0)
PART(randint_bf16, ct_bf16,
     o[i] = ct_float_to_bf16((float)(int64_t)((uint64_t)low + below(&blk, range))))
PART(bernoulli_scalar_bf16, ct_bf16, o[i] = ct_float_to_bf16(hit_below(&blk, t, all) ? (float)B : 0.0f))

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

/* multinomial without replacement: the k largest p / q, q ~ Exp(1) (PyTorch's method:
 * the exponential race, equivalent to drawing one category at a time); ties keep
 * the lower index.  With replacement: inverse CDF by binary search. */
typedef struct {
    double key;
    int64_t index;
} keyed;
static int by_key_desc(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? 1 : -1;
    return (x->index > y->index) - (x->index < y->index);
}

static void multinomial_row(int64_t *out, const ct_multinomial_args *a, int64_t r, void *scratch) {
    const double *p = a->probs + r * a->ncat;
    int64_t ncat = a->ncat, n = a->n;
    if (!a->replacement) {
        keyed *k = scratch;
        for (int64_t c = 0; c < ncat; c++) {
            ct_philox_block blk = ct_philox(a->seed, a->offset + (uint64_t)(r * ncat + c));
            double q = -log(1.0 - ct_u53(blk.w[0], blk.w[1])); /* Exp(1), 0 only if u = 0 */
            k[c] = (keyed){p[c] / (q > 0 ? q : 0x1p-1022), c};
        }
        if (n == 1) {
            int64_t best = 0;
            for (int64_t c = 1; c < ncat; c++)
                if (k[c].key > k[best].key) best = c;
            out[0] = best;
            return;
        }
        qsort(k, (size_t)ncat, sizeof *k, by_key_desc);
        for (int64_t s = 0; s < n; s++) out[s] = k[s].index;
        return;
    }
    double *cum = scratch, total = 0;
    int64_t last = 0; /* the last category with weight: where rounding at the top lands */
    for (int64_t c = 0; c < ncat; c++) {
        total += p[c];
        cum[c] = total;
        if (p[c] > 0) last = c;
    }
    for (int64_t s = 0; s < n; s++) {
        ct_philox_block blk = ct_philox(a->seed, a->offset + (uint64_t)(r * n + s));
        double u = ct_u53(blk.w[0], blk.w[1]) * total;
        int64_t lo = 0, hi = ncat; /* first c with cum[c] > u */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (cum[mid] > u) hi = mid;
            else lo = mid + 1;
        }
        out[s] = lo < ncat ? lo : last;
    }
}

static void multinomial_f64(int64_t *out, const ct_multinomial_args *a) {
    size_t scratch = (size_t)(a->ncat ? a->ncat : 1) * sizeof(keyed);
    int nt = ct_get_num_threads();
    atomic_bool failed = false;
#pragma omp parallel num_threads(nt) if (a->rows * (a->ncat + a->n) > CT_GRAIN && nt > 1)
    {
        void *buf = ct_malloc(scratch);
        if (!buf) atomic_store(&failed, true);
#pragma omp for schedule(static)
        for (int64_t r = 0; r < a->rows; r++)
            if (buf) multinomial_row(out + r * a->n, a, r, buf);
        free(buf);
    }
    if (failed) ct_kernel_out_of_memory("multinomial");
}

#define FLOAT_ENTRY(DT, T, SFX)                                                          \
    CT_KERNEL(RANDOM, CT_OP_uniform, DT, uniform_##SFX),                                 \
    CT_KERNEL(RANDOM, CT_OP_normal, DT, normal_##SFX),                                   \
    CT_KERNEL(RANDOM, CT_OP_bernoulli, DT, bernoulli_##SFX),                             \
    CT_KERNEL(RANDOM, CT_OP_exponential, DT, exponential_##SFX),
#define ALL_ENTRY(DT, T, SFX)                                                            \
    CT_KERNEL(RANDOM, CT_OP_randint, DT, randint_##SFX),                                 \
    CT_KERNEL(RANDOM, CT_OP_bernoulli_scalar, DT, bernoulli_scalar_##SFX),
const ct_kernel_entry ct_cpu_random_kernels[] = {
    CT_FLOAT_TYPES(FLOAT_ENTRY) CT_REDUCED_TYPES(FLOAT_ENTRY) CT_FOREACH_DTYPE_SFX(ALL_ENTRY)
    CT_KERNEL(RANDOM, CT_OP_randperm, CT_I64, randperm_i64),
    CT_KERNEL(MULTINOMIAL, CT_OP_multinomial, CT_F64, multinomial_f64),
    CT_KERNEL_END};
