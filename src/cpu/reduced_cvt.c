/* Reduced-precision conversions of runs of elements (cpu/reduced_cvt.h). */
#include "cpu/reduced_cvt.h"
#include "cpu/kernel_util.h"

#if CT_SIMD_CLONES
#include <immintrin.h>
#endif

/* bfloat16 is bit arithmetic the compiler vectorizes in every variant. */
CT_SIMD_PROC(bf16_to_float, (float *restrict d, const ct_bf16 *restrict s, int64_t n), (d, s, n), {
    for (int64_t i = 0; i < n; i++) d[i] = ct_bf16_to_float(s[i]);
})
CT_SIMD_PROC(float_to_bf16, (ct_bf16 *restrict d, const float *restrict s, int64_t n), (d, s, n), {
    for (int64_t i = 0; i < n; i++) d[i] = ct_float_to_bf16(s[i]);
})
void ct_bf16_to_float_n(float *restrict dst, const ct_bf16 *restrict src, int64_t n) {
    bf16_to_float(dst, src, n);
}
void ct_float_to_bf16_n(ct_bf16 *restrict dst, const float *restrict src, int64_t n) {
    float_to_bf16(dst, src, n);
}

/* float16: gcc does not vectorize _Float16 conversions with F16C alone, so the
 * instructions are written out; tails go one element at a time. */
static void half_to_float_default(float *restrict d, const ct_half *restrict s, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] = ct_half_to_float(s[i]);
}
static void float_to_half_default(ct_half *restrict d, const float *restrict s, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] = ct_float_to_half(s[i]);
}
#if CT_SIMD_CLONES
__attribute__((target("arch=x86-64-v3"))) static void
half_to_float_avx2(float *restrict d, const ct_half *restrict s, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
    for (; i < n; i++) d[i] = ct_half_to_float(s[i]);
}
__attribute__((target("arch=x86-64-v3"))) static void
float_to_half_avx2(ct_half *restrict d, const float *restrict s, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) d[i] = ct_float_to_half(s[i]);
}
__attribute__((target("avx512f"))) static void
half_to_float_avx512(float *restrict d, const ct_half *restrict s, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + i))));
    for (; i < n; i++) d[i] = ct_half_to_float(s[i]);
}
__attribute__((target("avx512f"))) static void
float_to_half_avx512(ct_half *restrict d, const float *restrict s, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(d + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) d[i] = ct_float_to_half(s[i]);
}
#endif

/* The variant ct_cpu_isa() picks; the baseline where the build has no clones. */
#if CT_SIMD_CLONES
#define CT_HALF_CVT(name) CT_SIMD_PICK(name)
#else
#define CT_HALF_CVT(name) name##_default
#endif
void ct_half_to_float_n(float *restrict dst, const ct_half *restrict src, int64_t n) {
    CT_HALF_CVT(half_to_float)(dst, src, n);
}
void ct_float_to_half_n(ct_half *restrict dst, const float *restrict src, int64_t n) {
    CT_HALF_CVT(float_to_half)(dst, src, n);
}
