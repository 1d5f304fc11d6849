/* Kernels of pow: tensor ** tensor (data: out, x, e), tensor ** number and number **
 * tensor (data: out, x; ctx a = the number).  float16 and bfloat16 compute in float,
 * converted in registers, and round once on the store. */
#include "cpu/pw_loops.h"

/* b ** e for integers, wrapping on overflow as PyTorch does (computed unsigned);
 * negative e: 1 / b truncated (0 unless b is 1 or -1). */
static inline int64_t ct_ipow(int64_t b, int64_t e) {
    if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);
    uint64_t r = 1, ub = (uint64_t)b;
    while (e) {
        if (e & 1) r *= ub;
        ub *= ub;
        e >>= 1;
    }
    return (int64_t)r;
}

/* The number as the kernel's dtype holds it: PyTorch converts the exponent of
 * tensor ** number, and the base of number ** tensor, to a reduced tensor's dtype
 * (through float, as its Scalar does) before computing in float. */
static inline double number_f32(double v) { return v; }
static inline double number_f64(double v) { return v; }
static inline double number_f16(double v) { return ct_half_to_float(ct_float_to_half((float)v)); }
static inline double number_bf16(double v) { return ct_bf16_to_float(ct_float_to_bf16((float)v)); }

/* The float forms, as LOOP(name, T, expression) with T the type computed in (float
 * for float16 and bfloat16).  Common exponents get exact, faster forms (as PyTorch's
 * pow_tensor_scalar).  The number of ctx has gone through number_<SFX> above. */
#define FLOAT_FORMS(BINARY, UNARY, T, SFX)                                               \
    BINARY(pow_##SFX, T, CT_MF2(pow, x, y))                                              \
    UNARY(pow_sq_##SFX, T, x * x)                                                        \
    UNARY(pow_cube_##SFX, T, x * x * x)                                                  \
    UNARY(pow_sqrt_##SFX, T, CT_MF(sqrt, x))                                             \
    UNARY(pow_rsqrt_##SFX, T, (T)1 / CT_MF(sqrt, x))                                     \
    UNARY(pow_recip_##SFX, T, (T)1 / x)                                                  \
    UNARY(pow_any_##SFX, T, CT_MF2(pow, x, (T)p->a))                                     \
    UNARY(rpow_any_##SFX, T, CT_MF2(pow, (T)p->a, x))                                    \
    static void pow_scalar_##SFX(char **d, const int64_t *s, int64_t n, const void *ctx) { \
        ct_pw_args q = *(const ct_pw_args *)ctx;                                         \
        double e = q.a = number_##SFX(q.a);                                              \
        if (e == 2) pow_sq_##SFX(d, s, n, &q);                                           \
        else if (e == 3) pow_cube_##SFX(d, s, n, &q);                                    \
        else if (e == 0.5) pow_sqrt_##SFX(d, s, n, &q);                                  \
        else if (e == -0.5) pow_rsqrt_##SFX(d, s, n, &q);                                \
        else if (e == -1) pow_recip_##SFX(d, s, n, &q);                                  \
        else pow_any_##SFX(d, s, n, &q);                                                 \
    }                                                                                    \
    static void rpow_scalar_##SFX(char **d, const int64_t *s, int64_t n, const void *ctx) { \
        ct_pw_args q = *(const ct_pw_args *)ctx;                                         \
        q.a = number_##SFX(q.a);                                                         \
        rpow_any_##SFX(d, s, n, &q);                                                     \
    }
#define BINARY_SAME(NAME, T, EXPR) CT_BINARY_LOOP(NAME, T, T, EXPR)
#define UNARY_SAME(NAME, T, EXPR) CT_UNARY_LOOP(NAME, T, T, EXPR)
#define BINARY_f16(NAME, T, EXPR) CT_BINARY_LOOP_REDUCED(NAME, ct_half, EXPR)
#define UNARY_f16(NAME, T, EXPR) CT_UNARY_LOOP_REDUCED(NAME, ct_half, EXPR)
#define BINARY_bf16(NAME, T, EXPR) CT_BINARY_LOOP_REDUCED(NAME, ct_bf16, EXPR)
#define UNARY_bf16(NAME, T, EXPR) CT_UNARY_LOOP_REDUCED(NAME, ct_bf16, EXPR)
#define FLOAT_KERNELS(DT, T, SFX) FLOAT_FORMS(BINARY_SAME, UNARY_SAME, T, SFX)
#define REDUCED_KERNELS(DT, T, SFX) FLOAT_FORMS(BINARY_##SFX, UNARY_##SFX, float, SFX)
CT_FLOAT_TYPES(FLOAT_KERNELS)
CT_REDUCED_TYPES(REDUCED_KERNELS)

#define INT_KERNELS(DT, T, SFX)                                                          \
    CT_BINARY_LOOP(pow_##SFX, T, T, ct_ipow(x, y))                                       \
    CT_UNARY_LOOP(pow_scalar_##SFX, T, T, ct_ipow(x, (int64_t)p->a))                     \
    CT_UNARY_LOOP(rpow_scalar_##SFX, T, T, ct_ipow((int64_t)p->a, x))
CT_INT_TYPES(INT_KERNELS)

#define ENTRIES(DT, T, SFX)                                                              \
    CT_KERNEL(LOOP, CT_OP_pow, DT, pow_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_pow_scalar, DT, pow_scalar_##SFX),                             \
    CT_KERNEL(LOOP, CT_OP_rpow_scalar, DT, rpow_scalar_##SFX),
const ct_kernel_entry ct_cpu_pow_kernels[] = {
    CT_FLOAT_TYPES(ENTRIES) CT_REDUCED_TYPES(ENTRIES) CT_INT_TYPES(ENTRIES)
    CT_KERNEL_END,
};
