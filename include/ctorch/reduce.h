/* ctorch/reduce.h — reductions, scans and softmax.
 *
 *     ct_sum(t);                                  // all elements, a 0-d tensor
 *     ct_sum(t, .dims = CT_DIMS(0, 2), .keepdim = true);
 *     ct_var(t, .dims = CT_DIMS(-1), .correction = CT_SOME(0));  // biased variance
 *     ct_norm(t, .p = CT_SOME(INFINITY), .dims = CT_DIMS(1));
 *     ct_values_indices m = ct_max_dim(t, 1, false);     // m.values, m.indices (int64)
 *     ct_softmax(t, -1);
 *
 * Results never depend on the thread count: each output is reduced in a fixed order
 * (fixed chunks combined in order).  float32 accumulates in double.  float16 and
 * bfloat16 sum, mean, prod, max/min (and their indices), all/any, cumsum/cumprod,
 * norm, softmax, log_softmax and logsumexp widen each element in registers and
 * accumulate in float32, rounding once; the other reductions compute through float32
 * copies.
 * Integer and bool inputs sum/prod into int64. */
#ifndef CTORCH_REDUCE_H
#define CTORCH_REDUCE_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* Options of the reductions: ct_sum, ct_mean, ct_prod, ct_amax, ct_amin, ct_logsumexp,
 * ct_all, ct_any, ct_argmax and ct_argmin. */
typedef struct {
    ct_dims dims;   /* dims to reduce (negative count from the end); none given: all */
    bool keepdim;   /* keep reduced dims with size 1 */
    ct_dtype dtype; /* accumulate and return in this dtype (sum, mean, prod) */
} ct_reduce_options;

ct_tensor *ct_sum_with(ct_tensor *t, ct_reduce_options o);  /* the sum */
/* The mean: floating (or .dtype given) inputs only, as in PyTorch. */
ct_tensor *ct_mean_with(ct_tensor *t, ct_reduce_options o);
ct_tensor *ct_prod_with(ct_tensor *t, ct_reduce_options o); /* the product */
/* Largest / smallest value; the gradient is split evenly among ties. */
ct_tensor *ct_amax_with(ct_tensor *t, ct_reduce_options o);
ct_tensor *ct_amin_with(ct_tensor *t, ct_reduce_options o);
/* log(sum(exp(t))) computed stably (max subtracted first). */
ct_tensor *ct_logsumexp_with(ct_tensor *t, ct_reduce_options o);
/* Bool results (uint8 for uint8 inputs, as PyTorch); not differentiable. */
ct_tensor *ct_all_with(ct_tensor *t, ct_reduce_options o);
ct_tensor *ct_any_with(ct_tensor *t, ct_reduce_options o);
/* int64 index of the first max / min; at most one dim (none: of the flattened input). */
ct_tensor *ct_argmax_with(ct_tensor *t, ct_reduce_options o);
ct_tensor *ct_argmin_with(ct_tensor *t, ct_reduce_options o);
#define ct_sum(t, ...) CT_AT(ct_sum_with(t, CT_OPTIONS(ct_reduce_options, __VA_ARGS__)))
#define ct_mean(t, ...) CT_AT(ct_mean_with(t, CT_OPTIONS(ct_reduce_options, __VA_ARGS__)))
#define ct_prod(t, ...) CT_AT(ct_prod_with(t, CT_OPTIONS(ct_reduce_options, __VA_ARGS__)))
#define ct_amax(t, ...) CT_AT(ct_amax_with(t, CT_OPTIONS(ct_reduce_options, __VA_ARGS__)))
#define ct_amin(t, ...) CT_AT(ct_amin_with(t, CT_OPTIONS(ct_reduce_options, __VA_ARGS__)))
#define ct_logsumexp(t, ...) CT_AT(ct_logsumexp_with(t, CT_OPTIONS(ct_reduce_options, __VA_ARGS__)))
#define ct_all(t, ...) CT_AT(ct_all_with(t, CT_OPTIONS(ct_reduce_options, __VA_ARGS__)))
#define ct_any(t, ...) CT_AT(ct_any_with(t, CT_OPTIONS(ct_reduce_options, __VA_ARGS__)))
#define ct_argmax(t, ...) CT_AT(ct_argmax_with(t, CT_OPTIONS(ct_reduce_options, __VA_ARGS__)))
#define ct_argmin(t, ...) CT_AT(ct_argmin_with(t, CT_OPTIONS(ct_reduce_options, __VA_ARGS__)))

/* ---- variance, standard deviation, norms ------------------------------ */

/* Options of ct_var and ct_std. */
typedef struct {
    ct_dims dims;  /* dims to reduce; none given: all */
    bool keepdim;  /* keep reduced dims with size 1 */
    /* Divide by N - correction; not given: 1 (Bessel).  .correction = CT_SOME(0) is
     * the biased estimate (unbiased=False). */
    ct_opt_f64 correction;
} ct_var_options;
ct_tensor *ct_var_with(ct_tensor *t, ct_var_options o); /* the variance */
ct_tensor *ct_std_with(ct_tensor *t, ct_var_options o); /* the standard deviation */
#define ct_var(t, ...) CT_AT(ct_var_with(t, CT_OPTIONS(ct_var_options, __VA_ARGS__)))
#define ct_std(t, ...) CT_AT(ct_std_with(t, CT_OPTIONS(ct_var_options, __VA_ARGS__)))

/* Options of ct_norm. */
typedef struct {
    /* The vector p-norm over dims: CT_SOME(p) with p 1, 2 (the default; "fro"),
     * INFINITY, -INFINITY or 0 (the number of nonzeros). */
    ct_opt_f64 p;
    ct_dims dims;  /* dims to reduce; none given: all */
    bool keepdim;  /* keep reduced dims with size 1 */
} ct_norm_options;
ct_tensor *ct_norm_with(ct_tensor *t, ct_norm_options o); /* torch.linalg.vector_norm */
#define ct_norm(t, ...) CT_AT(ct_norm_with(t, CT_OPTIONS(ct_norm_options, __VA_ARGS__)))

/* ---- max / min with indices ------------------------------------------- */

/* max/min along a dim return ct_values_indices (ctorch/base.h): both registered with
 * the scope, indices int64, both NULL on error. */

/* Over all elements: a 0-d tensor (the gradient is split evenly among ties). */
ct_tensor *ct_max(ct_tensor *t);
ct_tensor *ct_min(ct_tensor *t);
/* Along one dim: the values and the index of the first max / min (the gradient goes
 * to that index). */
ct_values_indices ct_max_dim(ct_tensor *t, int64_t dim, bool keepdim);
ct_values_indices ct_min_dim(ct_tensor *t, int64_t dim, bool keepdim);
#define ct_max(t) CT_AT(ct_max(t))
#define ct_min(t) CT_AT(ct_min(t))
#define ct_max_dim(t, dim, keepdim) CT_AT(ct_max_dim(t, dim, keepdim))
#define ct_min_dim(t, dim, keepdim) CT_AT(ct_min_dim(t, dim, keepdim))

/* ---- scans ------------------------------------------------------------ */

/* Options of ct_cumsum and ct_cumprod. */
typedef struct {
    ct_dtype dtype; /* result dtype; default: the input's (integers and bool: int64) */
} ct_scan_options;
/* Running sum / product along dim.  cumprod's gradient is exact with zeros in the
 * input; a double backward through cumprod at such an input is not implemented. */
ct_tensor *ct_cumsum_with(ct_tensor *t, int64_t dim, ct_scan_options o);
ct_tensor *ct_cumprod_with(ct_tensor *t, int64_t dim, ct_scan_options o);
#define ct_cumsum(t, dim, ...) CT_AT(ct_cumsum_with(t, dim, CT_OPTIONS(ct_scan_options, __VA_ARGS__)))
#define ct_cumprod(t, dim, ...) CT_AT(ct_cumprod_with(t, dim, CT_OPTIONS(ct_scan_options, __VA_ARGS__)))

/* ---- softmax ---------------------------------------------------------- */

/* exp(t) / sum(exp(t)) along dim, and its log; stable for large magnitudes (the max
 * is subtracted first).  Floating inputs only, as in PyTorch. */
ct_tensor *ct_softmax(ct_tensor *t, int64_t dim);
ct_tensor *ct_log_softmax(ct_tensor *t, int64_t dim);
#define ct_softmax(t, dim) CT_AT(ct_softmax(t, dim))
#define ct_log_softmax(t, dim) CT_AT(ct_log_softmax(t, dim))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
