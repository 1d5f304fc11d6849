/* Kernels of the activations, nan_to_num and clamp with numbers.  data: out, x.
 * ctx (ct_pw_args): threshold_backward (data: out, g, y) a = threshold; leaky_relu a = slope; elu a = alpha; softplus a = beta,
 * b = threshold; hardtanh and clamp a = min, b = max (clamp: has_a / has_b say which
 * are given); nan_to_num a, b, c = nan, posinf, neginf; gelu i = approximate. */
/* Note [Vectorizing selects]: with the default -ftrapping-math gcc will not turn the
 * branch-free selects of cpu/vmath.h into vector blends (it may not evaluate a float
 * operation the scalar code would skip), so no loop here would vectorize.  These
 * kernels never rely on floating-point traps; results are unchanged. */
#pragma GCC optimize("no-trapping-math")
#include "cpu/pw_loops.h"
#include "cpu/vmath.h"

/* x Phi(x).  Doubles: PyTorch's 0.5 x (1 + erf(x / sqrt 2)).  Float32: 0.5 x erfc(-x /
 * sqrt 2), vectorized and without the cancellation of 1 + erf at negative x (where
 * PyTorch's float32 gelu is off by 4% at x = -5). */
static inline double gelu_d(double x) { return 0.5 * x * (1.0 + erf(x * M_SQRT1_2)); }
static inline float gelu_f(float x) { return 0.5f * x * ct_verfcf(-x * (float)M_SQRT1_2); }
#define GELU(T, x) _Generic((x), float: gelu_f, default: gelu_d)(x)
/* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
#define GELU_TANH(T, x) \
    ((T)0.5 * x * ((T)1 + CT_VTANH((T)0.7978845608028654 * (x + (T)0.044715 * x * x * x))))
/* min(max(x, lo), hi): every element is hi when lo > hi; NaN stays NaN (comparisons
 * with NaN are false). */
#define CLAMP(x, lo, hi, has_lo, has_hi)                                                 \
    ({                                                                                   \
        __typeof__(x) t_ = ((has_lo) && (x) < (lo)) ? (lo) : (x);                        \
        ((has_hi) && t_ > (hi)) ? (hi) : t_;                                             \
    })

/* Reads argument p->NAME unconditionally into a local: a load inside one arm of a
 * select keeps gcc from vectorizing. */
#define ARG(T, NAME, EXPR) ({ T NAME = (T)p->NAME; EXPR; })
#define NAN_TO_NUM(T, x)                                                                 \
    ({                                                                                   \
        T nan_ = (T)p->a, pos_ = (T)p->b, neg_ = (T)p->c;                                \
        x != x ? nan_ : (x == (T)INFINITY ? pos_ : (x == -(T)INFINITY ? neg_ : x));      \
    })

/* The float activations as ULOOP / BLOOP(name, T, expression): float32 and float64
 * compute in their own type; float16 and bfloat16 in float, converted in registers
 * (cpu/kernel_util.h), so they give the float32 kernel's result rounded once. */
#define FLOAT_OPS(ULOOP, BLOOP, T, SFX)                                                  \
    ULOOP(relu_##SFX, T, x > 0 ? x : (x != x ? x : (T)0))                                \
    BLOOP(threshold_backward_##SFX, T, ARG(T, a, y <= a ? (T)0 : x))                     \
    ULOOP(leaky_relu_##SFX, T, ARG(T, a, x > 0 ? x : x * a))                             \
    ULOOP(elu_##SFX, T, ARG(T, a, x > 0 ? x : a * (CT_VEXP(x) - (T)1)))                  \
    ULOOP(gelu_exact_##SFX, T, GELU(T, x))                                               \
    ULOOP(gelu_tanh_##SFX, T, GELU_TANH(T, x))                                           \
    ULOOP(silu_##SFX, T, x / ((T)1 + CT_VEXP(-x)))                                       \
    ULOOP(softplus_##SFX, T,                                                             \
                  x * (T)p->a > (T)p->b ? x : CT_MF(log1p, CT_VEXP(x * (T)p->a)) / (T)p->a) \
    ULOOP(hardtanh_##SFX, T, CLAMP(x, (T)p->a, (T)p->b, 1, 1))                           \
    ULOOP(clamp_##SFX, T, CLAMP(x, (T)p->a, (T)p->b, p->has_a, p->has_b))                \
    ULOOP(nan_to_num_##SFX, T, NAN_TO_NUM(T, x))                                         \
    static void gelu_##SFX(char **d, const int64_t *s, int64_t n, const void *ctx) {     \
        if (((const ct_pw_args *)ctx)->i) gelu_tanh_##SFX(d, s, n, ctx);                 \
        else gelu_exact_##SFX(d, s, n, ctx);                                             \
    }
#define SAME_U(NAME, T, EXPR) CT_UNARY_LOOP(NAME, T, T, EXPR)
#define SAME_B(NAME, T, EXPR) CT_BINARY_LOOP(NAME, T, T, EXPR)
#define U_f16(NAME, T, EXPR) CT_UNARY_LOOP_REDUCED(NAME, ct_half, EXPR)
#define U_bf16(NAME, T, EXPR) CT_UNARY_LOOP_REDUCED(NAME, ct_bf16, EXPR)
#define B_f16(NAME, T, EXPR) CT_BINARY_LOOP_REDUCED(NAME, ct_half, EXPR)
#define B_bf16(NAME, T, EXPR) CT_BINARY_LOOP_REDUCED(NAME, ct_bf16, EXPR)
#define FLOAT_KERNELS(DT, T, SFX) FLOAT_OPS(SAME_U, SAME_B, T, SFX)
#define REDUCED_KERNELS(DT, T, SFX) FLOAT_OPS(U_##SFX, B_##SFX, float, SFX)
CT_FLOAT_TYPES(FLOAT_KERNELS)
CT_REDUCED_TYPES(REDUCED_KERNELS)

/* Integer bounds were checked to fit the dtype by the op. */
#define INT_KERNELS(DT, T, SFX)                                                          \
    CT_UNARY_LOOP(relu_##SFX, T, T, x > 0 ? x : 0)                                       \
    CT_UNARY_LOOP(hardtanh_##SFX, T, T, CLAMP(x, (T)p->a, (T)p->b, 1, 1))                \
    CT_UNARY_LOOP(clamp_##SFX, T, T, CLAMP(x, (T)p->a, (T)p->b, p->has_a, p->has_b))     \
    CT_UNARY_LOOP(nan_to_num_##SFX, T, T, x)
CT_INT_TYPES(INT_KERNELS)
CT_UNARY_LOOP(nan_to_num_b8, bool, bool, x)

#define FLOAT_ENTRIES(DT, T, SFX)                                                        \
    CT_KERNEL(LOOP, CT_OP_relu, DT, relu_##SFX),                                         \
    CT_KERNEL(LOOP, CT_OP_threshold_backward, DT, threshold_backward_##SFX),             \
    CT_KERNEL(LOOP, CT_OP_leaky_relu, DT, leaky_relu_##SFX),                             \
    CT_KERNEL(LOOP, CT_OP_elu, DT, elu_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_gelu, DT, gelu_##SFX),                                         \
    CT_KERNEL(LOOP, CT_OP_silu, DT, silu_##SFX),                                         \
    CT_KERNEL(LOOP, CT_OP_softplus, DT, softplus_##SFX),                                 \
    CT_KERNEL(LOOP, CT_OP_hardtanh, DT, hardtanh_##SFX),                                 \
    CT_KERNEL(LOOP, CT_OP_clamp, DT, clamp_##SFX),                                       \
    CT_KERNEL(LOOP, CT_OP_nan_to_num, DT, nan_to_num_##SFX),
#define INT_ENTRIES(DT, T, SFX)                                                          \
    CT_KERNEL(LOOP, CT_OP_relu, DT, relu_##SFX),                                         \
    CT_KERNEL(LOOP, CT_OP_hardtanh, DT, hardtanh_##SFX),                                 \
    CT_KERNEL(LOOP, CT_OP_clamp, DT, clamp_##SFX),                                       \
    CT_KERNEL(LOOP, CT_OP_nan_to_num, DT, nan_to_num_##SFX),
const ct_kernel_entry ct_cpu_activation_kernels[] = {
    CT_FLOAT_TYPES(FLOAT_ENTRIES) CT_REDUCED_TYPES(FLOAT_ENTRIES) CT_INT_TYPES(INT_ENTRIES)
    CT_KERNEL(LOOP, CT_OP_nan_to_num, CT_BOOL, nan_to_num_b8),
    CT_KERNEL_END,
};
