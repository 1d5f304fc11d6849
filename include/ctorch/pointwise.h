/* ctorch/pointwise.h — elementwise ops with broadcasting and type promotion.
 *
 * Binary ops broadcast their inputs (numpy rules) and promote dtypes as PyTorch
 * does.  `_scalar` forms take a C double: with an integer tensor an integral value
 * keeps the integer dtype and a fractional one gives the default float dtype, like
 * a Python int or float.  A trailing `_` marks the in-place form: it writes into its
 * first argument, bumps its version and returns it. */
#ifndef CTORCH_POINTWISE_H
#define CTORCH_POINTWISE_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rounding modes of ct_div_mode (torch.div(..., rounding_mode=)). */
typedef enum { CT_ROUND_NONE = 0, CT_ROUND_TRUNC = 1, CT_ROUND_FLOOR = 2 } ct_rounding_mode;

ct_tensor *ct_add(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_sub(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_mul(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_div(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_add_alpha(ct_tensor *a, ct_tensor *b, double alpha); /* a + alpha * b */
ct_tensor *ct_sub_alpha(ct_tensor *a, ct_tensor *b, double alpha); /* a - alpha * b */
ct_tensor *ct_div_mode(ct_tensor *a, ct_tensor *b, ct_rounding_mode mode);
ct_tensor *ct_add_scalar(ct_tensor *a, double b);
ct_tensor *ct_sub_scalar(ct_tensor *a, double b);
ct_tensor *ct_rsub_scalar(ct_tensor *a, double b); /* b - a */
ct_tensor *ct_mul_scalar(ct_tensor *a, double b);
ct_tensor *ct_div_scalar(ct_tensor *a, double b);
ct_tensor *ct_add_(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_sub_(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_mul_(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_div_(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_add_alpha_(ct_tensor *a, ct_tensor *b, double alpha);
ct_tensor *ct_add_scalar_(ct_tensor *a, double b);
ct_tensor *ct_mul_scalar_(ct_tensor *a, double b);
#define ct_add(a, b) CT_AT(ct_add(a, b))
#define ct_sub(a, b) CT_AT(ct_sub(a, b))
#define ct_mul(a, b) CT_AT(ct_mul(a, b))
#define ct_div(a, b) CT_AT(ct_div(a, b))
#define ct_add_alpha(a, b, alpha) CT_AT(ct_add_alpha(a, b, alpha))
#define ct_sub_alpha(a, b, alpha) CT_AT(ct_sub_alpha(a, b, alpha))
#define ct_div_mode(a, b, mode) CT_AT(ct_div_mode(a, b, mode))
#define ct_add_scalar(a, b) CT_AT(ct_add_scalar(a, b))
#define ct_sub_scalar(a, b) CT_AT(ct_sub_scalar(a, b))
#define ct_rsub_scalar(a, b) CT_AT(ct_rsub_scalar(a, b))
#define ct_mul_scalar(a, b) CT_AT(ct_mul_scalar(a, b))
#define ct_div_scalar(a, b) CT_AT(ct_div_scalar(a, b))
#define ct_add_(a, b) CT_AT(ct_add_(a, b))
#define ct_sub_(a, b) CT_AT(ct_sub_(a, b))
#define ct_mul_(a, b) CT_AT(ct_mul_(a, b))
#define ct_div_(a, b) CT_AT(ct_div_(a, b))
#define ct_add_alpha_(a, b, alpha) CT_AT(ct_add_alpha_(a, b, alpha))
#define ct_add_scalar_(a, b) CT_AT(ct_add_scalar_(a, b))
#define ct_mul_scalar_(a, b) CT_AT(ct_mul_scalar_(a, b))

ct_tensor *ct_neg(ct_tensor *a);
ct_tensor *ct_exp(ct_tensor *a);
ct_tensor *ct_log(ct_tensor *a);
#define ct_neg(a) CT_AT(ct_neg(a))
#define ct_exp(a) CT_AT(ct_exp(a))
#define ct_log(a) CT_AT(ct_log(a))

#ifdef __cplusplus
}
#endif
#endif
