/* Matrix products on the cpu: one batched GEMM signature for every dtype.
 *
 *   c[b] = alpha * a[b] @ b[b] + beta * c[b]      a [m, k], b [k, n], c [m, n]
 *
 * Operands are described by element strides (batch, row, col); c's columns are
 * contiguous.  float32/float64 go to OpenBLAS (cblas_?gemm) with CblasTrans and
 * leading dimensions taken from the strides, so transposed views are never copied;
 * the op layer copies only operands whose strides BLAS cannot express
 * (ct_blas_layout false).  Other dtypes use a generic loop kernel.
 *
 * Note [GEMM determinism]: OpenBLAS (0.3.21, SkylakeX) gives results that depend on
 * its thread count: its threaded driver splits k into blocks differently from the
 * single-threaded one when GEMM_Q < k < 2*GEMM_Q (sgemm), and dgemm's edge tiles
 * accumulate differently depending on where the thread split falls.  So:
 *  - products are computed as fixed tiles of c (a function of the shape only), each
 *    by a single-threaded BLAS call, the tiles spread over OpenMP threads; one
 *    thread runs the same tiles serially (a tile's bits depend on its size, as
 *    OpenBLAS picks special kernels for small calls).  This is also the fast way
 *    for all but big products: OpenBLAS's own (pthread) workers and OpenMP's
 *    spin-waiting workers slow each other down badly when ops alternate, so
 *    OpenBLAS is kept at one thread;
 *  - float32 products of at least CT_GEMM_BIG multiply-adds, where sharing
 *    OpenBLAS's packed panels beats tiles, use OpenBLAS's threads on k-slices of at
 *    most CT_GEMM_KC accumulated into c: a slice is one k-block in either driver, and
 *    sgemm's micro-tiles do not depend on where the thread split falls.
 * Results are therefore bitwise identical for any ct_set_num_threads
 * (tests/test_linalg.c checks 1, 2 and 3 threads).
 */
#ifndef CT_CPU_GEMM_H
#define CT_CPU_GEMM_H

#include <stdbool.h>

#include "kernels/gemm.h"


/* Can a rows x cols operand with element strides (rs, cs) go to BLAS as it is?  Sets
 * *trans (pass CblasTrans) and *ld (the leading dimension) when it can. */
bool ct_blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans,
                    int64_t *ld);
/* Makes OpenBLAS use n threads; calls into OpenBLAS only when n changes. */
void ct_blas_set_threads(int n);

/* One single-threaded float GEMM c = alpha*op(a)@op(b) + beta*c on row-major data,
 * for kernels that parallelize over their own loop (conv): callers hold
 * ct_blas_set_threads(1) around their parallel region. */
void ct_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
              int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
void ct_dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
              int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc);

#endif
