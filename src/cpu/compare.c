/* Kernels of comparisons, logical ops, isnan/isinf/isfinite (bool outputs) and
 * maximum/minimum, for every dtype.  data: out, a, b (or out, x). */
#include "cpu/pw_loops.h"

/* NaN wins in maximum/minimum (x != x is false for integers). */
#define MAXIMUM(x, y) ((x) != (x) || (x) > (y) ? (x) : (y))
#define MINIMUM(x, y) ((x) != (x) || (x) < (y) ? (x) : (y))

#define KERNELS(DT, T, SFX)                                                              \
    CT_BINARY_LOOP(eq_##SFX, T, bool, x == y)                                            \
    CT_BINARY_LOOP(ne_##SFX, T, bool, x != y)                                            \
    CT_BINARY_LOOP(lt_##SFX, T, bool, x < y)                                             \
    CT_BINARY_LOOP(le_##SFX, T, bool, x <= y)                                            \
    CT_BINARY_LOOP(gt_##SFX, T, bool, x > y)                                             \
    CT_BINARY_LOOP(ge_##SFX, T, bool, x >= y)                                            \
    CT_BINARY_LOOP(logical_and_##SFX, T, bool, (x != 0) & (y != 0))                      \
    CT_BINARY_LOOP(logical_or_##SFX, T, bool, (x != 0) | (y != 0))                       \
    CT_BINARY_LOOP(logical_xor_##SFX, T, bool, (x != 0) ^ (y != 0))                      \
    CT_BINARY_LOOP(maximum_##SFX, T, T, MAXIMUM(x, y))                                   \
    CT_BINARY_LOOP(minimum_##SFX, T, T, MINIMUM(x, y))                                   \
    CT_UNARY_LOOP(logical_not_##SFX, T, bool, x == 0)
CT_FLOAT_TYPES(KERNELS)
CT_INT_TYPES(KERNELS)
CT_BOOL_TYPE(KERNELS)

/* float16 / bfloat16: elements widened in registers, compared as float; maximum and
 * minimum pick the float value of an element, which rounds back to itself. */
#define LD(x) CT_LOAD_REDUCED(x)
#define REDUCED_KERNELS(DT, T, SFX)                                                      \
    CT_BINARY_LOOP(eq_##SFX, T, bool, LD(x) == LD(y))                                    \
    CT_BINARY_LOOP(ne_##SFX, T, bool, LD(x) != LD(y))                                    \
    CT_BINARY_LOOP(lt_##SFX, T, bool, LD(x) < LD(y))                                     \
    CT_BINARY_LOOP(le_##SFX, T, bool, LD(x) <= LD(y))                                    \
    CT_BINARY_LOOP(gt_##SFX, T, bool, LD(x) > LD(y))                                     \
    CT_BINARY_LOOP(ge_##SFX, T, bool, LD(x) >= LD(y))                                    \
    CT_BINARY_LOOP(logical_and_##SFX, T, bool, (LD(x) != 0) & (LD(y) != 0))              \
    CT_BINARY_LOOP(logical_or_##SFX, T, bool, (LD(x) != 0) | (LD(y) != 0))               \
    CT_BINARY_LOOP(logical_xor_##SFX, T, bool, (LD(x) != 0) ^ (LD(y) != 0))              \
    CT_BINARY_LOOP_REDUCED(maximum_##SFX, T, MAXIMUM(x, y))                              \
    CT_BINARY_LOOP_REDUCED(minimum_##SFX, T, MINIMUM(x, y))                              \
    CT_UNARY_LOOP(logical_not_##SFX, T, bool, LD(x) == 0)                                \
    CT_UNARY_LOOP(isnan_##SFX, T, bool, LD(x) != LD(x))                                  \
    CT_UNARY_LOOP(isinf_##SFX, T, bool, fabsf(LD(x)) == INFINITY)                        \
    CT_UNARY_LOOP(isfinite_##SFX, T, bool, fabsf(LD(x)) < INFINITY)
CT_REDUCED_TYPES(REDUCED_KERNELS)

#define FLOAT_CLASS(DT, T, SFX)                                                          \
    CT_UNARY_LOOP(isnan_##SFX, T, bool, x != x)                                          \
    CT_UNARY_LOOP(isinf_##SFX, T, bool, CT_MF(fabs, x) == (T)INFINITY)                   \
    CT_UNARY_LOOP(isfinite_##SFX, T, bool, CT_MF(fabs, x) < (T)INFINITY)
CT_FLOAT_TYPES(FLOAT_CLASS)
#define INT_CLASS(DT, T, SFX)                                                            \
    CT_UNARY_LOOP(isnan_##SFX, T, bool, ((void)x, false))                                \
    CT_UNARY_LOOP(isinf_##SFX, T, bool, ((void)x, false))                                \
    CT_UNARY_LOOP(isfinite_##SFX, T, bool, ((void)x, true))
CT_INT_TYPES(INT_CLASS)
CT_BOOL_TYPE(INT_CLASS)

#define ENTRIES(DT, T, SFX)                                                              \
    CT_KERNEL(LOOP, CT_OP_eq, DT, eq_##SFX),                                             \
    CT_KERNEL(LOOP, CT_OP_ne, DT, ne_##SFX),                                             \
    CT_KERNEL(LOOP, CT_OP_lt, DT, lt_##SFX),                                             \
    CT_KERNEL(LOOP, CT_OP_le, DT, le_##SFX),                                             \
    CT_KERNEL(LOOP, CT_OP_gt, DT, gt_##SFX),                                             \
    CT_KERNEL(LOOP, CT_OP_ge, DT, ge_##SFX),                                             \
    CT_KERNEL(LOOP, CT_OP_logical_and, DT, logical_and_##SFX),                           \
    CT_KERNEL(LOOP, CT_OP_logical_or, DT, logical_or_##SFX),                             \
    CT_KERNEL(LOOP, CT_OP_logical_xor, DT, logical_xor_##SFX),                           \
    CT_KERNEL(LOOP, CT_OP_logical_not, DT, logical_not_##SFX),                           \
    CT_KERNEL(LOOP, CT_OP_maximum, DT, maximum_##SFX),                                   \
    CT_KERNEL(LOOP, CT_OP_minimum, DT, minimum_##SFX),                                   \
    CT_KERNEL(LOOP, CT_OP_isnan, DT, isnan_##SFX),                                       \
    CT_KERNEL(LOOP, CT_OP_isinf, DT, isinf_##SFX),                                       \
    CT_KERNEL(LOOP, CT_OP_isfinite, DT, isfinite_##SFX),
const ct_kernel_entry ct_cpu_compare_kernels[] = {
    CT_FLOAT_TYPES(ENTRIES) CT_REDUCED_TYPES(ENTRIES) CT_INT_TYPES(ENTRIES) CT_BOOL_TYPE(ENTRIES)
    CT_KERNEL_END,
};
