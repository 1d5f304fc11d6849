/* The arithmetic of the reductions, called by the plugin's MPI ops on the
 * communication thread over raw contiguous buffers (Note [The MPI plugin]): MPI has no
 * bfloat16 or float16, and its float MAX and MIN do not propagate NaN as torch's do.
 * Reduced floats are combined in float and rounded at each step, as a sequence of
 * torch additions in that dtype would be; integers wrap; bool SUM/MAX are "or",
 * PRODUCT/MIN "and". */
#include "dist/dist_impl.h"
#include "core/dtype.h"

#define FLOAT_LOOP(T, load, store)                                                                 \
    do {                                                                                           \
        T *o = inout;                                                                              \
        const T *a = in;                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                          \
            float x = load(a[i]), y = load(o[i]), r;                                               \
            switch (op) {                                                                          \
            case CT_DIST_RED_SUM:                                                                  \
                r = x + y;                                                                         \
                break;                                                                             \
            case CT_DIST_RED_PROD:                                                                 \
                r = x * y;                                                                         \
                break;                                                                             \
            case CT_DIST_RED_MIN:                                                                  \
                r = x != x || y != y ? x + y : x < y ? x : y;                                      \
                break;                                                                             \
            default:                                                                               \
                r = x != x || y != y ? x + y : x > y ? x : y;                                      \
                break;                                                                             \
            }                                                                                      \
            o[i] = store(r);                                                                       \
        }                                                                                          \
    } while (0)

/* One loop per op, so that each vectorizes. */
#define NATIVE_LOOP(T)                                                                             \
    do {                                                                                           \
        T *o = inout;                                                                              \
        const T *a = in;                                                                           \
        switch (op) {                                                                              \
        case CT_DIST_RED_SUM:                                                                      \
            for (int64_t i = 0; i < n; i++) o[i] = a[i] + o[i];                                    \
            break;                                                                                 \
        case CT_DIST_RED_PROD:                                                                     \
            for (int64_t i = 0; i < n; i++) o[i] = a[i] * o[i];                                    \
            break;                                                                                 \
        case CT_DIST_RED_MIN:                                                                      \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T x = a[i], y = o[i];                                                              \
                o[i] = x != x || y != y ? x + y : x < y ? x : y;                                   \
            }                                                                                      \
            break;                                                                                 \
        default:                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T x = a[i], y = o[i];                                                              \
                o[i] = x != x || y != y ? x + y : x > y ? x : y;                                   \
            }                                                                                      \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

/* Wrapping integer arithmetic (through the unsigned type: signed overflow is undefined). */
#define INT_LOOP(T, U)                                                                             \
    do {                                                                                           \
        T *o = inout;                                                                              \
        const T *a = in;                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T x = a[i], y = o[i];                                                                  \
            switch (op) {                                                                          \
            case CT_DIST_RED_SUM:                                                                  \
                o[i] = (T)((U)x + (U)y);                                                           \
                break;                                                                             \
            case CT_DIST_RED_PROD:                                                                 \
                o[i] = (T)((U)x * (U)y);                                                           \
                break;                                                                             \
            case CT_DIST_RED_MIN:                                                                  \
                o[i] = x < y ? x : y;                                                              \
                break;                                                                             \
            default:                                                                               \
                o[i] = x > y ? x : y;                                                              \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static float bf16_load(ct_bf16 v) { return ct_bf16_to_float(v); }
static float half_load(ct_half v) { return (float)v; }

void ct_dist_combine(void *inout, const void *in, int64_t n, int dtype, ct_dist_red op) {
    switch ((ct_dtype)dtype) {
    case CT_F32:
        NATIVE_LOOP(float);
        break;
    case CT_F64:
        NATIVE_LOOP(double);
        break;
    case CT_F16:
        FLOAT_LOOP(ct_half, half_load, ct_float_to_half);
        break;
    case CT_BF16:
        FLOAT_LOOP(ct_bf16, bf16_load, ct_float_to_bf16);
        break;
    case CT_I64:
        INT_LOOP(int64_t, uint64_t);
        break;
    case CT_I32:
        INT_LOOP(int32_t, uint32_t);
        break;
    case CT_I16:
        INT_LOOP(int16_t, uint16_t);
        break;
    case CT_I8:
        INT_LOOP(int8_t, uint8_t);
        break;
    case CT_U8:
        INT_LOOP(uint8_t, uint8_t);
        break;
    case CT_BOOL: {
        bool *o = inout;
        const bool *a = in;
        bool any = op == CT_DIST_RED_SUM || op == CT_DIST_RED_MAX;
        for (int64_t i = 0; i < n; i++) o[i] = any ? (a[i] || o[i]) : (a[i] && o[i]);
        break;
    }
    default:
        break;
    }
}

void ct_dist_divide(void *buf, int64_t n, int dtype, int by) {
    switch ((ct_dtype)dtype) {
    case CT_F32:
        for (int64_t i = 0; i < n; i++) ((float *)buf)[i] /= (float)by;
        break;
    case CT_F64:
        for (int64_t i = 0; i < n; i++) ((double *)buf)[i] /= by;
        break;
    case CT_F16:
        for (int64_t i = 0; i < n; i++)
            ((ct_half *)buf)[i] = ct_float_to_half((float)((ct_half *)buf)[i] / by);
        break;
    case CT_BF16:
        for (int64_t i = 0; i < n; i++)
            ((ct_bf16 *)buf)[i] = ct_float_to_bf16(ct_bf16_to_float(((ct_bf16 *)buf)[i]) / by);
        break;
    default:
        break;
    }
}
