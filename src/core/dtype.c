#include <stdbool.h>

#include "core/dtype.h"
#include "core/tensor_impl.h"
#include "core/error.h"

static const struct {
    const char *name;
    int category;
} info[CT_NUM_DTYPES] = {
    [CT_DTYPE_UNSET] = {"unset", 0},
    [CT_F32] = {"float32", 2}, [CT_F64] = {"float64", 2}, [CT_F16] = {"float16", 2},
    [CT_BF16] = {"bfloat16", 2}, [CT_I64] = {"int64", 1}, [CT_I32] = {"int32", 1},
    [CT_I16] = {"int16", 1},   [CT_U8] = {"uint8", 1},    [CT_I8] = {"int8", 1},
    [CT_BOOL] = {"bool", 0},
};

const uint8_t ct_dtype_sizes[CT_NUM_DTYPES] = {
    [CT_F32] = 4, [CT_F64] = 8, [CT_F16] = 2, [CT_BF16] = 2, [CT_I64] = 8,
    [CT_I32] = 4, [CT_I16] = 2, [CT_U8] = 1,  [CT_I8] = 1,   [CT_BOOL] = 1,
};

static _Atomic ct_dtype default_dtype = CT_F32;

static bool valid(ct_dtype t) { return t > CT_DTYPE_UNSET && t < CT_NUM_DTYPES; }

size_t ct_dtype_size(ct_dtype t) { return valid(t) ? ct_dtype_sizes[t] : 0; }
const char *ct_dtype_name(ct_dtype t) { return valid(t) ? info[t].name : "invalid dtype"; }
int ct_dtype_category(ct_dtype t) { return valid(t) ? info[t].category : -1; }
bool ct_dtype_is_floating(ct_dtype t) { return ct_dtype_category(t) == 2; }
bool ct_dtype_is_integral(ct_dtype t) { return valid(t) && info[t].category < 2; }

int ct_set_default_dtype(ct_dtype t) {
    if (t != CT_F32 && t != CT_F64) {
        ct_error("ct_set_default_dtype: only float32 and float64 are supported as the "
                 "default dtype (got %s)", ct_dtype_name(t));
        return -1;
    }
    default_dtype = t;
    return 0;
}
ct_dtype ct_get_default_dtype(void) { return default_dtype; }

ct_dtype ct_promote_types(ct_dtype a, ct_dtype b) {
    if (a == b) return a;
    if (a == CT_BOOL) return b;
    if (b == CT_BOOL) return a;
    bool fa = ct_dtype_is_floating(a), fb = ct_dtype_is_floating(b);
    if (fa && fb) {
        if ((a == CT_F16 && b == CT_BF16) || (a == CT_BF16 && b == CT_F16)) return CT_F32;
        return ct_dtype_sizes[a] >= ct_dtype_sizes[b] ? a : b;
    }
    if (fa) return a;
    if (fb) return b;
    /* Both integral: uint8 with a signed type needs the next signed size up. */
    if (a == CT_U8 || b == CT_U8) {
        ct_dtype other = a == CT_U8 ? b : a;
        return other == CT_I8 ? CT_I16 : other;
    }
    return ct_dtype_sizes[a] >= ct_dtype_sizes[b] ? a : b;
}

bool ct_device_eq(ct_device a, ct_device b) { return ct_same_device(a, b); }

const char *ct_device_str(ct_device d, char buf[16]) {
    if (d.type == CT_DEV_CUDA)
        snprintf(buf, 16, "cuda:%d", d.index);
    else if (d.type == CT_DEV_META)
        snprintf(buf, 16, "meta");
    else
        snprintf(buf, 16, "cpu");
    return buf;
}

double ct_load_f64(const void *p, ct_dtype t) {
    switch (t) {
#define LOAD(T, C) \
    case T: return (double)*(const C *)p;
        LOAD(CT_F32, float) LOAD(CT_F64, double) LOAD(CT_F16, ct_half) LOAD(CT_I64, int64_t)
        LOAD(CT_I32, int32_t) LOAD(CT_I16, int16_t) LOAD(CT_U8, uint8_t) LOAD(CT_I8, int8_t)
        LOAD(CT_BOOL, bool)
#undef LOAD
    case CT_BF16: return ct_bf16_to_float(*(const ct_bf16 *)p);
    default: CT_ASSERT(!"bad dtype");
    }
    return 0;
}

int64_t ct_load_i64(const void *p, ct_dtype t) {
    switch (t) {
    case CT_I64: return *(const int64_t *)p;
    case CT_I32: return *(const int32_t *)p;
    case CT_I16: return *(const int16_t *)p;
    case CT_U8: return *(const uint8_t *)p;
    case CT_I8: return *(const int8_t *)p;
    case CT_BOOL: return *(const bool *)p;
    default: return ct_f64_to_i64(ct_load_f64(p, t)); /* Note [Float to integer] */
    }
}

void ct_store_f64(void *p, ct_dtype t, double v) {
    switch (t) {
    case CT_F32: *(float *)p = (float)v; break;
    case CT_F64: *(double *)p = v; break;
    case CT_F16: *(ct_half *)p = (ct_half)v; break;
    case CT_BF16: *(ct_bf16 *)p = ct_float_to_bf16((float)v); break;
    case CT_BOOL: *(bool *)p = v != 0; break;
    default: ct_store_i64(p, t, ct_f64_to_i64(v)); break; /* Note [Float to integer] */
    }
}

void ct_store_i64(void *p, ct_dtype t, int64_t v) {
    switch (t) {
    case CT_I64: *(int64_t *)p = v; break;
    case CT_I32: *(int32_t *)p = (int32_t)v; break;
    case CT_I16: *(int16_t *)p = (int16_t)v; break;
    case CT_U8: *(uint8_t *)p = (uint8_t)v; break;
    case CT_I8: *(int8_t *)p = (int8_t)v; break;
    case CT_BOOL: *(bool *)p = v != 0; break;
    default: ct_store_f64(p, t, (double)v); break;
    }
}
