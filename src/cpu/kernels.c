/* The cpu backend's kernel tables, one per kernel family (src/cpu/<family>.c). */
#include "ops/op_table.h"

extern const ct_kernel_entry ct_cpu_binary_kernels[];
extern const ct_kernel_entry ct_cpu_unary_kernels[];
extern const ct_kernel_entry ct_cpu_fill_kernels[];
extern const ct_kernel_entry ct_cpu_reduce_sum_kernels[];
extern const ct_kernel_entry ct_cpu_index_rows_kernels[];
extern const ct_kernel_entry ct_cpu_index_scatter_kernels[];
extern const ct_kernel_entry ct_cpu_index_sort_kernels[];

const ct_kernel_entry *const ct_cpu_kernel_tables[] = {
    ct_cpu_binary_kernels,
    ct_cpu_unary_kernels,
    ct_cpu_fill_kernels,
    ct_cpu_reduce_sum_kernels,
    ct_cpu_index_rows_kernels,
    ct_cpu_index_scatter_kernels,
    ct_cpu_index_sort_kernels,
    NULL,
};
