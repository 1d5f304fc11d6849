/* Strided copy with dtype conversion: every (source, destination) dtype pair. */
#include "cpu/backend.h"
#include "cpu/iter.h"

/* Each dtype's value as a C arithmetic type, and back.  bfloat16 goes through float. */
#define AS_float(x) (x)
#define AS_double(x) (x)
#define AS_ct_half(x) (x)
#define AS_ct_bf16(x) ct_bf16_to_float(x)
#define AS_int64_t(x) (x)
#define AS_int32_t(x) (x)
#define AS_int16_t(x) (x)
#define AS_uint8_t(x) (x)
#define AS_int8_t(x) (x)
/* `bool` arrives either as written or expanded by stdbool.h to _Bool */
#define AS_bool(x) (x)
#define AS__Bool(x) (x)
#define TO_bool(v) ((bool)(v))
#define TO_float(v) ((float)(v))
#define TO_double(v) ((double)(v))
#define TO_ct_half(v) ((ct_half)(v))
#define TO_ct_bf16(v) ct_float_to_bf16((float)(v))
/* Floating sources go through ct_f64_to_i64 (Note [Float to integer]); integers
 * narrow by keeping their low bits. */
#define TO_INT(T, v) \
    _Generic((v), float: (T)ct_f64_to_i64(v), double: (T)ct_f64_to_i64(v), \
             ct_half: (T)ct_f64_to_i64(v), default: (T)(v))
#define TO_int64_t(v) TO_INT(int64_t, v)
#define TO_int32_t(v) TO_INT(int32_t, v)
#define TO_int16_t(v) TO_INT(int16_t, v)
#define TO_uint8_t(v) TO_INT(uint8_t, v)
#define TO_int8_t(v) TO_INT(int8_t, v)
#define TO__Bool(v) ((bool)(v))

/* data[0] is the destination (type D), data[1] the source (type S). */
#define CAST_LOOP(DT, D, ST, S)                                                          \
    static void cast_##D##_from_##S(char **data, const int64_t *st, int64_t n,           \
                                    const void *ctx) {                                   \
        (void)ctx;                                                                       \
        char *o = data[0];                                                               \
        const char *a = data[1];                                                         \
        if (st[0] == sizeof(D) && st[1] == sizeof(S)) {                                  \
            D *restrict od = (D *)o;                                                     \
            const S *restrict ad = (const S *)a;                                         \
            for (int64_t i = 0; i < n; i++) od[i] = TO_##D(AS_##S(ad[i]));               \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++)                                              \
                *(D *)(o + i * st[0]) = TO_##D(AS_##S(*(const S *)(a + i * st[1])));     \
        }                                                                                \
    }
#define CAST_FROM_ALL(DT, D) CT_FOREACH_DTYPE_2(CAST_LOOP, DT, D)
#define CT_FOREACH_DTYPE_2(M, DT, D)                                                     \
    M(DT, D, CT_F32, float) M(DT, D, CT_F64, double) M(DT, D, CT_F16, ct_half)           \
    M(DT, D, CT_BF16, ct_bf16) M(DT, D, CT_I64, int64_t) M(DT, D, CT_I32, int32_t)       \
    M(DT, D, CT_I16, int16_t) M(DT, D, CT_U8, uint8_t) M(DT, D, CT_I8, int8_t)           \
    M(DT, D, CT_BOOL, bool)
CT_FOREACH_DTYPE(CAST_FROM_ALL)

/* bfloat16 -> bfloat16 through float would quiet NaN payloads; copy bits instead. */
#define ENTRY(DT, D, ST, S) [DT][ST] = cast_##D##_from_##S,
#define ENTRIES_FROM_ALL(DT, D) CT_FOREACH_DTYPE_2(ENTRY, DT, D)
static const ct_loop_fn cast_table[CT_NUM_DTYPES][CT_NUM_DTYPES] = {CT_FOREACH_DTYPE(ENTRIES_FROM_ALL)};

/* Strided copies of 4- and 8-byte elements as typed loops: a broadcast source (stride
 * 0, e.g. sum's expanded gradient made contiguous) fills at memory speed. */
#define COPY_TYPED(U)                                                                    \
    if (es == sizeof(U)) {                                                               \
        for (int64_t i = 0; i < n; i++)                                                  \
            *(U *)(data[0] + i * st[0]) = *(const U *)(data[1] + i * st[1]);             \
        return;                                                                          \
    }
static void copy_bytes(char **data, const int64_t *st, int64_t n, const void *ctx) {
    size_t es = *(const size_t *)ctx;
    if (st[0] == (int64_t)es && st[1] == (int64_t)es) {
        memcpy(data[0], data[1], (size_t)n * es);
        return;
    }
    COPY_TYPED(uint32_t)
    COPY_TYPED(uint64_t)
    for (int64_t i = 0; i < n; i++) memcpy(data[0] + i * st[0], data[1] + i * st[1], es);
}

void ct_cpu_copy(ct_tensor *dst, const ct_tensor *src) {
    ct_iter it;
    ct_tensor *ops[2] = {dst, (ct_tensor *)src};
    ct_iter_init_addressable(&it, 2, ops, dst->ndim, dst->sizes);
    if (dst->dtype == src->dtype) {
        size_t es = ct_dtype_size(dst->dtype);
        ct_cpu_run_loop(&it, copy_bytes, &es);
    } else {
        ct_cpu_run_loop(&it, cast_table[dst->dtype][src->dtype], NULL);
    }
}
