/* Branch-free elementwise math that the compiler vectorizes (libm calls do not). */
#ifndef CT_CPU_FAST_MATH_H
#define CT_CPU_FAST_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* exp(x) for float32 within about 1 ulp (Cephes' polynomial): x = n ln2 + r with
 * |r| <= ln2 / 2, exp(r) by a degree-6 polynomial, 2^n put into the exponent bits.
 * Below -87.3 the result is 0 (no subnormals); above 88.7, +inf; NaN stays NaN. */
static inline float ct_expf_fast(float x) {
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    /* NaN is clamped to 0 too, so that the conversion of n below stays in range. */
    float xc = x < -87.33654f ? -87.33654f : x > 88.72283f ? 88.72283f : x != x ? 0.0f : x;
    float t = xc * 1.44269504f + shifter;
    float n = t - shifter;
    float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    float z = r * r;
    float y = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
                4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f;
    y = y * z + r + 1.0f;
    /* 2^n as 2^h * 2^(n-h): n runs over [-126, 128], beyond one exponent field. */
    int32_t k = (int32_t)n, h = k / 2;
    uint32_t b1 = (uint32_t)(h + 127) << 23, b2 = (uint32_t)(k - h + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    float v = y * s1 * s2;
    v = x < -87.33654f ? 0.0f : v;
    v = x > 88.72283f ? INFINITY : v;
    return x != x ? x : v;
}

#endif
