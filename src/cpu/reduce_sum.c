/* sum: floats accumulate in double, integers in int64, each row in a fixed order. */
#include <omp.h>
#include <stdlib.h>

#include "cpu/reduce.h"

#define SUM_ROW(NAME, T, ACC)                                                            \
    CT_SIMD static ACC NAME(const T *restrict x, int64_t n) {                            \
        ACC s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                              \
        int64_t i = 0;                                                                   \
        for (; i + 4 <= n; i += 4) {                                                     \
            s0 += (ACC)x[i];                                                             \
            s1 += (ACC)x[i + 1];                                                         \
            s2 += (ACC)x[i + 2];                                                         \
            s3 += (ACC)x[i + 3];                                                         \
        }                                                                                \
        for (; i < n; i++) s0 += (ACC)x[i];                                              \
        return (s0 + s1) + (s2 + s3);                                                    \
    }

/* Output dtype: floats keep theirs; integers and bool sum into int64. */
#define SUM_KERNEL(DT, T, SFX, ACC, TO)                                                  \
    SUM_ROW(sum_row_##SFX, T, ACC)                                                       \
    static void sum_##SFX(const char *in, char *out, int64_t M, int64_t R, const void *ctx) { \
        (void)ctx;                                                                       \
        const T *x = (const T *)in;                                                      \
        TO *o = (TO *)out;                                                               \
        int nt = ct_get_num_threads();                                                   \
        if (M >= nt || R < 2 * CT_REDUCE_CHUNK) {                                        \
            _Pragma("omp parallel for if (M * R >= CT_GRAIN && nt > 1) num_threads(nt)")  \
            for (int64_t m = 0; m < M; m++) o[m] = (TO)sum_row_##SFX(x + m * R, R);     \
            return;                                                                      \
        }                                                                                \
        /* Few long rows: fixed chunks in parallel, combined in order. */                \
        int64_t nc = (R + CT_REDUCE_CHUNK - 1) / CT_REDUCE_CHUNK;                        \
        ACC *part = malloc(sizeof(ACC) * (size_t)nc);                                    \
        if (!part) ct_fatal("out of memory in sum");                                     \
        for (int64_t m = 0; m < M; m++) {                                                \
            _Pragma("omp parallel for num_threads(nt)")                                  \
            for (int64_t c = 0; c < nc; c++) {                                           \
                int64_t b = c * CT_REDUCE_CHUNK, e = b + CT_REDUCE_CHUNK;                \
                part[c] = sum_row_##SFX(x + m * R + b, (e < R ? e : R) - b);             \
            }                                                                            \
            ACC s = 0;                                                                   \
            for (int64_t c = 0; c < nc; c++) s += part[c];                               \
            o[m] = (TO)s;                                                                \
        }                                                                                \
        free(part);                                                                      \
    }
SUM_KERNEL(CT_F32, float, f32, double, float)
SUM_KERNEL(CT_F64, double, f64, double, double)
SUM_KERNEL(CT_I64, int64_t, i64, int64_t, int64_t)
SUM_KERNEL(CT_I32, int32_t, i32, int64_t, int64_t)
SUM_KERNEL(CT_I16, int16_t, i16, int64_t, int64_t)
SUM_KERNEL(CT_U8, uint8_t, u8, int64_t, int64_t)
SUM_KERNEL(CT_I8, int8_t, i8, int64_t, int64_t)
SUM_KERNEL(CT_BOOL, bool, b8, int64_t, int64_t)

const ct_kernel_entry ct_cpu_reduce_sum_kernels[] = {
    {CT_OP_sum, CT_F32, (ct_kernel)sum_f32}, {CT_OP_sum, CT_F64, (ct_kernel)sum_f64},
    {CT_OP_sum, CT_I64, (ct_kernel)sum_i64}, {CT_OP_sum, CT_I32, (ct_kernel)sum_i32},
    {CT_OP_sum, CT_I16, (ct_kernel)sum_i16}, {CT_OP_sum, CT_U8, (ct_kernel)sum_u8},
    {CT_OP_sum, CT_I8, (ct_kernel)sum_i8},   {CT_OP_sum, CT_BOOL, (ct_kernel)sum_b8},
    {0, 0, NULL},
};
