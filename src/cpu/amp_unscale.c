/* The gradient scaler's fused check-and-unscale (PyTorch's
 * _amp_foreach_non_finite_check_and_unscale_, one gradient per call): one pass that
 * multiplies every element by inv_scale in place and sets found_inf to 1 when an
 * element was inf or NaN.  As ATen computes it: in the gradient's dtype for float and
 * double (inv_scale widened to double), in float for float16 and bfloat16 (rounded
 * back to nearest even).  ATen skips the multiply when inv_scale is 1; x * 1 is x, so
 * there is no such branch here.
 * data: grad (contiguous), found_inf (float32, 1 element), inv_scale (float32,
 * 1 element); args unused. */
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "cpu/kernel_util.h"
#include "cpu/reduced_cvt.h"

/* Inf and NaN have every exponent bit set: an integer test the compiler vectorizes
 * (isfinite on a float does not, without -ffinite-math-only). */
static inline bool non_finite_f32(float v) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return (b & 0x7f800000u) == 0x7f800000u;
}
static inline bool non_finite_f64(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return (b & 0x7ff0000000000000u) == 0x7ff0000000000000u;
}

/* Unscales g[0, n) in place; returns whether an element was inf or NaN. */
#define UNSCALE_SPAN(T, SFX)                                                            \
    CT_SIMD_FN(bool, unscale_span_##SFX, (T *restrict g, int64_t n, T inv),             \
               (g, n, inv), {                                                           \
        int bad = 0;                                                                    \
        for (int64_t i = 0; i < n; i++) {                                               \
            T v = g[i];                                                                 \
            bad |= non_finite_##SFX(v);                                                 \
            g[i] = v * inv;                                                             \
        }                                                                               \
        return bad != 0;                                                                \
    })
UNSCALE_SPAN(float, f32)
UNSCALE_SPAN(double, f64)

/* [lo, hi) of a float16 / bfloat16 gradient, tile by tile through float. */
#define REDUCED_SPAN(TS, SFX)                                                           \
    static bool unscale_span_##SFX(TS *g, int64_t n, float inv) {                       \
        bool bad = false;                                                               \
        float tile[CT_REDUCED_TILE];                                                    \
        for (int64_t b = 0; b < n; b += CT_REDUCED_TILE) {                              \
            int64_t len = n - b < CT_REDUCED_TILE ? n - b : CT_REDUCED_TILE;            \
            CT_REDUCED_TO_FLOAT_N(tile, g + b, len);                                    \
            bad |= unscale_span_f32(tile, len, inv);                                    \
            CT_FLOAT_TO_REDUCED_N(g + b, tile, len);                                    \
        }                                                                               \
        return bad;                                                                     \
    }
REDUCED_SPAN(ct_half, f16)
REDUCED_SPAN(ct_bf16, bf16)

/* Fixed chunks across threads (elementwise: any split gives the same bits); each
 * chunk keeps its own flag and only a chunk that found one writes found_inf. */
#define UNSCALE_KERNEL(T, SFX, OPMATH)                                                  \
    static void unscale_##SFX(char **d, int64_t n, const double *args) {                \
        (void)args;                                                                     \
        T *g = (T *)d[0];                                                               \
        float *found_inf = (float *)d[1];                                               \
        const float inv_scale = *(const float *)d[2];                                   \
        int nt = ct_get_num_threads();                                                  \
        int64_t chunks = n >= CT_GRAIN && nt > 1 ? nt : 1;                              \
        _Pragma("omp parallel for num_threads(nt) if (chunks > 1)")                     \
        for (int64_t c = 0; c < chunks; c++) {                                          \
            int64_t lo = n * c / chunks, hi = n * (c + 1) / chunks;                     \
            if (unscale_span_##SFX(g + lo, hi - lo, (OPMATH)inv_scale)) {               \
                _Pragma("omp atomic write")                                             \
                *found_inf = 1.0f;                                                      \
            }                                                                           \
        }                                                                               \
    }

UNSCALE_KERNEL(float, f32, float)
UNSCALE_KERNEL(double, f64, double)
UNSCALE_KERNEL(ct_half, f16, float)
UNSCALE_KERNEL(ct_bf16, bf16, float)

const ct_kernel_entry ct_cpu_amp_kernels[] = {
    CT_KERNEL(OPTIM, CT_OP_amp_non_finite_check_and_unscale, CT_F32, unscale_f32),
    CT_KERNEL(OPTIM, CT_OP_amp_non_finite_check_and_unscale, CT_F64, unscale_f64),
    CT_KERNEL(OPTIM, CT_OP_amp_non_finite_check_and_unscale, CT_F16, unscale_f16),
    CT_KERNEL(OPTIM, CT_OP_amp_non_finite_check_and_unscale, CT_BF16, unscale_bf16),
    CT_KERNEL_END,
};
