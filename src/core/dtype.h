/* Element types: sizes, categories, promotion, and scalar conversion helpers. */
#ifndef CT_CORE_DTYPE_H
#define CT_CORE_DTYPE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ctorch/base.h"

typedef _Float16 ct_half;
typedef struct { uint16_t bits; } ct_bf16;

static inline float ct_bf16_to_float(ct_bf16 h) {
    uint32_t u = (uint32_t)h.bits << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* Round to nearest even, NaN kept quiet (PyTorch's c10::BFloat16 rounding); written
 * as a select, without a branch, so that kernel loops vectorize around it. */
static inline ct_bf16 ct_float_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet = (u >> 16) | 0x40u;
    return (ct_bf16){(uint16_t)(f != f ? quiet : rounded)};
}
static inline float ct_half_to_float(ct_half h) { return (float)h; }
static inline ct_half ct_float_to_half(float f) { return (ct_half)f; }

/* Note [Float to integer]: C leaves a float converted to an integer type undefined
 * when the value does not fit (NaN, infinity, |v| >= 2^63), and PyTorch leaves the
 * result to the hardware.  ctorch defines it: truncate toward zero, NaN gives 0 and
 * values beyond int64 saturate at INT64_MIN / INT64_MAX; narrower integer types then
 * keep the low bits, as PyTorch does for in-range values (455.0 -> uint8 199,
 * -1.0 -> uint8 255).  Written as selects, so that cast loops still vectorize. */
static inline int64_t ct_f64_to_i64(double v) {
    int64_t t = (int64_t)(v >= -0x1p63 && v < 0x1p63 ? v : 0);
    return v != v ? 0 : v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN : t;
}

/* Whether the integer-valued v lies in integer dtype t's range (bool: 0 or 1). */
static inline bool ct_fits_integer(double v, ct_dtype t) {
    switch (t) {
    case CT_I64: return v >= -0x1p63 && v < 0x1p63;
    case CT_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case CT_I16: return v >= INT16_MIN && v <= INT16_MAX;
    case CT_I8: return v >= INT8_MIN && v <= INT8_MAX;
    case CT_U8: return v >= 0 && v <= UINT8_MAX;
    case CT_BOOL: return v == 0 || v == 1;
    default: return true;
    }
}

/* Element sizes in bytes (0 for CT_DTYPE_UNSET): ct_dtype_size() without the call
 * and the range check, for per-op paths where the dtype is known to be valid. */
extern const uint8_t ct_dtype_sizes[CT_NUM_DTYPES];

/* 0 bool, 1 integer, 2 floating: PyTorch's categories for promotion with scalars. */
int ct_dtype_category(ct_dtype t);

/* Reads element p of type t as double / int64; writes v converted to type t. */
double ct_load_f64(const void *p, ct_dtype t);
int64_t ct_load_i64(const void *p, ct_dtype t);
void ct_store_f64(void *p, ct_dtype t, double v);
void ct_store_i64(void *p, ct_dtype t, int64_t v);

/* X-macro over every dtype with its C storage type, for generating typed kernels:
 * X(CT_F32, float) ... */
#define CT_FOREACH_DTYPE(X) \
    X(CT_F32, float)        \
    X(CT_F64, double)       \
    X(CT_F16, ct_half)      \
    X(CT_BF16, ct_bf16)     \
    X(CT_I64, int64_t)      \
    X(CT_I32, int32_t)      \
    X(CT_I16, int16_t)      \
    X(CT_U8, uint8_t)       \
    X(CT_I8, int8_t)        \
    X(CT_BOOL, bool)

#endif
