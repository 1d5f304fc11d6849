/* Convolution kernels of float16 and bfloat16 (kernels/conv.h), without float32
 * copies of their operands.  im2col copies the reduced elements as they are, and the
 * products run through the reduced GEMM's tiles (cpu/gemm_reduced.c: 256-element
 * tiles widened to float, sgemm), so every result element is a float sum rounded
 * once, as PyTorch's cpu bfloat16 convolution (oneDNN) computes it:
 *
 *   FORWARD      y = round(w @ im2col(x) + bias)     bias stored in y, added by the GEMM
 *   GRAD_INPUT   gx = round(col2im(w^T @ gy) + bias) the product of a block of output
 *                rows stays float and is summed into a float window of the input rows
 *                it reaches; rows that no later block reaches are rounded out
 *   GRAD_WEIGHT  gw = round(sum of the batch chunks) a float accumulator the size of w
 *                per chunk (the float32 path keeps one per chunk but the first)
 *   COL2IM       F.fold: GRAD_INPUT's window, on the widened column blocks
 *   IM2COL, GRAD_BIAS as the float kernels (the bias sum in double, rounded once).
 *
 * Where oneDNN has kernels for the CPU, FORWARD, GRAD_INPUT (no bias) and GRAD_WEIGHT
 * run through it instead (cpu/onednn.h, to the same contract), the bias gradient here.
 * The work items, blocks and chunks are the float32 path's (cpu/conv.c), so results
 * never depend on the thread count (Note [Conv determinism]); per-thread buffers are
 * bounded by the block, as its column buffer is. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/conv_cols.h"
#include "cpu/gemm.h"
#include "core/mem.h"
#include "cpu/kernel_oom.h"
#include "cpu/onednn.h"

CT_CONV_IM2COL(ct_half, f16)
CT_CONV_IM2COL(ct_bf16, bf16)
CT_CONV_COL2IM(float, f32)
#define STORE_ROUNDED(T, v) CT_STORE_REDUCED(T, (float)(v))
CT_CONV_GRAD_BIAS(ct_half, f16, CT_LOAD_REDUCED, STORE_ROUNDED)
CT_CONV_GRAD_BIAS(ct_bf16, bf16, CT_LOAD_REDUCED, STORE_ROUNDED)

/* The arguments of one product c = op(a) @ op(b) (+ c when beta is 1) of row-major
 * buffers with leading dimensions, as the reduced GEMM takes them. */
static ct_gemm_args product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *a,
                            int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc,
                            double beta) {
    return (ct_gemm_args){.batch = 1, .m = m, .n = n, .k = k, .a = a, .b = b, .c = c,
                          .a_rs = ta ? 1 : lda, .a_cs = ta ? lda : 1,
                          .b_rs = tb ? 1 : ldb, .b_cs = tb ? ldb : 1,
                          .c_rs = ldc, .alpha = 1, .beta = beta};
}

/* Per-thread buffers, each only where the job needs it: the column block in the
 * reduced dtype (COLS: forward, grad_weight), the float column block and the float
 * input-row window (WINDOW: grad_input, fold), the GEMM's tiles (TILES). */
enum { COLS = 1, WINDOW = 2, TILES = 4 };
typedef struct {
    void *col;
    float *colf, *acc, *work;
    bool ok;      /* all allocated (else the thread skips its items: cpu/kernel_oom.h) */
    int64_t rows; /* R: the input rows a block of output rows reaches */
} conv_bufs;

static conv_bufs bufs_new(const ct_conv_geom *g, int64_t Cg, size_t elem, int need) {
    int64_t K = Cg * g->KH * g->KW, rb = block_rows(g, K), n = K * rb * g->OW + 1;
    conv_bufs b = {.rows = (rb - 1) * g->sh + (g->KH - 1) * g->dh + 1};
    bool ok = true;
    if (need & COLS) ok = ok && (b.col = ct_malloc(elem * (size_t)n));
    if (need & WINDOW) {
        ok = ok && (b.colf = ct_malloc(sizeof(float) * (size_t)n));
        ok = ok && (b.acc = ct_malloc(sizeof(float) * (size_t)(Cg * b.rows * g->W + 1)));
    }
    if (need & TILES) ok = ok && (b.work = ct_malloc(sizeof(float) * CT_GEMM_REDUCED_WORK));
    b.ok = ok;
    return b;
}

static void bufs_free(conv_bufs *b) {
    free(b->col);
    free(b->colf);
    free(b->acc);
    free(b->work);
}

/* The float window over input rows [base, base + R) of Cg channels (acc [Cg, R, W]):
 * col2im sums into it; window_advance rounds rows [base, to) out to x, plus the
 * channel's bias when there is one, and moves the window to start at `to` (rows it
 * never held are zeros). */
#define REDUCED_WINDOW(T, SFX)                                                           \
    static void window_advance_##SFX(const ct_conv_geom *g, int64_t Cg, conv_bufs *b,    \
                                     int64_t *base, int64_t to, const T *bias, T *x) {   \
        int64_t R = b->rows, W = g->W, from = *base;                                     \
        if (to <= from) return;                                                          \
        for (int64_t c = 0; c < Cg; c++) {                                               \
            float *a = b->acc + c * R * W, bv = bias ? CT_LOAD_REDUCED(bias[c]) : 0;     \
            for (int64_t ih = from > 0 ? from : 0; ih < to && ih < g->H; ih++) {         \
                T *xr = x + (c * g->H + ih) * W;                                         \
                if (ih >= from + R) { /* a row no block reached */                       \
                    for (int64_t i = 0; i < W; i++) xr[i] = bias ? bias[c] : (T){0};     \
                    continue;                                                            \
                }                                                                        \
                float *ar = a + (ih - from) * W;                                         \
                if (bias)                                                                \
                    for (int64_t i = 0; i < W; i++) ar[i] += bv;                         \
                CT_FLOAT_TO_REDUCED_N(xr, ar, W);                                        \
            }                                                                            \
            int64_t keep = from + R - to > 0 ? from + R - to : 0;                        \
            memmove(a, a + (R - keep) * W, sizeof(float) * (size_t)(keep * W));          \
            memset(a + keep * W, 0, sizeof(float) * (size_t)((R - keep) * W));           \
        }                                                                                \
        *base = to;                                                                      \
    }

#define CONV_REDUCED(T, SFX, DT)                                                         \
    REDUCED_WINDOW(T, SFX)                                                               \
    /* the forward's product, rounded once (the bias, stored in c, added in float) */    \
    static void forward_gemm_##SFX(int64_t m, int64_t n, int64_t k, const T *a, int64_t lda, \
                                   const T *b, int64_t ldb, double beta, T *c, int64_t ldc, \
                                   void *work) {                                         \
        ct_gemm_args p = product(false, false, m, n, k, a, lda, b, ldb, c, ldc, beta);   \
        ct_gemm_reduced_serial(DT, &p, work);                                            \
    }                                                                                    \
    CT_CONV_FORWARD(T, SFX)                                                              \
    /* x (Cg channels) = the float column blocks summed through the window, rounded    \
     * once: next(ctx, oh0, oh1, colf) fills colf with the columns of output rows       \
     * [oh0, oh1). */                                                                    \
    static void col2im_rounded_##SFX(const ct_conv_geom *g, int64_t Cg, const T *bias, T *x, \
                                     conv_bufs *b,                                       \
                                     void (*next)(const void *ctx, int64_t oh0, int64_t oh1, \
                                                  float *colf),                          \
                                     const void *ctx) {                                  \
        int64_t rb = block_rows(g, Cg * g->KH * g->KW), base = -g->ph;                   \
        memset(b->acc, 0, sizeof(float) * (size_t)(Cg * b->rows * g->W));                \
        for (int64_t oh0 = 0; oh0 < g->OH; oh0 += rb) {                                  \
            int64_t oh1 = oh0 + rb < g->OH ? oh0 + rb : g->OH;                           \
            window_advance_##SFX(g, Cg, b, &base, oh0 * g->sh - g->ph, bias, x);         \
            next(ctx, oh0, oh1, b->colf);                                                \
            col2im_f32(g, Cg, b->colf, b->acc, b->rows * g->W, base, oh0, oh1);          \
        }                                                                                \
        window_advance_##SFX(g, Cg, b, &base, g->H, bias, x);                            \
    }                                                                                    \
    /* gx[n] = round(col2im(w^T @ gy[n]) + bias), per group */                           \
    typedef struct {                                                                     \
        const ct_conv_geom *g;                                                           \
        const T *gy, *w;                                                                 \
        conv_bufs *b;                                                                    \
    } gi_ctx_##SFX;                                                                      \
    static void gi_block_##SFX(const void *ctx, int64_t oh0, int64_t oh1, float *colf) { \
        const gi_ctx_##SFX *c = ctx;                                                     \
        const ct_conv_geom *g = c->g;                                                    \
        int64_t Og = g->O / g->groups, K = g->C / g->groups * g->KH * g->KW;             \
        int64_t P = g->OH * g->OW, pb = (oh1 - oh0) * g->OW;                             \
        ct_gemm_args a = product(true, false, K, pb, Og, c->w, K, c->gy + oh0 * g->OW, P, \
                                 NULL, pb, 0);                                           \
        ct_gemm_reduced_float(DT, &a, colf, pb, false, c->b->work);                      \
    }                                                                                    \
    static void grad_input_##SFX(const ct_conv_geom *g, const T *gy, const T *w,         \
                                 const T *bias, T *gx, conv_bufs *b, int64_t n) {        \
        int64_t G = g->groups, Cg = g->C / G, Og = g->O / G, P = g->OH * g->OW;          \
        int64_t K = Cg * g->KH * g->KW;                                                  \
        for (int64_t gi = 0; gi < G; gi++) {                                             \
            const T *gyg = gy + (n * g->O + gi * Og) * P;                                \
            T *gxg = gx + (n * g->C + gi * Cg) * g->H * g->W;                            \
            const T *bg = bias ? bias + gi * Cg : NULL;                                  \
            if (is_pointwise(g)) {                                                       \
                for (int64_t c = 0; bg && c < Cg; c++)                                   \
                    for (int64_t p = 0; p < P; p++) gxg[c * P + p] = bg[c];              \
                ct_gemm_args a = product(true, false, K, P, Og, w + gi * Og * K, K, gyg, P, \
                                         gxg, P, bg ? 1 : 0);                            \
                ct_gemm_reduced_serial(DT, &a, b->work);                                 \
                continue;                                                                \
            }                                                                            \
            gi_ctx_##SFX c = {g, gyg, w + gi * Og * K, b};                               \
            col2im_rounded_##SFX(g, Cg, bg, gxg, b, gi_block_##SFX, &c);                 \
        }                                                                                \
    }                                                                                    \
    /* grad_weight_SFX into float accumulators (c: [Og, K] per group) */                 \
    static void weight_gemm_##SFX(int64_t m, int64_t n, int64_t k, const T *a, int64_t lda, \
                                  const T *b, int64_t ldb, bool accumulate, float *c,    \
                                  int64_t ldc, void *work) {                             \
        ct_gemm_args p = product(false, true, m, n, k, a, lda, b, ldb, NULL, ldc, 0);    \
        ct_gemm_reduced_float(DT, &p, c, ldc, accumulate, work);                         \
    }                                                                                    \
    CT_CONV_GRAD_WEIGHT(T, SFX, float)                                                   \
    /* F.fold's column blocks: rows [oh0, oh1) of sample cols [K, P], widened */         \
    typedef struct {                                                                     \
        const ct_conv_geom *g;                                                           \
        const T *cols;                                                                   \
    } fold_ctx_##SFX;                                                                    \
    static void fold_block_##SFX(const void *ctx, int64_t oh0, int64_t oh1, float *colf) { \
        const fold_ctx_##SFX *c = ctx;                                                   \
        int64_t K = c->g->C * c->g->KH * c->g->KW, P = c->g->OH * c->g->OW;              \
        int64_t pb = (oh1 - oh0) * c->g->OW;                                             \
        for (int64_t k = 0; k < K; k++)                                                  \
            CT_REDUCED_TO_FLOAT_N(colf + k * pb, c->cols + k * P + oh0 * c->g->OW, pb);  \
    }                                                                                    \
    static void fold_##SFX(const ct_conv_job *job, int nt) {                             \
        const ct_conv_geom *g = job->g;                                                  \
        int64_t K = g->C * g->KH * g->KW, P = g->OH * g->OW, HW = g->H * g->W;           \
        atomic_bool failed = false;                                                      \
        _Pragma("omp parallel num_threads(nt) if (nt > 1 && g->N > 1 && g->N * K * P >= CT_GRAIN)") \
        {                                                                                \
            conv_bufs b = {.ok = true};                                                  \
            if (job->kind == CT_CONV_COL2IM) b = bufs_new(g, g->C, sizeof(T), WINDOW);   \
            if (!b.ok) atomic_store(&failed, true);                                      \
            _Pragma("omp for")                                                           \
            for (int64_t n = 0; n < g->N; n++) {                                         \
                if (!b.ok) continue;                                                     \
                if (job->kind == CT_CONV_IM2COL) {                                       \
                    im2col_##SFX(g, g->C, (const T *)job->a + n * g->C * HW,             \
                                 (T *)job->out + n * K * P, 0, g->OH);                   \
                } else {                                                                 \
                    fold_ctx_##SFX c = {g, (const T *)job->a + n * K * P};               \
                    col2im_rounded_##SFX(g, g->C, NULL, (T *)job->out + n * g->C * HW, &b, \
                                         fold_block_##SFX, &c);                          \
                }                                                                        \
            }                                                                            \
            bufs_free(&b);                                                               \
        }                                                                                \
        if (failed) ct_kernel_out_of_memory("fold");                                     \
    }                                                                                    \
    /* GRAD_WEIGHT on nt threads, thread i with buffers bufs[i]: the batch chunks'     \
     * float sums into acc [chunks, w], combined in order as the float32 path does,     \
     * then rounded once */                                                              \
    static void grad_weight_job_##SFX(const ct_conv_job *job, int nt, conv_bufs *bufs,   \
                                      float *acc) {                                      \
        const ct_conv_geom *g = job->g;                                                  \
        int64_t wn = g->O * (g->C / g->groups) * g->KH * g->KW, nc = conv_weight_chunks(g); \
        _Pragma("omp parallel for num_threads(nt) if (nt > 1 && nc > 1) schedule(dynamic)") \
        for (int64_t c = 0; c < nc; c++) {                                               \
            conv_bufs *b = &bufs[omp_get_thread_num()];                                  \
            for (int64_t n = c * g->N / nc; n < (c + 1) * g->N / nc; n++)                \
                grad_weight_##SFX(g, job->a, job->b, acc + c * wn, b->col, b->work, n,   \
                                  n != c * g->N / nc);                                   \
        }                                                                                \
        T *out = job->out;                                                               \
        for (int64_t i = 0; i < wn; i++) {                                               \
            float s = nc ? acc[i] : 0;                                                   \
            for (int64_t c = 1; c < nc; c++) s += acc[c * wn + i];                       \
            out[i] = CT_STORE_REDUCED(T, s);                                             \
        }                                                                                \
        if (job->out_bias) {                                                             \
            ct_conv_job bj = conv_bias_job(job);                                         \
            grad_bias_##SFX(&bj);                                                        \
        }                                                                                \
    }                                                                                    \
    /* FORWARD or GRAD_INPUT on nt threads, thread i with buffers bufs[i] */             \
    static void items_job_##SFX(const ct_conv_job *job, int nt, conv_bufs *bufs) {       \
        const ct_conv_geom *g = job->g;                                                  \
        bool fwd = job->kind == CT_CONV_FORWARD;                                         \
        int64_t items = conv_items(g, fwd);                                              \
        _Pragma("omp parallel for num_threads(nt) if (nt > 1 && items > 1) schedule(dynamic)") \
        for (int64_t it = 0; it < items; it++) {                                         \
            conv_bufs *b = &bufs[omp_get_thread_num()];                                  \
            if (fwd)                                                                     \
                forward_##SFX(g, job->a, job->b, job->bias, job->out, b->col, b->work, it); \
            else                                                                         \
                grad_input_##SFX(g, job->a, job->b, job->bias, job->out, b, it);         \
        }                                                                                \
    }                                                                                    \
    /* As the float32 kernels (cpu/conv.c): the BLAS jobs' buffers first, then the      \
     * threads the address space allows (Note [OpenBLAS buffers] in cpu/gemm.c). */     \
    static void conv_##SFX(const ct_conv_job *job) {                                     \
        const ct_conv_geom *g = job->g;                                                  \
        switch (job->kind) {                                                             \
        case CT_CONV_GRAD_BIAS: grad_bias_##SFX(job); return;                            \
        case CT_CONV_IM2COL:                                                             \
        case CT_CONV_COL2IM: fold_##SFX(job, ct_get_num_threads()); return;              \
        default: break;                                                                  \
        }                                                                                \
        if (ct_onednn_conv(DT, job)) { /* cpu/onednn.h: the bias sum is this file's */  \
            if (job->kind == CT_CONV_GRAD_WEIGHT && job->out_bias) {                     \
                ct_conv_job bj = conv_bias_job(job);                                     \
                grad_bias_##SFX(&bj);                                                    \
            }                                                                            \
            return;                                                                      \
        }                                                                                \
        bool gw = job->kind == CT_CONV_GRAD_WEIGHT, fwd = job->kind == CT_CONV_FORWARD;  \
        int64_t Cg = g->C / g->groups, wn = g->O * Cg * g->KH * g->KW;                   \
        int want = ct_blas_threads(conv_blas_items(job)), nt = 0;                        \
        float *acc = gw ? ct_malloc(sizeof(float) * (size_t)(wn * conv_weight_chunks(g) + 1)) \
                        : NULL;                                                          \
        conv_bufs *bufs = ct_calloc((size_t)want, sizeof *bufs);                         \
        bool ok = bufs && (acc || !gw);                                                  \
        for (int i = 0; ok && i < want; i++) {                                           \
            bufs[i] = bufs_new(g, Cg, sizeof(T), (fwd || gw ? COLS : WINDOW) | TILES);   \
            ok = bufs[i].ok;                                                             \
        }                                                                                \
        if (ok) nt = ct_blas_reserve(want);                                              \
        if (nt > 0) {                                                                    \
            if (gw) grad_weight_job_##SFX(job, nt, bufs, acc);                           \
            else items_job_##SFX(job, nt, bufs);                                         \
            ct_blas_unreserve(nt);                                                       \
        } else {                                                                         \
            const char *what = fwd ? "conv" : "conv backward";                           \
            if (ok) ct_kernel_out_of_address_space(what);                                \
            else ct_kernel_out_of_memory(what);                                          \
        }                                                                                \
        for (int i = 0; bufs && i < want; i++) bufs_free(&bufs[i]);                      \
        free(bufs);                                                                      \
        free(acc);                                                                       \
    }
CONV_REDUCED(ct_half, f16, CT_F16)
CONV_REDUCED(ct_bf16, bf16, CT_BF16)

#define ENTRIES(DT, SFX)                                                                 \
    CT_KERNEL(CONV, CT_OP_convolution, DT, conv_##SFX),                                  \
    CT_KERNEL(CONV, CT_OP_im2col, DT, conv_##SFX),                                       \
    CT_KERNEL(CONV, CT_OP_col2im, DT, conv_##SFX),
const ct_kernel_entry ct_cpu_conv_reduced_kernels[] = {
    ENTRIES(CT_F16, f16) ENTRIES(CT_BF16, bf16) CT_KERNEL_END,
};
