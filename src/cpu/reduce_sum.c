/* sum, mean and prod: floats accumulate in double, integers and bool in int64.
 * See Note [Fixed reduction order] in cpu/reduce.h. */
#include "cpu/reduce.h"

#define ADD_STEP(a, x) ((a) += (__typeof__(a))(x))
#define ADD_COMB(a, b) ((a) + (b))
#define MUL_STEP(a, x) ((a) *= (__typeof__(a))(x))
#define MUL_COMB(a, b) ((a) * (b))
#define SAME(a) (a)

/* Output dtype: floats keep theirs; integers and bool reduce into int64. */
#define ARITH_KERNELS(T, SFX, ACC, TO)                                                   \
    CT_DEFINE_REDUCE(sum_##SFX, T, ACC, TO, 0, ADD_STEP, ADD_COMB, SAME)                 \
    CT_DEFINE_REDUCE(prod_##SFX, T, ACC, TO, 1, MUL_STEP, MUL_COMB, SAME)
ARITH_KERNELS(float, f32, double, float)
ARITH_KERNELS(double, f64, double, double)
/* mean: the sum times ctx's 1 / R, in double before rounding. */
#define MEAN_FIN(a) ((a) * *(const double *)ctx)
CT_DEFINE_REDUCE(mean_f32, float, double, float, 0, ADD_STEP, ADD_COMB, MEAN_FIN)
CT_DEFINE_REDUCE(mean_f64, double, double, double, 0, ADD_STEP, ADD_COMB, MEAN_FIN)
/* Integers wrap around on overflow as in PyTorch: unsigned arithmetic makes that defined. */
ARITH_KERNELS(int64_t, i64, uint64_t, int64_t)
ARITH_KERNELS(int32_t, i32, uint64_t, int64_t)
ARITH_KERNELS(int16_t, i16, uint64_t, int64_t)
ARITH_KERNELS(uint8_t, u8, uint64_t, int64_t)
ARITH_KERNELS(int8_t, i8, uint64_t, int64_t)
ARITH_KERNELS(bool, b8, uint64_t, int64_t)

#define ENTRIES(DT, T, SFX) \
    CT_KERNEL(REDUCE, CT_OP_sum, DT, sum_##SFX),                                         \
    CT_KERNEL(REDUCE, CT_OP_prod, DT, prod_##SFX),
const ct_kernel_entry ct_cpu_reduce_sum_kernels[] = {
    CT_FLOAT_TYPES(ENTRIES) CT_INT_TYPES(ENTRIES) CT_BOOL_TYPE(ENTRIES)
    CT_KERNEL(REDUCE, CT_OP_mean, CT_F32, mean_f32),                                     \
    CT_KERNEL(REDUCE, CT_OP_mean, CT_F64, mean_f64),
    CT_KERNEL_END,
};
