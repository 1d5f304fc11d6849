/* Kernels of pow: tensor ** tensor (data: out, x, e), tensor ** number and number **
 * tensor (data: out, x; ctx a = the number). */
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

/* Common exponents get exact, faster forms (as PyTorch's pow_tensor_scalar). */
#define FLOAT_KERNELS(DT, T, SFX)                                                        \
    CT_BINARY_LOOP(pow_##SFX, T, T, CT_MF2(pow, x, y))                                   \
    CT_UNARY_LOOP(pow_sq_##SFX, T, T, x * x)                                             \
    CT_UNARY_LOOP(pow_cube_##SFX, T, T, x * x * x)                                       \
    CT_UNARY_LOOP(pow_sqrt_##SFX, T, T, CT_MF(sqrt, x))                                  \
    CT_UNARY_LOOP(pow_rsqrt_##SFX, T, T, (T)1 / CT_MF(sqrt, x))                          \
    CT_UNARY_LOOP(pow_recip_##SFX, T, T, (T)1 / x)                                       \
    CT_UNARY_LOOP(pow_any_##SFX, T, T, CT_MF2(pow, x, (T)p->a))                          \
    CT_UNARY_LOOP(rpow_scalar_##SFX, T, T, CT_MF2(pow, (T)p->a, x))                      \
    static void pow_scalar_##SFX(char **d, const int64_t *s, int64_t n, const void *ctx) { \
        double e = ((const ct_pw_args *)ctx)->a;                                         \
        if (e == 2) pow_sq_##SFX(d, s, n, ctx);                                          \
        else if (e == 3) pow_cube_##SFX(d, s, n, ctx);                                   \
        else if (e == 0.5) pow_sqrt_##SFX(d, s, n, ctx);                                 \
        else if (e == -0.5) pow_rsqrt_##SFX(d, s, n, ctx);                               \
        else if (e == -1) pow_recip_##SFX(d, s, n, ctx);                                 \
        else pow_any_##SFX(d, s, n, ctx);                                                \
    }
CT_FLOAT_TYPES(FLOAT_KERNELS)

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
    CT_FLOAT_TYPES(ENTRIES) CT_INT_TYPES(ENTRIES)
    CT_KERNEL_END,
};
