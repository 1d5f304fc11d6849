/* softmax, log_softmax, their backward-data ops and logsumexp for float16 and
 * bfloat16 over [M1, L, M2] (kernels/softmax.h): tiles of CT_REDUCED_TILE elements
 * are widened to float in registers-sized buffers on the stack (cpu/reduced_cvt.h),
 * computed as the float32 kernel computes them (the same max, exp and maps),
 * accumulated in float (ct_acc_type), and rounded to nearest even once on the store.
 * No temporary grows with the tensor.  Thread split: cpu/softmax_driver.h. */
#pragma GCC optimize("no-trapping-math") /* Note [Vectorizing selects], cpu/unary.c */
#include "cpu/fast_math.h"
#include "cpu/reduce.h"
#include "cpu/float_lanes.h"
#include "cpu/softmax_driver.h"

#define TILE CT_REDUCED_TILE

CT_DEFINE_EXTREME_CHUNK(tile_max, float, int32_t, -INFINITY, >)

/* The elementwise steps on a float tile t (and g), in place, with the max m and the
 * sum s: one value each for a row (ms == 0), one per column for a column block
 * (ms == 1; written out twice so that both loops vectorize). */
typedef enum { EXP_SUB, EXP_SCALE, SHIFT, SM_BWD, LSM_BWD } step_kind;
#define STEPS(M, S)                                                                      \
    switch (k) {                                                                         \
    case EXP_SUB: /* t = exp(t - m) */                                                   \
        for (int64_t i = 0; i < n; i++) t[i] = ct_expf_fast(t[i] - (M));                 \
        return;                                                                          \
    case EXP_SCALE: /* softmax: exp(t - m) * (1 / sum) */                                \
        for (int64_t i = 0; i < n; i++) t[i] = ct_expf_fast(t[i] - (M)) * (S);           \
        return;                                                                          \
    case SHIFT: /* log_softmax: (t - m) - log(sum), as PyTorch rounds it */              \
        for (int64_t i = 0; i < n; i++) t[i] = (t[i] - (M)) - (S);                       \
        return;                                                                          \
    case SM_BWD: /* t = y: y * (g - sum(g * y)) */                                       \
        for (int64_t i = 0; i < n; i++) t[i] = t[i] * (g[i] - (S));                      \
        return;                                                                          \
    case LSM_BWD: /* t = log_softmax output: g - exp(t) * sum(g) */                      \
        for (int64_t i = 0; i < n; i++) t[i] = g[i] - ct_expf_fast(t[i]) * (S);          \
        return;                                                                          \
    }
CT_SIMD_PROC(tile_step, (step_kind k, float *restrict t, const float *restrict g,
                         const float *restrict m, const float *restrict s, int64_t ms,
                         int64_t n), (k, t, g, m, s, ms, n), {
    if (ms == 0) {
        const float m0 = m[0], s0 = s[0];
        STEPS(m0, s0)
    } else {
        STEPS(m[i], s[i])
    }
})

/* Per-column running max and sums over one row of a column block. */
CT_SIMD_PROC(cols_max, (float *restrict mx, const float *restrict t, int64_t n), (mx, t, n), {
    for (int64_t c = 0; c < n; c++) mx[c] = CT_MAX_OF(mx[c], t[c]);
})
CT_SIMD_PROC(cols_add, (float *restrict s, const float *restrict t, const float *restrict g,
                        int64_t n), (s, t, g, n), {
    if (g)
        for (int64_t c = 0; c < n; c++) s[c] += g[c] * t[c];
    else
        for (int64_t c = 0; c < n; c++) s[c] += t[c];
})

/* The final step of kind, with the row's / columns' max m and sum s: what SHIFT and
 * EXP_SCALE need in s, and which step writes the output. */
static step_kind finish(ct_softmax_kind kind, float *s, int64_t n) {
    switch (kind) {
    case CT_SOFTMAX:
        for (int64_t c = 0; c < n; c++) s[c] = 1.0f / s[c];
        return EXP_SCALE;
    case CT_LOG_SOFTMAX:
        for (int64_t c = 0; c < n; c++) s[c] = logf(s[c]);
        return SHIFT;
    case CT_SOFTMAX_BWD: return SM_BWD;
    default: return LSM_BWD;
    }
}

#define REDUCED_SOFTMAX(TS, SFX)                                                         \
    /* One row of L elements (M2 == 1). */                                               \
    static void row_##SFX(ct_softmax_kind kind, const TS *x, const TS *g, TS *o, int64_t L) { \
        float t[TILE], gt[TILE], l[CT_REDUCE_LANES] = {0}, m = -INFINITY, s = 0;             \
        bool fwd = kind <= CT_LOGSUMEXP;                                                 \
        if (fwd) {                                                                       \
            for (int64_t b = 0; b < L; b += TILE) {                                      \
                int64_t n = L - b < TILE ? L - b : TILE;                                 \
                CT_REDUCED_TO_FLOAT_N(t, x + b, n);                                      \
                float tm = tile_max_chunk(t, n, NULL);                                   \
                m = CT_MAX_OF(m, tm);                                                    \
            }                                                                            \
        }                                                                                \
        for (int64_t b = 0; b < L; b += TILE) { /* the sum */                            \
            int64_t n = L - b < TILE ? L - b : TILE;                                     \
            CT_REDUCED_TO_FLOAT_N(t, x + b, n);                                          \
            if (fwd) {                                                                   \
                tile_step(EXP_SUB, t, NULL, &m, &m, 0, n);                             \
                lanes_add(l, t, NULL, n);                                                \
            } else {                                                                     \
                CT_REDUCED_TO_FLOAT_N(gt, g + b, n);                                     \
                lanes_add(l, gt, kind == CT_SOFTMAX_BWD ? t : NULL, n);                  \
            }                                                                            \
        }                                                                                \
        s = lanes_total(l);                                                              \
        if (kind == CT_LOGSUMEXP) {                                                      \
            o[0] = CT_STORE_REDUCED(TS, isinf(m) ? m : m + logf(s));                     \
            return;                                                                      \
        }                                                                                \
        step_kind step = finish(kind, &s, 1);                                            \
        for (int64_t b = 0; b < L; b += TILE) { /* the output */                         \
            int64_t n = L - b < TILE ? L - b : TILE;                                     \
            CT_REDUCED_TO_FLOAT_N(t, x + b, n);                                          \
            if (!fwd) CT_REDUCED_TO_FLOAT_N(gt, g + b, n);                               \
            tile_step(step, t, gt, &m, &s, 0, n);                                        \
            CT_FLOAT_TO_REDUCED_N(o + b, t, n);                                          \
        }                                                                                \
    }                                                                                    \
    /* nc <= TILE columns of [L, M2]: each pass streams the rows' runs of nc. */        \
    static void cols_##SFX(ct_softmax_kind kind, const TS *x, const TS *g, TS *o, int64_t L, \
                           int64_t M2, int64_t nc) {                                     \
        float t[TILE], gt[TILE], mx[TILE], s[TILE];                                      \
        bool fwd = kind <= CT_LOGSUMEXP;                                                 \
        for (int64_t c = 0; c < nc; c++) mx[c] = -INFINITY, s[c] = 0;                    \
        for (int64_t r = 0; fwd && r < L; r++) {                                         \
            CT_REDUCED_TO_FLOAT_N(t, x + r * M2, nc);                                    \
            cols_max(mx, t, nc);                                                         \
        }                                                                                \
        for (int64_t r = 0; r < L; r++) {                                                \
            CT_REDUCED_TO_FLOAT_N(t, x + r * M2, nc);                                    \
            if (fwd) {                                                                   \
                tile_step(EXP_SUB, t, NULL, mx, s, 1, nc);                            \
                cols_add(s, t, NULL, nc);                                                \
            } else {                                                                     \
                CT_REDUCED_TO_FLOAT_N(gt, g + r * M2, nc);                               \
                cols_add(s, gt, kind == CT_SOFTMAX_BWD ? t : NULL, nc);                  \
            }                                                                            \
        }                                                                                \
        if (kind == CT_LOGSUMEXP) {                                                      \
            for (int64_t c = 0; c < nc; c++)                                             \
                o[c] = CT_STORE_REDUCED(TS, isinf(mx[c]) ? mx[c] : mx[c] + logf(s[c]));  \
            return;                                                                      \
        }                                                                                \
        step_kind step = finish(kind, s, nc);                                            \
        for (int64_t r = 0; r < L; r++) {                                                \
            CT_REDUCED_TO_FLOAT_N(t, x + r * M2, nc);                                    \
            if (!fwd) CT_REDUCED_TO_FLOAT_N(gt, g + r * M2, nc);                         \
            tile_step(step, t, gt, mx, s, 1, nc);                                        \
            CT_FLOAT_TO_REDUCED_N(o + r * M2, t, nc);                                    \
        }                                                                                \
    }                                                                                    \
    static void block_##SFX(ct_softmax_kind kind, const TS *x, const TS *g, TS *o, int64_t L, \
                            int64_t M2, int64_t nc, double *scratch) {                   \
        (void)scratch;                                                                   \
        if (M2 == 1) {                                                                   \
            row_##SFX(kind, x, g, o, L);                                                 \
            return;                                                                      \
        }                                                                                \
        for (int64_t c0 = 0; c0 < nc; c0 += TILE)                                        \
            cols_##SFX(kind, x + c0, g ? g + c0 : NULL, o + c0, L, M2,                   \
                       nc - c0 < TILE ? nc - c0 : TILE);                                 \
    }                                                                                    \
    CT_SOFTMAX_DRIVER(softmax_##SFX, TS, block_##SFX, 0)
REDUCED_SOFTMAX(ct_half, f16)
REDUCED_SOFTMAX(ct_bf16, bf16)

const ct_kernel_entry ct_cpu_softmax_reduced_kernels[] = {
    CT_KERNEL(SOFTMAX, CT_OP_softmax, CT_F16, softmax_f16),
    CT_KERNEL(SOFTMAX, CT_OP_softmax, CT_BF16, softmax_bf16),
    CT_KERNEL_END,
};
