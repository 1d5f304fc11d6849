/* batch_norm, layer_norm and group_norm for float16 and bfloat16, forward and backward
 * (kernels/norm.h), as PyTorch 1.13 computes its bfloat16 ones: in float, the input
 * widened a tile of CT_REDUCED_TILE elements at a time into a stack buffer
 * (cpu/reduced_cvt.h; a layer / group norm row of up to ROW_MAX elements once for all
 * its passes), the statistics summed in float lanes (ct_acc_type), each output
 * rounded to nearest even once on its store.  No temporary grows with the input; the
 * weight, bias, statistics and running statistics are float (kernels/norm.h).  The
 * formulas, the passes and the thread split are those of cpu/norm.c, so Note [Norm
 * determinism] holds here too. */
#include <stdlib.h>

#include "cpu/float_lanes.h"
#include "kernels/norm.h"
#include "core/mem.h"
#include "cpu/kernel_oom.h"

#define TILE CT_REDUCED_TILE
#define LN_CHUNK_ROWS 32 /* as cpu/norm.c */
enum { CB = 64 };        /* batch_norm's column block when S == 1 (as cpu/norm.c) */
_Static_assert(CB <= TILE, "a column block fits a tile");

/* Tiles of elements i .. i + n of x widened to float, and rounded back. */
static void widen(bool half, float *d, const void *x, int64_t i, int64_t n) {
    if (half) ct_half_to_float_n(d, (const ct_half *)x + i, n);
    else ct_bf16_to_float_n(d, (const ct_bf16 *)x + i, n);
}
static void narrow(bool half, void *y, int64_t i, const float *s, int64_t n) {
    if (half) ct_float_to_half_n((ct_half *)y + i, s, n);
    else ct_float_to_bf16_n((ct_bf16 *)y + i, s, n);
}

/* ---- steps on float tiles --------------------------------------------------------- */

/* l[j] += (a - ma) * (b - mb) in lanes (lanes_add's order) */
CT_SIMD_PROC(lanes_dev, (float *restrict l, const float *restrict a, float ma,
                         const float *restrict b, float mb, int64_t n), (l, a, ma, b, mb, n), {
    int64_t i = 0;
    for (; i + CT_REDUCE_LANES <= n; i += CT_REDUCE_LANES)
        for (int j = 0; j < CT_REDUCE_LANES; j++) l[j] += (a[i + j] - ma) * (b[i + j] - mb);
    for (int j = 0; i < n; i++, j++) l[j] += (a[i] - ma) * (b[i] - mb);
})
/* o = t * a + b; with w (and c): (t * a + b) * w + c (layer_norm) */
CT_SIMD_PROC(tile_axpb, (float *restrict o, const float *restrict t, const float *restrict w,
                         const float *restrict c, int64_t n, float a, float b), (o, t, w, c, n, a, b), {
    if (w)
        for (int64_t i = 0; i < n; i++) o[i] = (t[i] * a + b) * w[i] + c[i];
    else
        for (int64_t i = 0; i < n; i++) o[i] = t[i] * a + b;
})
/* d = a * b */
CT_SIMD_PROC(tile_mul, (float *restrict d, const float *restrict a, const float *restrict b,
                        int64_t n), (d, a, b, n), {
    for (int64_t i = 0; i < n; i++) d[i] = a[i] * b[i];
})
/* o = a * g * w + b * t + c (layer_norm; w NULL: group_norm's a * g + b * t + c) */
CT_SIMD_PROC(tile_row_dx, (float *restrict o, const float *restrict t, const float *restrict g,
                           const float *restrict w, int64_t n, float a, float b, float c),
             (o, t, g, w, n, a, b, c), {
    if (w)
        for (int64_t i = 0; i < n; i++) o[i] = a * g[i] * w[i] + b * t[i] + c;
    else
        for (int64_t i = 0; i < n; i++) o[i] = a * g[i] + b * t[i] + c;
})
/* batch_norm's dx: training (g - gm - (t - m) * k) * is * w, eval g * is * w */
CT_SIMD_PROC(tile_bn_dx, (float *restrict t, const float *restrict g, int64_t n, bool train,
                          float m, float k, float gm, float is, float w), (t, g, n, train, m, k, gm, is, w), {
    if (train)
        for (int64_t i = 0; i < n; i++) t[i] = (g[i] - gm - (t[i] - m) * k) * is * w;
    else
        for (int64_t i = 0; i < n; i++) t[i] = g[i] * is * w;
})
/* pw += g * (t - m) * r, pb += g (layer_norm's weight and bias gradient partials) */
CT_SIMD_PROC(tile_ln_gw, (float *restrict pw, float *restrict pb, const float *restrict g,
                          const float *restrict t, int64_t n, float m, float r), (pw, pb, g, t, n, m, r), {
    for (int64_t i = 0; i < n; i++) {
        pw[i] += g[i] * (t[i] - m) * r;
        pb[i] += g[i];
    }
})

/* Sums over np runs of len elements from element off on, stride apart: *s1 = sum of
 * (a - ma) * (b - mb) (b NULL: of a); with s2, also *s2 = sum of a. */
static void runs_sum(bool half, const void *a, float ma, const void *b, float mb, int64_t off,
                     int64_t np, int64_t len, int64_t stride, float *s1, float *s2) {
    float ta[TILE], tb[TILE], l1[CT_REDUCE_LANES] = {0}, l2[CT_REDUCE_LANES] = {0};
    for (int64_t p = 0; p < np; p++)
        for (int64_t i = 0; i < len; i += TILE) {
            int64_t n = len - i < TILE ? len - i : TILE;
            widen(half, ta, a, off + p * stride + i, n);
            if (b) {
                widen(half, tb, b, off + p * stride + i, n);
                lanes_dev(l1, ta, ma, tb, mb, n);
            } else {
                lanes_add(l1, ta, NULL, n);
            }
            if (s2) lanes_add(l2, ta, NULL, n);
        }
    *s1 = lanes_total(l1);
    if (s2) *s2 = lanes_total(l2);
}

/* ---- batch_norm: [N, C, S] ------------------------------------------------------- */

/* Channel c's statistics from its mean and variance sum, and the running statistics'
 * update, in float. */
static void bn_finish(const ct_norm_job *j, int64_t c, float mean, float var_sum) {
    int64_t n = j->N * j->S;
    const float mom = (float)j->momentum;
    ((float *)j->mean)[c] = mean;
    ((float *)j->rstd)[c] = 1.0f / sqrtf(var_sum / (float)n + (float)j->eps);
    if (j->running_mean) {
        float *rm = j->running_mean;
        rm[c] = mom * mean + (1 - mom) * rm[c];
    }
    if (j->running_var) {
        float *rv = j->running_var;
        rv[c] = mom * (var_sum / (float)(n - 1)) + (1 - mom) * rv[c];
    }
}
static void bn_stats(const ct_norm_job *j, int64_t c, float mean, float var_sum) {
    if (j->training) {
        bn_finish(j, c, mean, var_sum);
    } else {
        ((float *)j->mean)[c] = ((const float *)j->running_mean)[c];
        ((float *)j->rstd)[c] = 1.0f / sqrtf(((const float *)j->running_var)[c] + (float)j->eps);
    }
}
/* y = x * a + b with a = rstd * w, b = bias - mean * a */
static void bn_alpha_beta(const ct_norm_job *j, int64_t c, float *a, float *b) {
    float w = j->w ? ((const float *)j->w)[c] : 1, bb = j->b ? ((const float *)j->b)[c] : 0;
    *a = ((const float *)j->rstd)[c] * w;
    *b = bb - ((const float *)j->mean)[c] * *a;
}

/* S > 1: channel c's N planes of S */
static void bn_plane(bool half, const ct_norm_job *j, int64_t c) {
    const int64_t N = j->N, C = j->C, S = j->S, n = N * S;
    const void *x = j->x;
    float t[TILE], g[TILE];
    if (!j->backward) {
        if (j->training) {
            float sum, sq;
            runs_sum(half, x, 0, NULL, 0, c * S, N, S, C * S, &sum, NULL);
            float mean = sum / (float)n;
            runs_sum(half, x, mean, x, mean, c * S, N, S, C * S, &sq, NULL);
            bn_stats(j, c, mean, sq);
        } else {
            bn_stats(j, c, 0, 0);
        }
        float a, b;
        bn_alpha_beta(j, c, &a, &b);
        for (int64_t p = 0; p < N; p++)
            for (int64_t i = 0; i < S; i += TILE) {
                int64_t k = S - i < TILE ? S - i : TILE, at = (p * C + c) * S + i;
                widen(half, t, x, at, k);
                tile_axpb(g, t, NULL, NULL, k, a, b);
                narrow(half, j->y, at, g, k);
            }
        return;
    }
    const float m = ((const float *)j->mean)[c], is = ((const float *)j->rstd)[c];
    const float w = j->w ? ((const float *)j->w)[c] : 1;
    float sum, dotp;
    /* sum of g, sum of (x - m) * g */
    runs_sum(half, j->gy, 0, x, m, c * S, N, S, C * S, &dotp, &sum);
    if (j->gx) {
        float k = dotp * is * is / (float)n, gm = sum / (float)n;
        for (int64_t p = 0; p < N; p++)
            for (int64_t i = 0; i < S; i += TILE) {
                int64_t len = S - i < TILE ? S - i : TILE, at = (p * C + c) * S + i;
                widen(half, t, x, at, len);
                widen(half, g, j->gy, at, len);
                tile_bn_dx(t, g, len, j->training, m, k, gm, is, w);
                narrow(half, j->gx, at, t, len);
            }
    }
    if (j->gw) ((float *)j->gw)[c] = dotp * is;
    if (j->gb) ((float *)j->gb)[c] = sum;
}

/* Per-column steps over one row of a block of nc columns. */
/* acc += (t - ma) * (b - mb) (b NULL: acc += t) */
CT_SIMD_PROC(cols_dev, (float *restrict acc, const float *restrict t, const float *restrict ma,
                        const float *restrict b, int64_t nc), (acc, t, ma, b, nc), {
    if (b)
        for (int64_t k = 0; k < nc; k++) acc[k] += (t[k] - ma[k]) * b[k];
    else
        for (int64_t k = 0; k < nc; k++) acc[k] += t[k];
})
/* t = t * a + b */
CT_SIMD_PROC(cols_axpb, (float *restrict t, const float *restrict a, const float *restrict b,
                         int64_t nc), (t, a, b, nc), {
    for (int64_t k = 0; k < nc; k++) t[k] = t[k] * a[k] + b[k];
})
/* dx: training (g - gm - (t - m) * kk) * is * w, eval g * is * w */
CT_SIMD_PROC(cols_bn_dx, (float *restrict t, const float *restrict g, const float *restrict m,
                          const float *restrict kk, const float *restrict gm,
                          const float *restrict is, const float *restrict w, bool train,
                          int64_t nc), (t, g, m, kk, gm, is, w, train, nc), {
    if (train)
        for (int64_t k = 0; k < nc; k++) t[k] = (g[k] - gm[k] - (t[k] - m[k]) * kk[k]) * is[k] * w[k];
    else
        for (int64_t k = 0; k < nc; k++) t[k] = g[k] * is[k] * w[k];
})

/* S == 1: columns [c0, c0 + nc) of [N, C], each summed over the rows in order */
static void bn_cols(bool half, const ct_norm_job *j, int64_t c0, int64_t nc) {
    const int64_t N = j->N, C = j->C;
    float t[CB], g[CB], s1[CB], s2[CB], a[CB], b[CB], w[CB], gm[CB];
    const float *m = (const float *)j->mean + c0, *is = (const float *)j->rstd + c0;
    if (!j->backward) {
        for (int64_t k = 0; k < nc; k++) s1[k] = s2[k] = a[k] = 0;
        if (j->training) {
            for (int64_t i = 0; i < N; i++) {
                widen(half, t, j->x, i * C + c0, nc);
                cols_dev(s1, t, NULL, NULL, nc);
            }
            for (int64_t k = 0; k < nc; k++) a[k] = s1[k] / (float)N;
            for (int64_t i = 0; i < N; i++) {
                widen(half, t, j->x, i * C + c0, nc);
                for (int64_t k = 0; k < nc; k++) g[k] = t[k] - a[k];
                cols_dev(s2, t, a, g, nc);
            }
        }
        for (int64_t k = 0; k < nc; k++) {
            bn_stats(j, c0 + k, a[k], s2[k]);
            bn_alpha_beta(j, c0 + k, &a[k], &b[k]);
        }
        for (int64_t i = 0; i < N; i++) {
            widen(half, t, j->x, i * C + c0, nc);
            cols_axpb(t, a, b, nc);
            narrow(half, j->y, i * C + c0, t, nc);
        }
        return;
    }
    /* s1: sum of g, s2: sum of (x - m) * g */
    for (int64_t k = 0; k < nc; k++) s1[k] = s2[k] = 0;
    for (int64_t i = 0; i < N; i++) {
        widen(half, t, j->x, i * C + c0, nc);
        widen(half, g, j->gy, i * C + c0, nc);
        cols_dev(s1, g, NULL, NULL, nc);
        cols_dev(s2, t, m, g, nc);
    }
    if (j->gx) {
        for (int64_t k = 0; k < nc; k++) {
            w[k] = j->w ? ((const float *)j->w)[c0 + k] : 1;
            a[k] = s2[k] * is[k] * is[k] / (float)N;
            gm[k] = s1[k] / (float)N;
        }
        for (int64_t i = 0; i < N; i++) {
            widen(half, t, j->x, i * C + c0, nc);
            widen(half, g, j->gy, i * C + c0, nc);
            cols_bn_dx(t, g, m, a, gm, is, w, j->training, nc);
            narrow(half, j->gx, i * C + c0, t, nc);
        }
    }
    for (int64_t k = 0; k < nc; k++) {
        if (j->gw) ((float *)j->gw)[c0 + k] = s2[k] * is[k];
        if (j->gb) ((float *)j->gb)[c0 + k] = s1[k];
    }
}

static void batch_norm_reduced(bool half, const ct_norm_job *j) {
    const int64_t C = j->C, S = j->S;
    int nt = ct_get_num_threads();
    bool par = nt > 1 && j->N * C * S >= CT_GRAIN;
    if (S != 1) {
#pragma omp parallel for if (par) num_threads(nt) schedule(static)
        for (int64_t c = 0; c < C; c++) bn_plane(half, j, c);
        return;
    }
    int64_t nb = (C + CB - 1) / CB;
#pragma omp parallel for if (par) num_threads(nt) schedule(static)
    for (int64_t blk = 0; blk < nb; blk++)
        bn_cols(half, j, blk * CB, C - blk * CB < CB ? C - blk * CB : CB);
}

/* ---- layer_norm / group_norm: rows of K * S -------------------------------------- */

/* NULL when out of memory (reported: cpu/kernel_oom.h). */
static float *scratch(size_t n) {
    float *p = ct_calloc(n ? n : 1, sizeof(float));
    if (!p) ct_kernel_out_of_memory("a normalization kernel");
    return p;
}

/* A row's elements as float: rows of up to ROW_MAX elements are widened once into a
 * fixed stack buffer and read from it by every pass, longer ones a tile at a time per
 * pass.  Either way the passes see tiles of TILE, so the sums' order is the same. */
enum { ROW_MAX = 4096 };
_Static_assert(ROW_MAX % TILE == 0, "whole tiles");
typedef struct {
    bool half, whole;
    const void *src;
    int64_t base;
    float *buf; /* [ROW_MAX] when whole, else [TILE] */
} row_view;
static row_view row_of(bool half, const void *src, int64_t base, int64_t n, float *buf) {
    row_view v = {half, n <= ROW_MAX, src, base, buf};
    if (v.whole) widen(half, buf, src, base, n);
    return v;
}
/* elements [i, i + n) of the row, n <= TILE */
static const float *row_at(const row_view *v, int64_t i, int64_t n) {
    if (v->whole) return v->buf + i;
    widen(v->half, v->buf, v->src, v->base + i, n);
    return v->buf;
}

static void row_fwd(bool half, const ct_norm_job *j, int64_t r, const float *ones,
                    const float *zeros) {
    const int64_t K = j->C / j->G, S = j->S, n = K * S, x0 = r * n, c0 = (r % j->G) * K;
    float buf[ROW_MAX], o[TILE], l1[CT_REDUCE_LANES] = {0}, l2[CT_REDUCE_LANES] = {0};
    row_view x = row_of(half, j->x, x0, n, buf);
    for (int64_t i = 0; i < n; i += TILE) {
        int64_t len = n - i < TILE ? n - i : TILE;
        lanes_add(l1, row_at(&x, i, len), NULL, len);
    }
    const float mean = lanes_total(l1) / (float)n;
    for (int64_t i = 0; i < n; i += TILE) {
        int64_t len = n - i < TILE ? n - i : TILE;
        const float *t = row_at(&x, i, len);
        lanes_dev(l2, t, mean, t, mean, len);
    }
    /* two passes: the sum of squares is >= 0 */
    const float rstd = 1.0f / sqrtf(lanes_total(l2) / (float)n + (float)j->eps);
    ((float *)j->mean)[r] = mean;
    ((float *)j->rstd)[r] = rstd;
    const float *w = j->w ? (const float *)j->w : ones, *b = j->b ? (const float *)j->b : zeros;
    for (int64_t k = 0; k < (S == 1 ? 1 : K); k++) {
        /* layer_norm: (x * rstd - rstd * mean) * w + b over the row; group_norm:
         * x * scale + (b - scale * mean) over channel k's S elements */
        const float scale = S == 1 ? rstd : rstd * w[c0 + k];
        const float shift = S == 1 ? -rstd * mean : -scale * mean + b[c0 + k];
        const int64_t len = S == 1 ? n : S;
        for (int64_t i = 0; i < len; i += TILE) {
            int64_t nt = len - i < TILE ? len - i : TILE, at = k * S + i;
            tile_axpb(o, row_at(&x, at, nt), S == 1 ? w + i : NULL, S == 1 ? b + i : NULL, nt,
                      scale, shift);
            narrow(half, j->y, x0 + at, o, nt);
        }
    }
}

/* dx of row r; layer_norm (S == 1) also adds its weight / bias gradient terms to
 * pw, pb; group_norm writes the per-channel sums of g * x and g to ds, db [K]. */
static void row_bwd(bool half, const ct_norm_job *j, int64_t r, const float *ones, float *pw,
                    float *pb, float *ds, float *db) {
    const int64_t K = j->C / j->G, S = j->S, n = K * S, x0 = r * n;
    const float m = ((const float *)j->mean)[r], rs = ((const float *)j->rstd)[r];
    const float *w = (j->w ? (const float *)j->w : ones) + (r % j->G) * K;
    float xbuf[ROW_MAX], gbuf[ROW_MAX], tw[TILE], sds = 0, sdb = 0;
    row_view x = row_of(half, j->x, x0, n, xbuf), g = row_of(half, j->gy, x0, n, gbuf);
    if (S == 1) { /* sdb = sum of g * w, sds = sum of g * w * x */
        float l1[CT_REDUCE_LANES] = {0}, l2[CT_REDUCE_LANES] = {0};
        for (int64_t i = 0; i < n; i += TILE) {
            int64_t len = n - i < TILE ? n - i : TILE;
            const float *tx = row_at(&x, i, len), *tg = row_at(&g, i, len);
            tile_mul(tw, tg, w + i, len);
            lanes_add(l1, tw, NULL, len);
            lanes_add(l2, tw, tx, len);
            if (pw) tile_ln_gw(pw + i, pb + i, tg, tx, len, m, rs);
        }
        sdb = lanes_total(l1);
        sds = lanes_total(l2);
    } else {
        for (int64_t k = 0; k < K; k++) {
            float l1[CT_REDUCE_LANES] = {0}, l2[CT_REDUCE_LANES] = {0};
            for (int64_t i = 0; i < S; i += TILE) {
                int64_t len = S - i < TILE ? S - i : TILE;
                const float *tx = row_at(&x, k * S + i, len), *tg = row_at(&g, k * S + i, len);
                lanes_add(l1, tg, tx, len);
                lanes_add(l2, tg, NULL, len);
            }
            ds[k] = lanes_total(l1);
            db[k] = lanes_total(l2);
            sds += ds[k] * w[k];
            sdb += db[k] * w[k];
        }
    }
    if (!j->gx) return;
    const float a = rs, s = 1.0f / (float)n;
    const float b = (sdb * m - sds) * a * a * a * s, c = -b * m - sdb * a * s;
    for (int64_t k = 0; k < (S == 1 ? 1 : K); k++) {
        const int64_t len = S == 1 ? n : S;
        for (int64_t i = 0; i < len; i += TILE) {
            int64_t nt = len - i < TILE ? len - i : TILE, at = k * S + i;
            const float *tx = row_at(&x, at, nt), *tg = row_at(&g, at, nt);
            tile_row_dx(tw, tx, tg, S == 1 ? w + i : NULL, nt, S == 1 ? rs : rs * w[k], b, c);
            narrow(half, j->gx, x0 + at, tw, nt);
        }
    }
}

static void row_norm_reduced(bool half, const ct_norm_job *j) {
    const int64_t R = j->N * j->G, K = j->C / j->G, S = j->S, C = j->C;
    int nt = ct_get_num_threads();
    bool par = nt > 1 && R > 1 && R * K * S >= CT_GRAIN;
    float *ones = scratch((size_t)C), *zeros = ones ? scratch((size_t)C) : NULL;
    if (!zeros) {
        free(ones);
        return;
    }
    for (int64_t c = 0; c < C; c++) ones[c] = 1;
    if (!j->backward) {
#pragma omp parallel for if (par) num_threads(nt) schedule(static)
        for (int64_t r = 0; r < R; r++) row_fwd(half, j, r, ones, zeros);
    } else if (S == 1) {
        /* layer_norm: row chunks, each with its own [K] weight / bias partials, added in
         * chunk order (as cpu/norm.c) */
        bool grads = j->gw || j->gb;
        int64_t rows = R / 256 > LN_CHUNK_ROWS ? R / 256 : LN_CHUNK_ROWS;
        int64_t nch = R ? (R + rows - 1) / rows : 0;
        float *part = grads ? scratch(2 * (size_t)((nch ? nch : 1) * K)) : NULL;
        if (grads && !part) nch = 0, grads = false;
#pragma omp parallel for if (par) num_threads(nt) schedule(static)
        for (int64_t ch = 0; ch < nch; ch++) {
            float *pw = grads ? part + 2 * ch * K : NULL, *pb = pw ? pw + K : NULL;
            int64_t r1 = (ch + 1) * rows < R ? (ch + 1) * rows : R;
            for (int64_t r = ch * rows; r < r1; r++) row_bwd(half, j, r, ones, pw, pb, NULL, NULL);
        }
        for (int64_t k = 0; grads && k < K; k++) {
            float sw = part[k], sb = part[K + k];
            for (int64_t ch = 1; ch < nch; ch++) {
                sw += part[2 * ch * K + k];
                sb += part[(2 * ch + 1) * K + k];
            }
            if (j->gw) ((float *)j->gw)[k] = sw;
            if (j->gb) ((float *)j->gb)[k] = sb;
        }
        free(part);
    } else {
        /* group_norm: per (n, c) sums, then the weight / bias gradients over n */
        float *ds = scratch(2 * (size_t)(R * K)), *db = ds ? ds + R * K : NULL;
#pragma omp parallel for if (par) num_threads(nt) schedule(static)
        for (int64_t r = 0; r < (ds ? R : 0); r++) row_bwd(half, j, r, ones, NULL, NULL, ds + r * K, db + r * K);
        for (int64_t c = 0; ds && c < C && (j->gw || j->gb); c++) {
            float sw = 0, sb = 0;
            for (int64_t i = 0; i < j->N; i++) {
                int64_t r = i * j->G + c / K;
                float m = ((const float *)j->mean)[r], rs = ((const float *)j->rstd)[r];
                sw += (ds[i * C + c] - db[i * C + c] * m) * rs;
                sb += db[i * C + c];
            }
            if (j->gw) ((float *)j->gw)[c] = sw;
            if (j->gb) ((float *)j->gb)[c] = sb;
        }
        free(ds);
    }
    free(ones);
    free(zeros);
}

static void batch_norm_f16(const ct_norm_job *j) { batch_norm_reduced(true, j); }
static void batch_norm_bf16(const ct_norm_job *j) { batch_norm_reduced(false, j); }
static void row_norm_f16(const ct_norm_job *j) { row_norm_reduced(true, j); }
static void row_norm_bf16(const ct_norm_job *j) { row_norm_reduced(false, j); }

const ct_kernel_entry ct_cpu_norm_reduced_kernels[] = {
    CT_KERNEL(NORM, CT_OP_batch_norm, CT_F16, batch_norm_f16),
    CT_KERNEL(NORM, CT_OP_batch_norm, CT_BF16, batch_norm_bf16),
    CT_KERNEL(NORM, CT_OP_layer_norm, CT_F16, row_norm_f16),
    CT_KERNEL(NORM, CT_OP_layer_norm, CT_BF16, row_norm_bf16),
    CT_KERNEL(NORM, CT_OP_group_norm, CT_F16, row_norm_f16),
    CT_KERNEL(NORM, CT_OP_group_norm, CT_BF16, row_norm_bf16),
    CT_KERNEL_END,
};
