/* Pooling and upsampling kernels (kernels/pool.h) of every floating dtype; float16
 * and bfloat16 compute in float, converting in registers (POOL_KERNELS). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernel_util.h"
#include "kernels/pool.h"
#include "core/mem.h"
#include "cpu/kernel_oom.h"
#include "cpu/pool_pairs.h"

/* Planes in parallel when the work is large enough. */
#define PLANES_PARALLEL(g, work)                                                         \
    int nt_ = ct_get_num_threads();                                                      \
    bool par_ = (g)->planes > 1 && nt_ > 1 && (work) >= CT_GRAIN;                        \
    _Pragma("omp parallel for if (par_) num_threads(nt_)")

/* Are the windows of one dim [2o, 2o + 2) (kernel 2, stride 2, no padding, dilation 1:
 * the common CNN pooling)? */
static bool pairs_dim(const ct_pool_win *w, int64_t O) {
    for (int64_t o = 0; o < O; o++)
        if (w[o].lo != 2 * o || w[o].hi != 2 * o + 2 || w[o].step != 1) return false;
    return true;
}
static bool is_pairs(const ct_pool_geom *g) { return pairs_dim(g->wh, g->OH) && pairs_dim(g->ww, g->OW); }

/* Step of the max scan: v (index i) replaces the best unless the best is already NaN
 * (the first NaN wins), when it is larger or NaN: the generic loop's order. */
#define MAX_STEP(v, i)                                                                   \
    {                                                                                    \
        bool take_ = (v > best || v != v) && best == best;                               \
        best = take_ ? v : best;                                                         \
        bi = take_ ? (i) : bi;                                                           \
    }

/* The outputs that reach each input index of one dim, [lo[i], hi[i]), where output o
 * reaches inputs [a[o], b[o]) with a and b non-decreasing in o (pooling windows,
 * upsampling's source indices): the backwards of avg pooling and upsampling gather
 * each input's gradient from them, in the order of the outputs (the order a scatter
 * adds in), summing in the compute type and storing once. */
static void reach_dim(int64_t I, int64_t O, const int64_t *a, const int64_t *b, int64_t *lo,
                      int64_t *hi) {
    int64_t p = 0, q = 0;
    for (int64_t i = 0; i < I; i++) {
        while (p < O && b[p] <= i) p++;
        while (q < O && a[q] <= i) q++;
        lo[i] = p;
        hi[i] = q > p ? q : p;
    }
}

typedef enum { REACH_WINDOWS, REACH_NEAREST, REACH_BILINEAR } reach_kind;
typedef struct { int64_t *buf, *hlo, *hhi, *wlo, *whi; } pool_reach;

/* r.buf NULL when out of memory (reported: cpu/kernel_oom.h). */
static pool_reach reach_new(const ct_pool_geom *g, reach_kind kind) {
    int64_t H = g->H, W = g->W, O = g->OH > g->OW ? g->OH : g->OW;
    int64_t *buf = ct_malloc(sizeof(int64_t) * (size_t)(2 * (H + W + O) + 1));
    if (!buf) {
        ct_kernel_out_of_memory("a pooling backward");
        return (pool_reach){0};
    }
    pool_reach r = {buf, buf, buf + H, buf + 2 * H, buf + 2 * H + W};
    int64_t *a = buf + 2 * (H + W), *b = a + O;
    for (int d = 0; d < 2; d++) {
        int64_t I = d ? W : H, On = d ? g->OW : g->OH;
        const ct_pool_win *win = d ? g->ww : g->wh;
        const int64_t *i0 = d ? g->iw0 : g->ih0, *i1 = d ? g->iw1 : g->ih1;
        for (int64_t o = 0; o < On; o++) {
            a[o] = kind == REACH_WINDOWS ? win[o].lo : i0[o];
            b[o] = kind == REACH_WINDOWS ? win[o].hi : (kind == REACH_NEAREST ? i0[o] : i1[o]) + 1;
        }
        reach_dim(I, On, a, b, d ? r.wlo : r.hlo, d ? r.whi : r.hhi);
    }
    return r;
}

/* A backward's gather, in a kernel of POOL_KERNELS: gx[h, w] = ST(s), s (of type A)
 * the sum that STMT makes over the outputs (oh, ow) that reach (h, w), in their
 * order; STMT sees oh, ow, h, w and the plane's gy. */
#define GATHER_BACKWARD(T, A, ST, KIND, WORK, STMT)                                      \
    {                                                                                    \
        pool_reach r_ = reach_new(g, KIND);                                              \
        PLANES_PARALLEL(g, WORK)                                                         \
        for (int64_t p = 0; p < (r_.buf ? g->planes : 0); p++) {                         \
            const T *gy = (const T *)j->in + p * OHW;                                    \
            T *gx = (T *)j->out + p * HW;                                                \
            for (int64_t h = 0; h < g->H; h++)                                           \
                for (int64_t w = 0; w < g->W; w++) {                                     \
                    A s = 0;                                                             \
                    for (int64_t oh = r_.hlo[h]; oh < r_.hhi[h]; oh++)                   \
                        for (int64_t ow = r_.wlo[w]; ow < r_.whi[w]; ow++) {             \
                            STMT                                                         \
                        }                                                                \
                    gx[h * g->W + w] = ST(s);                                            \
                }                                                                        \
        }                                                                                \
        free(r_.buf);                                                                    \
    }

/* T: the element type; A: the type computed in, elements loaded as LD(e) and results
 * stored as ST(v) (float16 / bfloat16: float, widened and rounded to nearest even in
 * registers; max pooling's gradient that windows share is added in float and rounded
 * per add, as PyTorch 1.13's cpu kernel adds in the reduced dtype; the other backwards
 * gather each input's sum in float and round it once: reach_dim). */
#define POOL_KERNELS(T, A, LD, ST, SFX)                                                  \
    /* 2x2 windows, stride 2: branch-free over a row of outputs (float32 rows 16 at a    \
     * time with AVX-512), the same results and indices as the generic scan */           \
    static void max_pairs_##SFX(const ct_pool_geom *g, const T *x, T *y, int64_t *ix) {  \
        for (int64_t oh = 0; oh < g->OH; oh++) {                                         \
            const T *r0 = x + 2 * oh * g->W, *r1 = r0 + g->W;                            \
            T *yr = y + oh * g->OW;                                                      \
            int64_t *ir = ix + oh * g->OW, base = 2 * oh * g->W;                         \
            int64_t ow = pairs_row_##SFX(r0, r1, g->W, g->OW, base, yr, ir);             \
            for (; ow < g->OW; ow++) {                                                   \
                A best = LD(r0[2 * ow]);                                                 \
                int64_t i0 = base + 2 * ow, bi = i0;                                     \
                MAX_STEP(LD(r0[2 * ow + 1]), i0 + 1)                                     \
                MAX_STEP(LD(r1[2 * ow]), i0 + g->W)                                      \
                MAX_STEP(LD(r1[2 * ow + 1]), i0 + g->W + 1)                              \
                yr[ow] = ST(best);                                                       \
                ir[ow] = bi;                                                             \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    /* max pooling (also adaptive): argmax per output, first max wins, NaN propagates */ \
    static void max_##SFX(const ct_pool_job *j) {                                        \
        const ct_pool_geom *g = j->g;                                                    \
        int64_t HW = g->H * g->W, OHW = g->OH * g->OW;                                   \
        if (j->gather) {                                                                 \
            PLANES_PARALLEL(g, g->planes * OHW)                                          \
            for (int64_t p = 0; p < g->planes; p++)                                      \
                for (int64_t o = 0; o < OHW; o++)                                        \
                    ((T *)j->out)[p * OHW + o] =                                         \
                        ((const T *)j->in)[p * HW + j->idx[p * OHW + o]];                \
            return;                                                                      \
        }                                                                                \
        if (j->backward) {                                                               \
            PLANES_PARALLEL(g, g->planes * (HW + OHW))                                   \
            for (int64_t p = 0; p < g->planes; p++) {                                    \
                const T *gy = (const T *)j->in + p * OHW;                                \
                T *gx = (T *)j->out + p * HW;                                            \
                const int64_t *ix = j->idx + p * OHW;                                    \
                memset(gx, 0, sizeof(T) * (size_t)HW);                                   \
                for (int64_t o = 0; o < OHW; o++) gx[ix[o]] = ST(LD(gx[ix[o]]) + LD(gy[o])); \
            }                                                                            \
            return;                                                                      \
        }                                                                                \
        if (is_pairs(g)) {                                                               \
            PLANES_PARALLEL(g, g->planes * OHW * 4)                                      \
            for (int64_t p = 0; p < g->planes; p++)                                      \
                max_pairs_##SFX(g, (const T *)j->in + p * HW, (T *)j->out + p * OHW,     \
                                j->idx + p * OHW);                                       \
            return;                                                                      \
        }                                                                                \
        PLANES_PARALLEL(g, g->planes * OHW * 4)                                          \
        for (int64_t p = 0; p < g->planes; p++) {                                        \
            const T *x = (const T *)j->in + p * HW;                                      \
            T *y = (T *)j->out + p * OHW;                                                \
            int64_t *ix = j->idx + p * OHW;                                              \
            for (int64_t oh = 0; oh < g->OH; oh++) {                                     \
                const ct_pool_win *a = &g->wh[oh];                                       \
                for (int64_t ow = 0; ow < g->OW; ow++) {                                 \
                    const ct_pool_win *b = &g->ww[ow];                                   \
                    A best = -INFINITY;                                                  \
                    int64_t bi = a->lo * g->W + b->lo;                                   \
                    for (int64_t h = a->lo; h < a->hi; h += a->step)                     \
                        for (int64_t w = b->lo; w < b->hi; w += b->step) {               \
                            A v = LD(x[h * g->W + w]);                                   \
                            if (v > best || isnan(v)) {                                  \
                                best = v;                                                \
                                bi = h * g->W + w;                                       \
                                if (isnan(v)) goto done_##SFX;                           \
                            }                                                            \
                        }                                                                \
                done_##SFX:                                                              \
                    y[oh * g->OW + ow] = ST(best);                                       \
                    ix[oh * g->OW + ow] = bi;                                            \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    /* average pooling (also adaptive): sum of the window / divisor */                   \
    static A avg_div_##SFX(const ct_pool_geom *g, const ct_pool_win *a,                  \
                           const ct_pool_win *b) {                                       \
        if (g->divisor) return (A)g->divisor;                                            \
        if (g->count_include_pad) return (A)(a->size * b->size);                         \
        return (A)((a->hi - a->lo) * (b->hi - b->lo));                                   \
    }                                                                                    \
    static void avg_##SFX(const ct_pool_job *j) {                                        \
        const ct_pool_geom *g = j->g;                                                    \
        int64_t HW = g->H * g->W, OHW = g->OH * g->OW;                                   \
        if (j->backward) {                                                               \
            GATHER_BACKWARD(T, A, ST, REACH_WINDOWS, g->planes * (HW + OHW),             \
                            s += LD(gy[oh * g->OW + ow]) /                               \
                                 avg_div_##SFX(g, &g->wh[oh], &g->ww[ow]);)              \
            return;                                                                      \
        }                                                                                \
        PLANES_PARALLEL(g, g->planes * (HW + OHW))                                       \
        for (int64_t p = 0; p < g->planes; p++) {                                        \
            const T *x = (const T *)j->in + p * HW;                                      \
            for (int64_t oh = 0; oh < g->OH; oh++) {                                     \
                const ct_pool_win *a = &g->wh[oh];                                       \
                for (int64_t ow = 0; ow < g->OW; ow++) {                                 \
                    const ct_pool_win *b = &g->ww[ow];                                   \
                    bool empty = a->hi <= a->lo || b->hi <= b->lo;                       \
                    A s = 0;                                                             \
                    for (int64_t h = a->lo; h < a->hi; h++)                              \
                        for (int64_t w = b->lo; w < b->hi; w++) s += LD(x[h * g->W + w]); \
                    ((T *)j->out)[p * OHW + oh * g->OW + ow] =                           \
                        ST(empty ? 0 : s / avg_div_##SFX(g, a, b));                      \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    /* nearest: y[oh, ow] = x[ih0[oh], iw0[ow]] */                                       \
    static void nearest_##SFX(const ct_pool_job *j) {                                    \
        const ct_pool_geom *g = j->g;                                                    \
        int64_t HW = g->H * g->W, OHW = g->OH * g->OW;                                   \
        if (j->backward) {                                                               \
            GATHER_BACKWARD(T, A, ST, REACH_NEAREST, g->planes * (HW + OHW),             \
                            s += LD(gy[oh * g->OW + ow]);)                               \
            return;                                                                      \
        }                                                                                \
        PLANES_PARALLEL(g, g->planes * (HW + OHW))                                       \
        for (int64_t p = 0; p < g->planes; p++) {                                        \
            const T *x = (const T *)j->in + p * HW;                                      \
            T *y = (T *)j->out + p * OHW;                                                \
            for (int64_t oh = 0; oh < g->OH; oh++) {                                     \
                const T *xr = x + g->ih0[oh] * g->W;                                     \
                for (int64_t ow = 0; ow < g->OW; ow++) y[oh * g->OW + ow] = xr[g->iw0[ow]]; \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    /* bilinear: weights (1 - l, l) on indices (i0, i1) per dim; the backward adds an  \
     * output's four terms in the order i0 i0, i0 i1, i1 i0, i1 i1 */                    \
    static void bilinear_##SFX(const ct_pool_job *j) {                                   \
        const ct_pool_geom *g = j->g;                                                    \
        int64_t HW = g->H * g->W, OHW = g->OH * g->OW;                                   \
        if (j->backward) {                                                               \
            GATHER_BACKWARD(T, A, ST, REACH_BILINEAR, g->planes * (HW + 4 * OHW),        \
                            A h1 = (A)g->lh1[oh]; A h0 = 1 - h1;                         \
                            A w1 = (A)g->lw1[ow]; A w0 = 1 - w1;                         \
                            A gv = LD(gy[oh * g->OW + ow]);                              \
                            bool a0 = g->ih0[oh] == h; bool a1 = g->ih1[oh] == h;        \
                            bool b0 = g->iw0[ow] == w; bool b1 = g->iw1[ow] == w;        \
                            if (a0 && b0) s += h0 * w0 * gv;                             \
                            if (a0 && b1) s += h0 * w1 * gv;                             \
                            if (a1 && b0) s += h1 * w0 * gv;                             \
                            if (a1 && b1) s += h1 * w1 * gv;)                            \
            return;                                                                      \
        }                                                                                \
        PLANES_PARALLEL(g, g->planes * (HW + 4 * OHW))                                   \
        for (int64_t p = 0; p < g->planes; p++) {                                        \
            const T *x = (const T *)j->in + p * HW;                                      \
            for (int64_t oh = 0; oh < g->OH; oh++) {                                     \
                A h1 = (A)g->lh1[oh], h0 = 1 - h1;                                       \
                int64_t r0 = g->ih0[oh] * g->W, r1 = g->ih1[oh] * g->W;                  \
                for (int64_t ow = 0; ow < g->OW; ow++) {                                 \
                    A w1 = (A)g->lw1[ow], w0 = 1 - w1;                                   \
                    int64_t c0 = g->iw0[ow], c1 = g->iw1[ow];                            \
                    ((T *)j->out)[p * OHW + oh * g->OW + ow] =                           \
                        ST(h0 * (w0 * LD(x[r0 + c0]) + w1 * LD(x[r0 + c1])) +            \
                           h1 * (w0 * LD(x[r1 + c0]) + w1 * LD(x[r1 + c1])));            \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }
#define AS_IS(v) (v)
#define ROUND_F16(v) ct_float_to_half(v)
#define ROUND_BF16(v) ct_float_to_bf16(v)
/* The first outputs of a 2x2 row that a vector kernel does (cpu/pool_pairs.h); float64
 * has none (the scalar loop does its rows). */
static int64_t pairs_row_f64(const double *r0, const double *r1, int64_t W, int64_t OW,
                             int64_t base, double *y, int64_t *ix) {
    (void)r0, (void)r1, (void)W, (void)OW, (void)base, (void)y, (void)ix;
    return 0;
}
#define pairs_row_f32 ct_max_pairs_row_f32
#define pairs_row_f16(r0, r1, W, OW, base, y, ix)                                        \
    ct_max_pairs_row16(false, (const uint16_t *)(r0), (const uint16_t *)(r1), W, OW, base, (uint16_t *)(y), ix)
#define pairs_row_bf16(r0, r1, W, OW, base, y, ix)                                       \
    ct_max_pairs_row16(true, (const uint16_t *)(r0), (const uint16_t *)(r1), W, OW, base, (uint16_t *)(y), ix)
POOL_KERNELS(float, float, AS_IS, AS_IS, f32)
POOL_KERNELS(double, double, AS_IS, AS_IS, f64)
POOL_KERNELS(ct_half, float, CT_LOAD_REDUCED, ROUND_F16, f16)
POOL_KERNELS(ct_bf16, float, CT_LOAD_REDUCED, ROUND_BF16, bf16)

#define ENTRIES(DT, SFX)                                                                 \
    CT_KERNEL(POOL, CT_OP_max_pool2d, DT, max_##SFX),                                    \
    CT_KERNEL(POOL, CT_OP_max_pool2d_backward, DT, max_##SFX),                           \
    CT_KERNEL(POOL, CT_OP_adaptive_max_pool2d_backward, DT, max_##SFX),                  \
    CT_KERNEL(POOL, CT_OP_avg_pool2d_backward, DT, avg_##SFX),                           \
    CT_KERNEL(POOL, CT_OP_adaptive_avg_pool2d_backward, DT, avg_##SFX),                  \
    CT_KERNEL(POOL, CT_OP_upsample_nearest2d_backward, DT, nearest_##SFX),               \
    CT_KERNEL(POOL, CT_OP_upsample_bilinear2d_backward, DT, bilinear_##SFX),             \
    CT_KERNEL(POOL, CT_OP_adaptive_max_pool2d, DT, max_##SFX),                           \
    CT_KERNEL(POOL, CT_OP_avg_pool2d, DT, avg_##SFX),                                    \
    CT_KERNEL(POOL, CT_OP_adaptive_avg_pool2d, DT, avg_##SFX),                           \
    CT_KERNEL(POOL, CT_OP_upsample_nearest2d, DT, nearest_##SFX),                        \
    CT_KERNEL(POOL, CT_OP_upsample_bilinear2d, DT, bilinear_##SFX),
const ct_kernel_entry ct_cpu_pool_kernels[] = {
    ENTRIES(CT_F32, f32) ENTRIES(CT_F64, f64) ENTRIES(CT_F16, f16) ENTRIES(CT_BF16, bf16)
    CT_KERNEL_END,
};
