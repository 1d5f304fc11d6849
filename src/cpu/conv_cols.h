/* The column transforms of the convolution kernels, shared by the float kernels
 * (cpu/conv.c) and the float16 / bfloat16 ones (cpu/conv_reduced.c): im2col of one
 * sample's channels in a block of output rows, col2im back (overlaps summed), the
 * bias gradient, and the blocking both paths use (so their buffers are the same size).
 * Buffers: x [C, H, W] per sample, K = C/G * KH * KW rows of im2col, (oh1 - oh0) * OW
 * columns per block.  Each includer instantiates the macros for its dtypes. */
#ifndef CT_CPU_CONV_COLS_H
#define CT_CPU_CONV_COLS_H

#include <string.h>

#include "cpu/kernel_util.h"
#include "kernels/conv.h"

/* Output positions o in [0, n) with 0 <= o * s - p + off < size: [*lo, *hi). */
static inline void valid_range(int64_t n, int64_t s, int64_t p, int64_t off, int64_t size, int64_t *lo,
                        int64_t *hi) {
    int64_t a = p - off; /* o * s >= a */
    int64_t l = a <= 0 ? 0 : (a + s - 1) / s;
    int64_t b = size + p - off; /* o * s < b */
    int64_t h = b <= 0 ? 0 : (b + s - 1) / s;
    *lo = l < n ? l : n;
    *hi = h < n ? (h > *lo ? h : *lo) : n;
}

/* Output rows per im2col block: the column block (K rows) stays in L2 cache. */
static inline int64_t block_rows(const ct_conv_geom *g, int64_t K) {
    int64_t cols = (128 * 1024) / (K > 0 ? K : 1), rows = g->OW > 0 ? cols / g->OW : 1;
    return rows < 1 ? 1 : rows;
}

/* A 1x1 kernel with stride 1 and no padding needs no im2col (is_pointwise): its
 * forward takes the whole plane as one block. */
static inline bool is_pointwise(const ct_conv_geom *g);
static inline int64_t forward_rows(const ct_conv_geom *g, int64_t K) {
    return is_pointwise(g) ? (g->OH > 0 ? g->OH : 1) : block_rows(g, K);
}

/* A 1x1 kernel with stride 1 and no padding needs no im2col: x is the column matrix. */
static inline bool is_pointwise(const ct_conv_geom *g) {
    return g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* The work items of a FORWARD job (sample, group, block of output rows: each writes
 * its own part of y, so even a batch of one runs in parallel) or of a GRAD_INPUT job
 * (samples: col2im of row blocks overlaps). */
static inline int64_t conv_items(const ct_conv_geom *g, bool forward) {
    int64_t rb = forward_rows(g, g->C / g->groups * g->KH * g->KW);
    return forward ? g->N * g->groups * ((g->OH + rb - 1) / rb) : g->N;
}

/* The fixed chunks of the batch a GRAD_WEIGHT job sums separately, then in order
 * (Note [Conv determinism]). */
static inline int64_t conv_weight_chunks(const ct_conv_geom *g) { return g->N < 8 ? g->N : 8; }

/* The work items a FORWARD, GRAD_INPUT or GRAD_WEIGHT job spreads its BLAS calls
 * over, so the threads it asks ct_blas_threads for (cpu/gemm.h). */
static inline int64_t conv_blas_items(const ct_conv_job *job) {
    return job->kind == CT_CONV_GRAD_WEIGHT ? conv_weight_chunks(job->g)
                                            : conv_items(job->g, job->kind == CT_CONV_FORWARD);
}

/* The GRAD_BIAS job of a conv's GRAD_WEIGHT job that also wants gb (out_bias). */
static inline ct_conv_job conv_bias_job(const ct_conv_job *job) {
    return (ct_conv_job){.kind = CT_CONV_GRAD_BIAS, .g = job->g, .a = job->b,
                         .out = job->out_bias, .channels = job->g->O,
                         .plane = job->g->OH * job->g->OW};
}

/* im2col_SFX(g, Cg, x, col, oh0, oh1) and its same-width fast path; T is any element
 * type (the reduced ones are copied, never converted). */
#define CT_CONV_IM2COL(T, SFX)                                                            \
    /* One im2col row when stride_w is 1 and OW == W: the input rows that are inside      \
     * the image are one contiguous run shifted by `shift`; then the columns that         \
     * wrapped around a row end are zeroed. */                                            \
    CT_SIMD_PROC(im2col_same_##SFX, (const ct_conv_geom *g, const T *x, T *row,           \
                                          int64_t oh0, int64_t oh1, int64_t kh,           \
                                          int64_t shift, int64_t wlo, int64_t whi), (g, x, row, oh0, oh1, kh, shift, wlo, whi), { \
        int64_t W = g->W, a = oh0, b = oh1;                                               \
        /* rows oh with ih = oh * sh - ph + kh * dh inside [0, H), for sh == 1 only */    \
        if (g->sh != 1) {                                                                 \
            for (int64_t oh = oh0; oh < oh1; oh++) {                                      \
                T *r = row + (oh - oh0) * W;                                              \
                int64_t ih = oh * g->sh - g->ph + kh * g->dh;                             \
                if (ih < 0 || ih >= g->H) {                                               \
                    memset(r, 0, sizeof(T) * (size_t)W);                                  \
                    continue;                                                             \
                }                                                                         \
                const T *xr = x + ih * W + shift;                                         \
                for (int64_t ow = 0; ow < wlo; ow++) r[ow] = (T){0};                      \
                for (int64_t ow = wlo; ow < whi; ow++) r[ow] = xr[ow];                    \
                for (int64_t ow = whi; ow < W; ow++) r[ow] = (T){0};                      \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        int64_t off = kh * g->dh - g->ph; /* ih = oh + off */                             \
        if (a + off < 0) a = -off < b ? -off : b;                                         \
        if (b + off > g->H) b = g->H - off > a ? g->H - off : a;                          \
        memset(row, 0, sizeof(T) * (size_t)((a - oh0) * W));                              \
        memset(row + (b - oh0) * W, 0, sizeof(T) * (size_t)((oh1 - b) * W));              \
        if (b <= a) return;                                                               \
        T *r = row + (a - oh0) * W;                                                       \
        int64_t n = (b - a) * W, src = (a + off) * W + shift, lo = 0, hi = n;             \
        /* the run may start before x or end after it: those entries are wrapped ones */  \
        if (src < 0) lo = -src;                                                           \
        if (src + n > g->H * W) hi = g->H * W - src;                                      \
        for (int64_t i = lo; i < hi; i++) r[i] = x[src + i];                              \
        for (int64_t i = 0; i < lo; i++) r[i] = (T){0};                                   \
        for (int64_t i = hi; i < n; i++) r[i] = (T){0};                                   \
        for (int64_t q = 0; q < b - a; q++) {                                             \
            T *rr = r + q * W;                                                            \
            for (int64_t ow = 0; ow < wlo; ow++) rr[ow] = (T){0};                         \
            for (int64_t ow = whi; ow < W; ow++) rr[ow] = (T){0};                         \
        }                                                                                 \
    })                                                                                    \
    /* col [Cg*KH*KW, (oh1-oh0)*OW] <- x [Cg, H, W], output rows [oh0, oh1) */            \
    CT_SIMD_PROC(im2col_##SFX, (const ct_conv_geom *g, int64_t Cg, const T *x, T *col,    \
                             int64_t oh0, int64_t oh1), (g, Cg, x, col, oh0, oh1), {      \
        int64_t P = (oh1 - oh0) * g->OW;                                                  \
        for (int64_t c = 0; c < Cg; c++)                                                  \
            for (int64_t kh = 0; kh < g->KH; kh++)                                        \
                for (int64_t kw = 0; kw < g->KW; kw++) {                                  \
                    T *row = col + ((c * g->KH + kh) * g->KW + kw) * P;                   \
                    int64_t wlo, whi;                                                     \
                    valid_range(g->OW, g->sw, g->pw, kw * g->dw, g->W, &wlo, &whi);       \
                    if (g->sw == 1 && g->OW == g->W) {                                    \
                        im2col_same_##SFX(g, x + c * g->H * g->W, row, oh0, oh1, kh,      \
                                          kw * g->dw - g->pw, wlo, whi);                  \
                        continue;                                                         \
                    }                                                                     \
                    for (int64_t oh = oh0; oh < oh1; oh++) {                              \
                        T *r = row + (oh - oh0) * g->OW;                                  \
                        int64_t ih = oh * g->sh - g->ph + kh * g->dh;                     \
                        if (ih < 0 || ih >= g->H) {                                       \
                            memset(r, 0, sizeof(T) * (size_t)g->OW);                      \
                            continue;                                                     \
                        }                                                                 \
                        const T *xr = x + (c * g->H + ih) * g->W - g->pw + kw * g->dw;    \
                        for (int64_t ow = 0; ow < wlo; ow++) r[ow] = (T){0};              \
                        if (g->sw == 1)                                                   \
                            for (int64_t ow = wlo; ow < whi; ow++) r[ow] = xr[ow];        \
                        else                                                              \
                            for (int64_t ow = wlo; ow < whi; ow++) r[ow] = xr[ow * g->sw]; \
                        for (int64_t ow = whi; ow < g->OW; ow++) r[ow] = (T){0};          \
                    }                                                                     \
                }                                                                         \
    })

/* col2im_SFX(g, Cg, col, x, xcs, r0, oh0, oh1), summing in T. */
#define CT_CONV_COL2IM(T, SFX)                                                            \
    /* x += col [Cg*KH*KW, (oh1-oh0)*OW]: x holds input rows from r0 on of Cg channels    \
     * xcs apart (x zeroed by the caller) */                                              \
    CT_SIMD_PROC(col2im_##SFX, (const ct_conv_geom *g, int64_t Cg, const T *col, T *x,    \
                             int64_t xcs, int64_t r0, int64_t oh0, int64_t oh1),          \
                 (g, Cg, col, x, xcs, r0, oh0, oh1), {                                    \
        int64_t P = (oh1 - oh0) * g->OW;                                                  \
        for (int64_t c = 0; c < Cg; c++)                                                  \
            for (int64_t kh = 0; kh < g->KH; kh++)                                        \
                for (int64_t kw = 0; kw < g->KW; kw++) {                                  \
                    const T *row = col + ((c * g->KH + kh) * g->KW + kw) * P;             \
                    int64_t wlo, whi;                                                     \
                    valid_range(g->OW, g->sw, g->pw, kw * g->dw, g->W, &wlo, &whi);       \
                    for (int64_t oh = oh0; oh < oh1; oh++) {                              \
                        int64_t ih = oh * g->sh - g->ph + kh * g->dh;                     \
                        if (ih < 0 || ih >= g->H) continue;                               \
                        const T *r = row + (oh - oh0) * g->OW;                            \
                        T *xr = x + c * xcs + (ih - r0) * g->W - g->pw + kw * g->dw;      \
                        if (g->sw == 1)                                                   \
                            for (int64_t ow = wlo; ow < whi; ow++) xr[ow] += r[ow];       \
                        else                                                              \
                            for (int64_t ow = wlo; ow < whi; ow++) xr[ow * g->sw] += r[ow]; \
                    }                                                                     \
                }                                                                         \
    })

/* grad_bias_SFX(job): elements read as LOAD(e), the double sum stored as STORE(T, s). */
#define CT_CONV_GRAD_BIAS(T, SFX, LOAD, STORE)                                            \
    /* gb[c] = sum of gy[n, c, :] over n in a fixed order, accumulated in double */       \
    CT_SIMD_PROC(grad_bias_##SFX, (const ct_conv_job *job), (job), {                      \
        const T *gy = job->a;                                                             \
        T *gb = job->out;                                                                 \
        int64_t C = job->channels, Pn = job->plane, N = job->g->N;                        \
        int nt = ct_get_num_threads();                                                    \
        _Pragma("omp parallel for if (nt > 1 && C > 1 && N * C * Pn >= CT_GRAIN) num_threads(nt)") \
        for (int64_t c = 0; c < C; c++) {                                                 \
            double acc = 0;                                                               \
            for (int64_t n = 0; n < N; n++) {                                             \
                const T *r = gy + (n * C + c) * Pn;                                       \
                double s[8] = {0}; /* 8 independent sums (fixed order): vectorizable */   \
                int64_t p = 0;                                                            \
                for (; p + 8 <= Pn; p += 8)                                               \
                    for (int l = 0; l < 8; l++) s[l] += LOAD(r[p + l]);                   \
                for (; p < Pn; p++) s[0] += LOAD(r[p]);                                   \
                acc += ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])); \
            }                                                                             \
            gb[c] = STORE(T, acc);                                                        \
        }                                                                                 \
    })

/* forward_SFX(g, x, w, bias, y, col, ctx, item): the forward's work item (sample,
 * group, block of output rows): the bias into y's block, the block's columns (x
 * itself for a 1x1 kernel), then forward_gemm_SFX(m, n, k, a, lda, b, ldb, beta, c,
 * ldc, ctx), c = a @ b + beta * c, of the includer (ctx: its per-thread state). */
#define CT_CONV_FORWARD(T, SFX)                                                           \
    /* One work item of the forward: sample n, group gi, output rows block blk:           \
     * y[n, group rows, block] = w_g @ im2col(x[n]_g, block) + bias */                    \
    static void forward_##SFX(const ct_conv_geom *g, const T *x, const T *w, const T *bias, \
                              T *y, T *col, void *ctx, int64_t item) {                    \
        int64_t G = g->groups, Cg = g->C / G, Og = g->O / G, P = g->OH * g->OW;           \
        int64_t K = Cg * g->KH * g->KW, rb = forward_rows(g, K);                          \
        int64_t nblk = (g->OH + rb - 1) / rb;                                             \
        int64_t blk = item % nblk, gi = item / nblk % G, n = item / nblk / G;             \
        const T *xg = x + (n * g->C + gi * Cg) * g->H * g->W;                             \
        T *yg = y + (n * g->O + gi * Og) * P;                                             \
        int64_t oh0 = blk * rb, oh1 = oh0 + rb < g->OH ? oh0 + rb : g->OH;                \
        int64_t p0 = oh0 * g->OW, pb = (oh1 - oh0) * g->OW;                               \
        if (bias)                                                                         \
            for (int64_t o = 0; o < Og; o++)                                              \
                for (int64_t p = p0; p < p0 + pb; p++) yg[o * P + p] = bias[gi * Og + o]; \
        const T *cols = xg + p0;                                                          \
        int64_t ldb = P;                                                                  \
        if (!is_pointwise(g)) {                                                           \
            im2col_##SFX(g, Cg, xg, col, oh0, oh1);                                       \
            cols = col;                                                                   \
            ldb = pb;                                                                     \
        }                                                                                 \
        forward_gemm_##SFX(Og, pb, K, w + gi * Og * K, K, cols, ldb, bias ? 1 : 0, yg + p0, \
                           P, ctx);                                                       \
    }

/* grad_weight_SFX(g, x, gy, gw, col, ctx, n, accumulate): gw (+)= gy[n] @ im2col(x[n])^T
 * per group, in blocks of output rows, gw of type ACC, through weight_gemm_SFX(m, n, k,
 * a, lda, b, ldb, accumulate, c, ldc, ctx), c (+)= a @ b^T, of the includer. */
#define CT_CONV_GRAD_WEIGHT(T, SFX, ACC)                                                  \
    static void grad_weight_##SFX(const ct_conv_geom *g, const T *x, const T *gy, ACC *gw, \
                                  T *col, void *ctx, int64_t n, bool accumulate) {        \
        int64_t G = g->groups, Cg = g->C / G, Og = g->O / G, P = g->OH * g->OW;           \
        int64_t K = Cg * g->KH * g->KW, rb = block_rows(g, K);                            \
        for (int64_t gi = 0; gi < G; gi++) {                                              \
            const T *xg = x + (n * g->C + gi * Cg) * g->H * g->W;                         \
            const T *gyg = gy + (n * g->O + gi * Og) * P;                                 \
            ACC *gwg = gw + gi * Og * K;                                                  \
            if (is_pointwise(g)) {                                                        \
                weight_gemm_##SFX(Og, K, P, gyg, P, xg, P, accumulate, gwg, K, ctx);      \
                continue;                                                                 \
            }                                                                             \
            for (int64_t oh0 = 0; oh0 < g->OH; oh0 += rb) {                               \
                int64_t oh1 = oh0 + rb < g->OH ? oh0 + rb : g->OH, pb = (oh1 - oh0) * g->OW; \
                im2col_##SFX(g, Cg, xg, col, oh0, oh1);                                   \
                weight_gemm_##SFX(Og, K, pb, gyg + oh0 * g->OW, P, col, pb,               \
                                  accumulate || oh0 > 0, gwg, K, ctx);                    \
            }                                                                             \
        }                                                                                 \
    }

#endif
