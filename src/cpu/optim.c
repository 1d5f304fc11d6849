/* Fused optimizer updates, one pass over each parameter: PyTorch 1.13's single-tensor
 * formulas, in the parameter's dtype with the same order of operations (float16 and
 * bfloat16 in float, see REDUCED_STEP_KERNEL).
 * data: param, grad, buf0, buf1, buf2; args: see src/optim/kinds.c. */
#include <math.h>
#include <omp.h>

#include "cpu/kernel_util.h"
#include "cpu/reduced_cvt.h"

enum { A_LR, A_MOMENTUM, A_DAMPENING, A_WD, A_NESTEROV, A_MAXIMIZE, A_BETA1, A_BETA2, A_EPS,
       A_STEP_SIZE, A_BC2_SQRT, A_AMSGRAD, A_DECOUPLED, A_ALPHA, A_CENTERED, A_FIRST };

/* Splits [0, n) into fixed chunks across threads; elementwise, so any split gives the
 * same result. */
#define PARALLEL_CHUNKS(n, BODY)                                                        \
    do {                                                                                \
        int nt_ = ct_get_num_threads();                                                 \
        int64_t chunks_ = (n) >= CT_GRAIN && nt_ > 1 ? nt_ : 1;                         \
        _Pragma("omp parallel for num_threads(nt_) if (chunks_ > 1)")                   \
        for (int64_t c_ = 0; c_ < chunks_; c_++) {                                      \
            int64_t lo = (n) * c_ / chunks_, hi = (n) * (c_ + 1) / chunks_;             \
            BODY                                                                        \
        }                                                                               \
    } while (0)

#define SGD(T, SFX)                                                                     \
    static void sgd_span_##SFX(char **d, int64_t lo, int64_t hi, const double *a) {     \
        T *p = (T *)d[0], *buf = (T *)d[2];                                             \
        const T *g = (const T *)d[1];                                                   \
        const T wd = (T)a[A_WD], mom = (T)a[A_MOMENTUM], damp1 = (T)(1 - a[A_DAMPENING]); \
        const T neg_lr = (T)(-a[A_LR]);                                                 \
        const bool maximize = a[A_MAXIMIZE] != 0, nesterov = a[A_NESTEROV] != 0;        \
        const bool first = a[A_FIRST] != 0, use_mom = a[A_MOMENTUM] != 0;               \
        for (int64_t i = lo; i < hi; i++) {                                             \
            T dp = maximize ? -g[i] : g[i];                                             \
            if (wd != 0) dp = dp + wd * p[i];                                           \
            if (use_mom) {                                                              \
                buf[i] = first ? dp : buf[i] * mom + damp1 * dp;                        \
                dp = nesterov ? dp + mom * buf[i] : buf[i];                             \
            }                                                                           \
            p[i] = p[i] + neg_lr * dp;                                                  \
        }                                                                               \
    }

/* Note [Adam denormals]: a gradient that is exactly zero for many steps (MNIST's border
 * pixels feed such weights) makes exp_avg and exp_avg_sq decay geometrically into
 * float denormals, where every multiply takes a microcode assist (~100x slower); the
 * MLP benchmark spent most of its optimizer time there.  Inside this kernel only, each
 * thread sets MXCSR's flush-to-zero and denormals-are-zero bits and restores them
 * after its chunk.  The only values that change are those below 1.2e-38 (float) /
 * 2.2e-308 (double), whose contribution to the parameter (step * m / (sqrt(v) + eps)
 * with eps >= 1e-8) is below 1e-29: trajectories stay within PyTorch's rounding. */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__SSE__)
#include <xmmintrin.h>
#define CT_FTZ_DAZ 0x8040u /* MXCSR bits 15 (FTZ) and 6 (DAZ) */
static inline unsigned flush_denormals_begin(void) {
    unsigned old = _mm_getcsr();
    _mm_setcsr(old | CT_FTZ_DAZ);
    return old;
}
static inline void flush_denormals_end(unsigned old) { _mm_setcsr(old); }
#else
static inline unsigned flush_denormals_begin(void) { return 0; }
static inline void flush_denormals_end(unsigned old) { (void)old; }
#endif

/* One Adam/AdamW update over [0, n): the body is specialised per (mode, amsgrad) so
 * every variant is a branch-free loop over restrict pointers that the compiler
 * vectorizes (and is compiled per instruction set).  The arithmetic is the scalar one, op
 * for op (no FMA contraction in these targets), so results are unchanged by the
 * vectorization.  mode: 0 plain, 1 L2 weight decay, 2 decoupled (AdamW). */
typedef struct {
    double b1, omb1, b2, omb2, wd, decay, bc2, eps, neg_step, sign;
} adam_consts;

#define ADAM(T, SFX, SQRT)                                                              \
    static inline __attribute__((always_inline)) void adam_body_##SFX(                  \
        T *restrict p, const T *restrict g, T *restrict m, T *restrict v,               \
        T *restrict vmax, int64_t n, const adam_consts *k, int mode, bool amsgrad) {    \
        const T b1 = (T)k->b1, omb1 = (T)k->omb1, b2 = (T)k->b2, omb2 = (T)k->omb2;     \
        const T wd = (T)k->wd, decay = (T)k->decay, bc2 = (T)k->bc2, eps = (T)k->eps;   \
        const T neg_step = (T)k->neg_step, sign = (T)k->sign;                           \
        for (int64_t i = 0; i < n; i++) {                                               \
            T gr = g[i] * sign; /* maximize: -g exactly */                              \
            T pi = p[i];                                                                \
            if (mode == 2) pi = pi * decay;                                             \
            if (mode == 1) gr = gr + wd * pi;                                           \
            T mi = m[i] * b1 + omb1 * gr;                                               \
            T vi = v[i] * b2 + omb2 * gr * gr;                                          \
            m[i] = mi;                                                                  \
            v[i] = vi;                                                                  \
            if (amsgrad) {                                                              \
                T a = vmax[i];                                                          \
                vi = a > vi ? a : vi;                                                   \
                vmax[i] = vi;                                                           \
            }                                                                           \
            T denom = SQRT(vi) / bc2 + eps;                                             \
            p[i] = pi + neg_step * mi / denom;                                          \
        }                                                                               \
    }                                                                                   \
    CT_SIMD_PROC(adam_range_##SFX, (T *restrict p, const T *restrict g,                 \
                                         T *restrict m, T *restrict v, T *restrict vmax, \
                                         int64_t n, const adam_consts *k, int mode,     \
                                         bool amsgrad), (p, g, m, v, vmax, n, k, mode, amsgrad), {                                \
        if (amsgrad) {                                                                  \
            if (mode == 0) adam_body_##SFX(p, g, m, v, vmax, n, k, 0, true);            \
            else if (mode == 1) adam_body_##SFX(p, g, m, v, vmax, n, k, 1, true);       \
            else adam_body_##SFX(p, g, m, v, vmax, n, k, 2, true);                      \
        } else {                                                                        \
            if (mode == 0) adam_body_##SFX(p, g, m, v, NULL, n, k, 0, false);           \
            else if (mode == 1) adam_body_##SFX(p, g, m, v, NULL, n, k, 1, false);      \
            else adam_body_##SFX(p, g, m, v, NULL, n, k, 2, false);                     \
        }                                                                               \
    })                                                                                  \
    static void adam_span_##SFX(char **d, int64_t lo, int64_t hi, const double *a) {    \
        T *p = (T *)d[0], *m = (T *)d[2], *v = (T *)d[3], *vmax = (T *)d[4];            \
        const T *g = (const T *)d[1];                                                   \
        adam_consts k = {a[A_BETA1], 1 - a[A_BETA1], a[A_BETA2], 1 - a[A_BETA2],        \
                         a[A_WD], 1 - a[A_LR] * a[A_WD], a[A_BC2_SQRT], a[A_EPS],       \
                         -a[A_STEP_SIZE], a[A_MAXIMIZE] != 0 ? -1.0 : 1.0};             \
        const bool amsgrad = a[A_AMSGRAD] != 0;                                         \
        const int mode = a[A_DECOUPLED] != 0 ? 2 : (T)a[A_WD] != 0 ? 1 : 0;             \
        unsigned csr = flush_denormals_begin(); /* Note [Adam denormals] */             \
        adam_range_##SFX(p + lo, g + lo, m + lo, v + lo, amsgrad ? vmax + lo : NULL,    \
                         hi - lo, &k, mode, amsgrad);                                   \
        flush_denormals_end(csr);                                                       \
    }

#define RMSPROP(T, SFX)                                                                 \
    static void rmsprop_span_##SFX(char **d, int64_t lo, int64_t hi, const double *a) { \
        T *p = (T *)d[0], *sq = (T *)d[2], *buf = (T *)d[3], *gavg = (T *)d[4];         \
        const T *g = (const T *)d[1];                                                   \
        const T alpha = (T)a[A_ALPHA], oma = (T)(1 - a[A_ALPHA]), eps = (T)a[A_EPS];    \
        const T wd = (T)a[A_WD], mom = (T)a[A_MOMENTUM], neg_lr = (T)(-a[A_LR]);        \
        const bool maximize = a[A_MAXIMIZE] != 0, centered = a[A_CENTERED] != 0;        \
        const bool use_mom = a[A_MOMENTUM] > 0;                                         \
        for (int64_t i = lo; i < hi; i++) {                                             \
            T gr = maximize ? -g[i] : g[i];                                             \
            if (wd != 0) gr = gr + wd * p[i];                                           \
            sq[i] = sq[i] * alpha + oma * gr * gr;                                      \
            T avg;                                                                      \
            if (centered) {                                                             \
                gavg[i] = gavg[i] * alpha + oma * gr;                                   \
                avg = (T)sqrt(sq[i] + (T)(-1) * gavg[i] * gavg[i]);                     \
            } else {                                                                    \
                avg = (T)sqrt(sq[i]);                                                   \
            }                                                                           \
            avg = avg + eps;                                                            \
            if (use_mom) {                                                              \
                buf[i] = buf[i] * mom + gr / avg;                                       \
                p[i] = p[i] + neg_lr * buf[i];                                          \
            } else {                                                                    \
                p[i] = p[i] + neg_lr * gr / avg;                                        \
            }                                                                           \
        }                                                                               \
    }

#define ADAGRAD(T, SFX)                                                                 \
    static void adagrad_span_##SFX(char **d, int64_t lo, int64_t hi, const double *a) { \
        T *p = (T *)d[0], *sum = (T *)d[2];                                             \
        const T *g = (const T *)d[1];                                                   \
        const T wd = (T)a[A_WD], eps = (T)a[A_EPS], neg_clr = (T)(-a[A_STEP_SIZE]);     \
        const bool maximize = a[A_MAXIMIZE] != 0;                                       \
        for (int64_t i = lo; i < hi; i++) {                                             \
            T gr = maximize ? -g[i] : g[i];                                             \
            if (wd != 0) gr = gr + wd * p[i];                                           \
            sum[i] = sum[i] + (T)1 * gr * gr;                                           \
            T std = (T)sqrt(sum[i]) + eps;                                              \
            p[i] = p[i] + neg_clr * gr / std;                                           \
        }                                                                               \
    }

SGD(float, f32) SGD(double, f64)
ADAM(float, f32, sqrtf) ADAM(double, f64, sqrt)
RMSPROP(float, f32) RMSPROP(double, f64)
ADAGRAD(float, f32) ADAGRAD(double, f64)

/* The kernel of KIND in T: its span function over fixed chunks of [0, n). */
#define STEP_KERNEL(KIND, SFX)                                                          \
    static void KIND##_##SFX(char **d, int64_t n, const double *a) {                    \
        PARALLEL_CHUNKS(n, KIND##_span_##SFX(d, lo, hi, a););                           \
    }

/* float16 / bfloat16 parameters keep their state in their own dtype, as PyTorch's do.
 * Each chunk is widened tile by tile into float buffers on the stack (cpu/reduced_cvt.h),
 * updated by the float32 span, and the parameter and state rounded back once (to
 * nearest even); the gradient is only read.  Elementwise, so neither the tiles nor the
 * chunks change a bit of the result. */
#define REDUCED_STEP_KERNEL(KIND, TS, SFX)                                              \
    static void KIND##_##SFX(char **d, int64_t n, const double *a) {                    \
        PARALLEL_CHUNKS(n, {                                                            \
            float tile[5][CT_REDUCED_TILE];                                             \
            for (int64_t b = lo; b < hi; b += CT_REDUCED_TILE) {                        \
                int64_t len = hi - b < CT_REDUCED_TILE ? hi - b : CT_REDUCED_TILE;      \
                char *t[5];                                                             \
                for (int k = 0; k < 5; k++) {                                           \
                    t[k] = d[k] ? (char *)tile[k] : NULL;                               \
                    if (d[k]) CT_REDUCED_TO_FLOAT_N(tile[k], (const TS *)d[k] + b, len); \
                }                                                                       \
                KIND##_span_f32(t, 0, len, a);                                          \
                for (int k = 0; k < 5; k++)                                             \
                    if (k != 1 && d[k]) CT_FLOAT_TO_REDUCED_N((TS *)d[k] + b, tile[k], len); \
            }                                                                           \
        });                                                                             \
    }

#define KINDS(X, ...) X(sgd, __VA_ARGS__) X(adam, __VA_ARGS__) X(rmsprop, __VA_ARGS__) X(adagrad, __VA_ARGS__)
KINDS(STEP_KERNEL, f32) KINDS(STEP_KERNEL, f64)
KINDS(REDUCED_STEP_KERNEL, ct_half, f16) KINDS(REDUCED_STEP_KERNEL, ct_bf16, bf16)

#define ENTRIES(SFX, DT)                                                                \
    CT_KERNEL(OPTIM, CT_OP_sgd_step, DT, sgd_##SFX),                                    \
    CT_KERNEL(OPTIM, CT_OP_adam_step, DT, adam_##SFX),                                  \
    CT_KERNEL(OPTIM, CT_OP_rmsprop_step, DT, rmsprop_##SFX),                            \
    CT_KERNEL(OPTIM, CT_OP_adagrad_step, DT, adagrad_##SFX),
const ct_kernel_entry ct_cpu_optim_kernels[] = {
    ENTRIES(f32, CT_F32) ENTRIES(f64, CT_F64) ENTRIES(f16, CT_F16) ENTRIES(bf16, CT_BF16)
    CT_KERNEL_END,
};
