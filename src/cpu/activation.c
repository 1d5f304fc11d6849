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

#define FLOAT_KERNELS(DT, T, SFX)                                                        \
    CT_UNARY_LOOP(relu_##SFX, T, T, x > 0 ? x : (x != x ? x : (T)0))                     \
    CT_BINARY_LOOP(threshold_backward_##SFX, T, T, ARG(T, a, y <= a ? (T)0 : x))          \
    CT_UNARY_LOOP(leaky_relu_##SFX, T, T, ARG(T, a, x > 0 ? x : x * a))                  \
    CT_UNARY_LOOP(elu_##SFX, T, T, ARG(T, a, x > 0 ? x : a * (CT_VEXP(x) - (T)1)))       \
    CT_UNARY_LOOP(gelu_exact_##SFX, T, T, GELU(T, x))                                    \
    CT_UNARY_LOOP(gelu_tanh_##SFX, T, T, GELU_TANH(T, x))                                \
    CT_UNARY_LOOP(silu_##SFX, T, T, x / ((T)1 + CT_VEXP(-x)))                            \
    CT_UNARY_LOOP(softplus_##SFX, T, T,                                                  \
                  x * (T)p->a > (T)p->b ? x : CT_MF(log1p, CT_VEXP(x * (T)p->a)) / (T)p->a) \
    CT_UNARY_LOOP(hardtanh_##SFX, T, T, CLAMP(x, (T)p->a, (T)p->b, 1, 1))                \
    CT_UNARY_LOOP(clamp_##SFX, T, T, CLAMP(x, (T)p->a, (T)p->b, p->has_a, p->has_b))     \
    CT_UNARY_LOOP(nan_to_num_##SFX, T, T, NAN_TO_NUM(T, x))                              \
    static void gelu_##SFX(char **d, const int64_t *s, int64_t n, const void *ctx) {     \
        if (((const ct_pw_args *)ctx)->i) gelu_tanh_##SFX(d, s, n, ctx);                 \
        else gelu_exact_##SFX(d, s, n, ctx);                                             \
    }
CT_FLOAT_TYPES(FLOAT_KERNELS)

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
    CT_FLOAT_TYPES(FLOAT_ENTRIES) CT_INT_TYPES(INT_ENTRIES)
    CT_KERNEL(LOOP, CT_OP_nan_to_num, CT_BOOL, nan_to_num_b8),
    CT_KERNEL_END,
};
