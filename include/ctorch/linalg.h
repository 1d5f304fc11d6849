/* ctorch/linalg.h — matrix products.
 *
 *     ct_tensor *in = ct_randn(CT_SHAPE(64, 784)), *w = ct_randn(CT_SHAPE(784, 10));
 *     ct_tensor *y = ct_matmul(in, w);          // [64, 784] @ [784, 10] -> [64, 10]
 *     ct_tensor *z = ct_addmm(ct_zeros(CT_SHAPE(10)), in, w);  // bias + in @ w
 *     ct_tensor *u = ct_addmm(z, in, w, .beta = CT_SOME(0), .alpha = CT_SOME(2));
 *
 * float32/float64 run on OpenBLAS (transposed views are passed to it without a
 * copy); integer dtypes use a generic kernel; float16/bfloat16 widen fixed tiles of
 * their operands to float32 in bounded buffers, accumulate in float32 and round once
 * (no float32 copy of a whole operand).
 * Results are identical for any ct_set_num_threads, on every CPU OpenBLAS supports.
 * While a ctorch product runs, OpenBLAS runs one thread (ctorch parallelizes over
 * tiles itself); the program's openblas_set_num_threads setting is restored when the
 * last one ends, so its own cblas calls keep their threads, except those that run
 * concurrently with a ctorch product.  Both inputs must have the same
 * dtype.  Shape errors name the shapes: "ct_matmul: shapes [64, 784] and [128, 10]
 * cannot be multiplied (784 != 128)". */
#ifndef CTORCH_LINALG_H
#define CTORCH_LINALG_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* torch.matmul: dot (1-D @ 1-D), mv, mm, and batched products whose batch dims
 * broadcast; a 1-D argument gets a dim added for the product and removed after. */
ct_tensor *ct_matmul(ct_tensor *a, ct_tensor *b);
/* [n, k] @ [k, m]. */
ct_tensor *ct_mm(ct_tensor *a, ct_tensor *b);
/* [B, n, k] @ [B, k, m] (no broadcasting). */
ct_tensor *ct_bmm(ct_tensor *a, ct_tensor *b);
/* torch.addmm / torch.baddbmm's beta and alpha; not given: 1.  With beta 0, input
 * is ignored (NaN in it does not propagate). */
typedef struct {
    ct_opt_f64 beta;  /* the factor of input */
    ct_opt_f64 alpha; /* the factor of the product */
} ct_addmm_options;
/* beta * input + alpha * (m1 @ m2); input broadcasts to [n, m]. */
ct_tensor *ct_addmm_with(ct_tensor *input, ct_tensor *m1, ct_tensor *m2, ct_addmm_options o);
/* beta * input + alpha * bmm(b1, b2); input broadcasts to [B, n, m]. */
ct_tensor *ct_baddbmm_with(ct_tensor *input, ct_tensor *b1, ct_tensor *b2, ct_addmm_options o);
/* [n, k] @ [k] -> [n]. */
ct_tensor *ct_mv(ct_tensor *a, ct_tensor *v);
/* Inner product of two 1-D tensors (a 0-d result). */
ct_tensor *ct_dot(ct_tensor *a, ct_tensor *b);
/* Outer product of two 1-D tensors: [n] x [m] -> [n, m]. */
ct_tensor *ct_outer(ct_tensor *a, ct_tensor *b);
#define ct_matmul(a, b) CT_AT(ct_matmul(a, b))
#define ct_mm(a, b) CT_AT(ct_mm(a, b))
#define ct_bmm(a, b) CT_AT(ct_bmm(a, b))
#define ct_addmm(input, m1, m2, ...) \
    CT_AT(ct_addmm_with(input, m1, m2, CT_OPTIONS(ct_addmm_options, __VA_ARGS__)))
#define ct_baddbmm(input, b1, b2, ...) \
    CT_AT(ct_baddbmm_with(input, b1, b2, CT_OPTIONS(ct_addmm_options, __VA_ARGS__)))
#define ct_mv(a, v) CT_AT(ct_mv(a, v))
#define ct_dot(a, b) CT_AT(ct_dot(a, b))
#define ct_outer(a, b) CT_AT(ct_outer(a, b))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
