/* Fused optimizer updates, one pass over each parameter: PyTorch 1.13's single-tensor
 * formulas, in the parameter's dtype with the same order of operations.
 * data: param, grad, buf0, buf1, buf2; args: see src/optim/kinds.c. */
#include <math.h>
#include <omp.h>

#include "cpu/kernel_util.h"

enum { A_LR, A_MOMENTUM, A_DAMPENING, A_WD, A_NESTEROV, A_MAXIMIZE, A_BETA1, A_BETA2, A_EPS,
       A_STEP_SIZE, A_BC2_SQRT, A_AMSGRAD, A_DECOUPLED, A_ALPHA, A_CENTERED, A_FIRST };

typedef void (*ct_optim_kernel)(char **data, int64_t n, const double *args);

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
    static void sgd_##SFX(char **d, int64_t n, const double *a) {                      \
        T *p = (T *)d[0], *buf = (T *)d[2];                                             \
        const T *g = (const T *)d[1];                                                   \
        const T wd = (T)a[A_WD], mom = (T)a[A_MOMENTUM], damp1 = (T)(1 - a[A_DAMPENING]); \
        const T neg_lr = (T)(-a[A_LR]);                                                 \
        const bool maximize = a[A_MAXIMIZE] != 0, nesterov = a[A_NESTEROV] != 0;        \
        const bool first = a[A_FIRST] != 0, use_mom = a[A_MOMENTUM] != 0;               \
        PARALLEL_CHUNKS(n, for (int64_t i = lo; i < hi; i++) {                          \
            T dp = maximize ? -g[i] : g[i];                                             \
            if (wd != 0) dp = dp + wd * p[i];                                           \
            if (use_mom) {                                                              \
                buf[i] = first ? dp : buf[i] * mom + damp1 * dp;                        \
                dp = nesterov ? dp + mom * buf[i] : buf[i];                             \
            }                                                                           \
            p[i] = p[i] + neg_lr * dp;                                                  \
        });                                                                             \
    }

#define ADAM(T, SFX)                                                                    \
    static void adam_##SFX(char **d, int64_t n, const double *a) {                     \
        T *p = (T *)d[0], *m = (T *)d[2], *v = (T *)d[3], *vmax = (T *)d[4];            \
        const T *g = (const T *)d[1];                                                   \
        const T b1 = (T)a[A_BETA1], omb1 = (T)(1 - a[A_BETA1]);                         \
        const T b2 = (T)a[A_BETA2], omb2 = (T)(1 - a[A_BETA2]);                         \
        const T wd = (T)a[A_WD], decay = (T)(1 - a[A_LR] * a[A_WD]);                    \
        const T bc2 = (T)a[A_BC2_SQRT], eps = (T)a[A_EPS], neg_step = (T)(-a[A_STEP_SIZE]); \
        const bool maximize = a[A_MAXIMIZE] != 0, amsgrad = a[A_AMSGRAD] != 0;          \
        const bool decoupled = a[A_DECOUPLED] != 0;                                     \
        PARALLEL_CHUNKS(n, for (int64_t i = lo; i < hi; i++) {                          \
            T gr = maximize ? -g[i] : g[i];                                             \
            if (decoupled) p[i] = p[i] * decay;                                         \
            else if (wd != 0) gr = gr + wd * p[i];                                      \
            m[i] = m[i] * b1 + omb1 * gr;                                               \
            v[i] = v[i] * b2 + omb2 * gr * gr;                                          \
            T vv = v[i];                                                                \
            if (amsgrad) vv = vmax[i] = vmax[i] > vv ? vmax[i] : vv;                    \
            T denom = (T)sqrt(vv) / bc2 + eps;                                             \
            p[i] = p[i] + neg_step * m[i] / denom;                                      \
        });                                                                             \
    }

#define RMSPROP(T, SFX)                                                                 \
    static void rmsprop_##SFX(char **d, int64_t n, const double *a) {                  \
        T *p = (T *)d[0], *sq = (T *)d[2], *buf = (T *)d[3], *gavg = (T *)d[4];         \
        const T *g = (const T *)d[1];                                                   \
        const T alpha = (T)a[A_ALPHA], oma = (T)(1 - a[A_ALPHA]), eps = (T)a[A_EPS];    \
        const T wd = (T)a[A_WD], mom = (T)a[A_MOMENTUM], neg_lr = (T)(-a[A_LR]);        \
        const bool maximize = a[A_MAXIMIZE] != 0, centered = a[A_CENTERED] != 0;        \
        const bool use_mom = a[A_MOMENTUM] > 0;                                         \
        PARALLEL_CHUNKS(n, for (int64_t i = lo; i < hi; i++) {                          \
            T gr = maximize ? -g[i] : g[i];                                             \
            if (wd != 0) gr = gr + wd * p[i];                                           \
            sq[i] = sq[i] * alpha + oma * gr * gr;                                      \
            T avg;                                                                      \
            if (centered) {                                                             \
                gavg[i] = gavg[i] * alpha + oma * gr;                                   \
                avg = (T)sqrt(sq[i] + (T)(-1) * gavg[i] * gavg[i]);                        \
            } else {                                                                    \
                avg = (T)sqrt(sq[i]);                                                      \
            }                                                                           \
            avg = avg + eps;                                                            \
            if (use_mom) {                                                              \
                buf[i] = buf[i] * mom + gr / avg;                                       \
                p[i] = p[i] + neg_lr * buf[i];                                          \
            } else {                                                                    \
                p[i] = p[i] + neg_lr * gr / avg;                                        \
            }                                                                           \
        });                                                                             \
    }

#define ADAGRAD(T, SFX)                                                                 \
    static void adagrad_##SFX(char **d, int64_t n, const double *a) {                  \
        T *p = (T *)d[0], *sum = (T *)d[2];                                             \
        const T *g = (const T *)d[1];                                                   \
        const T wd = (T)a[A_WD], eps = (T)a[A_EPS], neg_clr = (T)(-a[A_STEP_SIZE]);     \
        const bool maximize = a[A_MAXIMIZE] != 0;                                       \
        PARALLEL_CHUNKS(n, for (int64_t i = lo; i < hi; i++) {                          \
            T gr = maximize ? -g[i] : g[i];                                             \
            if (wd != 0) gr = gr + wd * p[i];                                           \
            sum[i] = sum[i] + (T)1 * gr * gr;                                           \
            T std = (T)sqrt(sum[i]) + eps;                                                 \
            p[i] = p[i] + neg_clr * gr / std;                                           \
        });                                                                             \
    }

SGD(float, f32) SGD(double, f64)
ADAM(float, f32) ADAM(double, f64)
RMSPROP(float, f32) RMSPROP(double, f64)
ADAGRAD(float, f32) ADAGRAD(double, f64)

#define ENTRIES(SFX, DT)                                                                \
    {CT_OP_sgd_step, DT, (ct_kernel)sgd_##SFX}, {CT_OP_adam_step, DT, (ct_kernel)adam_##SFX}, \
        {CT_OP_rmsprop_step, DT, (ct_kernel)rmsprop_##SFX},                             \
        {CT_OP_adagrad_step, DT, (ct_kernel)adagrad_##SFX},
const ct_kernel_entry ct_cpu_optim_kernels[] = {ENTRIES(f32, CT_F32) ENTRIES(f64, CT_F64){0, 0, NULL}};
