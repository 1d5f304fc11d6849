/* batch_norm, layer_norm and group_norm on the cpu, forward and backward, fused: the
 * statistics and the normalization in two or three passes over data that stays in
 * cache (a channel's planes, a row), with PyTorch 1.13's formulas.  float32 sums in
 * double (as PyTorch's batch norm does; its layer / group norm use float Welford sums,
 * which these match within rounding).  Layout and determinism: kernels/norm.h.
 * float16 / bfloat16: cpu/norm_reduced.c. */
#include <stdlib.h>
#include <string.h>

#include "kernels/norm.h"
#include "cpu/reduce.h"
#include "core/mem.h"
#include "cpu/kernel_oom.h"

enum { L = CT_REDUCE_LANES }; /* the lane sums below are written for 16 */
_Static_assert(CT_REDUCE_LANES == 16, "lane sums take two vectors of 8");

/* 8 floats, 8 doubles (memcpy'd: no alignment assumed) */
typedef float vf8 __attribute__((vector_size(32)));
typedef double vd8 __attribute__((vector_size(64)));
#define F32_TO_VD8(v) __builtin_convertvector(v, vd8)
#define F64_TO_VD8(v) (v)
/* an unaligned vector load (a statement expression: no vector-returning functions) */
#define LDV(VT, p) ({ VT v_; memcpy(&v_, (p), sizeof v_); v_; })

/* layer_norm's weight gradient: rows in chunks of at least this many, one partial
 * [K] sum per chunk (Note [Norm determinism]). */
#define LN_CHUNK_ROWS 32

/* Helpers are inlined into the per-channel / per-row functions, which are compiled per
 * instruction set (CT_SIMD_PROC): one target for all the arithmetic of a channel or row. */
#define INLINE static inline __attribute__((always_inline))

/* The L lanes of one reduction (a0: lanes 0-7, a1: 8-15) combined as a fixed tree. */
INLINE double fold2(vd8 a0, vd8 a1) {
    double l[L];
    memcpy(l, &a0, sizeof a0);
    memcpy(l + 8, &a1, sizeof a1);
    for (int w = L / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) l[j] += l[j + w];
    return l[0];
}

/* NULL when out of memory (reported: cpu/kernel_oom.h). */
static void *scratch(size_t bytes) {
    void *p = ct_calloc(1, bytes ? bytes : 1);
    if (!p) ct_kernel_out_of_memory("a normalization kernel");
    return p;
}

#define NORM_KERNELS(T, SFX, SQRT, VT, TO_VD8)                                                       \
    /* ---- sums in L double lanes, over np planes of len elements (stride apart):    \
     * lane j takes elements i + j of every plane (a zero-padded tail adds nothing), \
     * kept in two vectors of 8 doubles (GCC vector extensions), folded as a tree at  \
     * the end.  VX(v, i) loads 8 elements of x as VT; the padded tail: TAIL. ---- */ \
    /* sum of x */                                                                       \
    INLINE double sum_##SFX(const T *x, int64_t np, int64_t len, int64_t stride) { \
        vd8 a0 = {0}, a1 = {0};                                                          \
        for (int64_t p = 0; p < np; p++) {                                               \
            const T *xp = x + p * stride;                                                \
            int64_t i = 0;                                                               \
            for (; i + L <= len; i += L) {                                               \
                a0 += TO_VD8(LDV(VT, xp + i));                                           \
                a1 += TO_VD8(LDV(VT, xp + i + 8));                                       \
            }                                                                            \
            if (i < len) {                                                               \
                T t[L] = {0};                                                            \
                memcpy(t, xp + i, sizeof(T) * (size_t)(len - i));                        \
                a0 += TO_VD8(LDV(VT, t));                                                \
                a1 += TO_VD8(LDV(VT, t + 8));                                            \
            }                                                                            \
        }                                                                                \
        return fold2(a0, a1);                                                            \
    }                                                                                    \
    /* sum of (x - m)^2, the square in T as PyTorch computes it; the padded tail is m */ \
    INLINE double sqdev_##SFX(const T *x, int64_t np, int64_t len, int64_t stride, T m) { \
        vd8 a0 = {0}, a1 = {0};                                                          \
        for (int64_t p = 0; p < np; p++) {                                               \
            const T *xp = x + p * stride;                                                \
            int64_t i = 0;                                                               \
            for (; i + L <= len; i += L) {                                               \
                VT d0 = LDV(VT, xp + i) - m, d1 = LDV(VT, xp + i + 8) - m;               \
                a0 += TO_VD8(d0 * d0);                                                   \
                a1 += TO_VD8(d1 * d1);                                                   \
            }                                                                            \
            if (i < len) {                                                               \
                T t[L];                                                                  \
                for (int j = 0; j < L; j++) t[j] = i + j < len ? xp[i + j] : m;          \
                VT d0 = LDV(VT, t) - m, d1 = LDV(VT, t + 8) - m;                         \
                a0 += TO_VD8(d0 * d0);                                                   \
                a1 += TO_VD8(d1 * d1);                                                   \
            }                                                                            \
        }                                                                                \
        return fold2(a0, a1);                                                            \
    }                                                                                    \
    /* *s = sum of g, *d = sum of (x - m) * g */                                         \
    INLINE void sum2_##SFX(const T *g, const T *x, int64_t np, int64_t len,      \
                                   int64_t stride, T m, double *s, double *d) {          \
        vd8 s0 = {0}, s1 = {0}, d0 = {0}, d1 = {0};                                      \
        for (int64_t p = 0; p < np; p++) {                                               \
            const T *gp = g + p * stride, *xp = x + p * stride;                          \
            int64_t i = 0;                                                               \
            for (; i + L <= len; i += L) {                                               \
                VT g0 = LDV(VT, gp + i), g1 = LDV(VT, gp + i + 8);                       \
                s0 += TO_VD8(g0);                                                        \
                s1 += TO_VD8(g1);                                                        \
                d0 += TO_VD8((LDV(VT, xp + i) - m) * g0);                                \
                d1 += TO_VD8((LDV(VT, xp + i + 8) - m) * g1);                            \
            }                                                                            \
            if (i < len) {                                                               \
                T tg[L] = {0}, tx[L] = {0};                                              \
                memcpy(tg, gp + i, sizeof(T) * (size_t)(len - i));                       \
                memcpy(tx, xp + i, sizeof(T) * (size_t)(len - i));                       \
                VT g0 = LDV(VT, tg), g1 = LDV(VT, tg + 8);                               \
                s0 += TO_VD8(g0);                                                        \
                s1 += TO_VD8(g1);                                                        \
                d0 += TO_VD8((LDV(VT, tx) - m) * g0);                                    \
                d1 += TO_VD8((LDV(VT, tx + 8) - m) * g1);                                \
            }                                                                            \
        }                                                                                \
        *s = fold2(s0, s1);                                                              \
        *d = fold2(d0, d1);                                                              \
    }                                                                                    \
    /* *s = sum of g * w, *d = sum of g * w * x over one row (layer_norm's backward) */ \
    INLINE void sumw_##SFX(const T *g, const T *w, const T *x, int64_t n,        \
                                   double *s, double *d) {                               \
        vd8 s0 = {0}, s1 = {0}, d0 = {0}, d1 = {0};                                      \
        int64_t i = 0;                                                                   \
        for (; i + L <= n; i += L) {                                                     \
            VT w0 = LDV(VT, g + i) * LDV(VT, w + i);                                     \
            VT w1 = LDV(VT, g + i + 8) * LDV(VT, w + i + 8);                             \
            s0 += TO_VD8(w0);                                                            \
            s1 += TO_VD8(w1);                                                            \
            d0 += TO_VD8(w0 * LDV(VT, x + i));                                           \
            d1 += TO_VD8(w1 * LDV(VT, x + i + 8));                                       \
        }                                                                                \
        if (i < n) {                                                                     \
            T tg[L] = {0}, tw[L] = {0}, tx[L] = {0};                                     \
            memcpy(tg, g + i, sizeof(T) * (size_t)(n - i));                              \
            memcpy(tw, w + i, sizeof(T) * (size_t)(n - i));                              \
            memcpy(tx, x + i, sizeof(T) * (size_t)(n - i));                              \
            VT w0 = LDV(VT, tg) * LDV(VT, tw), w1 = LDV(VT, tg + 8) * LDV(VT, tw + 8);   \
            s0 += TO_VD8(w0);                                                            \
            s1 += TO_VD8(w1);                                                            \
            d0 += TO_VD8(w0 * LDV(VT, tx));                                              \
            d1 += TO_VD8(w1 * LDV(VT, tx + 8));                                          \
        }                                                                                \
        *s = fold2(s0, s1);                                                              \
        *d = fold2(d0, d1);                                                              \
    }                                                                                    \
    /* y = x * a + b */                                                                  \
    INLINE void axpb_##SFX(T *restrict y, const T *restrict x, int64_t n, T a, T b) { \
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * a + b;                             \
    }                                                                                    \
    /* y = (x * a + b) * w + c (layer_norm) */                                           \
    INLINE void ln_y_##SFX(T *restrict y, const T *restrict x, const T *restrict w, \
                                   const T *restrict c, int64_t n, T a, T b) {           \
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] * a + b) * w[i] + c[i];             \
    }                                                                                    \
    /* batch_norm's training dx = (g - gm - (x - m) * k) * is * w */                     \
    INLINE void bn_dx_##SFX(T *restrict dx, const T *restrict x, const T *restrict g, \
                                    int64_t n, T m, T k, T gm, T is, T w) {              \
        for (int64_t i = 0; i < n; i++) dx[i] = (g[i] - gm - (x[i] - m) * k) * is * w;   \
    }                                                                                    \
    /* dx = g * is * w (batch_norm in eval) */                                           \
    INLINE void scale2_##SFX(T *restrict dx, const T *restrict g, int64_t n, T is, T w) { \
        for (int64_t i = 0; i < n; i++) dx[i] = g[i] * is * w;                           \
    }                                                                                    \
    /* dx = a * g * w + b * x + c (layer_norm) */                                        \
    INLINE void ln_dx_##SFX(T *restrict dx, const T *restrict g, const T *restrict w, \
                                    const T *restrict x, int64_t n, T a, T b, T c) {     \
        for (int64_t i = 0; i < n; i++) dx[i] = a * g[i] * w[i] + b * x[i] + c;          \
    }                                                                                    \
    /* dx = a * g + b * x + c (group_norm, per channel) */                               \
    INLINE void gn_dx_##SFX(T *restrict dx, const T *restrict g, const T *restrict x, \
                                    int64_t n, T a, T b, T c) {                          \
        for (int64_t i = 0; i < n; i++) dx[i] = a * g[i] + b * x[i] + c;                 \
    }                                                                                    \
    /* pw += g * (x - m) * r, pb += g (layer_norm's weight and bias gradients) */         \
    INLINE void ln_gw_##SFX(double *restrict pw, double *restrict pb,            \
                                    const T *restrict g, const T *restrict x, int64_t n, \
                                    T m, T r) {                                          \
        for (int64_t i = 0; i < n; i++) {                                                \
            pw[i] += (double)(g[i] * (x[i] - m) * r);                                    \
            pb[i] += (double)g[i];                                                       \
        }                                                                                \
    }                                                                                    \
    /* ---- batch_norm ---- */                                                           \
    /* One channel's statistics from its mean and variance sum, with PyTorch's rounding \
     * (the variance sum stored as T, divided in T, rstd in double) and the running     \
     * statistics updated as PyTorch does (in T, the unbiased variance in double). */    \
    INLINE void bn_finish_##SFX(const ct_norm_job *j, int64_t c, T mean, double var_sum) { \
        int64_t n = j->N * j->S;                                                         \
        T vs = (T)var_sum;                                                               \
        ((T *)j->mean)[c] = mean;                                                        \
        ((T *)j->rstd)[c] = (T)(1.0 / sqrt((double)(vs / (T)n) + j->eps));               \
        const T mom = (T)j->momentum;                                                    \
        if (j->running_mean) {                                                           \
            T *rm = (T *)j->running_mean;                                                \
            rm[c] = mom * mean + (1 - mom) * rm[c];                                      \
        }                                                                                \
        if (j->running_var) {                                                            \
            T *rv = (T *)j->running_var;                                                 \
            double unbiased = (double)(vs / (T)(n - 1));                                 \
            rv[c] = (T)((double)mom * unbiased + (double)((1 - mom) * rv[c]));           \
        }                                                                                \
    }                                                                                    \
    /* eval: the running statistics as mean and 1 / sqrt(var + eps), in T */             \
    INLINE void bn_eval_stats_##SFX(const ct_norm_job *j, int64_t c) {                   \
        ((T *)j->mean)[c] = ((const T *)j->running_mean)[c];                             \
        ((T *)j->rstd)[c] = (T)1 / SQRT(((const T *)j->running_var)[c] + (T)j->eps);     \
    }                                                                                    \
    /* y = x * alpha + beta with alpha = rstd * w, beta = b - mean * alpha */            \
    INLINE void bn_alpha_beta_##SFX(const ct_norm_job *j, int64_t c, T *a, T *b) {       \
        T w = j->w ? ((const T *)j->w)[c] : (T)1, bb = j->b ? ((const T *)j->b)[c] : (T)0; \
        *a = ((const T *)j->rstd)[c] * w;                                                \
        *b = bb - ((const T *)j->mean)[c] * *a;                                          \
    }                                                                                    \
    /* [N, C, S], S > 1: channel c's planes */                                           \
    CT_SIMD_PROC(bn_fwd_plane_##SFX, (const ct_norm_job *j, int64_t c), (j, c), {                    \
        const int64_t N = j->N, C = j->C, S = j->S;                                      \
        const T *x = (const T *)j->x + c * S;                                            \
        T *y = (T *)j->y + c * S;                                                        \
        if (j->training) {                                                               \
            T mean = (T)(sum_##SFX(x, N, S, C * S) / (double)(N * S));                   \
            bn_finish_##SFX(j, c, mean, sqdev_##SFX(x, N, S, C * S, mean));              \
        } else {                                                                         \
            bn_eval_stats_##SFX(j, c);                                                   \
        }                                                                                \
        T a, b;                                                                          \
        bn_alpha_beta_##SFX(j, c, &a, &b);                                               \
        for (int64_t i = 0; i < N; i++) axpb_##SFX(y + i * C * S, x + i * C * S, S, a, b); \
    })                                                                                    \
    /* [N, C] (S == 1): columns [c0, c0 + nc), each summed over the rows in order */     \
    CT_SIMD_PROC(bn_fwd_cols_##SFX, (const ct_norm_job *j, int64_t c0, int64_t nc,  \
                                          double *restrict acc, T *restrict tmp), (j, c0, nc, acc, tmp), {       \
        const int64_t N = j->N, C = j->C;                                                \
        const T *x = (const T *)j->x + c0;                                               \
        T *y = (T *)j->y + c0;                                                           \
        if (j->training) {                                                               \
            for (int64_t k = 0; k < nc; k++) acc[k] = 0;                                 \
            for (int64_t i = 0; i < N; i++)                                              \
                for (int64_t k = 0; k < nc; k++) acc[k] += (double)x[i * C + k];         \
            for (int64_t k = 0; k < nc; k++) tmp[k] = (T)(acc[k] / (double)N);           \
            for (int64_t k = 0; k < nc; k++) acc[k] = 0;                                 \
            for (int64_t i = 0; i < N; i++)                                              \
                for (int64_t k = 0; k < nc; k++) {                                       \
                    T d = x[i * C + k] - tmp[k];                                         \
                    acc[k] += (double)(d * d);                                           \
                }                                                                        \
            for (int64_t k = 0; k < nc; k++) bn_finish_##SFX(j, c0 + k, tmp[k], acc[k]); \
        } else {                                                                         \
            for (int64_t k = 0; k < nc; k++) bn_eval_stats_##SFX(j, c0 + k);             \
        }                                                                                \
        T *a = tmp, *b = tmp + nc;                                                       \
        for (int64_t k = 0; k < nc; k++) bn_alpha_beta_##SFX(j, c0 + k, &a[k], &b[k]);   \
        for (int64_t i = 0; i < N; i++)                                                  \
            for (int64_t k = 0; k < nc; k++) y[i * C + k] = x[i * C + k] * a[k] + b[k];  \
    })                                                                                    \
    CT_SIMD_PROC(bn_bwd_plane_##SFX, (const ct_norm_job *j, int64_t c), (j, c), {                    \
        const int64_t N = j->N, C = j->C, S = j->S;                                      \
        const T *x = (const T *)j->x + c * S, *g = (const T *)j->gy + c * S;             \
        const T m = ((const T *)j->mean)[c], is = ((const T *)j->rstd)[c];               \
        const T w = j->w ? ((const T *)j->w)[c] : (T)1;                                  \
        double sum, dotp;                                                                \
        sum2_##SFX(g, x, N, S, C * S, m, &sum, &dotp);                                   \
        if (j->gx) {                                                                     \
            T *dx = (T *)j->gx + c * S;                                                  \
            if (j->training) {                                                           \
                T k = (T)dotp * is * is / (T)(N * S), gm = (T)(sum / (double)(N * S));   \
                for (int64_t i = 0; i < N; i++)                                          \
                    bn_dx_##SFX(dx + i * C * S, x + i * C * S, g + i * C * S, S, m, k, gm, is, w); \
            } else {                                                                     \
                for (int64_t i = 0; i < N; i++)                                          \
                    scale2_##SFX(dx + i * C * S, g + i * C * S, S, is, w);               \
            }                                                                            \
        }                                                                                \
        if (j->gw) ((T *)j->gw)[c] = (T)(dotp * is);                                     \
        if (j->gb) ((T *)j->gb)[c] = (T)sum;                                             \
    })                                                                                    \
    CT_SIMD_PROC(bn_bwd_cols_##SFX, (const ct_norm_job *j, int64_t c0, int64_t nc,  \
                                          double *restrict acc, T *restrict tmp), (j, c0, nc, acc, tmp), {       \
        const int64_t N = j->N, C = j->C;                                                \
        const T *x = (const T *)j->x + c0, *g = (const T *)j->gy + c0;                   \
        const T *m = (const T *)j->mean + c0, *is = (const T *)j->rstd + c0;             \
        double *sum = acc, *dotp = acc + nc;                                             \
        for (int64_t k = 0; k < 2 * nc; k++) acc[k] = 0;                                 \
        for (int64_t i = 0; i < N; i++)                                                  \
            for (int64_t k = 0; k < nc; k++) {                                           \
                sum[k] += (double)g[i * C + k];                                          \
                dotp[k] += (double)((x[i * C + k] - m[k]) * g[i * C + k]);               \
            }                                                                            \
        if (j->gx) {                                                                     \
            T *dx = (T *)j->gx + c0;                                                     \
            T *kk = tmp, *gm = tmp + nc, *isw = tmp + 2 * nc;                            \
            for (int64_t k = 0; k < nc; k++) {                                           \
                T w = j->w ? ((const T *)j->w)[c0 + k] : (T)1;                           \
                kk[k] = (T)dotp[k] * is[k] * is[k] / (T)N;                               \
                gm[k] = (T)(sum[k] / (double)N);                                         \
                isw[k] = w;                                                              \
            }                                                                            \
            if (j->training)                                                             \
                for (int64_t i = 0; i < N; i++)                                          \
                    for (int64_t k = 0; k < nc; k++)                                     \
                        dx[i * C + k] = (g[i * C + k] - gm[k] - (x[i * C + k] - m[k]) * kk[k]) * \
                                        is[k] * isw[k];                                  \
            else                                                                         \
                for (int64_t i = 0; i < N; i++)                                          \
                    for (int64_t k = 0; k < nc; k++)                                     \
                        dx[i * C + k] = g[i * C + k] * is[k] * isw[k];                   \
        }                                                                                \
        for (int64_t k = 0; k < nc; k++) {                                               \
            if (j->gw) ((T *)j->gw)[c0 + k] = (T)(dotp[k] * is[k]);                      \
            if (j->gb) ((T *)j->gb)[c0 + k] = (T)sum[k];                                 \
        }                                                                                \
    })                                                                                    \
    static void batch_norm_##SFX(const ct_norm_job *j) {                                 \
        const int64_t C = j->C, S = j->S;                                                \
        int nt = ct_get_num_threads();                                                   \
        bool par = nt > 1 && j->N * C * S >= CT_GRAIN;                                   \
        if (S != 1) {                                                                    \
            _Pragma("omp parallel for if (par) num_threads(nt) schedule(static)")        \
            for (int64_t c = 0; c < C; c++) {                                            \
                if (j->backward) bn_bwd_plane_##SFX(j, c);                               \
                else bn_fwd_plane_##SFX(j, c);                                           \
            }                                                                            \
            return;                                                                      \
        }                                                                                \
        /* columns in blocks: only the parallel split, never the order, depends on it */ \
        enum { CB = 64 };                                                                \
        int64_t nb = (C + CB - 1) / CB;                                                  \
        _Pragma("omp parallel for if (par) num_threads(nt) schedule(static)")            \
        for (int64_t blk = 0; blk < nb; blk++) {                                         \
            double acc[2 * CB];                                                          \
            T tmp[3 * CB];                                                               \
            int64_t c0 = blk * CB, nc = C - c0 < CB ? C - c0 : CB;                       \
            if (j->backward) bn_bwd_cols_##SFX(j, c0, nc, acc, tmp);                     \
            else bn_fwd_cols_##SFX(j, c0, nc, acc, tmp);                                 \
        }                                                                                \
    }                                                                                    \
    /* ---- layer_norm / group_norm: rows of K * S ---- */                               \
    INLINE void row_stats_##SFX(const ct_norm_job *j, int64_t r, const T *x, int64_t n,  \
                                T *mean, T *rstd) {                                      \
        double md = sum_##SFX(x, 1, n, n) / (double)n;                                   \
        /* deviations from the double mean: exact two-pass variance */                   \
        T mt = (T)md;                                                                    \
        double var = sqdev_##SFX(x, 1, n, n, mt) / (double)n - (md - (double)mt) * (md - (double)mt); \
        *mean = mt;                                                                      \
        *rstd = (T)(1.0 / SQRT((var < 0 ? 0 : var) + j->eps));                           \
        ((T *)j->mean)[r] = *mean;                                                       \
        ((T *)j->rstd)[r] = *rstd;                                                       \
    }                                                                                    \
    CT_SIMD_PROC(row_fwd_##SFX, (const ct_norm_job *j, int64_t r, const T *ones, const T *zeros), (j, r, ones, zeros), { \
        const int64_t K = j->C / j->G, S = j->S, n = K * S;                              \
        const T *x = (const T *)j->x + r * n;                                            \
        T *y = (T *)j->y + r * n;                                                        \
        T mean, rstd;                                                                    \
        row_stats_##SFX(j, r, x, n, &mean, &rstd);                                       \
        const T *w = j->w ? (const T *)j->w : ones, *b = j->b ? (const T *)j->b : zeros; \
        if (S == 1) { /* layer_norm: (x * rstd - rstd * mean) * w + b */                  \
            ln_y_##SFX(y, x, w + (r % j->G) * K, b + (r % j->G) * K, n, rstd, -rstd * mean); \
            return;                                                                      \
        }                                                                                \
        if (!j->w && !j->b) { /* group_norm without affine: (x - mean) * rstd */         \
            for (int64_t i = 0; i < n; i++) y[i] = (x[i] - mean) * rstd;                 \
            return;                                                                      \
        }                                                                                \
        for (int64_t k = 0; k < K; k++) {                                                \
            int64_t c = (r % j->G) * K + k;                                              \
            T scale = rstd * w[c];                                                       \
            axpb_##SFX(y + k * S, x + k * S, S, scale, -scale * mean + b[c]);            \
        }                                                                                \
    })                                                                                    \
    /* dx of row r; layer_norm (S == 1) also adds its weight / bias gradient terms to    \
     * pw, pb; group_norm writes the per-channel sums to ds, db [K]. */                  \
    CT_SIMD_PROC(row_bwd_##SFX, (const ct_norm_job *j, int64_t r, const T *ones, double *pw, \
                              double *pb, double *ds, double *db), (j, r, ones, pw, pb, ds, db), {                      \
        const int64_t K = j->C / j->G, S = j->S, n = K * S;                              \
        const T *x = (const T *)j->x + r * n, *g = (const T *)j->gy + r * n;             \
        const T m = ((const T *)j->mean)[r], rs = ((const T *)j->rstd)[r];               \
        const T *w = (j->w ? (const T *)j->w : ones) + (r % j->G) * K;                   \
        double sds, sdb;                                                                 \
        if (S == 1) {                                                                    \
            sumw_##SFX(g, w, x, n, &sdb, &sds);                                          \
            if (pw) ln_gw_##SFX(pw, pb, g, x, n, m, rs);                                 \
        } else {                                                                         \
            sds = sdb = 0;                                                               \
            for (int64_t k = 0; k < K; k++) {                                            \
                sum2_##SFX(g + k * S, x + k * S, 1, S, S, 0, &db[k], &ds[k]);            \
                sds += ds[k] * (double)w[k];                                             \
                sdb += db[k] * (double)w[k];                                             \
            }                                                                            \
        }                                                                                \
        if (!j->gx) return;                                                              \
        T *dx = (T *)j->gx + r * n;                                                      \
        double a = rs, s = 1.0 / (double)n;                                              \
        double b = (sdb * (double)m - sds) * a * a * a * s;                              \
        double c = -b * (double)m - sdb * a * s;                                         \
        if (S == 1) {                                                                    \
            ln_dx_##SFX(dx, g, w, x, n, rs, (T)b, (T)c);                                 \
            return;                                                                      \
        }                                                                                \
        for (int64_t k = 0; k < K; k++)                                                  \
            gn_dx_##SFX(dx + k * S, g + k * S, x + k * S, S, rs * w[k], (T)b, (T)c);     \
    })                                                                                    \
    static void row_norm_##SFX(const ct_norm_job *j) {                                   \
        const int64_t R = j->N * j->G, K = j->C / j->G, S = j->S, C = j->C;              \
        int nt = ct_get_num_threads();                                                   \
        bool par = nt > 1 && R > 1 && R * K * S >= CT_GRAIN;                             \
        T *ones = scratch(sizeof(T) * (size_t)C), *zeros = ones ? scratch(sizeof(T) * (size_t)C) : NULL; \
        if (!zeros) {                                                                    \
            free(ones);                                                                  \
            return;                                                                      \
        }                                                                                \
        for (int64_t c = 0; c < C; c++) ones[c] = 1;                                     \
        if (!j->backward) {                                                              \
            _Pragma("omp parallel for if (par) num_threads(nt) schedule(static)")        \
            for (int64_t r = 0; r < R; r++) row_fwd_##SFX(j, r, ones, zeros);            \
        } else if (S == 1) {                                                             \
            /* layer_norm: row chunks, each with its own [K] weight / bias partials */   \
            bool grads = j->gw || j->gb;                                                 \
            int64_t rows = R / 256 > LN_CHUNK_ROWS ? R / 256 : LN_CHUNK_ROWS;            \
            int64_t nch = R ? (R + rows - 1) / rows : 0;                                 \
            /* at least one (zero) chunk: no rows give zero gradients */                 \
            double *part = grads ? scratch(sizeof(double) * 2 * (size_t)((nch ? nch : 1) * K)) : NULL; \
            if (grads && !part) nch = 0, grads = false;                                  \
            _Pragma("omp parallel for if (par) num_threads(nt) schedule(static)")        \
            for (int64_t ch = 0; ch < nch; ch++) {                                       \
                double *pw = grads ? part + 2 * ch * K : NULL, *pb = pw ? pw + K : NULL; \
                int64_t r1 = (ch + 1) * rows < R ? (ch + 1) * rows : R;                  \
                for (int64_t r = ch * rows; r < r1; r++) row_bwd_##SFX(j, r, ones, pw, pb, NULL, NULL); \
            }                                                                            \
            if (grads) {                                                                 \
                /* chunk partials added in chunk order into chunk 0's, by column blocks */ \
                int64_t nkb = (K + 255) / 256;                                           \
                _Pragma("omp parallel for if (par) num_threads(nt) schedule(static)")    \
                for (int64_t kb = 0; kb < nkb; kb++) {                                   \
                    int64_t k0 = kb * 256, k1 = k0 + 256 < K ? k0 + 256 : K;             \
                    for (int64_t ch = 1; ch < nch; ch++)                                 \
                        for (int64_t k = k0; k < k1; k++) {                              \
                            part[k] += part[2 * ch * K + k];                             \
                            part[K + k] += part[(2 * ch + 1) * K + k];                   \
                        }                                                                \
                    for (int64_t k = k0; k < k1; k++) {                                  \
                        if (j->gw) ((T *)j->gw)[k] = (T)part[k];                         \
                        if (j->gb) ((T *)j->gb)[k] = (T)part[K + k];                     \
                    }                                                                    \
                }                                                                        \
            }                                                                            \
            free(part);                                                                  \
        } else {                                                                         \
            /* group_norm: per (n, c) sums, then the weight / bias gradients over n */   \
            double *ds = scratch(sizeof(double) * 2 * (size_t)(R * K)), *db = ds ? ds + R * K : NULL; \
            _Pragma("omp parallel for if (par) num_threads(nt) schedule(static)")        \
            for (int64_t r = 0; r < (ds ? R : 0); r++)                                   \
                row_bwd_##SFX(j, r, ones, NULL, NULL, ds + r * K, db + r * K);           \
            for (int64_t c = 0; ds && c < C && (j->gw || j->gb); c++) {                  \
                double sw = 0, sb = 0;                                                   \
                for (int64_t i = 0; i < j->N; i++) {                                     \
                    int64_t r = i * j->G + c / K;                                        \
                    double m = ((const T *)j->mean)[r], rs = ((const T *)j->rstd)[r];    \
                    sw += (ds[i * C + c] - db[i * C + c] * m) * rs;                      \
                    sb += db[i * C + c];                                                 \
                }                                                                        \
                if (j->gw) ((T *)j->gw)[c] = (T)sw;                                      \
                if (j->gb) ((T *)j->gb)[c] = (T)sb;                                      \
            }                                                                            \
            free(ds);                                                                    \
        }                                                                                \
        free(ones);                                                                      \
        free(zeros);                                                                     \
    }

NORM_KERNELS(float, f32, sqrtf, vf8, F32_TO_VD8)
NORM_KERNELS(double, f64, sqrt, vd8, F64_TO_VD8)

const ct_kernel_entry ct_cpu_norm_kernels[] = {
    CT_KERNEL(NORM, CT_OP_batch_norm, CT_F32, batch_norm_f32),
    CT_KERNEL(NORM, CT_OP_batch_norm, CT_F64, batch_norm_f64),
    CT_KERNEL(NORM, CT_OP_layer_norm, CT_F32, row_norm_f32),
    CT_KERNEL(NORM, CT_OP_layer_norm, CT_F64, row_norm_f64),
    CT_KERNEL(NORM, CT_OP_group_norm, CT_F32, row_norm_f32),
    CT_KERNEL(NORM, CT_OP_group_norm, CT_F64, row_norm_f64),
    CT_KERNEL_END,
};
