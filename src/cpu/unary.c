/* Kernels of the unary math ops.  data: out, x.  Float32 exp, log, tanh, sigmoid and
 * erf use the vectorizable polynomials of cpu/vmath.h; the rest call libm. */
/* Note [Vectorizing selects]: with the default -ftrapping-math gcc will not turn the
 * branch-free selects of cpu/vmath.h into vector blends (it may not evaluate a float
 * operation the scalar code would skip), so no loop here would vectorize.  These
 * kernels never rely on floating-point traps; results are unchanged. */
#pragma GCC optimize("no-trapping-math")
#include "cpu/pw_loops.h"
#include "cpu/vmath.h"

/* sign of a float: 0 for NaN, as PyTorch's cpu kernel ((0 < x) - (x < 0)). */
#define SIGN(T, x) (T)((T)(0 < (x)) - (T)((x) < 0))

/* The float ops, as LOOP(name, T, expression): float32 and float64 compute in their
 * own type; float16 and bfloat16 in float, converted in registers. */
#define FLOAT_OPS(LOOP, T, SFX)                                                          \
    LOOP(neg_##SFX, T, -x)                                                               \
    LOOP(exp_##SFX, T, CT_VEXP(x))                                                       \
    LOOP(log_##SFX, T, CT_VLOG(x))                                                       \
    LOOP(reciprocal_##SFX, T, (T)1 / x)                                                  \
    LOOP(expm1_##SFX, T, CT_MF(expm1, x))                                                \
    LOOP(log1p_##SFX, T, CT_MF(log1p, x))                                                \
    LOOP(log2_##SFX, T, CT_MF(log2, x))                                                  \
    LOOP(sqrt_##SFX, T, CT_MF(sqrt, x))                                                  \
    LOOP(rsqrt_##SFX, T, (T)1 / CT_MF(sqrt, x))                                          \
    LOOP(abs_##SFX, T, CT_MF(fabs, x))                                                   \
    LOOP(sign_##SFX, T, SIGN(T, x))                                                      \
    LOOP(sin_##SFX, T, CT_MF(sin, x))                                                    \
    LOOP(cos_##SFX, T, CT_MF(cos, x))                                                    \
    LOOP(tanh_##SFX, T, CT_VTANH(x))                                                     \
    LOOP(sigmoid_##SFX, T, CT_VSIGMOID(x))                                               \
    LOOP(erf_##SFX, T, CT_VERF(x))
#define SAME_LOOP(NAME, T, EXPR) CT_UNARY_LOOP(NAME, T, T, EXPR)
#define LOOP_f16(NAME, T, EXPR) CT_UNARY_LOOP_REDUCED(NAME, ct_half, EXPR)
#define LOOP_bf16(NAME, T, EXPR) CT_UNARY_LOOP_REDUCED(NAME, ct_bf16, EXPR)
#define FLOAT_KERNELS(DT, T, SFX) FLOAT_OPS(SAME_LOOP, T, SFX)
#define REDUCED_KERNELS(DT, T, SFX) FLOAT_OPS(LOOP_##SFX, float, SFX)
CT_FLOAT_TYPES(FLOAT_KERNELS)
CT_REDUCED_TYPES(REDUCED_KERNELS)

#define INT_KERNELS(DT, T, SFX)                                                          \
    CT_UNARY_LOOP(neg_##SFX, T, T, -x)                                                   \
    CT_UNARY_LOOP(abs_##SFX, T, T, x < 0 ? -x : x)                                       \
    CT_UNARY_LOOP(sign_##SFX, T, T, SIGN(T, x))
#define SIGNED_TYPES(X) \
    X(CT_I64, int64_t, i64) X(CT_I32, int32_t, i32) X(CT_I16, int16_t, i16) X(CT_I8, int8_t, i8)
SIGNED_TYPES(INT_KERNELS)
CT_UNARY_LOOP(neg_u8, uint8_t, uint8_t, -x)
CT_UNARY_LOOP(abs_u8, uint8_t, uint8_t, x)
CT_UNARY_LOOP(sign_u8, uint8_t, uint8_t, x != 0)
CT_UNARY_LOOP(sign_b8, bool, bool, x)

#define FLOAT_ENTRIES(DT, T, SFX)                                                        \
    CT_KERNEL(LOOP, CT_OP_neg, DT, neg_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_exp, DT, exp_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_log, DT, log_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_reciprocal, DT, reciprocal_##SFX),                             \
    CT_KERNEL(LOOP, CT_OP_expm1, DT, expm1_##SFX),                                       \
    CT_KERNEL(LOOP, CT_OP_log1p, DT, log1p_##SFX),                                       \
    CT_KERNEL(LOOP, CT_OP_log2, DT, log2_##SFX),                                         \
    CT_KERNEL(LOOP, CT_OP_sqrt, DT, sqrt_##SFX),                                         \
    CT_KERNEL(LOOP, CT_OP_rsqrt, DT, rsqrt_##SFX),                                       \
    CT_KERNEL(LOOP, CT_OP_abs, DT, abs_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_sign, DT, sign_##SFX),                                         \
    CT_KERNEL(LOOP, CT_OP_sin, DT, sin_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_cos, DT, cos_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_tanh, DT, tanh_##SFX),                                         \
    CT_KERNEL(LOOP, CT_OP_sigmoid, DT, sigmoid_##SFX),                                   \
    CT_KERNEL(LOOP, CT_OP_erf, DT, erf_##SFX),
#define INT_ENTRIES(DT, T, SFX)                                                          \
    CT_KERNEL(LOOP, CT_OP_neg, DT, neg_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_abs, DT, abs_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_sign, DT, sign_##SFX),
const ct_kernel_entry ct_cpu_unary_kernels[] = {
    CT_FLOAT_TYPES(FLOAT_ENTRIES) CT_REDUCED_TYPES(FLOAT_ENTRIES) CT_INT_TYPES(INT_ENTRIES)
    CT_KERNEL(LOOP, CT_OP_sign, CT_BOOL, sign_b8),
    CT_KERNEL_END,
};
