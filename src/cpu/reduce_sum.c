/* sum, mean and prod, accumulating in ct_acc_type (ops/dtype_policy.h): float32 and
 * float64 in double; float16 and bfloat16 in float, each element widened in
 * registers and the result rounded once; integers and bool in int64.
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
/* float16 / bfloat16: STEP widens the element; FIN rounds the float result. */
#define ADD_STEP_R(a, x) ((a) += CT_LOAD_REDUCED(x))
#define MUL_STEP_R(a, x) ((a) *= CT_LOAD_REDUCED(x))
#define REDUCED_KERNELS(DT, T, SFX)                                                      \
    REDUCE_##SFX(sum_##SFX, T, float, T, 0, ADD_STEP_R, ADD_STEP, ADD_COMB, FIN_##SFX)   \
    REDUCE_##SFX(prod_##SFX, T, float, T, 1, MUL_STEP_R, MUL_STEP, MUL_COMB, FIN_##SFX)  \
    REDUCE_##SFX(mean_##SFX, T, float, T, 0, ADD_STEP_R, ADD_STEP, ADD_COMB, MEAN_FIN_##SFX)
/* float16 rows widen by tiles (F16C); bfloat16's widening vectorizes element-wise. */
#define REDUCE_f16 CT_DEFINE_REDUCE_TILED
#define REDUCE_bf16(NAME, T, ACC, TO, INIT, STEP, FSTEP, COMB, FIN)                      \
    CT_DEFINE_REDUCE(NAME, T, ACC, TO, INIT, STEP, COMB, FIN)
#define FIN_f16(a) ct_float_to_half(a)
#define FIN_bf16(a) ct_float_to_bf16(a)
#define MEAN_FIN_f16(a) ct_float_to_half((float)((a) * *(const double *)ctx))
#define MEAN_FIN_bf16(a) ct_float_to_bf16((float)((a) * *(const double *)ctx))
CT_REDUCED_TYPES(REDUCED_KERNELS)
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
    CT_FLOAT_TYPES(ENTRIES) CT_REDUCED_TYPES(ENTRIES) CT_INT_TYPES(ENTRIES) CT_BOOL_TYPE(ENTRIES)
    CT_KERNEL(REDUCE, CT_OP_mean, CT_F32, mean_f32),
    CT_KERNEL(REDUCE, CT_OP_mean, CT_F64, mean_f64),
    CT_KERNEL(REDUCE, CT_OP_mean, CT_F16, mean_f16),
    CT_KERNEL(REDUCE, CT_OP_mean, CT_BF16, mean_bf16),
    CT_KERNEL_END,
};
