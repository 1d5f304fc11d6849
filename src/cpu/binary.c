/* Kernels of the arithmetic binary ops.  data: out, a, b.  ctx: ct_pw_args with
 * alpha in a (floats) / i (integers); for div, i is the rounding mode. */
#include "cpu/kernel_util.h"

/* The float ops, as LOOP(name, T, expression): float32 and float64 compute in their
 * own type; float16 and bfloat16 in float, converted in registers. */
#define FLOAT_OPS(LOOP, T, SFX)                                                          \
    LOOP(add_##SFX, T, x + (T)p->a * y)                                                  \
    LOOP(sub_##SFX, T, x - (T)p->a * y)                                                  \
    LOOP(mul_##SFX, T, x * y)                                                            \
    LOOP(div_##SFX, T, x / y)                                                            \
    LOOP(div_trunc_##SFX, T, trunc(x / y))                                               \
    LOOP(div_floor_##SFX, T, ct_floor_div_f(x, y))
#define SAME_LOOP(NAME, T, EXPR) CT_BINARY_LOOP(NAME, T, T, EXPR)
#define LOOP_f16(NAME, T, EXPR) CT_BINARY_LOOP_REDUCED(NAME, ct_half, EXPR)
#define LOOP_bf16(NAME, T, EXPR) CT_BINARY_LOOP_REDUCED(NAME, ct_bf16, EXPR)
#define FLOAT_KERNELS(DT, T, SFX) FLOAT_OPS(SAME_LOOP, T, SFX)
#define REDUCED_KERNELS(DT, T, SFX) FLOAT_OPS(LOOP_##SFX, float, SFX)
/* Python's floor division for floats: floor of the exact quotient. */
static inline double ct_floor_div_f(double x, double y) {
    if (y == 0) return x / y;
    double mod = fmod(x, y), div = (x - mod) / y;
    if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1;
    double fl = floor(div);
    if (div - fl > 0.5) fl += 1;
    return div != 0 ? fl : copysign(0.0, x / y);
}
CT_FLOAT_TYPES(FLOAT_KERNELS)
CT_REDUCED_TYPES(REDUCED_KERNELS)

/* Integer division by zero is refused by the op before a kernel runs.  The one other
 * quotient that does not fit, INT64_MIN / -1, wraps around to INT64_MIN (two's
 * complement negation) instead of trapping: x86's idiv raises SIGFPE there, and
 * PyTorch 1.13 crashes.  Narrower types divide as int64 and wrap when stored, so
 * int32's INT32_MIN / -1 is INT32_MIN too. */
static inline int64_t ct_trunc_div_i(int64_t x, int64_t y) {
    return y == -1 ? (int64_t)(0 - (uint64_t)x) : x / y;
}
static inline int64_t ct_floor_div_i(int64_t x, int64_t y) {
    if (y == -1) return ct_trunc_div_i(x, y);
    int64_t q = x / y;
    return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}
#define INT_KERNELS(DT, T, SFX)                                                          \
    CT_BINARY_LOOP(add_##SFX, T, T, x + (T)p->i * y)                                     \
    CT_BINARY_LOOP(sub_##SFX, T, T, x - (T)p->i * y)                                     \
    CT_BINARY_LOOP(mul_##SFX, T, T, x * y)                                               \
    CT_BINARY_LOOP(div_trunc_##SFX, T, T, ct_trunc_div_i(x, y))                        \
    CT_BINARY_LOOP(div_floor_##SFX, T, T, ct_floor_div_i(x, y))
CT_INT_TYPES(INT_KERNELS)
CT_BINARY_LOOP(add_b8, bool, bool, x || (p->i && y))
CT_BINARY_LOOP(mul_b8, bool, bool, x && y)

/* One dispatcher per op picks the rounding-mode variant at run time. */
#define DIV_DISPATCH(DT, T, SFX)                                                         \
    static void div_any_##SFX(char **d, const int64_t *s, int64_t n, const void *ctx) {  \
        const ct_pw_args *p = ctx;                                                       \
        if (p->i == 1) div_trunc_##SFX(d, s, n, ctx);                                    \
        else div_floor_##SFX(d, s, n, ctx);                                              \
    }
CT_INT_TYPES(DIV_DISPATCH)
#define FLOAT_DIV_DISPATCH(DT, T, SFX)                                                   \
    static void div_any_##SFX(char **d, const int64_t *s, int64_t n, const void *ctx) {  \
        const ct_pw_args *p = ctx;                                                       \
        if (p->i == 0) div_##SFX(d, s, n, ctx);                                          \
        else if (p->i == 1) div_trunc_##SFX(d, s, n, ctx);                               \
        else div_floor_##SFX(d, s, n, ctx);                                              \
    }
CT_FLOAT_TYPES(FLOAT_DIV_DISPATCH)
CT_REDUCED_TYPES(FLOAT_DIV_DISPATCH)

#define ENTRIES(DT, T, SFX)                                                              \
    CT_KERNEL(LOOP, CT_OP_add, DT, add_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_sub, DT, sub_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_mul, DT, mul_##SFX),                                           \
    CT_KERNEL(LOOP, CT_OP_div, DT, div_any_##SFX),
const ct_kernel_entry ct_cpu_binary_kernels[] = {
    CT_FLOAT_TYPES(ENTRIES) CT_REDUCED_TYPES(ENTRIES) CT_INT_TYPES(ENTRIES)
    CT_KERNEL(LOOP, CT_OP_add, CT_BOOL, add_b8),
    CT_KERNEL(LOOP, CT_OP_mul, CT_BOOL, mul_b8),
    CT_KERNEL_END,
};
