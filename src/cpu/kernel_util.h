/* Building blocks for cpu kernels: typed pointwise loops with contiguous and
 * broadcast-scalar fast paths that the compiler vectorizes, compiled per instruction
 * set (AVX-512, AVX2, baseline) and picked at run time (cpu/isa.h). */
#ifndef CT_CPU_KERNEL_UTIL_H
#define CT_CPU_KERNEL_UTIL_H

#include <math.h>

#include "cpu/isa.h"
#include "cpu/reduced_cvt.h"
#include "cpu/iter.h"
#include "kernels/kernel.h"

/* Kernels that vectorize are compiled once per instruction set (AVX-512, x86-64-v3
 * and the baseline) and called through a dispatcher of their own name, which runs the
 * variant of ct_cpu_isa(): the best this CPU has, or the one CT_CPU_CAPABILITY forces,
 * so that one machine tests every path it can run (cpu/isa.h).  x86-64-v3 (AVX2 with
 * FMA, BMI, F16C; Haswell and Zen on) rather than plain "avx2", so that the explicit
 * fused multiply-adds of cpu/vmath.h are instructions there, as they are in the
 * AVX-512 variant.  The baseline calls libm's fmaf for them (correctly rounded, so the
 * same bits; slow, but only pre-2013 x86 runs it).
 *
 *     CT_SIMD_FN(ret, name, (params), (argument names), { body })
 *     CT_SIMD_PROC(name, (params), (argument names), { body })      returns void
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(CT_NO_CLONES)
#define CT_SIMD_CLONES 1
#define CT_SIMD_VARIANTS(RET, NAME, PARAMS, ...)                                        \
    __attribute__((target("avx512f"))) static RET NAME##_avx512 PARAMS __VA_ARGS__        \
    __attribute__((target("arch=x86-64-v3"))) static RET NAME##_avx2 PARAMS __VA_ARGS__   \
    static RET NAME##_default PARAMS __VA_ARGS__
#define CT_SIMD_PICK(NAME)                                                              \
    (ct_cpu_isa() == CT_ISA_AVX512 ? NAME##_avx512                                       \
     : ct_cpu_isa() == CT_ISA_AVX2 ? NAME##_avx2                                         \
                                   : NAME##_default)
#define CT_SIMD_FN(RET, NAME, PARAMS, ARGS, ...)                                        \
    CT_SIMD_VARIANTS(RET, NAME, PARAMS, __VA_ARGS__)                                     \
    static RET NAME PARAMS { return CT_SIMD_PICK(NAME) ARGS; }
#define CT_SIMD_PROC(NAME, PARAMS, ARGS, ...)                                           \
    CT_SIMD_VARIANTS(void, NAME, PARAMS, __VA_ARGS__)                                    \
    static void NAME PARAMS { CT_SIMD_PICK(NAME) ARGS; }
#else
#define CT_SIMD_FN(RET, NAME, PARAMS, ARGS, ...) static RET NAME PARAMS __VA_ARGS__
#define CT_SIMD_PROC(NAME, PARAMS, ARGS, ...) static void NAME PARAMS __VA_ARGS__
#endif

/* A unary loop: out (T) = EXPR(x), x read as T, with ctx `p` (const ct_pw_args *). */
#define CT_UNARY_LOOP(NAME, T, TO, EXPR)                                                 \
    CT_SIMD_PROC(NAME, (char **d, const int64_t *s, int64_t n, const void *ctx), (d, s, n, ctx), {   \
        const ct_pw_args *p = ctx;                                                       \
        (void)p;                                                                         \
        if (s[0] == sizeof(TO) && s[1] == sizeof(T)) {                                   \
            TO *restrict o = (TO *)d[0];                                                 \
            const T *restrict a = (const T *)d[1];                                       \
            for (int64_t i = 0; i < n; i++) {                                            \
                T x = a[i];                                                              \
                o[i] = (TO)(EXPR);                                                       \
            }                                                                            \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                T x = *(const T *)(d[1] + i * s[1]);                                     \
                *(TO *)(d[0] + i * s[0]) = (TO)(EXPR);                                   \
            }                                                                            \
        }                                                                                \
    })

/* A binary loop: out (TO) = EXPR(x, y) with x, y of type T. */
#define CT_BINARY_LOOP(NAME, T, TO, EXPR)                                                \
    CT_SIMD_PROC(NAME, (char **d, const int64_t *s, int64_t n, const void *ctx), (d, s, n, ctx), {   \
        const ct_pw_args *p = ctx;                                                       \
        (void)p;                                                                         \
        TO *restrict o = (TO *)d[0];                                                     \
        const T *restrict A = (const T *)d[1], *restrict B = (const T *)d[2];            \
        if (s[0] == sizeof(TO) && s[1] == sizeof(T) && s[2] == sizeof(T)) {              \
            for (int64_t i = 0; i < n; i++) {                                            \
                T x = A[i], y = B[i];                                                    \
                o[i] = (TO)(EXPR);                                                       \
            }                                                                            \
        } else if (s[0] == sizeof(TO) && s[1] == sizeof(T) && s[2] == 0) {               \
            const T y = B[0];                                                            \
            for (int64_t i = 0; i < n; i++) {                                            \
                T x = A[i];                                                              \
                o[i] = (TO)(EXPR);                                                       \
            }                                                                            \
        } else if (s[0] == sizeof(TO) && s[1] == 0 && s[2] == sizeof(T)) {               \
            const T x = A[0];                                                            \
            for (int64_t i = 0; i < n; i++) {                                            \
                T y = B[i];                                                              \
                o[i] = (TO)(EXPR);                                                       \
            }                                                                            \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                T x = *(const T *)(d[1] + i * s[1]), y = *(const T *)(d[2] + i * s[2]);  \
                *(TO *)(d[0] + i * s[0]) = (TO)(EXPR);                                   \
            }                                                                            \
        }                                                                                \
    })

/* Reduced-precision loops convert in registers: each element is loaded as float
 * (CT_LOAD_REDUCED), computed on in float, and rounded to nearest even on the store
 * (CT_STORE_REDUCED(T, v)), so a bfloat16 or float16 kernel gives the bits of the
 * float32 kernel on the widened operands, without float32 copies of them. */
#define CT_LOAD_REDUCED(v) _Generic((v), ct_bf16: ct_bf16_to_float, ct_half: ct_half_to_float)(v)
#define CT_STORE_REDUCED(T, v)                                                           \
    _Generic((T *)0, ct_bf16 *: ct_float_to_bf16, ct_half *: ct_float_to_half)(v)

/* float16 loops widen and round whole tiles (cpu/reduced_cvt.h: F16C), since gcc does
 * not vectorize _Float16 conversions; bfloat16's bit arithmetic vectorizes in place. */
#define CT_IS_HALF(TS) _Generic((TS *)0, ct_half *: 1, default: 0)

/* out (TS) = EXPR(x) with x the float value of a TS element (float16 or bfloat16). */
#define CT_UNARY_LOOP_REDUCED(NAME, TS, EXPR)                                            \
    CT_SIMD_PROC(NAME, (char **d, const int64_t *s, int64_t n, const void *ctx), (d, s, n, ctx), {   \
        const ct_pw_args *p = ctx;                                                       \
        (void)p;                                                                         \
        if (s[0] == sizeof(TS) && s[1] == sizeof(TS) && CT_IS_HALF(TS)) {                \
            TS *o = (TS *)d[0];                                                          \
            const TS *a = (const TS *)d[1];                                              \
            float buf[CT_REDUCED_TILE];                                                  \
            for (int64_t b = 0; b < n; b += CT_REDUCED_TILE) {                           \
                int64_t len = n - b < CT_REDUCED_TILE ? n - b : CT_REDUCED_TILE;         \
                CT_REDUCED_TO_FLOAT_N(buf, a + b, len);                                  \
                for (int64_t i = 0; i < len; i++) {                                      \
                    float x = buf[i];                                                    \
                    buf[i] = (float)(EXPR);                                              \
                }                                                                        \
                CT_FLOAT_TO_REDUCED_N(o + b, buf, len);                                  \
            }                                                                            \
        } else if (s[0] == sizeof(TS) && s[1] == sizeof(TS)) {                           \
            TS *restrict o = (TS *)d[0];                                                 \
            const TS *restrict a = (const TS *)d[1];                                     \
            for (int64_t i = 0; i < n; i++) {                                            \
                float x = CT_LOAD_REDUCED(a[i]);                                         \
                o[i] = CT_STORE_REDUCED(TS, (float)(EXPR));                              \
            }                                                                            \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                float x = CT_LOAD_REDUCED(*(const TS *)(d[1] + i * s[1]));               \
                *(TS *)(d[0] + i * s[0]) = CT_STORE_REDUCED(TS, (float)(EXPR));          \
            }                                                                            \
        }                                                                                \
    })

/* out (TS) = EXPR(x, y) with x, y the float values of TS elements. */
#define CT_BINARY_LOOP_REDUCED(NAME, TS, EXPR)                                           \
    CT_SIMD_PROC(NAME, (char **d, const int64_t *s, int64_t n, const void *ctx), (d, s, n, ctx), {   \
        const ct_pw_args *p = ctx;                                                       \
        (void)p;                                                                         \
        TS *restrict o = (TS *)d[0];                                                     \
        const TS *restrict A = (const TS *)d[1], *restrict B = (const TS *)d[2];         \
        const int64_t e = sizeof(TS);                                                    \
        if (CT_IS_HALF(TS) && n > 0 && s[0] == e && (s[1] == e || s[1] == 0) && (s[2] == e || s[2] == 0)) { \
            /* float16: widen tiles with F16C (cpu/reduced_cvt.h); a broadcast scalar   \
             * operand stays one float */                                                \
            float bx[CT_REDUCED_TILE], by[CT_REDUCED_TILE];                              \
            const float x0 = CT_LOAD_REDUCED(A[0]), y0 = CT_LOAD_REDUCED(B[0]);          \
            for (int64_t b = 0; b < n; b += CT_REDUCED_TILE) {                           \
                int64_t len = n - b < CT_REDUCED_TILE ? n - b : CT_REDUCED_TILE;         \
                if (s[1]) CT_REDUCED_TO_FLOAT_N(bx, A + b, len);                         \
                else for (int64_t i = 0; i < len; i++) bx[i] = x0;                       \
                if (s[2]) CT_REDUCED_TO_FLOAT_N(by, B + b, len);                         \
                else for (int64_t i = 0; i < len; i++) by[i] = y0;                       \
                for (int64_t i = 0; i < len; i++) {                                      \
                    float x = bx[i], y = by[i];                                          \
                    bx[i] = (float)(EXPR);                                               \
                }                                                                        \
                CT_FLOAT_TO_REDUCED_N(o + b, bx, len);                                   \
            }                                                                            \
        } else if (s[0] == e && s[1] == e && s[2] == e) {                                \
            for (int64_t i = 0; i < n; i++) {                                            \
                float x = CT_LOAD_REDUCED(A[i]), y = CT_LOAD_REDUCED(B[i]);              \
                o[i] = CT_STORE_REDUCED(TS, (float)(EXPR));                              \
            }                                                                            \
        } else if (s[0] == e && s[1] == e && s[2] == 0) {                                \
            const float y = CT_LOAD_REDUCED(B[0]);                                       \
            for (int64_t i = 0; i < n; i++) {                                            \
                float x = CT_LOAD_REDUCED(A[i]);                                         \
                o[i] = CT_STORE_REDUCED(TS, (float)(EXPR));                              \
            }                                                                            \
        } else if (s[0] == e && s[1] == 0 && s[2] == e) {                                \
            const float x = CT_LOAD_REDUCED(A[0]);                                       \
            for (int64_t i = 0; i < n; i++) {                                            \
                float y = CT_LOAD_REDUCED(B[i]);                                         \
                o[i] = CT_STORE_REDUCED(TS, (float)(EXPR));                              \
            }                                                                            \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                float x = CT_LOAD_REDUCED(*(const TS *)(d[1] + i * s[1]));               \
                float y = CT_LOAD_REDUCED(*(const TS *)(d[2] + i * s[2]));               \
                *(TS *)(d[0] + i * s[0]) = CT_STORE_REDUCED(TS, (float)(EXPR));          \
            }                                                                            \
        }                                                                                \
    })

/* Dtype lists for generating one loop per type: X(dtype enum, C type, suffix). */
#define CT_FLOAT_TYPES(X) X(CT_F32, float, f32) X(CT_F64, double, f64)
#define CT_INT_TYPES(X)                                                                  \
    X(CT_I64, int64_t, i64) X(CT_I32, int32_t, i32) X(CT_I16, int16_t, i16)              \
    X(CT_U8, uint8_t, u8) X(CT_I8, int8_t, i8)
#define CT_BOOL_TYPE(X) X(CT_BOOL, bool, b8)
#define CT_REDUCED_TYPES(X) X(CT_F16, ct_half, f16) X(CT_BF16, ct_bf16, bf16)
#define CT_FOREACH_DTYPE_SFX(X) CT_FLOAT_TYPES(X) CT_REDUCED_TYPES(X) CT_INT_TYPES(X) CT_BOOL_TYPE(X)

#endif
