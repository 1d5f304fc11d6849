/* Convolution kernels: see cpu/conv.h.  Buffers: x [N, C, H, W], w [O, C/G, KH, KW],
 * y [N, O, OH, OW]; per group, K = C/G * KH * KW rows of im2col and P = OH * OW
 * columns. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/conv.h"
#include "cpu/gemm.h"
#include "cpu/kernel_util.h"

/* Output positions o in [0, n) with 0 <= o * s - p + off < size: [*lo, *hi). */
static void valid_range(int64_t n, int64_t s, int64_t p, int64_t off, int64_t size, int64_t *lo,
                        int64_t *hi) {
    int64_t a = p - off; /* o * s >= a */
    int64_t l = a <= 0 ? 0 : (a + s - 1) / s;
    int64_t b = size + p - off; /* o * s < b */
    int64_t h = b <= 0 ? 0 : (b + s - 1) / s;
    *lo = l < n ? l : n;
    *hi = h < n ? (h > *lo ? h : *lo) : n;
}

/* Output rows per im2col block: the column block (K rows) stays in L2 cache. */
static int64_t block_rows(const ct_conv_geom *g, int64_t K) {
    int64_t cols = (128 * 1024) / (K > 0 ? K : 1), rows = g->OW > 0 ? cols / g->OW : 1;
    return rows < 1 ? 1 : rows;
}

/* A 1x1 kernel with stride 1 and no padding needs no im2col (is_pointwise): its
 * forward takes the whole plane as one block. */
static bool is_pointwise(const ct_conv_geom *g);
static int64_t forward_rows(const ct_conv_geom *g, int64_t K) {
    return is_pointwise(g) ? (g->OH > 0 ? g->OH : 1) : block_rows(g, K);
}

/* A 1x1 kernel with stride 1 and no padding needs no im2col: x is the column matrix. */
static bool is_pointwise(const ct_conv_geom *g) {
    return g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

#define CONV_KERNELS(T, SFX, GEMM)                                                       \
    /* One im2col row when stride_w is 1 and OW == W: the input rows that are inside   \
     * the image are one contiguous run shifted by `shift`; then the columns that       \
     * wrapped around a row end are zeroed. */                                           \
    CT_SIMD_PROC(im2col_same_##SFX, (const ct_conv_geom *g, const T *x, T *row,      \
                                          int64_t oh0, int64_t oh1, int64_t kh,           \
                                          int64_t shift, int64_t wlo, int64_t whi), (g, x, row, oh0, oh1, kh, shift, wlo, whi), {      \
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
                for (int64_t ow = 0; ow < wlo; ow++) r[ow] = 0;                           \
                for (int64_t ow = wlo; ow < whi; ow++) r[ow] = xr[ow];                    \
                for (int64_t ow = whi; ow < W; ow++) r[ow] = 0;                           \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        int64_t off = kh * g->dh - g->ph; /* ih = oh + off */                             \
        if (a + off < 0) a = -off < b ? -off : b;                                         \
        if (b + off > g->H) b = g->H - off > a ? g->H - off : a;                          \
        memset(row, 0, sizeof(T) * (size_t)((a - oh0) * W));                             \
        memset(row + (b - oh0) * W, 0, sizeof(T) * (size_t)((oh1 - b) * W));              \
        if (b <= a) return;                                                               \
        T *r = row + (a - oh0) * W;                                                       \
        int64_t n = (b - a) * W, src = (a + off) * W + shift, lo = 0, hi = n;             \
        /* the run may start before x or end after it: those entries are wrapped ones */  \
        if (src < 0) lo = -src;                                                           \
        if (src + n > g->H * W) hi = g->H * W - src;                                      \
        for (int64_t i = lo; i < hi; i++) r[i] = x[src + i];                              \
        for (int64_t i = 0; i < lo; i++) r[i] = 0;                                        \
        for (int64_t i = hi; i < n; i++) r[i] = 0;                                        \
        for (int64_t q = 0; q < b - a; q++) {                                             \
            T *rr = r + q * W;                                                            \
            for (int64_t ow = 0; ow < wlo; ow++) rr[ow] = 0;                              \
            for (int64_t ow = whi; ow < W; ow++) rr[ow] = 0;                              \
        }                                                                                 \
    })                                                                                     \
    /* col [Cg*KH*KW, (oh1-oh0)*OW] <- x [Cg, H, W], output rows [oh0, oh1) */           \
    CT_SIMD_PROC(im2col_##SFX, (const ct_conv_geom *g, int64_t Cg, const T *x, T *col,       \
                             int64_t oh0, int64_t oh1), (g, Cg, x, col, oh0, oh1), {                                  \
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
                        for (int64_t ow = 0; ow < wlo; ow++) r[ow] = 0;                   \
                        if (g->sw == 1)                                                   \
                            for (int64_t ow = wlo; ow < whi; ow++) r[ow] = xr[ow];        \
                        else                                                              \
                            for (int64_t ow = wlo; ow < whi; ow++) r[ow] = xr[ow * g->sw]; \
                        for (int64_t ow = whi; ow < g->OW; ow++) r[ow] = 0;               \
                    }                                                                     \
                }                                                                         \
    })                                                                                     \
    /* x [Cg, H, W] += col [Cg*KH*KW, (oh1-oh0)*OW] (x zeroed by the caller) */          \
    CT_SIMD_PROC(col2im_##SFX, (const ct_conv_geom *g, int64_t Cg, const T *col, T *x,       \
                             int64_t oh0, int64_t oh1), (g, Cg, col, x, oh0, oh1), {                                  \
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
                        T *xr = x + (c * g->H + ih) * g->W - g->pw + kw * g->dw;          \
                        if (g->sw == 1)                                                   \
                            for (int64_t ow = wlo; ow < whi; ow++) xr[ow] += r[ow];       \
                        else                                                              \
                            for (int64_t ow = wlo; ow < whi; ow++) xr[ow * g->sw] += r[ow]; \
                    }                                                                     \
                }                                                                         \
    })                                                                                     \
    /* One work item of the forward: sample n, group gi, output rows block blk:       \
     * y[n, group rows, block] = w_g @ im2col(x[n]_g, block) + bias */                   \
    static void forward_##SFX(const ct_conv_geom *g, const T *x, const T *w, const T *bias, \
                              T *y, T *col, int64_t item) {                               \
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
        GEMM(false, false, Og, pb, K, 1, w + gi * Og * K, K, cols, ldb, bias ? 1 : 0,     \
             yg + p0, P);                                                                 \
    }                                                                                     \
    /* gx[n] = col2im(w^T @ gy[n]), per group, in blocks of output rows */                \
    static void grad_input_##SFX(const ct_conv_geom *g, const T *gy, const T *w, T *gx,   \
                                 T *col, int64_t n) {                                     \
        int64_t G = g->groups, Cg = g->C / G, Og = g->O / G, P = g->OH * g->OW;           \
        int64_t K = Cg * g->KH * g->KW, rb = block_rows(g, K);                            \
        for (int64_t gi = 0; gi < G; gi++) {                                              \
            const T *gyg = gy + (n * g->O + gi * Og) * P;                                 \
            T *gxg = gx + (n * g->C + gi * Cg) * g->H * g->W;                             \
            if (is_pointwise(g)) {                                                        \
                GEMM(true, false, K, P, Og, 1, w + gi * Og * K, K, gyg, P, 0, gxg, P);    \
                continue;                                                                 \
            }                                                                             \
            memset(gxg, 0, sizeof(T) * (size_t)(Cg * g->H * g->W));                       \
            for (int64_t oh0 = 0; oh0 < g->OH; oh0 += rb) {                               \
                int64_t oh1 = oh0 + rb < g->OH ? oh0 + rb : g->OH, pb = (oh1 - oh0) * g->OW; \
                GEMM(true, false, K, pb, Og, 1, w + gi * Og * K, K, gyg + oh0 * g->OW, P, 0, \
                     col, pb);                                                            \
                col2im_##SFX(g, Cg, col, gxg, oh0, oh1);                                  \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
    /* gw (+)= gy[n] @ im2col(x[n])^T, per group, in blocks of output rows */             \
    static void grad_weight_##SFX(const ct_conv_geom *g, const T *x, const T *gy, T *gw,  \
                                  T *col, int64_t n, bool accumulate) {                   \
        int64_t G = g->groups, Cg = g->C / G, Og = g->O / G, P = g->OH * g->OW;           \
        int64_t K = Cg * g->KH * g->KW, rb = block_rows(g, K);                            \
        for (int64_t gi = 0; gi < G; gi++) {                                              \
            const T *xg = x + (n * g->C + gi * Cg) * g->H * g->W;                         \
            const T *gyg = gy + (n * g->O + gi * Og) * P;                                 \
            T *gwg = gw + gi * Og * K;                                                    \
            if (is_pointwise(g)) {                                                        \
                GEMM(false, true, Og, K, P, 1, gyg, P, xg, P, accumulate ? 1 : 0, gwg, K); \
                continue;                                                                 \
            }                                                                             \
            for (int64_t oh0 = 0; oh0 < g->OH; oh0 += rb) {                               \
                int64_t oh1 = oh0 + rb < g->OH ? oh0 + rb : g->OH, pb = (oh1 - oh0) * g->OW; \
                im2col_##SFX(g, Cg, xg, col, oh0, oh1);                                   \
                GEMM(false, true, Og, K, pb, 1, gyg + oh0 * g->OW, P, col, pb,            \
                     (accumulate || oh0 > 0) ? 1 : 0, gwg, K);                            \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
    /* gb[c] = sum of gy[n, c, :] over n in a fixed order, accumulated in double */             \
    CT_SIMD_PROC(grad_bias_##SFX, (const ct_conv_job *job), (job), {                         \
        const T *gy = job->a;                                                             \
        T *gb = job->out;                                                                 \
        int64_t C = job->channels, Pn = job->plane, N = job->g->N;                        \
        int nt = ct_get_num_threads();                                                    \
        _Pragma("omp parallel for if (nt > 1 && C > 1 && N * C * Pn >= CT_GRAIN) num_threads(nt)") \
        for (int64_t c = 0; c < C; c++) {                                                 \
            double acc = 0;                                                               \
            for (int64_t n = 0; n < N; n++) {                                             \
                const T *r = gy + (n * C + c) * Pn;                                       \
                double s[8] = {0}; /* 8 independent sums (fixed order): vectorizable */  \
                int64_t p = 0;                                                            \
                for (; p + 8 <= Pn; p += 8)                                               \
                    for (int l = 0; l < 8; l++) s[l] += r[p + l];                         \
                for (; p < Pn; p++) s[0] += r[p];                                         \
                acc += ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])); \
            }                                                                             \
            gb[c] = (T)acc;                                                               \
        }                                                                                 \
    })                                                                                     \
    /* unfold / fold (F.unfold, F.fold): whole samples in parallel */                    \
    static void fold_##SFX(const ct_conv_job *job) {                                      \
        const ct_conv_geom *g = job->g;                                                   \
        int64_t K = g->C * g->KH * g->KW, P = g->OH * g->OW, HW = g->H * g->W;            \
        int nt = ct_get_num_threads();                                                    \
        _Pragma("omp parallel for if (nt > 1 && g->N > 1 && g->N * K * P >= CT_GRAIN) num_threads(nt)") \
        for (int64_t n = 0; n < g->N; n++) {                                              \
            if (job->kind == CT_CONV_IM2COL) {                                            \
                im2col_##SFX(g, g->C, (const T *)job->a + n * g->C * HW,                  \
                             (T *)job->out + n * K * P, 0, g->OH);                        \
            } else {                                                                      \
                T *x = (T *)job->out + n * g->C * HW;                                     \
                memset(x, 0, sizeof(T) * (size_t)(g->C * HW));                            \
                col2im_##SFX(g, g->C, (const T *)job->a + n * K * P, x, 0, g->OH);        \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
    static void conv_run_##SFX(const ct_conv_job *job) {                                  \
        const ct_conv_geom *g = job->g;                                                   \
        if (job->kind == CT_CONV_GRAD_BIAS) {                                             \
            grad_bias_##SFX(job);                                                         \
            return;                                                                       \
        }                                                                                 \
        if (job->kind == CT_CONV_IM2COL || job->kind == CT_CONV_COL2IM) {                 \
            fold_##SFX(job);                                                              \
            return;                                                                       \
        }                                                                                 \
        int64_t G = g->groups, K = g->C / G * g->KH * g->KW;                              \
        size_t colsz = sizeof(T) * (size_t)(K * block_rows(g, K) * g->OW + 1);           \
        int nt = ct_get_num_threads();                                                    \
        if (job->kind == CT_CONV_GRAD_WEIGHT) {                                           \
            /* Fixed chunks of the batch, combined in order: Note [Conv determinism]. */  \
            int64_t wn = g->O * K, nc = g->N < 8 ? g->N : 8;                              \
            T *part = nc > 1 ? malloc(sizeof(T) * (size_t)(wn * (nc - 1))) : NULL;        \
            if (nc > 1 && !part) ct_fatal("out of memory in conv backward");              \
            if (nc == 0) memset(job->out, 0, sizeof(T) * (size_t)wn);                     \
            _Pragma("omp parallel num_threads(nt) if (nt > 1 && nc > 1)")                 \
            {                                                                             \
                T *col = malloc(colsz);                                                   \
                if (!col) ct_fatal("out of memory in conv");                              \
                _Pragma("omp for schedule(dynamic)")                                      \
                for (int64_t c = 0; c < nc; c++) {                                        \
                    T *dst = c == 0 ? (T *)job->out : part + (c - 1) * wn;                \
                    for (int64_t n = c * g->N / nc; n < (c + 1) * g->N / nc; n++)         \
                        grad_weight_##SFX(g, job->a, job->b, dst, col, n,                 \
                                          n != c * g->N / nc);                            \
                }                                                                         \
                free(col);                                                                \
            }                                                                             \
            T *out = job->out;                                                            \
            for (int64_t c = 1; c < nc; c++)                                              \
                for (int64_t i = 0; i < wn; i++) out[i] += part[(c - 1) * wn + i];        \
            free(part);                                                                   \
            if (job->out_bias) {                                                          \
                ct_conv_job bj = {.kind = CT_CONV_GRAD_BIAS, .g = g, .a = job->b,         \
                                  .out = job->out_bias, .channels = g->O,                 \
                                  .plane = g->OH * g->OW};                                \
                grad_bias_##SFX(&bj);                                                     \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        /* Forward items are (sample, group, row block): each writes its own part of y, \
         * so even a batch of one runs in parallel.  grad_input's col2im of row blocks   \
         * overlaps, so its items are samples. */                                        \
        bool fwd = job->kind == CT_CONV_FORWARD;                                          \
        int64_t rb = forward_rows(g, K);                                                  \
        int64_t items = fwd ? g->N * G * ((g->OH + rb - 1) / rb) : g->N;                  \
        _Pragma("omp parallel num_threads(nt) if (nt > 1 && items > 1)")                  \
        {                                                                                 \
            T *col = malloc(colsz);                                                       \
            if (!col) ct_fatal("out of memory in conv");                                  \
            _Pragma("omp for schedule(dynamic)")                                          \
            for (int64_t it = 0; it < items; it++) {                                      \
                if (fwd)                                                                  \
                    forward_##SFX(g, job->a, job->b, job->bias, job->out, col, it);       \
                else                                                                      \
                    grad_input_##SFX(g, job->a, job->b, job->out, col, it);               \
            }                                                                             \
            free(col);                                                                    \
        }                                                                                 \
    }                                                                                     \
    static void conv_##SFX(const ct_conv_job *job) {                                      \
        ct_blas_single_begin();                                                           \
        conv_run_##SFX(job);                                                              \
        ct_blas_single_end();                                                             \
    }

static void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0 ? 0 : beta * c[i * ldc + j];
        return;
    }
    ct_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
static void dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                  int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0 ? 0 : beta * c[i * ldc + j];
        return;
    }
    ct_dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
CONV_KERNELS(float, f32, sgemm)
CONV_KERNELS(double, f64, dgemm)

/* float32: the direct kernels where they apply (cpu/conv_direct.c), else im2col + GEMM. */
static void conv_f32_direct(const ct_conv_job *job) {
    if (!ct_conv_direct_f32(job)) conv_f32(job);
}

const ct_kernel_entry ct_cpu_conv_kernels[] = {
    CT_KERNEL(CONV, CT_OP_convolution, CT_F32, conv_f32_direct),
    CT_KERNEL(CONV, CT_OP_convolution, CT_F64, conv_f64),
    CT_KERNEL(CONV, CT_OP_im2col, CT_F32, conv_f32),
    CT_KERNEL(CONV, CT_OP_im2col, CT_F64, conv_f64),
    CT_KERNEL(CONV, CT_OP_col2im, CT_F32, conv_f32),
    CT_KERNEL(CONV, CT_OP_col2im, CT_F64, conv_f64),
    CT_KERNEL_END,
};
