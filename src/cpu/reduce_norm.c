/* Vector norms over [M1, R, M2] (floats, double accumulators); ctx: ct_norm_kind. */
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

const ct_kernel_entry ct_cpu_reduce_norm_kernels[] = {
    CT_KERNEL(REDUCE, CT_OP_norm, CT_F32, norm_f32),
    CT_KERNEL(REDUCE, CT_OP_norm, CT_F64, norm_f64),
    CT_KERNEL_END,
};
