/* Loop shapes of the pointwise kernel families beyond kernel_util.h's unary and
 * binary ones: three inputs (where, lerp with a tensor weight, clamp with tensor
 * bounds, the fused loss backwards; float16 and bfloat16 converted in registers),
 * four inputs (binary_cross_entropy_with_logits' backward with a pos_weight), and
 * type-generic libm calls. */
#ifndef CT_CPU_PW_LOOPS_H
#define CT_CPU_PW_LOOPS_H

#include "cpu/kernel_util.h"

/* fn of a float or a double: CT_MF(exp, x) is expf(x) for a float x. */
#define CT_MF(fn, x) _Generic((x), float: fn##f, default: fn)(x)
#define CT_MF2(fn, x, y) _Generic((x), float: fn##f, default: fn)(x, y)

/* out (TO) = EXPR(c, x, y): c of type TC, x and y of type T.  Fast paths: all
 * contiguous, and c, x contiguous with y broadcast (the where(mask, g, 0) of
 * backward formulas); others strided. */
#define CT_TERNARY_LOOP(NAME, TC, T, TO, EXPR)                                           \
    CT_SIMD_PROC(NAME, (char **d, const int64_t *s, int64_t n, const void *ctx), (d, s, n, ctx), {   \
        const ct_pw_args *p = ctx;                                                       \
        (void)p;                                                                         \
        TO *restrict o = (TO *)d[0];                                                     \
        const TC *restrict C = (const TC *)d[1];                                         \
        const T *restrict A = (const T *)d[2], *restrict B = (const T *)d[3];            \
        if (s[0] == sizeof(TO) && s[1] == sizeof(TC) && s[2] == sizeof(T) &&             \
            s[3] == sizeof(T)) {                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                TC c = C[i];                                                             \
                T x = A[i], y = B[i];                                                    \
                o[i] = (TO)(EXPR);                                                       \
            }                                                                            \
        } else if (s[0] == sizeof(TO) && s[1] == sizeof(TC) && s[2] == sizeof(T) &&      \
                   s[3] == 0) {                                                          \
            const T y = B[0];                                                            \
            for (int64_t i = 0; i < n; i++) {                                            \
                TC c = C[i];                                                             \
                T x = A[i];                                                              \
                o[i] = (TO)(EXPR);                                                       \
            }                                                                            \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                TC c = *(const TC *)(d[1] + i * s[1]);                                   \
                T x = *(const T *)(d[2] + i * s[2]), y = *(const T *)(d[3] + i * s[3]);  \
                *(TO *)(d[0] + i * s[0]) = (TO)(EXPR);                                   \
            }                                                                            \
        }                                                                                \
    })

/* out (TS) = EXPR(c, x, y) with c, x, y the float values of TS elements (float16 or
 * bfloat16), rounded once on the store.  Where every operand is contiguous or
 * broadcast, whole tiles are widened and narrowed (cpu/reduced_cvt.h), as
 * CT_BINARY_LOOP_REDUCED does for float16: bfloat16 too, since gcc vectorizes the
 * three-operand select of lerp badly on elements converted in place; other runs
 * convert element by element. */
#define CT_WIDEN_TILE(buf, P, stride, b, len)                                            \
    do {                                                                                 \
        if (stride) {                                                                    \
            CT_REDUCED_TO_FLOAT_N(buf, (P) + (b), len);                                  \
        } else {                                                                         \
            const float v_ = CT_LOAD_REDUCED((P)[0]);                                    \
            for (int64_t i_ = 0; i_ < (len); i_++) (buf)[i_] = v_;                       \
        }                                                                                \
    } while (0)
#define CT_TERNARY_LOOP_REDUCED(NAME, TS, EXPR)                                          \
    CT_SIMD_PROC(NAME, (char **d, const int64_t *s, int64_t n, const void *ctx), (d, s, n, ctx), {   \
        const ct_pw_args *p = ctx;                                                       \
        (void)p;                                                                         \
        TS *restrict o = (TS *)d[0];                                                     \
        const TS *restrict C = (const TS *)d[1];                                         \
        const TS *restrict A = (const TS *)d[2], *restrict B = (const TS *)d[3];         \
        const int64_t e = sizeof(TS);                                                    \
        if (n > 0 && s[0] == e && (s[1] == e || !s[1]) &&                                \
            (s[2] == e || !s[2]) && (s[3] == e || !s[3])) {                              \
            float bc[CT_REDUCED_TILE], bx[CT_REDUCED_TILE], by[CT_REDUCED_TILE];         \
            for (int64_t b = 0; b < n; b += CT_REDUCED_TILE) {                           \
                int64_t len = n - b < CT_REDUCED_TILE ? n - b : CT_REDUCED_TILE;         \
                CT_WIDEN_TILE(bc, C, s[1], b, len);                                      \
                CT_WIDEN_TILE(bx, A, s[2], b, len);                                      \
                CT_WIDEN_TILE(by, B, s[3], b, len);                                      \
                for (int64_t i = 0; i < len; i++) {                                      \
                    float c = bc[i], x = bx[i], y = by[i];                               \
                    bc[i] = (float)(EXPR);                                               \
                }                                                                        \
                CT_FLOAT_TO_REDUCED_N(o + b, bc, len);                                   \
            }                                                                            \
        } else if (s[0] == e && s[1] == e && s[2] == e && s[3] == e) {                   \
            for (int64_t i = 0; i < n; i++) {                                            \
                float c = CT_LOAD_REDUCED(C[i]), x = CT_LOAD_REDUCED(A[i]);              \
                float y = CT_LOAD_REDUCED(B[i]);                                         \
                o[i] = CT_STORE_REDUCED(TS, (float)(EXPR));                              \
            }                                                                            \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                float c = CT_LOAD_REDUCED(*(const TS *)(d[1] + i * s[1]));               \
                float x = CT_LOAD_REDUCED(*(const TS *)(d[2] + i * s[2]));               \
                float y = CT_LOAD_REDUCED(*(const TS *)(d[3] + i * s[3]));               \
                *(TS *)(d[0] + i * s[0]) = CT_STORE_REDUCED(TS, (float)(EXPR));          \
            }                                                                            \
        }                                                                                \
    })

/* out (T) = EXPR(x, y, z, w), all of type T.  Fast paths: all contiguous, and all
 * contiguous but w broadcast (a loss backward's reduced gradient); others strided. */
#define CT_QUATERNARY_LOOP(NAME, T, EXPR)                                                \
    CT_SIMD_PROC(NAME, (char **d, const int64_t *s, int64_t n, const void *ctx), (d, s, n, ctx), {   \
        const ct_pw_args *p = ctx;                                                       \
        (void)p;                                                                         \
        T *restrict o = (T *)d[0];                                                       \
        const T *restrict X = (const T *)d[1], *restrict Y = (const T *)d[2];            \
        const T *restrict Z = (const T *)d[3], *restrict W = (const T *)d[4];            \
        const int64_t e = sizeof(T);                                                     \
        if (s[0] == e && s[1] == e && s[2] == e && s[3] == e && (s[4] == e || !s[4])) {  \
            if (s[4]) {                                                                  \
                for (int64_t i = 0; i < n; i++) {                                        \
                    T x = X[i], y = Y[i], z = Z[i], w = W[i];                            \
                    o[i] = (EXPR);                                                       \
                }                                                                        \
            } else {                                                                     \
                const T w = W[0];                                                        \
                for (int64_t i = 0; i < n; i++) {                                        \
                    T x = X[i], y = Y[i], z = Z[i];                                      \
                    o[i] = (EXPR);                                                       \
                }                                                                        \
            }                                                                            \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                T x = *(const T *)(d[1] + i * s[1]), y = *(const T *)(d[2] + i * s[2]);  \
                T z = *(const T *)(d[3] + i * s[3]), w = *(const T *)(d[4] + i * s[4]);  \
                *(T *)(d[0] + i * s[0]) = (EXPR);                                        \
            }                                                                            \
        }                                                                                \
    })

#endif
