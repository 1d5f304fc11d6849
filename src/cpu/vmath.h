/* Float32 exp, log, tanh, sigmoid, erf and erfc written so that gcc vectorizes the
 * loops that call them (no calls, no branches: selects only; see Note [Vectorizing
 * selects] in cpu/unary.c).  libm's expf/logf are scalar calls unless built with
 * -ffast-math and libmvec.  IEEE semantics are kept (inf, NaN, subnormal results).
 * Errors against double-precision libm over every 301st float32 (normal results):
 * exp 0.99 ulp, log 0.83, tanh 1.33, sigmoid 2.75, erf 2.58, erfc 10.3 (near |x| = 1,
 * the cancellation in 1 - erf); gelu from erfc: 10 ulp except where Phi(x) is
 * subnormal (x < -13).  (Measured before the fused multiply-adds below; with them a
 * sweep over the same floats moved exp from 0.95 to 1.00 ulp and erf from 2.56 to 2.41,
 * log from 0.81 to 0.77, tanh and sigmoid unchanged.)  Checked against PyTorch in
 * tests/test_pointwise.c.  Doubles call libm.
 *
 * CT_VEXP(x) and friends pick the float32 version for a float argument.
 *
 * The build does not contract a * b + c (-ffp-contract=off, see CMakeLists.txt); the
 * Horner steps and reductions here are explicit fused multiply-adds instead, one
 * rounding each in the vector body and in the scalar remainder alike, so results do not
 * move with the thread count and keep the speed of the contracted build. */
#ifndef CT_CPU_VMATH_H
#define CT_CPU_VMATH_H

#include <math.h>
#include <stdint.h>

#include "cpu/kernel_util.h"

/* fmaf(a, b, c), correctly rounded.  In the per-ISA kernels (CT_SIMD_CLONES) an
 * instruction in the AVX-512 and x86-64-v3 variants and a libm call in the baseline
 * one: the preprocessor cannot tell variants apart.  Without variants (other
 * compilers), a hardware fma when the target has one, else the plain product and sum:
 * unfused, but the same in every path, so deterministic too. */
/* The polynomials are always inlined: called from a loop, they vectorize with it; a
 * call (which gcc's unit-growth limit makes once a file has many callers) would run
 * each element through scalar code. */
#define CT_VINLINE static inline __attribute__((always_inline))

#if defined(CT_SIMD_CLONES) || defined(__FP_FAST_FMAF)
#define CT_FMAF(a, b, c) __builtin_fmaf(a, b, c)
#else
#define CT_FMAF(a, b, c) ((a) * (b) + (c))
#endif

CT_VINLINE float ct_bits_f(uint32_t u) {
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}
CT_VINLINE uint32_t ct_f_bits(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    return u;
}

/* c[0] x^(n-1) + ... + c[n-1] (Horner); unrolled when inlined with a constant n. */
CT_VINLINE float ct_polyf(float x, const float *c, int n) {
    float p = c[0];
    for (int i = 1; i < n; i++) p = CT_FMAF(p, x, c[i]);
    return p;
}

/* exp(x) = 2^n e^r, n = round(x / ln 2), |r| <= ln 2 / 2. */
CT_VINLINE float ct_vexpf(float x) {
    /* NaN fails the first test: a clamped value, so that n converts (the result is x) */
    float xc = x > -104.0f ? (x < 89.0f ? x : 89.0f) : -104.0f;
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float n = CT_FMAF(xc, 1.44269504088896341f, shifter) - shifter;
    float r = CT_FMAF(n, -0.693359375f, xc); /* n ln2_hi is exact */
    r = CT_FMAF(n, 2.12194440e-4f, r);
    static const float P[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                              4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
    float p = CT_FMAF(ct_polyf(r, P, 6) * r, r, r) + 1.0f;
    /* 2^n in two halves, so that subnormal results and 2^128 * tiny both work. */
    int32_t ni = (int32_t)n, n1 = ni / 2, n2 = ni - n1;
    float s1 = ct_bits_f((uint32_t)(n1 + 127) << 23), s2 = ct_bits_f((uint32_t)(n2 + 127) << 23);
    float y = p * s1 * s2;
    y = x > 88.72283935546875f ? INFINITY : y;
    y = x < -103.972084045410f ? 0.0f : y;
    return x != x ? x : y;
}

/* log(x) = e ln 2 + log(m), m in [sqrt(1/2), sqrt(2)). */
CT_VINLINE float ct_vlogf(float x) {
    int sub = x < 1.17549435e-38f; /* subnormal (or <= 0): scale by 2^23 first */
    float xs = sub ? x * 8388608.0f : x;
    uint32_t u = ct_f_bits(xs);
    float e = (float)((int32_t)((u >> 23) & 0xff) - 126) - (sub ? 23.0f : 0.0f);
    float m = ct_bits_f((u & 0x007fffffu) | 0x3f000000u); /* [0.5, 1) */
    int small = m < 0.707106781186547524f;
    e = small ? e - 1.0f : e;
    m = small ? m + m - 1.0f : m - 1.0f;
    float z = m * m;
    static const float P[] = {7.0376836292e-2f,  -1.1514610310e-1f, 1.1676998740e-1f,
                              -1.2420140846e-1f, 1.4249322787e-1f,  -1.6668057665e-1f,
                              2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f};
    float y = m * z * ct_polyf(m, P, 9);
    y = CT_FMAF(e, -2.12194440e-4f, y);
    y = y - 0.5f * z;
    y = m + y + e * 0.693359375f;
    y = x == INFINITY ? x : y;
    y = x == 0.0f ? -INFINITY : y;
    y = x < 0.0f ? NAN : y;
    return x != x ? x : y;
}

/* tanh: an odd polynomial near 0 (no cancellation), 1 - 2 / (exp(2|x|) + 1) beyond;
 * exp overflowing to inf gives exactly +-1, never NaN. */
CT_VINLINE float ct_vtanhf(float x) {
    float a = fabsf(x);
    float z = x * x;
    static const float P[] = {-5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f,
                              1.33314422036e-1f, -3.33332819422e-1f};
    float small = CT_FMAF(ct_polyf(z, P, 5) * z, x, x);
    float big = 1.0f - 2.0f / (ct_vexpf(a + a) + 1.0f);
    big = x < 0 ? -big : big;
    return a < 0.625f ? small : big;
}

/* erf(a) = a T(a^2) for |a| < 1 (Cephes). */
static const float CT_ERF_T[] = {7.853861353153693e-5f,  -8.010193625184903e-4f,
                                 5.188327685732524e-3f,  -2.685381193529856e-2f,
                                 1.128358514861418e-1f,  -3.761262582423300e-1f,
                                 1.128379165726710e+0f};

/* erfc for float32 (Cephes' polynomials): 1 - erf near 0; exp(-x^2) (x^2 split in two so
 * that it is exact) times a polynomial in 1/x^2 beyond 1; 2 - erfc(-x) below -1.
 * Accurate in the tail, where 1 - erf(x) would cancel (gelu at negative x). */
CT_VINLINE float ct_verfcf(float x) {
    float a = fabsf(x);
    a = a > 20.0f ? 20.0f : a; /* erfc(20) is 0 in float32; keeps inf out of the split */
    float z2 = a * a;
    static const float P[] = {/* erfc(a) = exp(-a^2) P(1/a^2) / a, 1 <= a < 2 */
                              2.326819970068386e-2f, -1.387039388740657e-1f, 3.687424674597105e-1f,
                              -5.824733027278666e-1f, 6.210004621745983e-1f, -4.944515323274145e-1f,
                              3.404879937665872e-1f, -2.741127028184656e-1f, 5.638259427386472e-1f};
    static const float R[] = {/* the same with R, a >= 2 */
                              -1.047766399936249e+1f, 1.297719955372516e+1f, -7.495518717768503e+0f,
                              2.921019019210786e+0f, -1.015265279202700e+0f, 4.218463358204948e-1f,
                              -2.820767439740514e-1f, 5.641895067754075e-1f};
    float t = ct_polyf(z2, CT_ERF_T, 7);
    float near = CT_FMAF(-a, t, 1.0f);
    float q = 1.0f / a, y = q * q;
    float pp = ct_polyf(y, P, 9), r = ct_polyf(y, R, 8);
    /* exp(-a^2) = exp(-ah^2) exp(-(a - ah)(a + ah)), ah = a with 12 mantissa bits */
    float ah = ct_bits_f(ct_f_bits(a) & 0xfffff000u);
    float e = ct_vexpf(-ah * ah) * ct_vexpf(-(a - ah) * (a + ah));
    float far = e * q * (a < 2.0f ? pp : r);
    float pos = a < 1.0f ? near : far;     /* erfc(|x|) */
    float res = x < 0 ? (a < 1.0f ? CT_FMAF(a, t, 1.0f) : 2.0f - far) : pos;
    return x != x ? x : res;
}

/* erf: the polynomial below 1, 1 - erfc(|x|) (no cancellation there) beyond. */
CT_VINLINE float ct_verff(float x) {
    float a = fabsf(x);
    float small = x * ct_polyf(x * x, CT_ERF_T, 7);
    float big = 1.0f - ct_verfcf(a);
    big = x < 0 ? -big : big;
    return a < 1.0f ? small : big;
}

/* With e = exp(-|x|) (never overflows): 1 / (1 + e) for x >= 0, e / (1 + e) below, which
 * keeps relative accuracy in the left tail (down to subnormal results). */
CT_VINLINE float ct_vsigmoidf(float x) {
    float e = ct_vexpf(-fabsf(x));
    float r = 1.0f / (1.0f + e);
    return x < 0 ? e * r : r;
}
CT_VINLINE double ct_sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

#define CT_VEXP(x) _Generic((x), float: ct_vexpf, default: exp)(x)
#define CT_VLOG(x) _Generic((x), float: ct_vlogf, default: log)(x)
#define CT_VTANH(x) _Generic((x), float: ct_vtanhf, default: tanh)(x)
#define CT_VERF(x) _Generic((x), float: ct_verff, default: erf)(x)
#define CT_VSIGMOID(x) _Generic((x), float: ct_vsigmoidf, default: ct_sigmoid_d)(x)

#endif
