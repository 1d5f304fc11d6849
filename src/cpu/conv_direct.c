/* Direct float32 convolution for stride 1 (AVX-512): no im2col, no GEMM library.
 *
 * Each input plane is copied once, zero-padded, into a flat buffer of width
 * Wp = OW + dw*(KW-1); then output position (oh, ow) is flat position
 * j = oh*Wp + ow, and tap (kh, kw) reads the plane at j + kh*dh*Wp + kw*dw: a
 * contiguous run for every tap.  A register tile of MR output channels x NV*16
 * flat positions accumulates over (input channel, tap) with broadcast weights;
 * the Wp - OW columns per row that are not outputs are dropped when storing
 * (compressed stores).  The bias is the accumulators' start value.
 *
 * grad_input of a stride-1 conv is the same computation on gy with the kernel
 * flipped, channels swapped and padding (K-1)*d - p (so it needs p <= (K-1)*d).
 * Every output element is one item's fixed-order sum: results do not depend on
 * the thread count (Note [Conv determinism]). */
#include <stdlib.h>
#include <string.h>

#include "cpu/conv.h"
#include "cpu/isa.h"
#include "cpu/kernel_util.h"
#include "core/mem.h"
#include "cpu/kernel_oom.h"

/* A target attribute and a run-time check of ct_cpu_isa() (hand-written AVX-512). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

enum { MR = 8, VL = 16, NVMAX = 3, TILE = NVMAX * VL };

/* One direct convolution: in [N, G*Ci, Hi, Wi] -> out [N, G*Co, Ho, Wo] with pads
 * (pt, pl) before the input and weights packed [G][Co/MR blocks][Ci][KK][MR]. */
typedef struct {
    int64_t N, G, Ci, Co, Hi, Wi, Ho, Wo, KH, KW, dh, dw, pt, pl;
    const float *in, *wp, *bias;
    float *out;
    int64_t rows;  /* output rows per work item */
} dconv;

#define AVX512 __attribute__((target("avx512f")))

/* A tile of MR channels x NV vectors of flat positions starting at xs (the padded
 * planes at the tile's first position): acc = bias + sum over (c, tap). */
static inline __attribute__((always_inline)) AVX512 void
tile(int NV, const float *xs, int64_t S, int64_t Ci, int KK, const int64_t *off,
     const float *w, const float *bias, int mr, float *const *dst, const __mmask16 *mask,
     const int64_t *dpos) {
    __m512 acc[MR][NVMAX];
    for (int m = 0; m < MR; m++) {
        __m512 b = _mm512_set1_ps(bias && m < mr ? bias[m] : 0.0f);
        for (int v = 0; v < NV; v++) acc[m][v] = b;
    }
    for (int64_t c = 0; c < Ci; c++) {
        const float *xc = xs + c * S;
        for (int t = 0; t < KK; t++) {
            const float *xt = xc + off[t];
            __m512 x[NVMAX];
            for (int v = 0; v < NV; v++) x[v] = _mm512_loadu_ps(xt + v * VL);
            for (int m = 0; m < MR; m++) {
                __m512 wv = _mm512_set1_ps(w[m]);
                for (int v = 0; v < NV; v++) acc[m][v] = _mm512_fmadd_ps(wv, x[v], acc[m][v]);
            }
            w += MR;
        }
    }
    for (int v = 0; v < NV; v++) {
        if (!mask[v]) continue;
        __mmask16 k = (__mmask16)((1u << __builtin_popcount(mask[v])) - 1);
        for (int m = 0; m < mr; m++)
            _mm512_mask_storeu_ps(dst[m] + dpos[v], k, _mm512_maskz_compress_ps(mask[v], acc[m][v]));
    }
}

/* The padded planes (row stride Wp, plane stride S = rows * Wp) of image n, group
 * gi, for output rows from r0: padded row r is input row r0 + r - pt.  Reads past the
 * last plane (positions that are never stored) see zeros. */
static AVX512 void pad_planes(const dconv *d, int64_t n, int64_t gi, int64_t r0,
                              int64_t rows, float *xp) {
    int64_t Wp = d->Wo + d->dw * (d->KW - 1), S = rows * Wp, pl = d->pl;
    int64_t hi = pl + d->Wi < Wp ? pl + d->Wi : Wp; /* padded columns [pl, hi) hold x */
    const float *in = d->in + (n * d->G + gi) * d->Ci * d->Hi * d->Wi;
    for (int64_t c = 0; c < d->Ci; c++)
        for (int64_t r = 0; r < rows; r++) {
            float *dr = xp + c * S + r * Wp;
            int64_t ih = r0 + r - d->pt;
            if (ih < 0 || ih >= d->Hi) {
                memset(dr, 0, sizeof(float) * (size_t)Wp);
                continue;
            }
            /* vectors of the padded row: lanes inside [pl, hi) load x, the others 0 */
            const float *src = in + (c * d->Hi + ih) * d->Wi - pl;
            for (int64_t k = 0; k < Wp; k += VL) {
                int64_t a = pl - k, b = hi - k, e = Wp - k; /* lanes [a, b) load, < e exist */
                a = a < 0 ? 0 : a > VL ? VL : a;
                b = b < a ? a : b > VL ? VL : b;
                e = e > VL ? VL : e;
                __mmask16 ld = (__mmask16)(((1u << b) - 1) & ~((1u << a) - 1));
                __mmask16 st = (__mmask16)((1u << e) - 1);
                _mm512_mask_storeu_ps(dr + k, st, _mm512_maskz_loadu_ps(ld, src + k));
            }
        }
    memset(xp + d->Ci * S, 0, sizeof(float) * (size_t)(TILE + d->dw * (d->KW - 1)));
}

/* One work item: image n, group gi, output rows [r0, r1). */
static AVX512 void item(const dconv *d, int64_t n, int64_t gi, int64_t r0, int64_t r1,
                        float *xp, __mmask16 *masks, int64_t *dpos, const int64_t *off) {
    int64_t Wp = d->Wo + d->dw * (d->KW - 1), rows = r1 - r0 + d->dh * (d->KH - 1);
    int64_t S = rows * Wp, J = (r1 - r0) * Wp, KK = d->KH * d->KW;
    pad_planes(d, n, gi, r0, rows, xp);
    /* per vector of flat positions: which lanes are outputs, and where they go */
    int64_t nvec = (J + VL - 1) / VL;
    for (int64_t v = 0; v < nvec; v++) {
        unsigned mk = 0;
        dpos[v] = 0;
        for (int l = VL - 1; l >= 0; l--) {
            int64_t j = v * VL + l, ow = j % Wp;
            if (j < J && ow < d->Wo) {
                mk |= 1u << l;
                dpos[v] = (r0 + j / Wp) * d->Wo + ow;
            }
        }
        masks[v] = (__mmask16)mk;
    }
    int64_t nob = (d->Co + MR - 1) / MR, plane = d->Ho * d->Wo;
    float *out = d->out + (n * d->G + gi) * d->Co * plane;
    for (int64_t j0 = 0; j0 < J; j0 += TILE) {
        int nv = (int)((J - j0 + VL - 1) / VL);
        nv = nv > NVMAX ? NVMAX : nv;
        for (int64_t ob = 0; ob < nob; ob++) {
            int mr = (int)(d->Co - ob * MR < MR ? d->Co - ob * MR : MR);
            float *dst[MR];
            for (int m = 0; m < MR; m++) dst[m] = out + (ob * MR + (m < mr ? m : 0)) * plane;
            const float *w = d->wp + (gi * nob + ob) * d->Ci * KK * MR;
            const float *b = d->bias ? d->bias + gi * d->Co + ob * MR : NULL;
            const __mmask16 *mk = masks + j0 / VL;
            const int64_t *dp = dpos + j0 / VL;
            if (nv == 3)
                tile(3, xp + j0, S, d->Ci, (int)KK, off, w, b, mr, dst, mk, dp);
            else if (nv == 2)
                tile(2, xp + j0, S, d->Ci, (int)KK, off, w, b, mr, dst, mk, dp);
            else
                tile(1, xp + j0, S, d->Ci, (int)KK, off, w, b, mr, dst, mk, dp);
        }
    }
}

static void run(const dconv *d) {
    int64_t Wp = d->Wo + d->dw * (d->KW - 1), KK = d->KH * d->KW;
    int64_t nblk = (d->Ho + d->rows - 1) / d->rows, items = d->N * d->G * nblk;
    int64_t rows = d->rows + d->dh * (d->KH - 1);
    size_t xsz = (size_t)(d->Ci * rows * Wp + TILE + d->dw * (d->KW - 1));
    size_t nvec = (size_t)((d->rows * Wp + VL - 1) / VL);
    int64_t off[64];
    for (int64_t t = 0; t < KK; t++) off[t] = t / d->KW * d->dh * Wp + t % d->KW * d->dw;
    int nt = ct_get_num_threads();
    atomic_bool failed = false;
    _Pragma("omp parallel num_threads(nt) if (nt > 1 && items > 1)")
    {
        float *xp = ct_malloc(sizeof(float) * xsz);
        __mmask16 *masks = ct_malloc(sizeof(__mmask16) * nvec);
        int64_t *dpos = ct_malloc(sizeof(int64_t) * nvec);
        bool have = xp && masks && dpos;
        if (!have) atomic_store(&failed, true);
        _Pragma("omp for schedule(dynamic)")
        for (int64_t it = 0; it < items; it++) {
            if (!have) continue;
            int64_t b = it % nblk, gi = it / nblk % d->G, n = it / nblk / d->G;
            int64_t r0 = b * d->rows, r1 = r0 + d->rows < d->Ho ? r0 + d->rows : d->Ho;
            item(d, n, gi, r0, r1, xp, masks, dpos, off);
        }
        free(xp);
        free(masks);
        free(dpos);
    }
    if (failed) ct_kernel_out_of_memory("conv");
}

/* Weights packed [G][Co blocks of MR][Ci][KK][MR], zeros past Co; `flip` packs
 * grad_input's kernel (w [G*Ci', Co', KK] read transposed and flipped). */
static float *pack(const float *w, int64_t G, int64_t Co, int64_t Ci, int64_t KK, bool flip) {
    int64_t nob = (Co + MR - 1) / MR;
    float *p = ct_calloc((size_t)(G * nob * Ci * KK * MR), sizeof(float));
    if (!p) {
        ct_kernel_out_of_memory("conv");
        return NULL;
    }
    for (int64_t g = 0; g < G; g++)
        for (int64_t o = 0; o < Co; o++)
            for (int64_t c = 0; c < Ci; c++)
                for (int64_t t = 0; t < KK; t++) {
                    /* forward: w[g*Co + o][c][t]; grad_input: w[g*Ci + c][o][KK-1-t] */
                    float v = flip ? w[((g * Ci + c) * Co + o) * KK + KK - 1 - t]
                                   : w[((g * Co + o) * Ci + c) * KK + t];
                    p[((((g * nob + o / MR) * Ci + c) * KK + t) * MR) + o % MR] = v;
                }
    return p;
}

/* ---- grad_weight: gw[o, c, tap] = sum over n, positions of gy[o] * x[c] shifted ----
 * Vectors run over output channels, so gy is transposed per image to gyT [P][Op]
 * (Op: O rounded up to 16, zeros past O); a tile of NC (c, tap) pairs x NV vectors
 * of channels broadcasts x.  Accumulators live in gwT [CTp][Op] between position
 * blocks; each element sums images, then positions, in order. */

static inline __attribute__((always_inline)) AVX512 void
wtile(int NV, int NC, const float *xp, const int64_t *ctoff, const float *gyT, int64_t Op,
      int64_t oh0, int64_t oh1, int64_t Wp, int64_t OW, float *gw) {
    __m512 acc[24];
    const float *xs[24];
    for (int i = 0; i < NC; i++) {
        xs[i] = xp + ctoff[i];
        for (int v = 0; v < NV; v++) acc[i * NV + v] = _mm512_loadu_ps(gw + i * Op + v * VL);
    }
    for (int64_t oh = oh0; oh < oh1; oh++) {
        const float *g = gyT + oh * OW * Op;
        int64_t xr = oh * Wp;
        for (int64_t ow = 0; ow < OW; ow++) {
            __m512 gv[4];
            for (int v = 0; v < NV; v++) gv[v] = _mm512_loadu_ps(g + ow * Op + v * VL);
            for (int i = 0; i < NC; i++) {
                __m512 b = _mm512_set1_ps(xs[i][xr + ow]);
                for (int v = 0; v < NV; v++) acc[i * NV + v] = _mm512_fmadd_ps(b, gv[v], acc[i * NV + v]);
            }
        }
    }
    for (int i = 0; i < NC; i++)
        for (int v = 0; v < NV; v++) _mm512_storeu_ps(gw + i * Op + v * VL, acc[i * NV + v]);
}

/* A 16 x 16 transpose in registers: row i in r[i]; on return, column j is in
 * r[tr16_col(j)] (j with its bits 0 and 1 swapped). */
static inline __attribute__((always_inline)) AVX512 void tr16(__m512 *r) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 2; k++) {
            __m512d a = _mm512_castps_pd(t[4 * i + k]), b = _mm512_castps_pd(t[4 * i + 2 + k]);
            u[4 * i + k] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            u[4 * i + 2 + k] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++) {
            t[8 * i + k] = _mm512_shuffle_f32x4(u[8 * i + k], u[8 * i + 4 + k], 0x88);
            t[8 * i + 4 + k] = _mm512_shuffle_f32x4(u[8 * i + k], u[8 * i + 4 + k], 0xdd);
        }
    for (int k = 0; k < 8; k++) {
        r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
        r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xdd);
    }
}
static inline int tr16_col(int j) { return (j & ~3) | (j & 1) << 1 | (j >> 1 & 1); }

/* gyT [P][Op] <- gy [Og][P] (columns past Og zero), in 16 x 16 blocks; with gb,
 * gb[o] += the sum of gy's row o (double, in order). */
static AVX512 void transpose_gy(const float *gy, int64_t Og, int64_t P, int64_t Op, float *gyT,
                                double *gb) {
    for (int64_t p0 = 0; p0 < P; p0 += VL) {
        int pn = (int)(P - p0 < VL ? P - p0 : VL);
        __mmask16 m = (__mmask16)((1u << pn) - 1);
        for (int64_t o0 = 0; o0 < Op; o0 += VL) {
            __m512 r[VL];
#pragma GCC unroll 16
            for (int i = 0; i < VL; i++)
                r[i] = o0 + i < Og ? _mm512_maskz_loadu_ps(m, gy + (o0 + i) * P + p0)
                                   : _mm512_setzero_ps();
            tr16(r);
#pragma GCC unroll 16
            for (int j = 0; j < VL; j++)
                if (j < pn) _mm512_storeu_ps(gyT + (p0 + j) * Op + o0, r[tr16_col(j)]);
        }
    }
    for (int64_t o = 0; gb && o < Og; o++) {
        const float *row = gy + o * P;
        __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
        int64_t p = 0;
        for (; p + VL <= P; p += VL) {
            s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm256_loadu_ps(row + p)));
            s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_loadu_ps(row + p + 8)));
        }
        double t = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
        for (; p < P; p++) t += row[p];
        gb[o] += t;
    }
}

/* The weight gradient of images [n0, n1) into dst [G*Og][Cg*KK] (written), and when
 * gb is not NULL, the bias gradient into gb [G*Og] (written; double sums of gy's rows
 * in order). */
static AVX512 void wchunk(const dconv *d, const float *gy, int64_t n0, int64_t n1, float *xp,
                          float *gyT, float *gwT, int64_t *ctoff, float *dst, double *gb) {
    int64_t KK = d->KH * d->KW, CT = d->Ci * KK, Op = (d->Co + VL - 1) / VL * VL;
    int64_t Wp = d->Wo + d->dw * (d->KW - 1), rows = d->Ho + d->dh * (d->KH - 1);
    int64_t S = rows * Wp, P = d->Ho * d->Wo;
    int NV = Op % 64 == 0 ? 4 : Op % 32 == 0 ? 2 : 1, NC = 24 / NV;
    int64_t CTp = (CT + NC - 1) / NC * NC;
    for (int64_t i = 0; i < CTp; i++) { /* pairs past CT repeat the last one (dropped) */
        int64_t ct = i < CT ? i : CT - 1;
        ctoff[i] = ct / KK * S + ct % KK / d->KW * d->dh * Wp + ct % KK % d->KW * d->dw;
    }
    /* output rows per position block: about 128 positions of gyT stay in L1 */
    int64_t rb = 128 / d->Wo < 1 ? 1 : 128 / d->Wo;
    if (gb) memset(gb, 0, sizeof(double) * (size_t)(d->G * d->Co));
    for (int64_t gi = 0; gi < d->G; gi++) {
        memset(gwT, 0, sizeof(float) * (size_t)(CTp * Op));
        for (int64_t n = n0; n < n1; n++) {
            pad_planes(d, n, gi, 0, rows, xp);
            transpose_gy(gy + (n * d->G + gi) * d->Co * P, d->Co, P, Op, gyT,
                         gb ? gb + gi * d->Co : NULL);
            for (int64_t oh0 = 0; oh0 < d->Ho; oh0 += rb) {
                int64_t oh1 = oh0 + rb < d->Ho ? oh0 + rb : d->Ho;
                for (int64_t ob = 0; ob < Op; ob += NV * VL)
                    for (int64_t i = 0; i < CTp; i += NC) {
                        float *gw = gwT + i * Op + ob;
                        const int64_t *co = ctoff + i;
                        if (NV == 4)
                            wtile(4, 6, xp, co, gyT + ob, Op, oh0, oh1, Wp, d->Wo, gw);
                        else if (NV == 2)
                            wtile(2, 12, xp, co, gyT + ob, Op, oh0, oh1, Wp, d->Wo, gw);
                        else
                            wtile(1, 24, xp, co, gyT + ob, Op, oh0, oh1, Wp, d->Wo, gw);
                    }
            }
        }
        for (int64_t o = 0; o < d->Co; o++)
            for (int64_t ct = 0; ct < CT; ct++)
                dst[(gi * d->Co + o) * CT + ct] = gwT[ct * Op + o];
    }
}

/* Fixed chunks of the batch (a function of N only) combined in chunk order: Note
 * [Conv determinism]. */
static void grad_weight(const dconv *d, const float *gy, float *gw, float *gb) {
    int64_t KK = d->KH * d->KW, CT = d->Ci * KK, Op = (d->Co + VL - 1) / VL * VL;
    int64_t wn = d->G * d->Co * CT, nc = d->N < 8 ? d->N : 8;
    int64_t Wp = d->Wo + d->dw * (d->KW - 1), rows = d->Ho + d->dh * (d->KH - 1);
    size_t xsz = (size_t)(d->Ci * rows * Wp + TILE + d->dw * (d->KW - 1));
    size_t CTp = (size_t)(CT + 24), P = (size_t)(d->Ho * d->Wo);
    float *part = nc > 1 ? ct_malloc(sizeof(float) * (size_t)(wn * (nc - 1))) : NULL;
    double *bpart = gb ? ct_malloc(sizeof(double) * (size_t)(nc * d->G * d->Co)) : NULL;
    atomic_bool failed = (nc > 1 && !part) || (gb && !bpart);
    int nt = ct_get_num_threads();
    _Pragma("omp parallel num_threads(nt) if (nt > 1 && nc > 1 && !failed)")
    {
        float *xp = ct_malloc(sizeof(float) * xsz), *gyT = ct_malloc(sizeof(float) * P * (size_t)Op);
        float *gwT = ct_malloc(sizeof(float) * CTp * (size_t)Op);
        int64_t *ctoff = ct_malloc(sizeof(int64_t) * CTp);
        bool have = xp && gyT && gwT && ctoff;
        if (!have) atomic_store(&failed, true);
        _Pragma("omp for schedule(dynamic)")
        for (int64_t c = 0; c < nc; c++)
            if (have && !atomic_load_explicit(&failed, memory_order_relaxed))
            wchunk(d, gy, c * d->N / nc, (c + 1) * d->N / nc, xp, gyT, gwT, ctoff,
                   c == 0 ? gw : part + (c - 1) * wn, gb ? bpart + c * d->G * d->Co : NULL);
        free(xp);
        free(gyT);
        free(gwT);
        free(ctoff);
    }
    if (failed) {
        free(part);
        free(bpart);
        ct_kernel_out_of_memory("conv backward");
        return;
    }
    for (int64_t c = 1; c < nc; c++)
        for (int64_t i = 0; i < wn; i++) gw[i] += part[(c - 1) * wn + i];
    for (int64_t o = 0; gb && o < d->G * d->Co; o++) {
        double acc = 0;
        for (int64_t c = 0; c < nc; c++) acc += bpart[c * d->G * d->Co + o];
        gb[o] = (float)acc;
    }
    free(part);
    free(bpart);
}

bool ct_conv_direct_f32(const ct_conv_job *job) {
    const ct_conv_geom *g = job->g;
    if (job->kind != CT_CONV_FORWARD && job->kind != CT_CONV_GRAD_INPUT &&
        job->kind != CT_CONV_GRAD_WEIGHT)
        return false;
    if (g->sh != 1 || g->sw != 1 || g->KH * g->KW > 64 || ct_cpu_isa() != CT_ISA_AVX512)
        return false;
    if (g->N <= 0 || g->C <= 0 || g->O <= 0 || g->H <= 0 || g->W <= 0 || g->OH <= 0 || g->OW <= 0)
        return false;
    int64_t G = g->groups, KK = g->KH * g->KW, eh = g->dh * (g->KH - 1), ew = g->dw * (g->KW - 1);
    dconv d = {.N = g->N, .G = G, .KH = g->KH, .KW = g->KW, .dh = g->dh, .dw = g->dw};
    bool fwd = job->kind == CT_CONV_FORWARD;
    if (job->kind == CT_CONV_GRAD_WEIGHT) { /* in = x, the conv's geometry */
        d.Ci = g->C / G, d.Co = g->O / G, d.Hi = g->H, d.Wi = g->W, d.Ho = g->OH, d.Wo = g->OW;
        d.pt = g->ph, d.pl = g->pw, d.in = job->a;
        grad_weight(&d, job->b, job->out, job->out_bias);
        return true;
    }
    if (fwd) {
        d.Ci = g->C / G, d.Co = g->O / G, d.Hi = g->H, d.Wi = g->W, d.Ho = g->OH, d.Wo = g->OW;
        d.pt = g->ph, d.pl = g->pw, d.bias = job->bias;
    } else { /* a conv of gy with padding (K-1)*d - p; the flipped kernel */
        if (g->ph > eh || g->pw > ew) return false;
        d.Ci = g->O / G, d.Co = g->C / G, d.Hi = g->OH, d.Wi = g->OW, d.Ho = g->H, d.Wo = g->W;
        d.pt = eh - g->ph, d.pl = ew - g->pw;
    }
    /* Rows per item: about 4096 flat positions (the padded rows stay in L2), and
     * enough items for the threads when the batch is small. */
    int64_t Wp = d.Wo + ew, rows = 4096 / Wp;
    int64_t want = 4 * ct_get_num_threads(), per = (want + d.N * G - 1) / (d.N * G);
    if (per > 1 && d.Ho / per < rows) rows = (d.Ho + per - 1) / per;
    d.rows = rows < 1 ? 1 : rows > d.Ho ? d.Ho : rows;
    float *wp = pack(job->b, G, d.Co, d.Ci, KK, !fwd);
    if (!wp) return true; /* handled: the result fails (cpu/kernel_oom.h) */
    d.in = job->a, d.wp = wp, d.out = job->out;
    run(&d);
    free(wp);
    return true;
}

#else
bool ct_conv_direct_f32(const ct_conv_job *job) {
    (void)job;
    return false;
}
#endif
