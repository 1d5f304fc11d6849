/* The cpu backend's kernel tables, one per kernel family (src/cpu/<family>.c). */
#include "ops/op_table.h"

extern const ct_kernel_entry ct_cpu_binary_kernels[];
extern const ct_kernel_entry ct_cpu_unary_kernels[];
extern const ct_kernel_entry ct_cpu_fill_kernels[];
extern const ct_kernel_entry ct_cpu_reduce_sum_kernels[];
extern const ct_kernel_entry ct_cpu_gemm_kernels[];
extern const ct_kernel_entry ct_cpu_conv_kernels[];
extern const ct_kernel_entry ct_cpu_pool_kernels[];

const ct_kernel_entry *const ct_cpu_kernel_tables[] = {
    ct_cpu_binary_kernels,
    ct_cpu_unary_kernels,
    ct_cpu_fill_kernels,
    ct_cpu_reduce_sum_kernels,
    ct_cpu_gemm_kernels,
    ct_cpu_conv_kernels,
    ct_cpu_pool_kernels,
    NULL,
};
