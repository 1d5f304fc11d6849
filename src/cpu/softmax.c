/* softmax, log_softmax, their backward-data ops and logsumexp over [M1, L, M2]
 * (the softmax dim L in the middle, contiguous; M2 == 1 is the row case).
 *
 * Each is fused: one pass for the max, one for the sum of exp(x - max) (in double),
 * one writing the result, so large magnitudes (1e4) neither overflow nor lose the
 * small terms.  Every row / column is computed by one thread in a fixed order. */
#include "cpu/reduce.h"
#include "cpu/softmax.h"

/* The per-type pieces: T, its exp and log. */
#define SOFTMAX_KERNELS(T, SFX, EXP, LOG)                                                \
    CT_SIMD static T rowmax_##SFX(const T *restrict x, int64_t n) {                      \
        T l[CT_REDUCE_LANES];                                                            \
        for (int j = 0; j < CT_REDUCE_LANES; j++) l[j] = -INFINITY;                      \
        int64_t i = 0;                                                                   \
        for (; i + CT_REDUCE_LANES <= n; i += CT_REDUCE_LANES)                           \
            for (int j = 0; j < CT_REDUCE_LANES; j++) l[j] = CT_MAX_OF(l[j], x[i + j]);  \
        for (int j = 0; i < n; i++, j++) l[j] = CT_MAX_OF(l[j], x[i]);                   \
        for (int w = CT_REDUCE_LANES / 2; w > 0; w /= 2)                                 \
            for (int j = 0; j < w; j++) l[j] = CT_MAX_OF(l[j], l[j + w]);                \
        return l[0];                                                                     \
    }                                                                                    \
    /* sum of exp(x - m), optionally storing the exps into e. */                         \
    static double rowexpsum_##SFX(const T *restrict x, T *restrict e, int64_t n, T m) {  \
        double s = 0;                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                \
            T v = EXP(x[i] - m);                                                         \
            if (e) e[i] = v;                                                             \
            s += v;                                                                      \
        }                                                                                \
        return s;                                                                        \
    }                                                                                    \
    /* One row or column block: x, o of [L, M2] starting at column c0, nc columns. */   \
    static void block_##SFX(ct_softmax_kind kind, const T *x, const T *g, T *o, int64_t L, \
                            int64_t M2, int64_t nc) {                                    \
        if (M2 == 1) {                                                                   \
            switch (kind) {                                                              \
            case CT_SOFTMAX: {                                                           \
                T m = rowmax_##SFX(x, L);                                                \
                T inv = (T)(1.0 / rowexpsum_##SFX(x, o, L, m));                          \
                for (int64_t i = 0; i < L; i++) o[i] *= inv;                             \
            } break;                                                                     \
            case CT_LOG_SOFTMAX: {                                                       \
                T m = rowmax_##SFX(x, L);                                                \
                T sh = m + (T)LOG(rowexpsum_##SFX(x, NULL, L, m));                       \
                for (int64_t i = 0; i < L; i++) o[i] = x[i] - sh;                        \
            } break;                                                                     \
            case CT_LOGSUMEXP: {                                                         \
                T m = rowmax_##SFX(x, L);                                                \
                o[0] = isinf(m) ? m : m + (T)LOG(rowexpsum_##SFX(x, NULL, L, m));        \
            } break;                                                                     \
            case CT_SOFTMAX_BWD: { /* x: softmax output y; o = y * (g - sum(g * y)) */   \
                double s = 0;                                                            \
                for (int64_t i = 0; i < L; i++) s += (double)g[i] * x[i];                \
                for (int64_t i = 0; i < L; i++) o[i] = x[i] * (g[i] - (T)s);             \
            } break;                                                                     \
            case CT_LOG_SOFTMAX_BWD: { /* x: log_softmax output; o = g - exp(x) sum(g) */ \
                double s = 0;                                                            \
                for (int64_t i = 0; i < L; i++) s += g[i];                               \
                for (int64_t i = 0; i < L; i++) o[i] = g[i] - EXP(x[i]) * (T)s;          \
            } break;                                                                     \
            }                                                                            \
            return;                                                                      \
        }                                                                                \
        T mx[CT_REDUCE_COLBLOCK];                                                        \
        double s[CT_REDUCE_COLBLOCK];                                                    \
        for (int64_t c = 0; c < nc; c++) {                                               \
            mx[c] = -INFINITY;                                                           \
            s[c] = 0;                                                                    \
        }                                                                                \
        if (kind == CT_SOFTMAX || kind == CT_LOG_SOFTMAX || kind == CT_LOGSUMEXP) {      \
            for (int64_t l = 0; l < L; l++)                                              \
                for (int64_t c = 0; c < nc; c++) mx[c] = CT_MAX_OF(mx[c], x[l * M2 + c]); \
            for (int64_t l = 0; l < L; l++)                                              \
                for (int64_t c = 0; c < nc; c++) s[c] += EXP(x[l * M2 + c] - mx[c]);     \
        } else if (kind == CT_SOFTMAX_BWD) {                                             \
            for (int64_t l = 0; l < L; l++)                                              \
                for (int64_t c = 0; c < nc; c++) s[c] += (double)g[l * M2 + c] * x[l * M2 + c]; \
        } else {                                                                         \
            for (int64_t l = 0; l < L; l++)                                              \
                for (int64_t c = 0; c < nc; c++) s[c] += g[l * M2 + c];                  \
        }                                                                                \
        if (kind == CT_LOGSUMEXP) {                                                      \
            for (int64_t c = 0; c < nc; c++)                                             \
                o[c] = isinf(mx[c]) ? mx[c] : mx[c] + (T)LOG(s[c]);                      \
            return;                                                                      \
        }                                                                                \
        for (int64_t l = 0; l < L; l++)                                                  \
            for (int64_t c = 0; c < nc; c++) {                                           \
                int64_t i = l * M2 + c;                                                  \
                switch (kind) {                                                          \
                case CT_SOFTMAX: o[i] = EXP(x[i] - mx[c]) / (T)s[c]; break;              \
                case CT_LOG_SOFTMAX: o[i] = x[i] - mx[c] - (T)LOG(s[c]); break;          \
                case CT_SOFTMAX_BWD: o[i] = x[i] * (g[i] - (T)s[c]); break;              \
                default: o[i] = g[i] - EXP(x[i]) * (T)s[c]; break;                       \
                }                                                                        \
            }                                                                            \
    }                                                                                    \
    static void softmax_##SFX(ct_softmax_kind kind, const char *x, const char *g, char *o, \
                              int64_t M1, int64_t L, int64_t M2) {                       \
        int64_t ncb = (M2 + CT_REDUCE_COLBLOCK - 1) / CT_REDUCE_COLBLOCK;                \
        int64_t ostride = kind == CT_LOGSUMEXP ? M2 : L * M2;                            \
        int nt = ct_get_num_threads();                                                   \
        _Pragma("omp parallel for if (M1 * L * M2 >= CT_GRAIN && nt > 1) num_threads(nt)") \
        for (int64_t k = 0; k < M1 * ncb; k++) {                                         \
            int64_t m = k / ncb, c0 = (k % ncb) * CT_REDUCE_COLBLOCK;                    \
            int64_t nc = M2 - c0 < CT_REDUCE_COLBLOCK ? M2 - c0 : CT_REDUCE_COLBLOCK;    \
            block_##SFX(kind, (const T *)x + m * L * M2 + c0,                            \
                        g ? (const T *)g + m * L * M2 + c0 : NULL,                       \
                        (T *)o + m * ostride + c0, L, M2, nc);                           \
        }                                                                                \
    }
SOFTMAX_KERNELS(float, f32, expf, log)
SOFTMAX_KERNELS(double, f64, exp, log)

const ct_kernel_entry ct_cpu_softmax_kernels[] = {
    {CT_OP_softmax, CT_F32, (ct_kernel)softmax_f32},
    {CT_OP_softmax, CT_F64, (ct_kernel)softmax_f64},
    {0, 0, NULL},
};
