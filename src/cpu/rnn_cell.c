/* Fused LSTM and GRU cells (PyTorch's _thnn_fused_lstm_cell / _thnn_fused_gru_cell),
 * forward and backward, one batch row at a time: each row is a few contiguous loops
 * over the gates that the compiler vectorizes (float32 sigmoid and tanh from
 * cpu/vmath.h, as the sigmoid and tanh ops compute them).  Rows are independent, so
 * the split across threads never changes a value.  Layouts: kernels/rnn_cell.h. */
#include "cpu/kernel_util.h"
#include "cpu/vmath.h"
#include "kernels/rnn_cell.h"

#define RNN_CELL_KERNELS(T, SFX)                                                         \
    /* w = (ig + bi) + (hg + bh) over n gates, the biases optional (as the module       \
     * composes it: two linear layers added) */                                          \
    CT_SIMD_PROC(pre_##SFX, (T *restrict w, const T *restrict ig, const T *restrict hg, \
                                  const T *restrict bi, const T *restrict bh, int64_t n), (w, ig, hg, bi, bh, n), { \
        if (bi && bh)                                                                    \
            for (int64_t k = 0; k < n; k++) w[k] = (ig[k] + bi[k]) + (hg[k] + bh[k]);    \
        else if (bi)                                                                     \
            for (int64_t k = 0; k < n; k++) w[k] = (ig[k] + bi[k]) + hg[k];              \
        else if (bh)                                                                     \
            for (int64_t k = 0; k < n; k++) w[k] = ig[k] + (hg[k] + bh[k]);              \
        else                                                                             \
            for (int64_t k = 0; k < n; k++) w[k] = ig[k] + hg[k];                        \
    })                                                                                    \
    /* w = a (+ b) */                                                                    \
    CT_SIMD_PROC(add_##SFX, (T *restrict w, const T *restrict a, const T *restrict b, \
                                  int64_t n), (w, a, b, n), {                                           \
        if (b)                                                                           \
            for (int64_t k = 0; k < n; k++) w[k] = a[k] + b[k];                          \
        else                                                                             \
            for (int64_t k = 0; k < n; k++) w[k] = a[k];                                 \
    })                                                                                    \
    CT_SIMD_PROC(sigmoid_##SFX, (T *restrict w, int64_t n), (w, n), {                        \
        for (int64_t k = 0; k < n; k++) w[k] = CT_VSIGMOID(w[k]);                        \
    })                                                                                    \
    CT_SIMD_PROC(tanh_##SFX, (T *restrict w, int64_t n), (w, n), {                           \
        for (int64_t k = 0; k < n; k++) w[k] = CT_VTANH(w[k]);                           \
    })                                                                                    \
    /* cy = f cx + i g, hy = o tanh(cy); w: one row of activated gates i, f, g, o */     \
    CT_SIMD_PROC(lstm_out_##SFX, (const T *restrict w, const T *restrict cx,        \
                                       T *restrict cy, T *restrict hy, int64_t H), (w, cx, cy, hy, H), {      \
        for (int64_t j = 0; j < H; j++) {                                                \
            T c = w[H + j] * cx[j] + w[j] * w[2 * H + j];                                \
            cy[j] = c;                                                                   \
            hy[j] = w[3 * H + j] * CT_VTANH(c);                                          \
        }                                                                                \
    })                                                                                    \
    /* dc = gcy + ghy o (1 - tanh(cy)^2); the pre-activations' gradients: di g i (1 - i), \
     * dc cx f (1 - f), dc i (1 - g^2), ghy tanh(cy) o (1 - o); gcx = dc f */            \
    CT_SIMD_PROC(lstm_bwd_##SFX, (const T *restrict w, const T *restrict cx,        \
                                       const T *restrict cy, const T *restrict ghy,      \
                                       const T *restrict gcy, T *restrict g,             \
                                       T *restrict gcx, int64_t H), (w, cx, cy, ghy, gcy, g, gcx, H), {                     \
        for (int64_t j = 0; j < H; j++) {                                                \
            T i = w[j], f = w[H + j], c = w[2 * H + j], o = w[3 * H + j];                \
            T tc = CT_VTANH(cy[j]);                                                      \
            T dc = gcy[j] + ghy[j] * o * ((T)1 - tc * tc);                               \
            g[j] = dc * c * i * ((T)1 - i);                                              \
            g[H + j] = dc * cx[j] * f * ((T)1 - f);                                      \
            g[2 * H + j] = dc * i * ((T)1 - c * c);                                      \
            g[3 * H + j] = ghy[j] * tc * o * ((T)1 - o);                                 \
            gcx[j] = dc * f;                                                             \
        }                                                                                \
    })                                                                                    \
    /* n = tanh(w_n + r hn) in place (w_n = ig_n + bi_n); hy = n + z (hx - n) */         \
    CT_SIMD_PROC(gru_out_##SFX, (T *restrict w, const T *restrict hx, T *restrict hy, \
                                      int64_t H), (w, hx, hy, H), {                                       \
        for (int64_t j = 0; j < H; j++) {                                                \
            T n = CT_VTANH(w[2 * H + j] + w[j] * w[3 * H + j]);                          \
            w[2 * H + j] = n;                                                            \
            hy[j] = n + w[H + j] * (hx[j] - n);                                          \
        }                                                                                \
    })                                                                                    \
    /* dn = ghy (1 - z) (1 - n^2) (n's pre-activation); dz = ghy (hx - n) z (1 - z);     \
     * dr = dn hn r (1 - r); igates get (dr, dz, dn), hgates (dr, dz, dn r); ghx = ghy z */ \
    CT_SIMD_PROC(gru_bwd_##SFX, (const T *restrict w, const T *restrict hx,         \
                                      const T *restrict ghy, T *restrict gi,             \
                                      T *restrict gh, T *restrict ghx, int64_t H), (w, hx, ghy, gi, gh, ghx, H), {      \
        for (int64_t j = 0; j < H; j++) {                                                \
            T r = w[j], z = w[H + j], n = w[2 * H + j], hn = w[3 * H + j], go = ghy[j];  \
            T dn = go * ((T)1 - z) * ((T)1 - n * n);                                     \
            T dz = go * (hx[j] - n) * z * ((T)1 - z);                                    \
            T dr = dn * hn * r * ((T)1 - r);                                             \
            gi[j] = gh[j] = dr;                                                          \
            gi[H + j] = gh[H + j] = dz;                                                  \
            gi[2 * H + j] = dn;                                                          \
            gh[2 * H + j] = dn * r;                                                      \
            ghx[j] = go * z;                                                             \
        }                                                                                \
    })                                                                                    \
    static void lstm_##SFX(bool backward, const ct_rnn_cell_args *a) {                   \
        const int64_t B = a->B, H = a->H, G = 4 * H;                                     \
        const T *ig = (const T *)a->ig, *hg = (const T *)a->hg, *bi = (const T *)a->bi;  \
        const T *bh = (const T *)a->bh, *x = (const T *)a->x;                            \
        T *ws = (T *)a->ws, *cy = (T *)a->cy, *hy = (T *)a->hy;                          \
        const T *wr = (const T *)a->ws_in, *cr = (const T *)a->cy_in;                          \
        const T *ghy = (const T *)a->ghy, *gcy = (const T *)a->gcy;                      \
        T *gig = (T *)a->gig, *gx = (T *)a->gx;                                          \
        int nt = ct_get_num_threads();                                                   \
        _Pragma("omp parallel for if (B * G >= CT_GRAIN && nt > 1) num_threads(nt)")     \
        for (int64_t b = 0; b < B; b++) {                                                \
            if (backward) {                                                              \
                lstm_bwd_##SFX(wr + b * G, x + b * H, cr + b * H, ghy + b * H, gcy + b * H, \
                               gig + b * G, gx + b * H, H);                              \
                continue;                                                                \
            }                                                                            \
            T *w = ws + b * G;                                                           \
            pre_##SFX(w, ig + b * G, hg + b * G, bi, bh, G);                             \
            sigmoid_##SFX(w, 2 * H);                                                     \
            tanh_##SFX(w + 2 * H, H);                                                    \
            sigmoid_##SFX(w + 3 * H, H);                                                 \
            lstm_out_##SFX(w, x + b * H, cy + b * H, hy + b * H, H);                     \
        }                                                                                \
    }                                                                                    \
    static void gru_##SFX(bool backward, const ct_rnn_cell_args *a) {                    \
        const int64_t B = a->B, H = a->H, G = 3 * H;                                     \
        const T *ig = (const T *)a->ig, *hg = (const T *)a->hg, *bi = (const T *)a->bi;  \
        const T *bh = (const T *)a->bh, *x = (const T *)a->x, *ghy = (const T *)a->ghy;  \
        T *ws = (T *)a->ws, *hy = (T *)a->hy, *gig = (T *)a->gig, *ghg = (T *)a->ghg;    \
        const T *wr = (const T *)a->ws_in;                                          \
        T *gx = (T *)a->gx;                                                              \
        int nt = ct_get_num_threads();                                                   \
        _Pragma("omp parallel for if (B * G >= CT_GRAIN && nt > 1) num_threads(nt)")     \
        for (int64_t b = 0; b < B; b++) {                                                \
            if (backward) {                                                              \
                gru_bwd_##SFX(wr + b * 4 * H, x + b * H, ghy + b * H, gig + b * G, ghg + b * G,       \
                              gx + b * H, H);                                            \
                continue;                                                                \
            }                                                                            \
            T *w = ws + b * 4 * H;                                                       \
            const T *igb = ig + b * G, *hgb = hg + b * G;                                \
            pre_##SFX(w, igb, hgb, bi, bh, 2 * H);                                       \
            sigmoid_##SFX(w, 2 * H);                                                     \
            add_##SFX(w + 3 * H, hgb + 2 * H, bh ? bh + 2 * H : NULL, H);                \
            add_##SFX(w + 2 * H, igb + 2 * H, bi ? bi + 2 * H : NULL, H);                \
            gru_out_##SFX(w, x + b * H, hy + b * H, H);                                  \
        }                                                                                \
    }
RNN_CELL_KERNELS(float, f32)
RNN_CELL_KERNELS(double, f64)

/* float16 / bfloat16: each row goes in tiles of RTILE hidden units.  The tile's slice
 * of every gate is widened into float (cpu/reduced_cvt.h), laid out as a row of hidden
 * size len (gate q at q * len), so the float32 row loops above compute it, and each
 * output is rounded once: the float32 kernel's result on the widened operands. */
enum { RTILE = 128 };
/* Gates 0..k-1 of a tile: gate q of the tensor at src + q * H, of the tile at
 * buf + q * len. */
#define WIDEN(buf, src, H, k, len)                                                       \
    for (int q_ = 0; q_ < (k); q_++) CT_REDUCED_TO_FLOAT_N((buf) + q_ * (len), (src) + q_ * (H), len)
#define NARROW(dst, H, buf, k, len)                                                      \
    for (int q_ = 0; q_ < (k); q_++) CT_FLOAT_TO_REDUCED_N((dst) + q_ * (H), (buf) + q_ * (len), len)
/* A forward tile's k gates of ig and hg at row offset r, and of the biases (where
 * given) at column j. */
#define WIDEN_GATES(TS, ig, hg, bib, bhb, a, r, j, k, len)                               \
    do {                                                                                 \
        WIDEN(ig, (const TS *)(a)->ig + (r), (a)->H, k, len);                            \
        WIDEN(hg, (const TS *)(a)->hg + (r), (a)->H, k, len);                            \
        if ((a)->bi) WIDEN(bib, (const TS *)(a)->bi + (j), (a)->H, k, len);              \
        if ((a)->bh) WIDEN(bhb, (const TS *)(a)->bh + (j), (a)->H, k, len);              \
    } while (0)

#define RNN_CELL_REDUCED(TS, SFX)                                                        \
    static void lstm_row_##SFX(bool backward, const ct_rnn_cell_args *a, int64_t b) {    \
        const int64_t H = a->H, G = 4 * H;                                               \
        for (int64_t j = 0; j < H; j += RTILE) {                                         \
            const int64_t len = H - j < RTILE ? H - j : RTILE, r = b * G + j, s = b * H + j; \
            float w[4 * RTILE], cx[RTILE], c[RTILE], h[RTILE];                            \
            WIDEN(cx, (const TS *)a->x + s, H, 1, len);                                  \
            if (backward) {                                                              \
                WIDEN(w, (const TS *)a->ws_in + r, H, 4, len);                           \
                WIDEN(c, (const TS *)a->cy_in + s, H, 1, len);                           \
                WIDEN(h, (const TS *)a->ghy + s, H, 1, len);                             \
                float g[4 * RTILE], gc[RTILE], gx[RTILE];                                \
                WIDEN(gc, (const TS *)a->gcy + s, H, 1, len);                            \
                lstm_bwd_f32(w, cx, c, h, gc, g, gx, len);                               \
                NARROW((TS *)a->gig + r, H, g, 4, len);                                  \
                NARROW((TS *)a->gx + s, H, gx, 1, len);                                  \
                continue;                                                                \
            }                                                                            \
            float ig[4 * RTILE], hg[4 * RTILE], bib[4 * RTILE], bhb[4 * RTILE];          \
            WIDEN_GATES(TS, ig, hg, bib, bhb, a, r, j, 4, len);                          \
            pre_f32(w, ig, hg, a->bi ? bib : NULL, a->bh ? bhb : NULL, 4 * len);         \
            sigmoid_f32(w, 2 * len);                                                     \
            tanh_f32(w + 2 * len, len);                                                  \
            sigmoid_f32(w + 3 * len, len);                                               \
            lstm_out_f32(w, cx, c, h, len);                                              \
            NARROW((TS *)a->ws + r, H, w, 4, len);                                       \
            NARROW((TS *)a->cy + s, H, c, 1, len);                                       \
            NARROW((TS *)a->hy + s, H, h, 1, len);                                       \
        }                                                                                \
    }                                                                                    \
    static void gru_row_##SFX(bool backward, const ct_rnn_cell_args *a, int64_t b) {     \
        const int64_t H = a->H, G = 3 * H;                                               \
        for (int64_t j = 0; j < H; j += RTILE) {                                         \
            const int64_t len = H - j < RTILE ? H - j : RTILE, r = b * G + j, s = b * H + j; \
            float w[4 * RTILE], ig[3 * RTILE], hg[3 * RTILE], hx[RTILE], h[RTILE];        \
            WIDEN(hx, (const TS *)a->x + s, H, 1, len);                                  \
            if (backward) {                                                              \
                float gx[RTILE];                                                         \
                WIDEN(w, (const TS *)a->ws_in + b * 4 * H + j, H, 4, len);               \
                WIDEN(h, (const TS *)a->ghy + s, H, 1, len);                             \
                gru_bwd_f32(w, hx, h, ig, hg, gx, len);                                  \
                NARROW((TS *)a->gig + r, H, ig, 3, len);                                 \
                NARROW((TS *)a->ghg + r, H, hg, 3, len);                                 \
                NARROW((TS *)a->gx + s, H, gx, 1, len);                                  \
                continue;                                                                \
            }                                                                            \
            float bib[3 * RTILE], bhb[3 * RTILE];                                        \
            WIDEN_GATES(TS, ig, hg, bib, bhb, a, r, j, 3, len);                          \
            pre_f32(w, ig, hg, a->bi ? bib : NULL, a->bh ? bhb : NULL, 2 * len);         \
            sigmoid_f32(w, 2 * len);                                                     \
            add_f32(w + 3 * len, hg + 2 * len, a->bh ? bhb + 2 * len : NULL, len);       \
            add_f32(w + 2 * len, ig + 2 * len, a->bi ? bib + 2 * len : NULL, len);       \
            gru_out_f32(w, hx, h, len);                                                  \
            NARROW((TS *)a->ws + b * 4 * H + j, H, w, 4, len);                           \
            NARROW((TS *)a->hy + s, H, h, 1, len);                                       \
        }                                                                                \
    }                                                                                    \
    static void lstm_##SFX(bool backward, const ct_rnn_cell_args *a) {                   \
        int nt = ct_get_num_threads();                                                   \
        _Pragma("omp parallel for if (a->B * 4 * a->H >= CT_GRAIN && nt > 1) num_threads(nt)") \
        for (int64_t b = 0; b < a->B; b++) lstm_row_##SFX(backward, a, b);               \
    }                                                                                    \
    static void gru_##SFX(bool backward, const ct_rnn_cell_args *a) {                    \
        int nt = ct_get_num_threads();                                                   \
        _Pragma("omp parallel for if (a->B * 3 * a->H >= CT_GRAIN && nt > 1) num_threads(nt)") \
        for (int64_t b = 0; b < a->B; b++) gru_row_##SFX(backward, a, b);                \
    }
RNN_CELL_REDUCED(ct_half, f16)
RNN_CELL_REDUCED(ct_bf16, bf16)

const ct_kernel_entry ct_cpu_rnn_cell_kernels[] = {
    CT_KERNEL(RNN_CELL, CT_OP_thnn_fused_lstm_cell, CT_F32, lstm_f32),
    CT_KERNEL(RNN_CELL, CT_OP_thnn_fused_lstm_cell, CT_F64, lstm_f64),
    CT_KERNEL(RNN_CELL, CT_OP_thnn_fused_gru_cell, CT_F32, gru_f32),
    CT_KERNEL(RNN_CELL, CT_OP_thnn_fused_gru_cell, CT_F64, gru_f64),
    CT_KERNEL(RNN_CELL, CT_OP_thnn_fused_lstm_cell, CT_F16, lstm_f16),
    CT_KERNEL(RNN_CELL, CT_OP_thnn_fused_lstm_cell, CT_BF16, lstm_bf16),
    CT_KERNEL(RNN_CELL, CT_OP_thnn_fused_gru_cell, CT_F16, gru_f16),
    CT_KERNEL(RNN_CELL, CT_OP_thnn_fused_gru_cell, CT_BF16, gru_bf16),
    CT_KERNEL_END,
};
