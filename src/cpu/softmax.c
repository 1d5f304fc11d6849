/* softmax, log_softmax, their backward-data ops and logsumexp over [M1, L, M2]
 * (the softmax dim L in the middle, contiguous; M2 == 1 is the row case).
 *
 * Each is fused: one pass for the max, one for the sum of exp(x - max) (in double),
 * one writing the result, so large magnitudes (1e4) neither overflow nor lose the
 * small terms.  Every row / column is computed by one thread in a fixed order
 * (cpu/softmax_driver.h).  float16 / bfloat16: cpu/softmax_reduced.c. */
#include "cpu/fast_math.h"
#include "cpu/reduce.h"
#include "cpu/softmax_driver.h"
#include "kernels/softmax.h"

/* Lane sums in double (a fixed tree, so the value never depends on threads). */
#define LANE_SUM(T, SFX)                                                                 \
    CT_SIMD_PROC(lanes_add_##SFX, (double *restrict l, const T *restrict a,         \
                                        const T *restrict b, int64_t n), (l, a, b, n), {                \
        int64_t i = 0;                                                                   \
        if (b) {                                                                         \
            for (; i + CT_REDUCE_LANES <= n; i += CT_REDUCE_LANES)                       \
                for (int j = 0; j < CT_REDUCE_LANES; j++)                                \
                    l[j] += (double)a[i + j] * (double)b[i + j];                         \
            for (int j = 0; i < n; i++, j++) l[j] += (double)a[i] * (double)b[i];        \
        } else {                                                                         \
            for (; i + CT_REDUCE_LANES <= n; i += CT_REDUCE_LANES)                       \
                for (int j = 0; j < CT_REDUCE_LANES; j++) l[j] += (double)a[i + j];      \
            for (int j = 0; i < n; i++, j++) l[j] += (double)a[i];                       \
        }                                                                                \
    })                                                                                    \
    /* sum of a (or of a * b) over n elements */                                         \
    static double rowsum_##SFX(const T *a, const T *b, int64_t n) {                      \
        double l[CT_REDUCE_LANES] = {0};                                                 \
        lanes_add_##SFX(l, a, b, n);                                                     \
        for (int w = CT_REDUCE_LANES / 2; w > 0; w /= 2)                                 \
            for (int j = 0; j < w; j++) l[j] += l[j + w];                                \
        return l[0];                                                                     \
    }
LANE_SUM(float, f32)
LANE_SUM(double, f64)

/* Elementwise maps, vectorized when EXP is (float: ct_expf_fast). */
#define MAPS(T, SFX, EXP)                                                                \
    CT_SIMD_PROC(map_exp_##SFX, (T *restrict o, const T *restrict x, int64_t n, T m), (o, x, n, m), { \
        for (int64_t i = 0; i < n; i++) o[i] = EXP(x[i] - m);                            \
    })                                                                                    \
    CT_SIMD_PROC(map_scale_##SFX, (T *restrict o, int64_t n, T s), (o, n, s), {                 \
        for (int64_t i = 0; i < n; i++) o[i] *= s;                                       \
    })                                                                                    \
    /* log_softmax as PyTorch rounds it: (x - max) - log(sum), not x - (max + log(sum)), \
     * which loses the small result next to a large max. */                             \
    CT_SIMD_PROC(map_shift_##SFX, (T *restrict o, const T *restrict x, int64_t n, T m, T ls), (o, x, n, m, ls), { \
        for (int64_t i = 0; i < n; i++) o[i] = (x[i] - m) - ls;                          \
    })                                                                                    \
    CT_SIMD_PROC(map_sm_bwd_##SFX, (T *restrict o, const T *restrict y,             \
                                         const T *restrict g, int64_t n, T s), (o, y, g, n, s), {          \
        for (int64_t i = 0; i < n; i++) o[i] = y[i] * (g[i] - s);                        \
    })                                                                                    \
    CT_SIMD_PROC(map_lsm_bwd_##SFX, (T *restrict o, const T *restrict y,            \
                                          const T *restrict g, int64_t n, T s), (o, y, g, n, s), {         \
        for (int64_t i = 0; i < n; i++) o[i] = g[i] - EXP(y[i]) * s;                     \
    })                                                                                    \
    /* sum of exp(x - m) in blocks through a small buffer (e: where to keep the exps,    \
     * or NULL) */                                                                       \
    static double expsum_##SFX(const T *x, T *e, int64_t n, T m) {                       \
        T buf[256];                                                                      \
        double l[CT_REDUCE_LANES] = {0};                                                 \
        for (int64_t b = 0; b < n; b += 256) {                                           \
            int64_t len = n - b < 256 ? n - b : 256;                                     \
            T *dst = e ? e + b : buf;                                                    \
            map_exp_##SFX(dst, x + b, len, m);                                           \
            lanes_add_##SFX(l, dst, NULL, len);                                          \
        }                                                                                \
        for (int w = CT_REDUCE_LANES / 2; w > 0; w /= 2)                                 \
            for (int j = 0; j < w; j++) l[j] += l[j + w];                                \
        return l[0];                                                                     \
    }
MAPS(float, f32, ct_expf_fast)
MAPS(double, f64, exp)
CT_DEFINE_EXTREME_CHUNK(rowmax_f32, float, int32_t, -INFINITY, >)
CT_DEFINE_EXTREME_CHUNK(rowmax_f64, double, int64_t, -INFINITY, >)

/* Columns [0, nc) of x, g, o seen as [L, M2]: each pass streams whole rows.
 * mx, s: nc scratch values. */
#define COLS(T, SFX, EXP, LOG)                                                           \
    CT_SIMD_PROC(cols_##SFX, (ct_softmax_kind kind, const T *restrict x,            \
                                   const T *restrict g, T *restrict o, int64_t L,        \
                                   int64_t M2, int64_t nc, T *restrict mx,               \
                                   double *restrict s), (kind, x, g, o, L, M2, nc, mx, s), {                                 \
        for (int64_t c = 0; c < nc; c++) {                                               \
            mx[c] = -INFINITY;                                                           \
            s[c] = 0;                                                                    \
        }                                                                                \
        if (kind <= CT_LOGSUMEXP) {                                                      \
            for (int64_t l = 0; l < L; l++) {                                            \
                const T *restrict xr = x + l * M2;                                       \
                for (int64_t c = 0; c < nc; c++) {                                       \
                    T v = xr[c], a = mx[c];                                              \
                    mx[c] = ((v > a) | (v != v)) ? v : a;                                \
                }                                                                        \
            }                                                                            \
            for (int64_t l = 0; l < L; l++) {                                            \
                const T *restrict xr = x + l * M2;                                       \
                for (int64_t c = 0; c < nc; c++) s[c] += EXP(xr[c] - mx[c]);             \
            }                                                                            \
        } else {                                                                         \
            for (int64_t l = 0; l < L; l++) {                                            \
                const T *restrict gr = g + l * M2, *restrict xr = x + l * M2;            \
                if (kind == CT_SOFTMAX_BWD)                                              \
                    for (int64_t c = 0; c < nc; c++) s[c] += (double)gr[c] * xr[c];      \
                else                                                                     \
                    for (int64_t c = 0; c < nc; c++) s[c] += gr[c];                      \
            }                                                                            \
        }                                                                                \
        switch (kind) {                                                                  \
        case CT_LOGSUMEXP:                                                               \
            for (int64_t c = 0; c < nc; c++)                                             \
                o[c] = isinf(mx[c]) ? mx[c] : mx[c] + (T)LOG(s[c]);                      \
            return;                                                                      \
        case CT_SOFTMAX:                                                                 \
            for (int64_t c = 0; c < nc; c++) s[c] = 1.0 / s[c];                          \
            for (int64_t l = 0; l < L; l++)                                              \
                for (int64_t c = 0; c < nc; c++)                                         \
                    o[l * M2 + c] = EXP(x[l * M2 + c] - mx[c]) * (T)s[c];                \
            return;                                                                      \
        case CT_LOG_SOFTMAX:                                                             \
            for (int64_t c = 0; c < nc; c++) s[c] = LOG(s[c]);                           \
            for (int64_t l = 0; l < L; l++)                                              \
                for (int64_t c = 0; c < nc; c++)                                         \
                    o[l * M2 + c] = (x[l * M2 + c] - mx[c]) - (T)s[c];                   \
            return;                                                                      \
        case CT_SOFTMAX_BWD:                                                             \
            for (int64_t l = 0; l < L; l++)                                              \
                for (int64_t c = 0; c < nc; c++)                                         \
                    o[l * M2 + c] = x[l * M2 + c] * (g[l * M2 + c] - (T)s[c]);           \
            return;                                                                      \
        case CT_LOG_SOFTMAX_BWD:                                                         \
            for (int64_t l = 0; l < L; l++)                                              \
                for (int64_t c = 0; c < nc; c++)                                         \
                    o[l * M2 + c] = g[l * M2 + c] - EXP(x[l * M2 + c]) * (T)s[c];        \
            return;                                                                      \
        }                                                                                \
    })
COLS(float, f32, ct_expf_fast, log)
COLS(double, f64, exp, log)

/* The per-type kernel: T, its exp and log. */
#define SOFTMAX_KERNELS(T, SFX, EXP, LOG)                                                \
    /* One row or column block: x, o of [L, M2] starting at column c0, nc columns. */   \
    static void block_##SFX(ct_softmax_kind kind, const T *x, const T *g, T *o, int64_t L, \
                            int64_t M2, int64_t nc, double *scratch) {                    \
        if (M2 == 1) {                                                                   \
            T m = kind <= CT_LOGSUMEXP ? rowmax_##SFX##_chunk(x, L, NULL) : 0;           \
            switch (kind) {                                                              \
            case CT_SOFTMAX:                                                             \
                map_scale_##SFX(o, L, (T)(1.0 / expsum_##SFX(x, o, L, m)));              \
                break;                                                                   \
            case CT_LOG_SOFTMAX:                                                         \
                map_shift_##SFX(o, x, L, m, (T)LOG(expsum_##SFX(x, NULL, L, m)));        \
                break;                                                                   \
            case CT_LOGSUMEXP:                                                           \
                o[0] = isinf(m) ? m : m + (T)LOG(expsum_##SFX(x, NULL, L, m));           \
                break;                                                                   \
            case CT_SOFTMAX_BWD: /* x: softmax output y; o = y * (g - sum(g * y)) */     \
                map_sm_bwd_##SFX(o, x, g, L, (T)rowsum_##SFX(g, x, L));                  \
                break;                                                                   \
            case CT_LOG_SOFTMAX_BWD: /* x: log_softmax output; o = g - exp(x) sum(g) */  \
                map_lsm_bwd_##SFX(o, x, g, L, (T)rowsum_##SFX(g, NULL, L));              \
                break;                                                                   \
            }                                                                            \
            return;                                                                      \
        }                                                                                \
        double *s = scratch; /* doubles first: both stay aligned */                      \
        T *mx = (T *)(s + nc);                                                           \
        cols_##SFX(kind, x, g, o, L, M2, nc, mx, s);                                     \
    }                                                                                    \
    CT_SOFTMAX_DRIVER(softmax_##SFX, T, block_##SFX, sizeof(T) + sizeof(double))
SOFTMAX_KERNELS(float, f32, ct_expf_fast, log)
SOFTMAX_KERNELS(double, f64, exp, log)

const ct_kernel_entry ct_cpu_softmax_kernels[] = {
    CT_KERNEL(SOFTMAX, CT_OP_softmax, CT_F32, softmax_f32),
    CT_KERNEL(SOFTMAX, CT_OP_softmax, CT_F64, softmax_f64),
    CT_KERNEL_END,
};
