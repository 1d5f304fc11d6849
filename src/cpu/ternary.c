/* Kernels of where, lerp, clamp with tensor bounds.  data: out, then the inputs in
 * the op's order (where: cond, a, b; lerp: start, end[, weight]; clamp: x, min, max).
 * float16 and bfloat16: lerp and clamp compute in float, converted in registers (a
 * clamp's result is one of its operands, so rounding it back is exact); where moves
 * the elements' bits unchanged, with int16's kernel. */
#include "cpu/pw_loops.h"

/* PyTorch's lerp: exact at both ends (w == 0 gives start, w == 1 gives end). */
#define LERP(s, e, w) \
    ((w) < (__typeof__(w))0.5 && (w) > -(__typeof__(w))0.5 ? (s) + (w) * ((e) - (s)) \
                                                          : (e) - ((e) - (s)) * (1 - (w)))
/* min(max(x, lo), hi) with NaN bounds propagating, as PyTorch's clamp.Tensor. */
#define CLAMP_T(x, lo, hi)                                                               \
    ({                                                                                   \
        __typeof__(x) t_ = ((lo) != (lo) || (x) < (lo)) ? (lo) : (x);                    \
        ((hi) != (hi) || t_ > (hi)) ? (hi) : t_;                                         \
    })

#define ALL_KERNELS(DT, T, SFX)                                                          \
    CT_TERNARY_LOOP(where_##SFX, bool, T, T, c ? x : y)                                  \
    CT_TERNARY_LOOP(clamp_tensor_##SFX, T, T, T, CLAMP_T(c, x, y))
CT_FLOAT_TYPES(ALL_KERNELS)
CT_INT_TYPES(ALL_KERNELS)
CT_BOOL_TYPE(ALL_KERNELS)

#define FLOAT_KERNELS(DT, T, SFX)                                                        \
    CT_BINARY_LOOP(lerp_##SFX, T, T, LERP(x, y, (T)p->a))                                \
    CT_TERNARY_LOOP(lerp_tensor_##SFX, T, T, T, LERP(c, x, y))
CT_FLOAT_TYPES(FLOAT_KERNELS)

/* The weight of lerp is a float, as in PyTorch's reduced lerp. */
#define REDUCED_KERNELS(DT, T, SFX)                                                      \
    CT_BINARY_LOOP_REDUCED(lerp_##SFX, T, LERP(x, y, (float)p->a))                       \
    CT_TERNARY_LOOP_REDUCED(lerp_tensor_##SFX, T, LERP(c, x, y))                         \
    CT_TERNARY_LOOP_REDUCED(clamp_tensor_##SFX, T, CLAMP_T(c, x, y))
CT_REDUCED_TYPES(REDUCED_KERNELS)

#define ALL_ENTRIES(DT, T, SFX)                                                          \
    CT_KERNEL(LOOP, CT_OP_where, DT, where_##SFX),                                       \
    CT_KERNEL(LOOP, CT_OP_clamp_tensor, DT, clamp_tensor_##SFX),
#define FLOAT_ENTRIES(DT, T, SFX)                                                        \
    CT_KERNEL(LOOP, CT_OP_lerp, DT, lerp_##SFX),                                         \
    CT_KERNEL(LOOP, CT_OP_lerp_tensor, DT, lerp_tensor_##SFX),
#define REDUCED_ENTRIES(DT, T, SFX)                                                      \
    CT_KERNEL(LOOP, CT_OP_where, DT, where_i16),                                         \
    CT_KERNEL(LOOP, CT_OP_clamp_tensor, DT, clamp_tensor_##SFX),                         \
    FLOAT_ENTRIES(DT, T, SFX)
const ct_kernel_entry ct_cpu_ternary_kernels[] = {
    CT_FLOAT_TYPES(ALL_ENTRIES) CT_INT_TYPES(ALL_ENTRIES) CT_BOOL_TYPE(ALL_ENTRIES)
    CT_FLOAT_TYPES(FLOAT_ENTRIES) CT_REDUCED_TYPES(REDUCED_ENTRIES)
    CT_KERNEL_END,
};
