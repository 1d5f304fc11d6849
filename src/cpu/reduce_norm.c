/* Vector norms over [M1, R, M2]; ctx: ct_norm_kind.  float32 and float64 accumulate in
 * double; float16 and bfloat16 in float (ct_acc_type), each element widened in
 * registers (float16 rows a tile at a time) and the result rounded once. */
#include "cpu/reduce.h"

#define ADD_STEP(a, x) ((a) += (double)(x))
#define ABS_STEP(a, x) ((a) += fabs((double)(x)))
#define SQ_STEP(a, x) ((a) += (double)(x) * (double)(x))
#define NZ_STEP(a, x) ((a) += (x) != 0)
#define ADD_COMB(a, b) ((a) + (b))
#define AMAX_STEP(a, x) ((a) = CT_MAX_OF(a, fabs((double)(x))))
#define AMIN_STEP(a, x) ((a) = CT_MIN_OF(a, fabs((double)(x))))
#define MAX_COMB(a, b) CT_MAX_OF(a, b)
#define MIN_COMB(a, b) CT_MIN_OF(a, b)
#define SAME(a) (a)

#define NORM_KERNELS(DT, T, SFX)                                                         \
    CT_DEFINE_REDUCE(norm0_##SFX, T, double, T, 0, NZ_STEP, ADD_COMB, SAME)              \
    CT_DEFINE_REDUCE(norm1_##SFX, T, double, T, 0, ABS_STEP, ADD_COMB, SAME)             \
    CT_DEFINE_REDUCE(norm2_##SFX, T, double, T, 0, SQ_STEP, ADD_COMB, sqrt)              \
    CT_DEFINE_REDUCE(norminf_##SFX, T, double, T, 0, AMAX_STEP, MAX_COMB, SAME)          \
    CT_DEFINE_REDUCE(normninf_##SFX, T, double, T, INFINITY, AMIN_STEP, MIN_COMB, SAME)  \
    NORM_SWITCH(SFX)
/* norm_SFX: the kernel of the kind in ctx */
#define NORM_SWITCH(SFX)                                                                 \
    static void norm_##SFX(const char *in, char *out, int64_t M1, int64_t R, int64_t M2, \
                           const void *ctx) {                                            \
        switch (*(const ct_norm_kind *)ctx) {                                            \
        case CT_NORM_L0: norm0_##SFX(in, out, M1, R, M2, ctx); break;                    \
        case CT_NORM_L1: norm1_##SFX(in, out, M1, R, M2, ctx); break;                    \
        case CT_NORM_L2: norm2_##SFX(in, out, M1, R, M2, ctx); break;                    \
        case CT_NORM_LINF: norminf_##SFX(in, out, M1, R, M2, ctx); break;                \
        case CT_NORM_LNINF: normninf_##SFX(in, out, M1, R, M2, ctx); break;              \
        }                                                                                \
    }
CT_FLOAT_TYPES(NORM_KERNELS)

/* float16 / bfloat16: the float steps, and the element steps that widen first */
#define F_ABS(a, x) ((a) += fabsf(x))
#define F_SQ(a, x) ((a) += (x) * (x))
#define F_NZ(a, x) ((a) += (x) != 0)
#define F_AMAX(a, x) ((a) = CT_MAX_OF(a, fabsf(x)))
#define F_AMIN(a, x) ((a) = CT_MIN_OF(a, fabsf(x)))
#define R_ABS(a, x) F_ABS(a, CT_LOAD_REDUCED(x))
#define R_SQ(a, x) F_SQ(a, CT_LOAD_REDUCED(x))
#define R_NZ(a, x) F_NZ(a, CT_LOAD_REDUCED(x))
#define R_AMAX(a, x) F_AMAX(a, CT_LOAD_REDUCED(x))
#define R_AMIN(a, x) F_AMIN(a, CT_LOAD_REDUCED(x))
#define ROUND_f16(a) ct_float_to_half(a)
#define ROUND_bf16(a) ct_float_to_bf16(a)
#define SQRT_f16(a) ct_float_to_half(sqrtf(a))
#define SQRT_bf16(a) ct_float_to_bf16(sqrtf(a))
/* float16 rows widen by tiles (F16C); bfloat16's widening vectorizes element-wise */
#define NREDUCE_f16 CT_DEFINE_REDUCE_TILED
#define NREDUCE_bf16(NAME, T, ACC, TO, INIT, STEP, FSTEP, COMB, FIN)                     \
    CT_DEFINE_REDUCE(NAME, T, ACC, TO, INIT, STEP, COMB, FIN)
#define REDUCED_NORM_KERNELS(DT, T, SFX)                                                 \
    NREDUCE_##SFX(norm0_##SFX, T, float, T, 0, R_NZ, F_NZ, ADD_COMB, ROUND_##SFX)        \
    NREDUCE_##SFX(norm1_##SFX, T, float, T, 0, R_ABS, F_ABS, ADD_COMB, ROUND_##SFX)      \
    NREDUCE_##SFX(norm2_##SFX, T, float, T, 0, R_SQ, F_SQ, ADD_COMB, SQRT_##SFX)         \
    NREDUCE_##SFX(norminf_##SFX, T, float, T, 0, R_AMAX, F_AMAX, MAX_COMB, ROUND_##SFX)  \
    NREDUCE_##SFX(normninf_##SFX, T, float, T, INFINITY, R_AMIN, F_AMIN, MIN_COMB, ROUND_##SFX) \
    NORM_SWITCH(SFX)
CT_REDUCED_TYPES(REDUCED_NORM_KERNELS)

const ct_kernel_entry ct_cpu_reduce_norm_kernels[] = {
    CT_KERNEL(REDUCE, CT_OP_norm, CT_F32, norm_f32),
    CT_KERNEL(REDUCE, CT_OP_norm, CT_F64, norm_f64),
    CT_KERNEL(REDUCE, CT_OP_norm, CT_F16, norm_f16),
    CT_KERNEL(REDUCE, CT_OP_norm, CT_BF16, norm_bf16),
    CT_KERNEL_END,
};
