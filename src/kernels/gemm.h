/* The matrix product kernel ABI (mm, bmm, addmm, baddbmm, mv, dot: family GEMM): one
 * batched GEMM signature for every dtype.
 *
 *   c[b] = alpha * a[b] @ b[b] + beta * c[b]      a [m, k], b [k, n], c [m, n]
 *
 * Operands are described by element strides (batch, row, col); c's columns are
 * contiguous. */
#ifndef CT_KERNELS_GEMM_H
#define CT_KERNELS_GEMM_H

#include <stdint.h>

typedef struct {
    int64_t batch, m, n, k;
    const char *a, *b;
    char *c;
    int64_t a_bs, a_rs, a_cs; /* element strides; batch strides may be 0 (broadcast) */
    int64_t b_bs, b_rs, b_cs;
    int64_t c_bs, c_rs;       /* c's column stride is 1 */
    double alpha, beta;       /* beta == 0: c is written without being read */
} ct_gemm_args;
typedef void (*ct_gemm_fn)(const ct_gemm_args *g);

#endif
