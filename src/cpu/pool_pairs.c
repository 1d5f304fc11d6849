/* 2x2 max pooling rows in vector registers (cpu/pool_pairs.h): AVX-512 and AVX2
 * (x86-64-v3) versions, picked by ct_cpu_isa() so that forcing CT_CPU_CAPABILITY tests
 * each on one machine. */
#include "cpu/pool_pairs.h"
#include "cpu/isa.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#include <string.h>
#define HAVE_PAIRS_SIMD 1
#define AVX512 __attribute__((target("avx512f")))
#define AVX2 __attribute__((target("arch=x86-64-v3")))

/* ---- AVX-512: 16 outputs per step, the last step masked ---- */
/* The lanes where cand replaces best: the scalar scan's step on 16 lanes. */
AVX512 static inline __mmask16 max_take(__m512 cand, __m512 best) {
    return (_mm512_cmp_ps_mask(cand, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(cand, cand, _CMP_UNORD_Q)) &
           _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q);
}
/* The argmax of the outputs (mask `out`) from ow: base + 2 * (ow + lane) + off. */
AVX512 static inline void store_argmax(int64_t *ix, __mmask16 out, __m512i off, int64_t base) {
    const __m512i lane2 = _mm512_slli_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 1);
    off = _mm512_add_epi32(off, lane2);
    __m512i b = _mm512_set1_epi64(base);
    _mm512_mask_storeu_epi64(ix, (__mmask8)out, _mm512_add_epi64(b, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(off))));
    _mm512_mask_storeu_epi64(ix + 8, (__mmask8)(out >> 8),
                             _mm512_add_epi64(b, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(off, 1))));
}
/* The scan over a window's other three inputs cand[k] (their bits bits[k], k-th step
 * of the window step[]): best, the winner's bits win, and its offset off per lane. */
#define PAIRS16_STEPS(best, cand, win, bits)                                             \
    __m512i off = _mm512_setzero_si512();                                                \
    for (int k = 0; k < 3; k++) {                                                        \
        __mmask16 take = max_take(cand[k], best);                                        \
        best = _mm512_mask_mov_ps(best, take, cand[k]);                                  \
        win = _mm512_mask_mov_epi32(win, take, bits[k]);                                 \
        off = _mm512_mask_mov_epi32(off, take, _mm512_set1_epi32(step[k]));              \
    }
/* float32: the row's 2 OW inputs deinterleaved into even and odd lanes. */
AVX512 static int64_t max_pairs_row_avx512(const float *r0, const float *r1, int64_t W, int64_t OW,
                                           int64_t base, float *y, int64_t *ix) {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const int32_t step[3] = {1, (int32_t)W, (int32_t)W + 1};
    for (int64_t ow = 0; ow < OW; ow += 16) {
        int64_t n = OW - ow < 16 ? OW - ow : 16; /* outputs of this step */
        __mmask16 lo = (__mmask16)(n >= 8 ? 0xffff : (1u << (2 * n)) - 1);
        __mmask16 hi = (__mmask16)(n <= 8 ? 0 : (1u << (2 * n - 16)) - 1);
        __mmask16 out = (__mmask16)((1u << n) - 1);
        __m512 u0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ow), u1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ow + 16);
        __m512 v0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ow), v1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ow + 16);
        __m512 cand[3] = {_mm512_permutex2var_ps(u0, odd, u1), _mm512_permutex2var_ps(v0, even, v1),
                          _mm512_permutex2var_ps(v0, odd, v1)};
        __m512 best = _mm512_permutex2var_ps(u0, even, u1);
        __m512i win = _mm512_castps_si512(best);
        __m512i bits[3] = {_mm512_castps_si512(cand[0]), _mm512_castps_si512(cand[1]),
                           _mm512_castps_si512(cand[2])};
        PAIRS16_STEPS(best, cand, win, bits)
        _mm512_mask_storeu_ps(y + ow, out, _mm512_castsi512_ps(win));
        store_argmax(ix + ow, out, off, base + 2 * ow);
    }
    return OW;
}
/* float16 / bfloat16 bits (zero-extended in 32-bit lanes) as float: exact. */
AVX512 static inline __m512 widen16(bool bf16, __m512i bits) {
    return bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(bits, 16))
                : _mm512_cvtph_ps(_mm512_cvtepi32_epi16(bits));
}
/* float16 / bfloat16: a row's pair (2 ow, 2 ow + 1) is one 32-bit lane.  Compared
 * widened to float; the winner's bits are stored as they are (the max is one of the
 * inputs: nothing to round). */
AVX512 static int64_t max_pairs_row16_avx512(bool bf16, const uint16_t *r0, const uint16_t *r1, int64_t W,
                                             int64_t OW, int64_t base, uint16_t *y, int64_t *ix) {
    const __m512i low = _mm512_set1_epi32(0xffff);
    const int32_t step[3] = {1, (int32_t)W, (int32_t)W + 1};
    for (int64_t ow = 0; ow < OW; ow += 16) {
        int64_t n = OW - ow < 16 ? OW - ow : 16;
        __mmask16 out = (__mmask16)((1u << n) - 1);
        __m512i a = _mm512_maskz_loadu_epi32(out, r0 + 2 * ow), b = _mm512_maskz_loadu_epi32(out, r1 + 2 * ow);
        __m512i win = _mm512_and_si512(a, low);
        __m512i bits[3] = {_mm512_srli_epi32(a, 16), _mm512_and_si512(b, low), _mm512_srli_epi32(b, 16)};
        __m512 best = widen16(bf16, win);
        __m512 cand[3] = {widen16(bf16, bits[0]), widen16(bf16, bits[1]), widen16(bf16, bits[2])};
        PAIRS16_STEPS(best, cand, win, bits)
        _mm512_mask_cvtepi32_storeu_epi16(y + ow, out, win);
        store_argmax(ix + ow, out, off, base + 2 * ow);
    }
    return OW;
}

/* ---- AVX2: 8 outputs per step, the last step masked ---- */
AVX2 static inline __m256 max_take8(__m256 cand, __m256 best) {
    __m256 gt = _mm256_or_ps(_mm256_cmp_ps(cand, best, _CMP_GT_OQ), _mm256_cmp_ps(cand, cand, _CMP_UNORD_Q));
    return _mm256_and_ps(gt, _mm256_cmp_ps(best, best, _CMP_ORD_Q));
}
/* The lanes below n set (a maskload / maskstore mask). */
AVX2 static inline __m256i first_lanes8(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
AVX2 static inline void store_argmax8(int64_t *ix, int64_t n, __m256i off, int64_t base) {
    off = _mm256_add_epi32(off, _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    __m256i b = _mm256_set1_epi64x(base);
    __m256i lo = _mm256_add_epi64(b, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(off)));
    __m256i hi = _mm256_add_epi64(b, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(off, 1)));
    __m256i m = first_lanes8(n);
    _mm256_maskstore_epi64((long long *)ix, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(m)), lo);
    _mm256_maskstore_epi64((long long *)ix + 4, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(m, 1)), hi);
}
/* PAIRS16_STEPS on 8 lanes. */
#define PAIRS8_STEPS(best, cand, win, bits)                                              \
    __m256i off = _mm256_setzero_si256();                                                \
    for (int k = 0; k < 3; k++) {                                                        \
        __m256 take = max_take8(cand[k], best);                                          \
        best = _mm256_blendv_ps(best, cand[k], take);                                    \
        win = _mm256_blendv_epi8(win, bits[k], _mm256_castps_si256(take));               \
        off = _mm256_blendv_epi8(off, _mm256_set1_epi32(step[k]), _mm256_castps_si256(take)); \
    }
AVX2 static int64_t max_pairs_row_avx2(const float *r0, const float *r1, int64_t W, int64_t OW,
                                       int64_t base, float *y, int64_t *ix) {
    const __m256i evens = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7); /* after the shuffles */
    int32_t step[3] = {1, (int32_t)W, (int32_t)W + 1};
    for (int64_t ow = 0; ow < OW; ow += 8) {
        int64_t n = OW - ow < 8 ? OW - ow : 8;
        __m256i m0 = first_lanes8(2 * n), m1 = first_lanes8(2 * n - 8);
        __m256 u0 = _mm256_maskload_ps(r0 + 2 * ow, m0), u1 = _mm256_maskload_ps(r0 + 2 * ow + 8, m1);
        __m256 v0 = _mm256_maskload_ps(r1 + 2 * ow, m0), v1 = _mm256_maskload_ps(r1 + 2 * ow + 8, m1);
        /* shuffle: [u0 evens, u1 evens | ...] per 128-bit half; the permute orders them */
        __m256 best = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(u0, u1, 0x88), evens);
        __m256 cand[3] = {_mm256_permutevar8x32_ps(_mm256_shuffle_ps(u0, u1, 0xdd), evens),
                          _mm256_permutevar8x32_ps(_mm256_shuffle_ps(v0, v1, 0x88), evens),
                          _mm256_permutevar8x32_ps(_mm256_shuffle_ps(v0, v1, 0xdd), evens)};
        __m256i bits[3] = {_mm256_castps_si256(cand[0]), _mm256_castps_si256(cand[1]),
                           _mm256_castps_si256(cand[2])};
        __m256i win = _mm256_castps_si256(best);
        PAIRS8_STEPS(best, cand, win, bits)
        _mm256_maskstore_ps(y + ow, first_lanes8(n), _mm256_castsi256_ps(win));
        store_argmax8(ix + ow, n, off, base + 2 * ow);
    }
    return OW;
}
/* float16 / bfloat16 bits (zero-extended in 32-bit lanes) as float: exact. */
AVX2 static inline __m256 widen16_8(bool bf16, __m256i bits) {
    if (bf16) return _mm256_castsi256_ps(_mm256_slli_epi32(bits, 16));
    __m256i packed = _mm256_packus_epi32(bits, bits); /* 16-bit lanes 0-3, 0-3 | 4-7, 4-7 */
    return _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08)));
}
AVX2 static int64_t max_pairs_row16_avx2(bool bf16, const uint16_t *r0, const uint16_t *r1, int64_t W,
                                         int64_t OW, int64_t base, uint16_t *y, int64_t *ix) {
    const __m256i low = _mm256_set1_epi32(0xffff);
    int32_t step[3] = {1, (int32_t)W, (int32_t)W + 1};
    for (int64_t ow = 0; ow < OW; ow += 8) {
        int64_t n = OW - ow < 8 ? OW - ow : 8;
        __m256i m = first_lanes8(n);
        __m256i a = _mm256_maskload_epi32((const int *)(r0 + 2 * ow), m);
        __m256i b = _mm256_maskload_epi32((const int *)(r1 + 2 * ow), m);
        __m256i win = _mm256_and_si256(a, low);
        __m256i bits[3] = {_mm256_srli_epi32(a, 16), _mm256_and_si256(b, low), _mm256_srli_epi32(b, 16)};
        __m256 best = widen16_8(bf16, win);
        __m256 cand[3] = {widen16_8(bf16, bits[0]), widen16_8(bf16, bits[1]), widen16_8(bf16, bits[2])};
        PAIRS8_STEPS(best, cand, win, bits)
        uint16_t out[16];
        _mm256_storeu_si256((__m256i *)out, _mm256_permute4x64_epi64(_mm256_packus_epi32(win, win), 0x08));
        memcpy(y + ow, out, sizeof(uint16_t) * (size_t)n);
        store_argmax8(ix + ow, n, off, base + 2 * ow);
    }
    return OW;
}
#endif

int64_t ct_max_pairs_row_f32(const float *r0, const float *r1, int64_t W, int64_t OW,
                             int64_t base, float *y, int64_t *ix) {
#ifdef HAVE_PAIRS_SIMD
    switch (ct_cpu_isa()) {
    case CT_ISA_AVX512: return max_pairs_row_avx512(r0, r1, W, OW, base, y, ix);
    case CT_ISA_AVX2: return max_pairs_row_avx2(r0, r1, W, OW, base, y, ix);
    default: break;
    }
#endif
    (void)r0, (void)r1, (void)W, (void)OW, (void)base, (void)y, (void)ix;
    return 0;
}

int64_t ct_max_pairs_row16(bool bf16, const uint16_t *r0, const uint16_t *r1, int64_t W,
                           int64_t OW, int64_t base, uint16_t *y, int64_t *ix) {
#ifdef HAVE_PAIRS_SIMD
    switch (ct_cpu_isa()) {
    case CT_ISA_AVX512: return max_pairs_row16_avx512(bf16, r0, r1, W, OW, base, y, ix);
    case CT_ISA_AVX2: return max_pairs_row16_avx2(bf16, r0, r1, W, OW, base, y, ix);
    default: break;
    }
#endif
    (void)bf16, (void)r0, (void)r1, (void)W, (void)OW, (void)base, (void)y, (void)ix;
    return 0;
}
