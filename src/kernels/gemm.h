/* The matrix product kernel ABI (mm, bmm, addmm, baddbmm, mv, dot: family GEMM): one
 * batched GEMM signature for every dtype.
 *
 *   c[b] = alpha * a[b] @ b[b] + beta * c[b]      a [m, k], b [k, n], c [m, n]
 *
 * Operands are described by element strides (batch, row, col); c's columns are
 * contiguous.  a's and b's strides are ones that ct_blas_layout accepts (row- or
 * column-major with a leading dimension, as BLAS takes them): the op layer copies an
 * operand with other strides first, so kernels never copy.
 *
 *     bool trans; int64_t ld;
 *     if (!ct_blas_layout(rows, cols, rs, cs, &trans, &ld)) operand = contiguous copy; */
#ifndef CT_KERNELS_GEMM_H
#define CT_KERNELS_GEMM_H

#include <stdbool.h>
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
/* False, having written nothing, when the kernel could not get the working memory it
 * needs (the op reports the error); true otherwise. */
typedef bool (*ct_gemm_fn)(const ct_gemm_args *g);

/* Can a rows x cols operand with element strides (rs, cs) go to a GEMM kernel as it
 * is?  Sets *trans (column-major: BLAS's CblasTrans) and *ld (the leading dimension)
 * when it can. */
static inline bool ct_blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                                  bool *trans, int64_t *ld) {
    /* A size-1 dim's stride is irrelevant: pick whatever makes the layout valid. */
    if (cols <= 1) cs = 1;
    if (rows <= 1 && cs == 1) rs = cols > 1 ? cols : 1;
    if (rows <= 1 && cs != 1) rs = 1;
    if (cs == 1 && rs >= (cols > 1 ? cols : 1)) {
        *trans = false;
        *ld = rs;
        return true;
    }
    if (rs == 1 && cs >= (rows > 1 ? rows : 1)) {
        *trans = true;
        *ld = cs;
        return true;
    }
    return false;
}

#endif
