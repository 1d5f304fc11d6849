/* Matrix products of float16 and bfloat16 (mm, bmm, addmm, baddbmm, mv, dot).
 *
 * oneDNN's matmul runs them first where it can (cpu/onednn.h: AVX512-BF16 / AMX CPUs,
 * CT_ONEDNN unset); oneDNN 2.6 (Debian 12) has no bfloat16 or float16 matmul for CPUs
 * without AVX-512 (its primitive descriptor reports "unimplemented" on AVX2-only x86),
 * and elsewhere products go through OpenBLAS's sgemm: c is cut into fixed TM x TN
 * tiles and k into fixed TK slices, a function of the shape only; each tile widens its operand slices to
 * float (cpu/reduced_cvt.h) into per-thread buffers of at most TM*TK + TK*TN + TM*TN
 * floats, accumulates the slices in float by single-threaded sgemm calls, and rounds
 * alpha * sum + beta * c to nearest even once.  So results are bitwise identical for
 * any thread count and OpenBLAS core type (Note [GEMM determinism], cpu/gemm.h), and
 * no temporary grows with the operands.  Kernels that parallelize over their own
 * work items (the reduced convolutions, cpu/conv_reduced.c) run the same tiles on one
 * thread: ct_gemm_reduced_serial, ct_gemm_reduced_float (cpu/gemm.h). */
#include <omp.h>
#include <stdlib.h>

#include "cpu/gemm.h"
#include "cpu/kernel_util.h"
#include "cpu/onednn.h"
#include "core/mem.h"

enum { TM = 256, TN = 256, TK = 256 };

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

#define REDUCED_GEMM(TS, SFX, DT)                                                        \
    /* Widens a rows x cols operand (element strides rs, cs) into dst, row-major when    \
     * its rows are contiguous, else column-major (*tr: pass it transposed); returns     \
     * the leading dimension. */                                                         \
    static int64_t pack_##SFX(float *dst, const TS *src, int64_t rows, int64_t cols,     \
                              int64_t rs, int64_t cs, bool *tr) {                        \
        *tr = cs != 1 && rs == 1;                                                        \
        if (cs == 1)                                                                     \
            for (int64_t r = 0; r < rows; r++)                                           \
                CT_REDUCED_TO_FLOAT_N(dst + r * cols, src + r * rs, cols);               \
        else if (rs == 1)                                                                \
            for (int64_t c = 0; c < cols; c++)                                           \
                CT_REDUCED_TO_FLOAT_N(dst + c * rows, src + c * cs, rows);               \
        else                                                                             \
            for (int64_t r = 0; r < rows; r++)                                           \
                for (int64_t c = 0; c < cols; c++)                                       \
                    dst[r * cols + c] = CT_LOAD_REDUCED(src[r * rs + c * cs]);           \
        return *tr ? rows : cols;                                                        \
    }                                                                                    \
    /* The float product of one tile of c, rows [r0, r0 + mb), cols [c0, c0 + nb) of     \
     * batch entry bi, into cf (leading dimension ldc), added to cf's values when        \
     * accumulate. */                                                                    \
    static void product_##SFX(const ct_gemm_args *g, int64_t bi, int64_t r0, int64_t c0, \
                              int64_t mb, int64_t nb, float *af, float *bf, float *cf,   \
                              int64_t ldc, bool accumulate) {                            \
        const TS *a = (const TS *)g->a + bi * g->a_bs + r0 * g->a_rs;                    \
        const TS *b = (const TS *)g->b + bi * g->b_bs + c0 * g->b_cs;                    \
        for (int64_t k0 = 0; k0 < g->k; k0 += TK) {                                      \
            int64_t kb = min64(TK, g->k - k0);                                           \
            bool ta, tb;                                                                 \
            int64_t lda = pack_##SFX(af, a + k0 * g->a_cs, mb, kb, g->a_rs, g->a_cs, &ta); \
            int64_t ldb = pack_##SFX(bf, b + k0 * g->b_rs, kb, nb, g->b_rs, g->b_cs, &tb); \
            ct_sgemm(ta, tb, mb, nb, kb, 1.0f, af, lda, bf, ldb, k0 || accumulate ? 1.0f : 0.0f, \
                     cf, ldc);                                                           \
        }                                                                                \
        if (g->k == 0 && !accumulate)                                                    \
            for (int64_t i = 0; i < mb; i++)                                             \
                for (int64_t j = 0; j < nb; j++) cf[i * ldc + j] = 0;                    \
    }                                                                                    \
    /* One tile of c, rounded once: alpha * product + beta * c. */                       \
    static void tile_##SFX(const ct_gemm_args *g, int64_t bi, int64_t r0, int64_t c0,    \
                           int64_t mb, int64_t nb, float *af, float *bf, float *cf) {    \
        product_##SFX(g, bi, r0, c0, mb, nb, af, bf, cf, nb, false);                     \
        float alpha = (float)g->alpha, beta = (float)g->beta, old[TN];                   \
        for (int64_t i = 0; i < mb; i++) {                                               \
            TS *c = (TS *)g->c + bi * g->c_bs + (r0 + i) * g->c_rs + c0;                 \
            float *v = cf + i * nb;                                                      \
            if (g->beta != 0) {                                                          \
                CT_REDUCED_TO_FLOAT_N(old, c, nb);                                       \
                for (int64_t j = 0; j < nb; j++) v[j] = alpha * v[j] + beta * old[j];    \
            } else {                                                                     \
                for (int64_t j = 0; j < nb; j++) v[j] = alpha * v[j];                    \
            }                                                                            \
            CT_FLOAT_TO_REDUCED_N(c, v, nb);                                             \
        }                                                                                \
    }                                                                                    \
    static bool gemm_##SFX(const ct_gemm_args *g) {                                      \
        if (ct_onednn_gemm(DT, g)) return true; /* cpu/onednn.h */                       \
        if (g->m == 0 || g->n == 0 || g->batch == 0) return true;                        \
        int64_t gm = (g->m + TM - 1) / TM, gn = (g->n + TN - 1) / TN;                    \
        int64_t items = g->batch * gm * gn;                                              \
        int64_t km = min64(g->m, TM), kn = min64(g->n, TN), kk = min64(g->k, TK);        \
        int nt = g->batch * g->m * g->n * g->k >= CT_GRAIN ? ct_blas_threads(items) : 1;  \
        /* Each thread's buffers, allocated before any work: a thread that gets none  \
         * makes the whole product fail before c is written. */                         \
        size_t per = (size_t)(km * kk + kk * kn + km * kn + 1);                          \
        float *bufs = ct_malloc(sizeof(float) * per * (size_t)nt);                       \
        if (!bufs) return false;                                                         \
        nt = ct_blas_reserve(nt); /* Note [OpenBLAS buffers] */                          \
        if (nt == 0) {                                                                   \
            free(bufs);                                                                  \
            return false;                                                                \
        }                                                                                \
        _Pragma("omp parallel if (nt > 1) num_threads(nt)")                              \
        {                                                                                \
            float *af = bufs + per * (size_t)omp_get_thread_num();                       \
            float *bf = af + km * kk, *cf = bf + kk * kn;                                \
            _Pragma("omp for schedule(dynamic)")                                         \
            for (int64_t it = 0; it < items; it++) {                                     \
                int64_t bi = it / (gm * gn), r0 = it / gn % gm * TM, c0 = it % gn * TN;  \
                tile_##SFX(g, bi, r0, c0, min64(TM, g->m - r0), min64(TN, g->n - c0), af, \
                           bf, cf);                                                      \
            }                                                                            \
        }                                                                                \
        ct_blas_unreserve(nt);                                                           \
        free(bufs);                                                                      \
        return true;                                                                     \
    }                                                                                    \
    /* ct_gemm_reduced_serial / ct_gemm_reduced_float: the same tiles on this thread */  \
    static void serial_##SFX(const ct_gemm_args *g, float *acc, int64_t ldacc,           \
                             bool accumulate, float *work) {                             \
        float *af = work, *bf = work + TM * TK, *cf = bf + TK * TN;                      \
        for (int64_t bi = 0; bi < g->batch; bi++)                                        \
            for (int64_t r0 = 0; r0 < g->m; r0 += TM)                                    \
                for (int64_t c0 = 0; c0 < g->n; c0 += TN) {                              \
                    int64_t mb = min64(TM, g->m - r0), nb = min64(TN, g->n - c0);        \
                    if (acc)                                                             \
                        product_##SFX(g, bi, r0, c0, mb, nb, af, bf, acc + r0 * ldacc + c0, \
                                      ldacc, accumulate);                                \
                    else                                                                 \
                        tile_##SFX(g, bi, r0, c0, mb, nb, af, bf, cf);                   \
                }                                                                        \
    }
REDUCED_GEMM(ct_half, f16, CT_F16)
REDUCED_GEMM(ct_bf16, bf16, CT_BF16)

_Static_assert(CT_GEMM_REDUCED_WORK >= TM * TK + TK * TN + TM * TN, "the tiles fit the work buffer");

void ct_gemm_reduced_serial(ct_dtype dt, const ct_gemm_args *g, float *work) {
    if (g->m == 0 || g->n == 0) return;
    (dt == CT_F16 ? serial_f16 : serial_bf16)(g, NULL, 0, false, work);
}

void ct_gemm_reduced_float(ct_dtype dt, const ct_gemm_args *g, float *c, int64_t ldc,
                           bool accumulate, float *work) {
    if (g->m == 0 || g->n == 0) return;
    (dt == CT_F16 ? serial_f16 : serial_bf16)(g, c, ldc, accumulate, work);
}

const ct_kernel_entry ct_cpu_gemm_reduced_kernels[] = {
    CT_GEMM_ENTRIES(CT_F16, gemm_f16) CT_GEMM_ENTRIES(CT_BF16, gemm_bf16) CT_KERNEL_END,
};
