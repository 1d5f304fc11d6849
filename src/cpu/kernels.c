/* The cpu backend's kernel tables, one per kernel family (src/cpu/<family>.c). */
#include "cpu/backend.h"

extern const ct_kernel_entry ct_cpu_binary_kernels[];
extern const ct_kernel_entry ct_cpu_unary_kernels[];
extern const ct_kernel_entry ct_cpu_reduce_sum_kernels[];
extern const ct_kernel_entry ct_cpu_optim_kernels[];
extern const ct_kernel_entry ct_cpu_amp_kernels[];
extern const ct_kernel_entry ct_cpu_activation_kernels[];
extern const ct_kernel_entry ct_cpu_compare_kernels[];
extern const ct_kernel_entry ct_cpu_ternary_kernels[];
extern const ct_kernel_entry ct_cpu_pow_kernels[];
extern const ct_kernel_entry ct_cpu_reduce_minmax_kernels[];
extern const ct_kernel_entry ct_cpu_reduce_norm_kernels[];
extern const ct_kernel_entry ct_cpu_reduce_mask_kernels[];
extern const ct_kernel_entry ct_cpu_scan_kernels[];
extern const ct_kernel_entry ct_cpu_softmax_kernels[];
extern const ct_kernel_entry ct_cpu_softmax_reduced_kernels[];
extern const ct_kernel_entry ct_cpu_gemm_kernels[];
extern const ct_kernel_entry ct_cpu_gemm_reduced_kernels[];
extern const ct_kernel_entry ct_cpu_conv_kernels[];
extern const ct_kernel_entry ct_cpu_conv_reduced_kernels[];
extern const ct_kernel_entry ct_cpu_random_kernels[];
extern const ct_kernel_entry ct_cpu_range_kernels[];
extern const ct_kernel_entry ct_cpu_shape_kernels[];
extern const ct_kernel_entry ct_cpu_index_rows_kernels[];
extern const ct_kernel_entry ct_cpu_index_scatter_kernels[];
extern const ct_kernel_entry ct_cpu_index_sort_kernels[];
extern const ct_kernel_entry ct_cpu_loss_kernels[];
extern const ct_kernel_entry ct_cpu_pool_kernels[];
extern const ct_kernel_entry ct_cpu_norm_kernels[];
extern const ct_kernel_entry ct_cpu_norm_reduced_kernels[];
extern const ct_kernel_entry ct_cpu_rnn_cell_kernels[];

const ct_kernel_entry *const ct_cpu_kernel_tables[] = {
    ct_cpu_binary_kernels,
    ct_cpu_unary_kernels,
    ct_cpu_reduce_sum_kernels,
    ct_cpu_optim_kernels,
    ct_cpu_amp_kernels,
    ct_cpu_activation_kernels,
    ct_cpu_compare_kernels,
    ct_cpu_ternary_kernels,
    ct_cpu_pow_kernels,
    ct_cpu_reduce_minmax_kernels,
    ct_cpu_reduce_norm_kernels,
    ct_cpu_reduce_mask_kernels,
    ct_cpu_scan_kernels,
    ct_cpu_softmax_kernels,
    ct_cpu_softmax_reduced_kernels,
    ct_cpu_gemm_kernels,
    ct_cpu_gemm_reduced_kernels,
    ct_cpu_conv_kernels,
    ct_cpu_conv_reduced_kernels,
    ct_cpu_random_kernels,
    ct_cpu_range_kernels,
    ct_cpu_shape_kernels,
    ct_cpu_index_rows_kernels,
    ct_cpu_index_scatter_kernels,
    ct_cpu_index_sort_kernels,
    ct_cpu_loss_kernels,
    ct_cpu_pool_kernels,
    ct_cpu_norm_kernels,
    ct_cpu_norm_reduced_kernels,
    ct_cpu_rnn_cell_kernels,
    NULL,
};
