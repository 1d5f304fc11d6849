/* Per-dtype arithmetic of the indexing kernels: accumulation (d + alpha * s) and sort
 * keys.  float16/bfloat16 compute in float32; integers use the integer alpha; bool
 * accumulation is a logical or, as in PyTorch. */
#ifndef CT_CPU_INDEX_TYPES_H
#define CT_CPU_INDEX_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"

/* X(dtype enum, C type, suffix) over every dtype. */
#define CT_IDX_FOREACH(X)                                                                \
    X(CT_F32, float, f32) X(CT_F64, double, f64) X(CT_F16, ct_half, f16)                 \
    X(CT_BF16, ct_bf16, bf16) X(CT_I64, int64_t, i64) X(CT_I32, int32_t, i32)            \
    X(CT_I16, int16_t, i16) X(CT_U8, uint8_t, u8) X(CT_I8, int8_t, i8) X(CT_BOOL, bool, b8)

/* d + alpha * s in the element type. */
#define CT_IDX_ADD_f32(d, s, a, ia) ((float)((d) + (float)(a) * (s)))
#define CT_IDX_ADD_f64(d, s, a, ia) ((d) + (a) * (s))
#define CT_IDX_ADD_f16(d, s, a, ia) ((ct_half)((float)(d) + (float)(a) * (float)(s)))
#define CT_IDX_ADD_bf16(d, s, a, ia) \
    ct_float_to_bf16(ct_bf16_to_float(d) + (float)(a) * ct_bf16_to_float(s))
#define CT_IDX_ADD_INT_(T, d, s, ia) ((T)((uint64_t)(d) + (uint64_t)(ia) * (uint64_t)(s)))
#define CT_IDX_ADD_i64(d, s, a, ia) CT_IDX_ADD_INT_(int64_t, d, s, ia)
#define CT_IDX_ADD_i32(d, s, a, ia) CT_IDX_ADD_INT_(int32_t, d, s, ia)
#define CT_IDX_ADD_i16(d, s, a, ia) CT_IDX_ADD_INT_(int16_t, d, s, ia)
#define CT_IDX_ADD_u8(d, s, a, ia) CT_IDX_ADD_INT_(uint8_t, d, s, ia)
#define CT_IDX_ADD_i8(d, s, a, ia) CT_IDX_ADD_INT_(int8_t, d, s, ia)
#define CT_IDX_ADD_b8(d, s, a, ia) ((d) || ((ia) && (s)))

/* Sort keys: the type compared and how an element becomes one. */
#define CT_IDX_KEY_f32 float
#define CT_IDX_KEY_f64 double
#define CT_IDX_KEY_f16 float
#define CT_IDX_KEY_bf16 float
#define CT_IDX_KEY_i64 int64_t
#define CT_IDX_KEY_i32 int32_t
#define CT_IDX_KEY_i16 int16_t
#define CT_IDX_KEY_u8 uint8_t
#define CT_IDX_KEY_i8 int8_t
#define CT_IDX_KEY_b8 uint8_t
#define CT_IDX_TOKEY_bf16(x) ct_bf16_to_float(x)
#define CT_IDX_TOKEY_f16(x) ((float)(x))
#define CT_IDX_TOKEY_f32(x) (x)
#define CT_IDX_TOKEY_f64(x) (x)
#define CT_IDX_TOKEY_i64(x) (x)
#define CT_IDX_TOKEY_i32(x) (x)
#define CT_IDX_TOKEY_i16(x) (x)
#define CT_IDX_TOKEY_u8(x) (x)
#define CT_IDX_TOKEY_i8(x) (x)
#define CT_IDX_TOKEY_b8(x) ((uint8_t)(x))
#define CT_IDX_ISNAN_f32(k) isnan(k)
#define CT_IDX_ISNAN_f64(k) isnan(k)
#define CT_IDX_ISNAN_f16(k) isnan(k)
#define CT_IDX_ISNAN_bf16(k) isnan(k)
#define CT_IDX_ISNAN_i64(k) false
#define CT_IDX_ISNAN_i32(k) false
#define CT_IDX_ISNAN_i16(k) false
#define CT_IDX_ISNAN_u8(k) false
#define CT_IDX_ISNAN_i8(k) false
#define CT_IDX_ISNAN_b8(k) false

#endif
