/* ctorch/pointwise.h — elementwise ops with broadcasting and type promotion.
 *
 * Binary ops broadcast their inputs (numpy rules) and promote dtypes as PyTorch
 * does.  `_scalar` forms take a C double: with an integer tensor an integral value
 * keeps the integer dtype and a fractional one gives the default float dtype, like
 * a Python int or float.  A trailing `_` marks the in-place form: it writes into its
 * first argument, bumps its version and returns it.
 *
 * Contents: arithmetic; unary math; activations (relu ... hardtanh, gelu); keyword
 * options with optional numbers (CT_SOME: nan_to_num, clamp); pow; maximum, minimum,
 * where, lerp; comparisons and logical ops (bool results).  float16 and bfloat16
 * inputs compute in float32 and round back to nearest even, also where PyTorch
 * 1.13's cpu has no half kernel: arithmetic, the unary math ops, the activations,
 * comparisons, logical ops, maximum and minimum convert element by element in
 * registers; pow, where, lerp and clamp with tensor bounds through float32 copies.
 *
 *     ct_tensor *y = ct_clamp(ct_gelu(x, .approximate = CT_GELU_TANH), .max = CT_SOME(6));
 *     ct_tensor *m = ct_where(ct_gt_scalar(x, 0), x, ct_mul_scalar(x, 0.1));
 */
#ifndef CTORCH_POINTWISE_H
#define CTORCH_POINTWISE_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* Rounding modes of ct_div_mode (torch.div(..., rounding_mode=)).  On integer tensors
 * a zero divisor is an error ("ZeroDivisionError"), and INT64_MIN / -1 (INT32_MIN / -1
 * for int32), whose quotient does not fit, wraps around to INT64_MIN (two's complement)
 * instead of trapping as x86's division does.  The grad_fn is DivBackward2. */
typedef enum { CT_ROUND_NONE = 0, CT_ROUND_TRUNC = 1, CT_ROUND_FLOOR = 2 } ct_rounding_mode;

ct_tensor *ct_add(ct_tensor *a, ct_tensor *b); /* a + b, broadcast and promoted (torch.add) */
ct_tensor *ct_sub(ct_tensor *a, ct_tensor *b); /* a - b (bool tensors are refused, as in PyTorch) */
ct_tensor *ct_mul(ct_tensor *a, ct_tensor *b); /* a * b */
ct_tensor *ct_div(ct_tensor *a, ct_tensor *b); /* true division a / b: integers give the default float dtype */
ct_tensor *ct_add_alpha(ct_tensor *a, ct_tensor *b, double alpha); /* a + alpha * b */
ct_tensor *ct_sub_alpha(ct_tensor *a, ct_tensor *b, double alpha); /* a - alpha * b */
ct_tensor *ct_div_mode(ct_tensor *a, ct_tensor *b, ct_rounding_mode mode); /* torch.div(a, b, rounding_mode=mode) */
ct_tensor *ct_add_scalar(ct_tensor *a, double b); /* a + b with a Python number b */
ct_tensor *ct_sub_scalar(ct_tensor *a, double b); /* a - b */
ct_tensor *ct_rsub_scalar(ct_tensor *a, double b); /* b - a */
ct_tensor *ct_mul_scalar(ct_tensor *a, double b); /* a * b */
ct_tensor *ct_div_scalar(ct_tensor *a, double b); /* a / b */
ct_tensor *ct_add_(ct_tensor *a, ct_tensor *b); /* a += b in place (b broadcasts to a's shape); returns a */
ct_tensor *ct_sub_(ct_tensor *a, ct_tensor *b); /* a -= b in place */
ct_tensor *ct_mul_(ct_tensor *a, ct_tensor *b); /* a *= b in place */
ct_tensor *ct_div_(ct_tensor *a, ct_tensor *b); /* a /= b in place */
ct_tensor *ct_add_alpha_(ct_tensor *a, ct_tensor *b, double alpha); /* a += alpha * b in place */
ct_tensor *ct_add_scalar_(ct_tensor *a, double b); /* a += b in place */
ct_tensor *ct_mul_scalar_(ct_tensor *a, double b); /* a *= b in place */
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

ct_tensor *ct_neg(ct_tensor *a); /* -a */
ct_tensor *ct_exp(ct_tensor *a); /* e^a */
ct_tensor *ct_log(ct_tensor *a); /* natural logarithm */
#define ct_neg(a) CT_AT(ct_neg(a))
#define ct_exp(a) CT_AT(ct_exp(a))
#define ct_log(a) CT_AT(ct_log(a))

/* ---- unary math (integer and bool inputs give the default float dtype) ---- */

ct_tensor *ct_reciprocal(ct_tensor *x); /* 1 / x */
ct_tensor *ct_expm1(ct_tensor *x);      /* exp(x) - 1, accurate near 0 */
ct_tensor *ct_log1p(ct_tensor *x);      /* log(1 + x), accurate near 0 */
ct_tensor *ct_log2(ct_tensor *x); /* base-2 logarithm */
ct_tensor *ct_sqrt(ct_tensor *x); /* square root (NaN below 0) */
ct_tensor *ct_rsqrt(ct_tensor *x);      /* 1 / sqrt(x) */
ct_tensor *ct_sin(ct_tensor *x); /* sine */
ct_tensor *ct_cos(ct_tensor *x); /* cosine */
ct_tensor *ct_tanh(ct_tensor *x); /* hyperbolic tangent */
ct_tensor *ct_sigmoid(ct_tensor *x);    /* 1 / (1 + exp(-x)), no overflow at any x */
ct_tensor *ct_erf(ct_tensor *x); /* the error function */
/* abs and sign keep integer dtypes (sign also bool; abs of bool is refused). */
ct_tensor *ct_abs(ct_tensor *x);
ct_tensor *ct_sign(ct_tensor *x);       /* -1, 0 or 1 (0 for NaN, as PyTorch's cpu) */
#define ct_reciprocal(x) CT_AT(ct_reciprocal(x))
#define ct_expm1(x) CT_AT(ct_expm1(x))
#define ct_log1p(x) CT_AT(ct_log1p(x))
#define ct_log2(x) CT_AT(ct_log2(x))
#define ct_sqrt(x) CT_AT(ct_sqrt(x))
#define ct_rsqrt(x) CT_AT(ct_rsqrt(x))
#define ct_sin(x) CT_AT(ct_sin(x))
#define ct_cos(x) CT_AT(ct_cos(x))
#define ct_tanh(x) CT_AT(ct_tanh(x))
#define ct_sigmoid(x) CT_AT(ct_sigmoid(x))
#define ct_erf(x) CT_AT(ct_erf(x))
#define ct_abs(x) CT_AT(ct_abs(x))
#define ct_sign(x) CT_AT(ct_sign(x))

/* ---- activations (torch.nn.functional); float inputs unless noted ---- */

/* max(x, 0); integer inputs keep their dtype, bool is refused.  relu_ is in place. */
ct_tensor *ct_relu(ct_tensor *x);
ct_tensor *ct_relu_(ct_tensor *x);
/* F.leaky_relu / nn.LeakyReLU: x if x > 0 else negative_slope * x.
 *     ct_leaky_relu(x);
 *     ct_leaky_relu(x, .negative_slope = CT_SOME(0.2));
 */
typedef struct {
    ct_opt_f64 negative_slope; /* default 0.01; CT_SOME(0) is ct_relu */
} ct_leaky_relu_options;
ct_tensor *ct_leaky_relu_with(ct_tensor *x, ct_leaky_relu_options o);
/* F.elu / nn.ELU: x if x > 0 else alpha * (exp(x) - 1).  ct_elu(x, .alpha = CT_SOME(0.5)). */
typedef struct {
    ct_opt_f64 alpha; /* default 1 */
} ct_elu_options;
ct_tensor *ct_elu_with(ct_tensor *x, ct_elu_options o);
/* x / (1 + exp(-x)). */
ct_tensor *ct_silu(ct_tensor *x);
/* F.softplus / nn.Softplus: log(1 + exp(beta x)) / beta, and x where beta x >
 * threshold.  ct_softplus(x), ct_softplus(x, .beta = CT_SOME(2), .threshold = CT_SOME(10)). */
typedef struct {
    ct_opt_f64 beta;      /* default 1 */
    ct_opt_f64 threshold; /* default 20 */
} ct_softplus_options;
ct_tensor *ct_softplus_with(ct_tensor *x, ct_softplus_options o);
/* F.hardtanh / nn.Hardtanh: x clamped to [min_val, max_val] (defaults -1, 1; ReLU6 is
 * ct_hardtanh(x, .min_val = CT_SOME(0), .max_val = CT_SOME(6))).  Integer inputs
 * keep their dtype. */
typedef struct {
    ct_opt_f64 min_val; /* lower bound, default -1 */
    ct_opt_f64 max_val; /* upper bound, default 1 */
} ct_hardtanh_options;
ct_tensor *ct_hardtanh_with(ct_tensor *x, ct_hardtanh_options o);
#define ct_relu(x) CT_AT(ct_relu(x))
#define ct_relu_(x) CT_AT(ct_relu_(x))
#define ct_leaky_relu(...) CT_AT(ct_leaky_relu_with(CT_ARG_OPTS_(ct_leaky_relu_options, __VA_ARGS__, )))
#define ct_elu(...) CT_AT(ct_elu_with(CT_ARG_OPTS_(ct_elu_options, __VA_ARGS__, )))
#define ct_silu(x) CT_AT(ct_silu(x))
#define ct_softplus(...) CT_AT(ct_softplus_with(CT_ARG_OPTS_(ct_softplus_options, __VA_ARGS__, )))
#define ct_hardtanh(...) CT_AT(ct_hardtanh_with(CT_ARG_OPTS_(ct_hardtanh_options, __VA_ARGS__, )))

/* F.gelu(x, approximate=...): exact x * Phi(x), or the tanh approximation. */
typedef enum { CT_GELU_NONE = 0, CT_GELU_TANH = 1 } ct_gelu_approximate;
/* Options of ct_gelu. */
typedef struct {

    ct_gelu_approximate approximate; /* default CT_GELU_NONE (exact, with erf) */
} ct_gelu_options;
ct_tensor *ct_gelu_with(ct_tensor *x, ct_gelu_options o);
/* ct_gelu(x), ct_gelu(x, .approximate = CT_GELU_TANH) */
#define ct_gelu(...) CT_AT(ct_gelu_with(CT_GELU_ARGS_(__VA_ARGS__, )))
#define CT_GELU_ARGS_(x, ...) x, CT_OPTIONS(ct_gelu_options, __VA_ARGS__)

/* ---- optional numbers in keyword options ---- */

/* ct_opt_f64 and CT_SOME are in ctorch/base.h (the options convention). */

/* torch.nan_to_num: NaN -> nan (default 0), +inf -> posinf, -inf -> neginf (default:
 * the largest / lowest finite value of x's dtype).  Integer and bool inputs are
 * returned unchanged (copied).
 *     ct_nan_to_num(x);
 *     ct_nan_to_num(x, .nan = 0.5, .posinf = CT_SOME(1e4));
 */
typedef struct {
    double nan;                /* what NaN becomes (default 0) */
    ct_opt_f64 posinf;         /* what +inf becomes (default: the dtype's largest value) */
    ct_opt_f64 neginf;         /* what -inf becomes (default: the dtype's lowest value) */
} ct_nan_to_num_options;
ct_tensor *ct_nan_to_num_with(ct_tensor *x, ct_nan_to_num_options o);
#define ct_nan_to_num(...) CT_AT(ct_nan_to_num_with(CT_NAN_TO_NUM_ARGS_(__VA_ARGS__, )))
#define CT_NAN_TO_NUM_ARGS_(x, ...) x, CT_OPTIONS(ct_nan_to_num_options, __VA_ARGS__)

/* ---- clamp ---- */

/* torch.clamp with numbers: at least one bound must be given; NaN stays NaN; when
 * min > max every element becomes max.  The result dtype promotes x with the bounds
 * as with Python numbers (an int64 tensor clamped to 0.5 is float32).  clamp_ writes
 * into x (the promoted dtype must cast to x's).
 *     ct_clamp(x, .min = CT_SOME(-1), .max = CT_SOME(1));
 *     ct_clamp(x, .min = CT_SOME(0));
 */
typedef struct {
    ct_opt_f64 min; /* lower bound, or not given */
    ct_opt_f64 max; /* upper bound, or not given */
} ct_clamp_options;
ct_tensor *ct_clamp_with(ct_tensor *x, ct_clamp_options o);
ct_tensor *ct_clamp_with_(ct_tensor *x, ct_clamp_options o);
#define ct_clamp(...) CT_AT(ct_clamp_with(CT_CLAMP_ARGS_(__VA_ARGS__, )))
#define ct_clamp_(...) CT_AT(ct_clamp_with_(CT_CLAMP_ARGS_(__VA_ARGS__, )))
#define CT_CLAMP_ARGS_(x, ...) x, CT_OPTIONS(ct_clamp_options, __VA_ARGS__)
/* torch.clamp with tensor bounds (broadcast, promoted); NULL means "not given", and at
 * least one must be given.  Note: a bound that is NULL because its computation failed
 * reads as "not given"; check ct_last_error() when building bounds in a chain. */
ct_tensor *ct_clamp_tensor(ct_tensor *x, ct_tensor *min, ct_tensor *max);
#define ct_clamp_tensor(x, min, max) CT_AT(ct_clamp_tensor(x, min, max))

/* ---- pow ---- */

/* torch.pow: x ** e elementwise (broadcast, promoted).  Integer tensors raised to
 * negative integer powers are refused, as in PyTorch.  Gradients at x == 0 follow
 * PyTorch: d/dx is 0 where e == 0, d/de is 0 where x == 0 and e >= 0. */
ct_tensor *ct_pow(ct_tensor *x, ct_tensor *e);
ct_tensor *ct_pow_scalar(ct_tensor *x, double e);     /* x ** e     (PowBackward0) */
ct_tensor *ct_rpow_scalar(ct_tensor *x, double base); /* base ** x  (PowBackward2) */
#define ct_pow(x, e) CT_AT(ct_pow(x, e))
#define ct_pow_scalar(x, e) CT_AT(ct_pow_scalar(x, e))
#define ct_rpow_scalar(x, base) CT_AT(ct_rpow_scalar(x, base))

/* ---- selection and interpolation ---- */

/* Elementwise max / min of two tensors (broadcast, promoted; bool and integers too).
 * NaN propagates.  On ties each input gets half the gradient, as in PyTorch. */
ct_tensor *ct_maximum(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_minimum(ct_tensor *a, ct_tensor *b);
/* cond ? a : b elementwise; cond must be bool; a and b are promoted. */
ct_tensor *ct_where(ct_tensor *cond, ct_tensor *a, ct_tensor *b);
/* cond ? a : b with a number b (promoted like a Python number: int64 a with 0.5 gives
 * float32). */
ct_tensor *ct_where_scalar(ct_tensor *cond, ct_tensor *a, double b);
/* start + weight * (end - start); start, end (and a tensor weight) share one float
 * dtype, as torch.lerp requires. */
ct_tensor *ct_lerp(ct_tensor *start, ct_tensor *end, double weight);
ct_tensor *ct_lerp_tensor(ct_tensor *start, ct_tensor *end, ct_tensor *weight);
#define ct_maximum(a, b) CT_AT(ct_maximum(a, b))
#define ct_minimum(a, b) CT_AT(ct_minimum(a, b))
#define ct_where(cond, a, b) CT_AT(ct_where(cond, a, b))
#define ct_where_scalar(cond, a, b) CT_AT(ct_where_scalar(cond, a, b))
#define ct_lerp(start, end, weight) CT_AT(ct_lerp(start, end, weight))
#define ct_lerp_tensor(start, end, weight) CT_AT(ct_lerp_tensor(start, end, weight))

/* ---- comparisons and logic: bool results, not differentiable ---- */

/* a OP b after broadcasting and promotion (an int64 tensor compared with 1.5 compares
 * as float).  _scalar forms compare with a C double. */
ct_tensor *ct_eq(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_ne(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_lt(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_le(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_gt(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_ge(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_eq_scalar(ct_tensor *a, double b);
ct_tensor *ct_ne_scalar(ct_tensor *a, double b);
ct_tensor *ct_lt_scalar(ct_tensor *a, double b);
ct_tensor *ct_le_scalar(ct_tensor *a, double b);
ct_tensor *ct_gt_scalar(ct_tensor *a, double b);
ct_tensor *ct_ge_scalar(ct_tensor *a, double b);
/* Nonzero is true, for any dtype. */
ct_tensor *ct_logical_and(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_logical_or(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_logical_xor(ct_tensor *a, ct_tensor *b);
ct_tensor *ct_logical_not(ct_tensor *x);
/* Integer and bool elements are never NaN or infinite. */
ct_tensor *ct_isnan(ct_tensor *x);
ct_tensor *ct_isinf(ct_tensor *x);
ct_tensor *ct_isfinite(ct_tensor *x);
#define ct_eq(a, b) CT_AT(ct_eq(a, b))
#define ct_ne(a, b) CT_AT(ct_ne(a, b))
#define ct_lt(a, b) CT_AT(ct_lt(a, b))
#define ct_le(a, b) CT_AT(ct_le(a, b))
#define ct_gt(a, b) CT_AT(ct_gt(a, b))
#define ct_ge(a, b) CT_AT(ct_ge(a, b))
#define ct_eq_scalar(a, b) CT_AT(ct_eq_scalar(a, b))
#define ct_ne_scalar(a, b) CT_AT(ct_ne_scalar(a, b))
#define ct_lt_scalar(a, b) CT_AT(ct_lt_scalar(a, b))
#define ct_le_scalar(a, b) CT_AT(ct_le_scalar(a, b))
#define ct_gt_scalar(a, b) CT_AT(ct_gt_scalar(a, b))
#define ct_ge_scalar(a, b) CT_AT(ct_ge_scalar(a, b))
#define ct_logical_and(a, b) CT_AT(ct_logical_and(a, b))
#define ct_logical_or(a, b) CT_AT(ct_logical_or(a, b))
#define ct_logical_xor(a, b) CT_AT(ct_logical_xor(a, b))
#define ct_logical_not(x) CT_AT(ct_logical_not(x))
#define ct_isnan(x) CT_AT(ct_isnan(x))
#define ct_isinf(x) CT_AT(ct_isinf(x))
#define ct_isfinite(x) CT_AT(ct_isfinite(x))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
