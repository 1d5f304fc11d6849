/* amax, amin, all, any, and the value+index reductions behind max/min along a dim
 * and argmax/argmin.  See Note [Fixed reduction order] in cpu/reduce.h. */
#include <float.h>

#include "cpu/reduce.h"

#define MAX_STEP(a, x) ((a) = CT_MAX_OF(a, x))
#define MIN_STEP(a, x) ((a) = CT_MIN_OF(a, x))
#define MAX_COMB(a, b) CT_MAX_OF(a, b)
#define MIN_COMB(a, b) CT_MIN_OF(a, b)
#define ALL_STEP(a, x) ((a) = (a) & ((x) != 0))
#define ANY_STEP(a, x) ((a) = (a) | ((x) != 0))
#define AND_COMB(a, b) ((a) & (b))
#define OR_COMB(a, b) ((a) | (b))
#define SAME(a) (a)

/* The identities of max and min per type: X(DT, T, SFX, lowest, highest). */
#define MINMAX_TYPES(X)                                                                  \
    X(CT_F32, float, f32, -INFINITY, INFINITY) X(CT_F64, double, f64, -INFINITY, INFINITY) \
    INT_TYPES(X)
#define INT_TYPES(X)                                                                     \
    X(CT_I64, int64_t, i64, INT64_MIN, INT64_MAX)                                        \
    X(CT_I32, int32_t, i32, INT32_MIN, INT32_MAX)                                        \
    X(CT_I16, int16_t, i16, INT16_MIN, INT16_MAX) X(CT_U8, uint8_t, u8, 0, UINT8_MAX)    \
    X(CT_I8, int8_t, i8, INT8_MIN, INT8_MAX) X(CT_BOOL, bool, b8, false, true)

/* y is a better max than best: larger, or the first NaN (NaN propagates). */
#define ARG_BETTER_MAX(y, best) ((y) > (best) || ((y) != (y) && (best) == (best)))
#define ARG_BETTER_MIN(y, best) ((y) < (best) || ((y) != (y) && (best) == (best)))

/* Values (may be NULL) and int64 index of the first max / min of each of the M1*M2
 * outputs; R > 0. */
#define ARG_KERNEL(NAME, T, BETTER) ARG_KERNEL_AS(NAME, T, T, SAME, BETTER)
/* ... comparing elements as AT, read by LOAD (float16 / bfloat16: widened to float;
 * the value stored is the element itself). */
#define ARG_KERNEL_AS(NAME, T, AT, LOAD, BETTER)                                         \
    static void NAME(const char *in, char *vals, int64_t *idx, int64_t M1, int64_t R,    \
                     int64_t M2) {                                                       \
        const T *x = (const T *)in;                                                      \
        T *v = (T *)vals;                                                                \
        int nt = ct_get_num_threads();                                                   \
        _Pragma("omp parallel for if (M1 * R * M2 >= CT_GRAIN && nt > 1) num_threads(nt)") \
        for (int64_t k = 0; k < M1 * M2; k++) {                                          \
            const T *p = x + (k / M2) * R * M2 + k % M2;                                 \
            AT best = LOAD(p[0]);                                                        \
            int64_t bi = 0;                                                              \
            for (int64_t r = 1; r < R; r++) {                                            \
                AT y = LOAD(p[r * M2]);                                                  \
                if (BETTER(y, best)) {                                                   \
                    best = y;                                                            \
                    bi = r;                                                              \
                }                                                                        \
            }                                                                            \
            if (v) v[k] = p[bi * M2];                                                    \
            idx[k] = bi;                                                                 \
        }                                                                                \
    }

/* Floats take the vectorized chunks; integers the generic lanes. */
#define FLOAT_CHUNKS(T, SFX, IT)                                                         \
    CT_DEFINE_EXTREME_CHUNK(amax_##SFX, T, IT, -INFINITY, >)                             \
    CT_DEFINE_EXTREME_CHUNK(amin_##SFX, T, IT, INFINITY, <)
FLOAT_CHUNKS(float, f32, int32_t)
FLOAT_CHUNKS(double, f64, int64_t)
#define INT_CHUNKS(DT, T, SFX, LO, HI)                                                   \
    CT_DEFINE_REDUCE_CHUNK(amax_##SFX, T, T, LO, MAX_STEP, MAX_COMB)                     \
    CT_DEFINE_REDUCE_CHUNK(amin_##SFX, T, T, HI, MIN_STEP, MIN_COMB)
INT_TYPES(INT_CHUNKS)

#define KERNELS(DT, T, SFX, LO, HI)                                                          \
    CT_DEFINE_REDUCE_DRIVER(amax_##SFX, T, T, T, LO, MAX_STEP, MAX_COMB, SAME)           \
    CT_DEFINE_REDUCE_DRIVER(amin_##SFX, T, T, T, HI, MIN_STEP, MIN_COMB, SAME)           \
    CT_DEFINE_REDUCE(all_##SFX, T, bool, bool, true, ALL_STEP, AND_COMB, SAME)           \
    CT_DEFINE_REDUCE(any_##SFX, T, bool, bool, false, ANY_STEP, OR_COMB, SAME)           \
    ARG_KERNEL(max_dim_##SFX, T, ARG_BETTER_MAX)                                         \
    ARG_KERNEL(min_dim_##SFX, T, ARG_BETTER_MIN)
MINMAX_TYPES(KERNELS)

/* float16 / bfloat16: elements widened in registers, compared in float; max and min
 * return an element itself (FIN rounds exactly). */
#define R_MAX_STEP(a, x) MAX_STEP(a, CT_LOAD_REDUCED(x))
#define R_MIN_STEP(a, x) MIN_STEP(a, CT_LOAD_REDUCED(x))
#define R_ALL_STEP(a, x) ALL_STEP(a, CT_LOAD_REDUCED(x))
#define R_ANY_STEP(a, x) ANY_STEP(a, CT_LOAD_REDUCED(x))
#define REDUCED_KERNELS(DT, T, SFX)                                                      \
    CT_DEFINE_REDUCE(amax_##SFX, T, float, T, -INFINITY, R_MAX_STEP, MAX_COMB, FIN_##SFX) \
    CT_DEFINE_REDUCE(amin_##SFX, T, float, T, INFINITY, R_MIN_STEP, MIN_COMB, FIN_##SFX) \
    CT_DEFINE_REDUCE(all_##SFX, T, bool, bool, true, R_ALL_STEP, AND_COMB, SAME)         \
    CT_DEFINE_REDUCE(any_##SFX, T, bool, bool, false, R_ANY_STEP, OR_COMB, SAME)         \
    ARG_KERNEL_AS(max_dim_##SFX, T, float, CT_LOAD_REDUCED, ARG_BETTER_MAX)              \
    ARG_KERNEL_AS(min_dim_##SFX, T, float, CT_LOAD_REDUCED, ARG_BETTER_MIN)
#define FIN_f16(a) ct_float_to_half(a)
#define FIN_bf16(a) ct_float_to_bf16(a)
CT_REDUCED_TYPES(REDUCED_KERNELS)

#define ENTRIES(DT, T, SFX, LO, HI)                                                          \
    CT_KERNEL(REDUCE, CT_OP_amax, DT, amax_##SFX),                                       \
    CT_KERNEL(REDUCE, CT_OP_amin, DT, amin_##SFX),                                       \
    CT_KERNEL(REDUCE, CT_OP_all, DT, all_##SFX),                                         \
    CT_KERNEL(REDUCE, CT_OP_any, DT, any_##SFX),                                         \
    CT_KERNEL(ARGREDUCE, CT_OP_max_dim, DT, max_dim_##SFX),                              \
    CT_KERNEL(ARGREDUCE, CT_OP_min_dim, DT, min_dim_##SFX),
#define REDUCED_ENTRIES(DT, T, SFX) ENTRIES(DT, T, SFX, , )
const ct_kernel_entry ct_cpu_reduce_minmax_kernels[] = {
    MINMAX_TYPES(ENTRIES) CT_REDUCED_TYPES(REDUCED_ENTRIES)
    CT_KERNEL_END,
};
