/* reduce_mask: the constant masks of reduction gradients (ties of amax, the sign for
 * norms, zeros); out = a float 0/1 (or sign) in a's dtype.  ctx: ct_pw_args, i = kind. */
#include "cpu/kernel_util.h"
#include "kernels/reduce_mask.h"

#define MASK_EXPR(x, y)                                                                  \
    (p->i == CT_MASK_EQ       ? (x) == (y)                                               \
     : p->i == CT_MASK_ABS_EQ ? fabs((double)(x)) == (y)                                 \
                              : ((x) > 0) - ((x) < 0))
#define MASK_KERNELS(DT, T, SFX) CT_BINARY_LOOP(mask_##SFX, T, T, MASK_EXPR(x, y))
CT_FLOAT_TYPES(MASK_KERNELS)

const ct_kernel_entry ct_cpu_reduce_mask_kernels[] = {
    CT_KERNEL(LOOP, CT_OP_reduce_mask, CT_F32, mask_f32),
    CT_KERNEL(LOOP, CT_OP_reduce_mask, CT_F64, mask_f64),
    CT_KERNEL_END,
};
