/* Kernels of the unary pointwise ops.  data: out, x. */
#include "cpu/kernel_util.h"

#define FLOAT_KERNELS(DT, T, SFX)                                                        \
    CT_UNARY_LOOP(neg_##SFX, T, T, -x)                                                   \
    CT_UNARY_LOOP(exp_##SFX, T, T, exp(x))                                               \
    CT_UNARY_LOOP(log_##SFX, T, T, log(x))
CT_FLOAT_TYPES(FLOAT_KERNELS)
#define INT_KERNELS(DT, T, SFX) CT_UNARY_LOOP(neg_##SFX, T, T, -x)
CT_INT_TYPES(INT_KERNELS)

#define FLOAT_ENTRIES(DT, T, SFX)                                                        \
    {CT_OP_neg, DT, (ct_kernel)neg_##SFX}, {CT_OP_exp, DT, (ct_kernel)exp_##SFX},        \
        {CT_OP_log, DT, (ct_kernel)log_##SFX},
#define INT_ENTRIES(DT, T, SFX) {CT_OP_neg, DT, (ct_kernel)neg_##SFX},
const ct_kernel_entry ct_cpu_unary_kernels[] = {
    CT_FLOAT_TYPES(FLOAT_ENTRIES) CT_INT_TYPES(INT_ENTRIES){0, 0, NULL},
};
