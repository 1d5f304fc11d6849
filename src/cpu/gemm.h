/* Matrix products on the cpu: one batched GEMM signature for every dtype.
 *
 *   c[b] = alpha * a[b] @ b[b] + beta * c[b]      a [m, k], b [k, n], c [m, n]
 *
 * Operands are described by element strides (batch, row, col); c's columns are
 * contiguous.  float32/float64 go to OpenBLAS (cblas_?gemm) with CblasTrans and
 * leading dimensions taken from the strides, so transposed views are never copied;
 * the op layer copies only operands whose strides BLAS cannot express
 * (ct_blas_layout false, kernels/gemm.h).  float16 / bfloat16: float tiles through sgemm
 * (cpu/gemm_reduced.c).  Other dtypes use a generic loop kernel.
 *
 * Note [GEMM determinism]: OpenBLAS's results depend on its thread count, and how
 * they depend on it differs between its kernels (core types): the threaded driver
 * splits m, n and k by its own blocking (GEMM_P/Q/R, different for SkylakeX, Haswell,
 * Zen, Sandybridge...), and its edge micro-tiles accumulate differently depending on
 * where a split falls.  So products are computed as fixed tiles of c, a function of
 * the shape only, each by a single-threaded BLAS call, the tiles spread over OpenMP
 * threads; one thread runs the same tiles serially (a tile's bits depend on its size,
 * as OpenBLAS picks special kernels for small calls).  Nothing depends on OpenBLAS's
 * internal blocking, so results are bitwise identical for any ct_set_num_threads on
 * every core type (tests/test_linalg.c checks 1, 2 and 3 threads, and the suite runs
 * it with OPENBLAS_CORETYPE forced to each core type the CPU can run).  This is also
 * the fast way: OpenBLAS's own (pthread) workers and OpenMP's spin-waiting workers
 * slow each other down badly when ops alternate, so OpenBLAS runs one thread during
 * ctorch's calls (ct_blas_reserve/unreserve) and gets the program's setting back after.
 */
#ifndef CT_CPU_GEMM_H
#define CT_CPU_GEMM_H

#include <stdbool.h>

#include "core/dtype.h"
#include "kernels/gemm.h"

/* Brackets a kernel's region of BLAS calls running on up to `threads` threads at once:
 * returns the number of them that can get OpenBLAS's working buffers (Note [OpenBLAS
 * buffers] in cpu/gemm.c), 0 when none can (then nothing is begun: the kernel fails
 * with an out-of-memory error); ct_blas_unreserve(granted) ends it.  Every kernel
 * calling BLAS runs inside one.  OpenBLAS runs one thread of its own from the first
 * region's start to the last one's end (any threads, nested or concurrent), then gets
 * back the thread count it had before (openblas_set_num_threads is process-wide). */
#define CT_BLAS_BUFFER_BYTES ((size_t)129 << 20)
int ct_blas_reserve(int threads);
void ct_blas_unreserve(int threads);
/* The threads a region spreading BLAS calls over `items` work items asks
 * ct_blas_reserve for: one per item, at most ct_get_num_threads(), at least one.  A
 * region allocates its threads' working memory before it reserves (what the
 * reservation tried must be left for OpenBLAS), then runs on the threads granted. */
int ct_blas_threads(int64_t items);

/* One single-threaded float GEMM c = alpha*op(a)@op(b) + beta*c on row-major data,
 * for kernels that parallelize over their own loop (conv): callers hold
 * ct_blas_reserve/unreserve around their parallel region. */
void ct_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
              int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
void ct_dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
              int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc);

/* float16 / bfloat16 (dt) products on the calling thread, in the tiles of the GEMM
 * kernel (cpu/gemm_reduced.c), for kernels that parallelize over their own loop;
 * callers hold ct_blas_reserve/unreserve.  work: CT_GEMM_REDUCED_WORK floats.
 * ct_gemm_reduced_serial: the kernel's result, c = alpha * a @ b + beta * c rounded
 * once.  ct_gemm_reduced_float: the float product a @ b (g->alpha, beta and c
 * unused) into c (leading dimension ldc), added to c's values when accumulate; batch 1. */
#define CT_GEMM_REDUCED_WORK (3 * 256 * 256)
void ct_gemm_reduced_serial(ct_dtype dt, const ct_gemm_args *g, float *work);
void ct_gemm_reduced_float(ct_dtype dt, const ct_gemm_args *g, float *c, int64_t ldc,
                           bool accumulate, float *work);

/* The kernel-table rows of one dtype's GEMM kernel FN: it serves every GEMM op. */
#define CT_GEMM_ENTRIES(DT, FN)                                                          \
    CT_KERNEL(GEMM, CT_OP_mm, DT, FN), CT_KERNEL(GEMM, CT_OP_bmm, DT, FN),               \
    CT_KERNEL(GEMM, CT_OP_addmm, DT, FN), CT_KERNEL(GEMM, CT_OP_baddbmm, DT, FN),        \
    CT_KERNEL(GEMM, CT_OP_mv, DT, FN), CT_KERNEL(GEMM, CT_OP_dot, DT, FN),

#endif
