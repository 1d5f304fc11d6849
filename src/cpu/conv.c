/* Convolution kernels: see cpu/conv.h.  Buffers: x [N, C, H, W], w [O, C/G, KH, KW],
 * y [N, O, OH, OW]; per group, K = C/G * KH * KW rows of im2col and P = OH * OW
 * columns. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/conv.h"
#include "cpu/conv_cols.h"
#include "cpu/gemm.h"
#include "core/mem.h"
#include "cpu/kernel_oom.h"

CT_CONV_IM2COL(float, f32)
CT_CONV_IM2COL(double, f64)
CT_CONV_COL2IM(float, f32)
CT_CONV_COL2IM(double, f64)
#define CT_CONV_AS_IS(v) (v)
#define CT_CONV_CAST(T, v) ((T)(v))
CT_CONV_GRAD_BIAS(float, f32, CT_CONV_AS_IS, CT_CONV_CAST)
CT_CONV_GRAD_BIAS(double, f64, CT_CONV_AS_IS, CT_CONV_CAST)

#define CONV_KERNELS(T, SFX, GEMM)                                                        \
    static void forward_gemm_##SFX(int64_t m, int64_t n, int64_t k, const T *a, int64_t lda, \
                                   const T *b, int64_t ldb, double beta, T *c, int64_t ldc, \
                                   void *ctx) {                                           \
        (void)ctx;                                                                        \
        GEMM(false, false, m, n, k, 1, a, lda, b, ldb, (T)beta, c, ldc);                  \
    }                                                                                     \
    CT_CONV_FORWARD(T, SFX)                                                               \
    static void weight_gemm_##SFX(int64_t m, int64_t n, int64_t k, const T *a, int64_t lda, \
                                  const T *b, int64_t ldb, bool accumulate, T *c,         \
                                  int64_t ldc, void *ctx) {                               \
        (void)ctx;                                                                        \
        GEMM(false, true, m, n, k, 1, a, lda, b, ldb, accumulate ? 1 : 0, c, ldc);        \
    }                                                                                     \
    CT_CONV_GRAD_WEIGHT(T, SFX, T)                                                        \
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
                col2im_##SFX(g, Cg, col, gxg, g->H * g->W, 0, oh0, oh1);                  \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
    /* unfold / fold (F.unfold, F.fold): whole samples in parallel, no BLAS */             \
    static void fold_##SFX(const ct_conv_job *job, int nt) {                              \
        const ct_conv_geom *g = job->g;                                                   \
        int64_t K = g->C * g->KH * g->KW, P = g->OH * g->OW, HW = g->H * g->W;            \
        _Pragma("omp parallel for if (nt > 1 && g->N > 1 && g->N * K * P >= CT_GRAIN) num_threads(nt)") \
        for (int64_t n = 0; n < g->N; n++) {                                              \
            if (job->kind == CT_CONV_IM2COL) {                                            \
                im2col_##SFX(g, g->C, (const T *)job->a + n * g->C * HW,                  \
                             (T *)job->out + n * K * P, 0, g->OH);                        \
            } else {                                                                      \
                T *x = (T *)job->out + n * g->C * HW;                                     \
                memset(x, 0, sizeof(T) * (size_t)(g->C * HW));                            \
                col2im_##SFX(g, g->C, (const T *)job->a + n * K * P, x, HW, 0, 0, g->OH); \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
    /* GRAD_WEIGHT on nt threads, thread i with column buffer cols[i]: fixed chunks of    \
     * the batch, each but the first into part, combined in order (Note [Conv             \
     * determinism]). */                                                                  \
    static void grad_weight_job_##SFX(const ct_conv_job *job, int nt, T *const *cols,     \
                                      T *part) {                                          \
        const ct_conv_geom *g = job->g;                                                   \
        int64_t wn = g->O * (g->C / g->groups) * g->KH * g->KW, nc = conv_weight_chunks(g); \
        if (nc == 0) memset(job->out, 0, sizeof(T) * (size_t)wn);                         \
        _Pragma("omp parallel for num_threads(nt) if (nt > 1 && nc > 1) schedule(dynamic)") \
        for (int64_t c = 0; c < nc; c++) {                                                \
            T *dst = c == 0 ? (T *)job->out : part + (c - 1) * wn;                        \
            for (int64_t n = c * g->N / nc; n < (c + 1) * g->N / nc; n++)                 \
                grad_weight_##SFX(g, job->a, job->b, dst, cols[omp_get_thread_num()], NULL, n, \
                                  n != c * g->N / nc);                                    \
        }                                                                                 \
        T *out = job->out;                                                                \
        for (int64_t c = 1; c < nc; c++)                                                  \
            for (int64_t i = 0; i < wn; i++) out[i] += part[(c - 1) * wn + i];            \
        if (job->out_bias) {                                                              \
            ct_conv_job bj = conv_bias_job(job);                                          \
            grad_bias_##SFX(&bj);                                                         \
        }                                                                                 \
    }                                                                                     \
    /* FORWARD or GRAD_INPUT on nt threads, thread i with column buffer cols[i] */        \
    static void items_job_##SFX(const ct_conv_job *job, int nt, T *const *cols) {         \
        const ct_conv_geom *g = job->g;                                                   \
        bool fwd = job->kind == CT_CONV_FORWARD;                                          \
        int64_t items = conv_items(g, fwd);                                               \
        _Pragma("omp parallel for num_threads(nt) if (nt > 1 && items > 1) schedule(dynamic)") \
        for (int64_t it = 0; it < items; it++) {                                          \
            T *col = cols[omp_get_thread_num()];                                          \
            if (fwd)                                                                      \
                forward_##SFX(g, job->a, job->b, job->bias, job->out, col, NULL, it);     \
            else                                                                          \
                grad_input_##SFX(g, job->a, job->b, job->out, col, it);                   \
        }                                                                                 \
    }                                                                                     \
    /* The jobs that call BLAS get their threads' buffers first, then the threads the    \
     * address space allows (Note [OpenBLAS buffers] in cpu/gemm.c): fewer threads, or    \
     * an out-of-memory error, never a hang in OpenBLAS's allocator. */                   \
    static void conv_##SFX(const ct_conv_job *job) {                                      \
        const ct_conv_geom *g = job->g;                                                   \
        if (job->kind == CT_CONV_GRAD_BIAS) {                                             \
            grad_bias_##SFX(job);                                                         \
            return;                                                                       \
        }                                                                                 \
        if (job->kind == CT_CONV_IM2COL || job->kind == CT_CONV_COL2IM) {                 \
            fold_##SFX(job, ct_get_num_threads());                                        \
            return;                                                                       \
        }                                                                                 \
        bool gw = job->kind == CT_CONV_GRAD_WEIGHT;                                       \
        int64_t K = g->C / g->groups * g->KH * g->KW, nc = conv_weight_chunks(g);         \
        size_t colsz = sizeof(T) * (size_t)(K * block_rows(g, K) * g->OW + 1);            \
        int want = ct_blas_threads(conv_blas_items(job)), nt = 0;                         \
        T *part = gw && nc > 1 ? ct_malloc(sizeof(T) * (size_t)(g->O * K * (nc - 1))) : NULL; \
        T **cols = ct_calloc((size_t)want, sizeof *cols);                                 \
        bool ok = cols && (part || !gw || nc <= 1);                                       \
        for (int i = 0; ok && i < want; i++) ok = (cols[i] = ct_malloc(colsz)) != NULL;   \
        if (ok) nt = ct_blas_reserve(want);                                               \
        if (nt > 0) {                                                                     \
            if (gw) grad_weight_job_##SFX(job, nt, cols, part);                           \
            else items_job_##SFX(job, nt, cols);                                          \
            ct_blas_unreserve(nt);                                                        \
        } else {                                                                          \
            const char *what = job->kind == CT_CONV_FORWARD ? "conv" : "conv backward";   \
            if (ok) ct_kernel_out_of_address_space(what);                                 \
            else ct_kernel_out_of_memory(what);                                           \
        }                                                                                 \
        for (int i = 0; cols && i < want; i++) free(cols[i]);                             \
        free(cols);                                                                       \
        free(part);                                                                       \
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

/* A GRAD_INPUT job's bias (a transposed conv's), added to each channel of gx after
 * the product, as ct_add would. */
#define ADD_BIAS(T, SFX)                                                                  \
    static void add_bias_##SFX(const ct_conv_job *job) {                                  \
        const ct_conv_geom *g = job->g;                                                   \
        const T *b = job->bias;                                                           \
        T *x = job->out;                                                                  \
        int64_t HW = g->H * g->W;                                                         \
        for (int64_t i = 0; i < g->N * g->C; i++)                                         \
            for (int64_t p = 0; p < HW; p++) x[i * HW + p] += b[i % g->C];                \
    }
ADD_BIAS(float, f32)
ADD_BIAS(double, f64)

/* float32: the direct kernels where they apply (cpu/conv_direct.c), else im2col + GEMM. */
static void conv_f32_direct(const ct_conv_job *job) {
    if (!ct_conv_direct_f32(job)) conv_f32(job);
    if (job->kind == CT_CONV_GRAD_INPUT && job->bias) add_bias_f32(job);
}
static void conv_f64_bias(const ct_conv_job *job) {
    conv_f64(job);
    if (job->kind == CT_CONV_GRAD_INPUT && job->bias) add_bias_f64(job);
}

const ct_kernel_entry ct_cpu_conv_kernels[] = {
    CT_KERNEL(CONV, CT_OP_convolution, CT_F32, conv_f32_direct),
    CT_KERNEL(CONV, CT_OP_convolution, CT_F64, conv_f64_bias),
    CT_KERNEL(CONV, CT_OP_im2col, CT_F32, conv_f32),
    CT_KERNEL(CONV, CT_OP_im2col, CT_F64, conv_f64),
    CT_KERNEL(CONV, CT_OP_col2im, CT_F32, conv_f32),
    CT_KERNEL(CONV, CT_OP_col2im, CT_F64, conv_f64),
    CT_KERNEL_END,
};
