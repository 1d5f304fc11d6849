/* Loss kernels: nll_loss forward (gathering -w[t] x[t]) and backward (scattering
 * -w[t] g), and the elementwise losses (binary cross entropy with probabilities and
 * with logits, mse, smooth l1, huber; see Note [Elementwise loss ops]) with their
 * fused backwards, in every floating dtype (float16 / bfloat16 widened in registers
 * or stack tiles: NLL_KERNELS, VIA_FLOAT_TILES).  The selects vectorize: see Note [Vectorizing selects] (cpu/unary.c).
 * Like all of the library these are built with -ffp-contract=off (CMakeLists.txt):
 * contracted multiply-adds made the float32 bce forwards and the pos_weight backward
 * differ in the last bits between 1 and 2 threads. */
#pragma GCC optimize("no-trapping-math")
#include <stdbool.h>
#include <string.h>

#include "cpu/kernel_util.h"
#include "cpu/pw_loops.h"
#include "cpu/reduced_cvt.h"
#include "kernels/loss.h"
#include "cpu/vmath.h"

/* The fixed number of blocks the reduced forward sums separately, then adds in
 * order: the split never depends on the thread count. */
#define NLL_BLOCKS 64

/* T the element type, W what an element computes in, A what the sums accumulate in
 * (ct_acc_type: float32 in double, float16 / bfloat16 in float, widened on load by LD
 * and rounded once on store by ST). */
#define NLL_KERNELS(T, W, A, LD, ST, SFX)                                                \
    static void nll_fwd_##SFX(const char *xp, const int64_t *t, const char *wp, char *op, \
                              double *sums, ct_nll_dims d) {                             \
        const T *x = (const T *)xp, *w = (const T *)wp;                                  \
        int64_t P = d.N * d.S, S = d.S, C = d.C, ig = d.ignore_index;                    \
        int nt = ct_get_num_threads();                                                   \
        if (op) {                                                                        \
            T *o = (T *)op;                                                              \
            _Pragma("omp parallel for if (P >= CT_GRAIN && nt > 1) num_threads(nt)")     \
            for (int64_t p = 0; p < P; p++) {                                            \
                int64_t k = t[p];                                                        \
                if (k == ig) {                                                           \
                    o[p] = ST((W)0);                                                     \
                    continue;                                                            \
                }                                                                        \
                W v = LD(x[((p / S) * C + k) * S + p % S]);                              \
                o[p] = ST(w ? -LD(w[k]) * v : -v);                                       \
            }                                                                            \
            return;                                                                      \
        }                                                                                \
        A ls[NLL_BLOCKS] = {0}, ws[NLL_BLOCKS] = {0};                                    \
        int64_t bs = (P + NLL_BLOCKS - 1) / NLL_BLOCKS;                                  \
        _Pragma("omp parallel for if (P >= CT_GRAIN && nt > 1) num_threads(nt)")         \
        for (int b = 0; b < NLL_BLOCKS; b++) {                                           \
            int64_t end = (b + 1) * bs < P ? (b + 1) * bs : P;                           \
            A l = 0, wt = 0;                                                             \
            for (int64_t p = b * bs; p < end; p++) {                                     \
                int64_t k = t[p];                                                        \
                if (k == ig) continue;                                                   \
                W wk = w ? LD(w[k]) : (W)1;                                              \
                l -= (A)(wk * LD(x[((p / S) * C + k) * S + p % S]));                     \
                wt += wk;                                                                \
            }                                                                            \
            ls[b] = l;                                                                   \
            ws[b] = wt;                                                                  \
        }                                                                                \
        A l = 0, wt = 0;                                                                 \
        for (int b = 0; b < NLL_BLOCKS; b++) {                                           \
            l += ls[b];                                                                  \
            wt += ws[b];                                                                 \
        }                                                                                \
        sums[0] = l;                                                                     \
        sums[1] = wt;                                                                    \
    }                                                                                    \
    static void nll_bwd_##SFX(const char *gp, bool g_scalar, const int64_t *t,           \
                              const char *wp, char *gip, double div, ct_nll_dims d) {    \
        const T *g = (const T *)gp, *w = (const T *)wp;                                  \
        T *gi = (T *)gip;                                                                \
        int64_t S = d.S, C = d.C, ig = d.ignore_index;                                   \
        int nt = ct_get_num_threads();                                                   \
        _Pragma("omp parallel for if (d.N * C * S >= CT_GRAIN && nt > 1) num_threads(nt)") \
        for (int64_t n = 0; n < d.N; n++) {                                              \
            T *row = gi + n * C * S;                                                     \
            memset(row, 0, (size_t)(C * S) * sizeof(T)); /* +0 in every dtype */         \
            for (int64_t s = 0; s < S; s++) {                                            \
                int64_t k = t[n * S + s];                                                \
                if (k == ig) continue;                                                   \
                W v = -(LD(g_scalar ? g[0] : g[n * S + s]) / (W)div);                    \
                row[k * S + s] = ST(w ? LD(w[k]) * v : v);                               \
            }                                                                            \
        }                                                                                \
    }
#define NLL_SAME(v) (v)
#define NLL_ST_F32(v) ((float)(v))
#define NLL_ST_F64(v) ((double)(v))
#define NLL_ST_F16(v) CT_STORE_REDUCED(ct_half, (float)(v))
#define NLL_ST_BF16(v) CT_STORE_REDUCED(ct_bf16, (float)(v))
NLL_KERNELS(float, float, double, NLL_SAME, NLL_ST_F32, f32)
NLL_KERNELS(double, double, double, NLL_SAME, NLL_ST_F64, f64)
NLL_KERNELS(ct_half, float, float, CT_LOAD_REDUCED, NLL_ST_F16, f16)
NLL_KERNELS(ct_bf16, float, float, CT_LOAD_REDUCED, NLL_ST_BF16, bf16)

/* PyTorch's binary cross entropy of one element: logs clamped to >= -100.  Float32
 * logs (and exps below) are cpu/vmath.h's, which vectorize; doubles call libm. */
#define BCE_LOG(T, LOG, v) (LOG(v) < (T)-100 ? (T)-100 : LOG(v)) /* NaN stays NaN */
#define BCE(T, LOG, x, y) ((y - (T)1) * BCE_LOG(T, LOG, (T)1 - x) - y * BCE_LOG(T, LOG, x))
CT_BINARY_LOOP(bce_f32, float, float, BCE(float, ct_vlogf, x, y))
CT_BINARY_LOOP(bce_f64, double, double, BCE(double, log, x, y))

/* The elementwise regression losses of x, y with p->a = beta / delta, as PyTorch's
 * kernels compute them (in T). */
#define REGRESSION_KERNELS(T, SFX)                                                       \
    static inline T sl1_##SFX(T x, T y, T beta) {                                        \
        T z = CT_MF(fabs, x - y);                                                        \
        return z < beta ? (T)0.5 * z * z / beta : z - (T)0.5 * beta;                     \
    }                                                                                    \
    static inline T huber_##SFX(T x, T y, T delta) {                                     \
        T z = CT_MF(fabs, x - y);                                                        \
        return z < delta ? (T)0.5 * z * z : delta * (z - (T)0.5 * delta);                \
    }                                                                                    \
    CT_BINARY_LOOP(mse_##SFX, T, T, (x - y) * (x - y))                                   \
    CT_BINARY_LOOP(smooth_l1_##SFX, T, T, sl1_##SFX(x, y, (T)p->a))                      \
    CT_BINARY_LOOP(huber_loop_##SFX, T, T, huber_##SFX(x, y, (T)p->a))
REGRESSION_KERNELS(float, f32)
REGRESSION_KERNELS(double, f64)

/* A loop running `with` when ctx i says a pos_weight is given, else `without`. */
#define POS_WEIGHT_LOOP(NAME, WITH, WITHOUT)                                             \
    static void NAME(char **d, const int64_t *s, int64_t n, const void *ctx) {           \
        if (((const ct_pw_args *)ctx)->i) WITH(d, s, n, ctx);                            \
        else WITHOUT(d, s, n, ctx);                                                      \
    }

/* binary_cross_entropy_with_logits of input x, target y, pos_weight w, in PyTorch
 * 1.13's form: with m = max(-x, 0) (NaN stays NaN), (1 - y) x + m + log(exp(-m) +
 * exp(-x - m)), the log term times 1 + (w - 1) y with a pos_weight.  Inputs
 * (w, x, y); ctx i == 0: no pos_weight (w is a wrapped 1, unused). */
#define BCEL_KERNELS(T, SFX)                                                             \
    static inline T bcel_m_##SFX(T x) { return -x < 0 ? (T)0 : -x; }                     \
    static inline T bcel_lse_##SFX(T x, T m) {                                           \
        return CT_VLOG(CT_VEXP(-m) + CT_VEXP(-x - m));                                   \
    }                                                                                    \
    static inline T bcel_##SFX(T x, T y) {                                               \
        T m = bcel_m_##SFX(x);                                                           \
        return ((1 - y) * x + m) + bcel_lse_##SFX(x, m);                                 \
    }                                                                                    \
    static inline T bcel_pw_##SFX(T w, T x, T y) {                                       \
        T m = bcel_m_##SFX(x);                                                           \
        return (1 - y) * x + (1 + (w - 1) * y) * (bcel_lse_##SFX(x, m) + m);             \
    }                                                                                    \
    CT_TERNARY_LOOP(bcel_plain_##SFX, T, T, T, ((void)c, bcel_##SFX(x, y)))              \
    CT_TERNARY_LOOP(bcel_posw_##SFX, T, T, T, bcel_pw_##SFX(c, x, y))                    \
    POS_WEIGHT_LOOP(bcel_loop_##SFX, bcel_posw_##SFX, bcel_plain_##SFX)
BCEL_KERNELS(float, f32)
BCEL_KERNELS(double, f64)

/* The fused backwards: data (out, x, y, g) with x the input, y the target and g the
 * incoming gradient already scaled for the reduction and the weight (broadcast, often
 * 0-d); out = the derivative of the elementwise loss in x, times g.  Their formulas
 * and kink choices are PyTorch's (see ops/loss_elementwise.c, ops/loss_bce.c):
 *   mse        2 (x - y)
 *   smooth_l1  -1 where x - y <= -beta, 1 where x - y >= beta, else (x - y) / beta
 *              (beta 0: -1 at x == y; a NaN difference stays NaN)
 *   huber      x - y clamped to [-delta, delta]
 *   bce        (x - y) / max(x (1 - x), 1e-12f)
 *   bce with logits, pos_weight w (data: out, x, y, w, g when ctx i != 0):
 *              (w y + 1 - y) sigmoid(x) - w y;  without: sigmoid(x) - y. */
#define LOSS_BWD_KERNELS(T, SFX)                                                         \
    static inline T sl1_bwd_##SFX(T x, T y, T beta) {                                    \
        T d = x - y;                                                                     \
        return d <= -beta ? (T)-1 : d >= beta ? (T)1 : d / beta;                         \
    }                                                                                    \
    static inline T huber_bwd_##SFX(T x, T y, T delta) {                                 \
        T d = x - y;                                                                     \
        return d <= -delta ? -delta : d >= delta ? delta : d;                            \
    }                                                                                    \
    static inline T bce_bwd_##SFX(T x, T y) {                                            \
        T t = ((T)1 - x) * x; /* a NaN stays NaN */                                      \
        return (x - y) / (t < (T)1e-12f ? (T)1e-12f : t);                                \
    }                                                                                    \
    static inline T bcel_bwd_pw_##SFX(T x, T y, T w) {                                   \
        T t = w * y;                                                                     \
        return (t + 1 - y) * CT_VSIGMOID(x) - t;                                         \
    }                                                                                    \
    /* CT_TERNARY_LOOP names its inputs (c, x, y): here input, target, gradient. */      \
    CT_TERNARY_LOOP(mse_bwd_##SFX, T, T, T, (T)2 * (c - x) * y)                          \
    CT_TERNARY_LOOP(sl1_bwd_loop_##SFX, T, T, T, sl1_bwd_##SFX(c, x, (T)p->a) * y)       \
    CT_TERNARY_LOOP(huber_bwd_loop_##SFX, T, T, T, huber_bwd_##SFX(c, x, (T)p->a) * y)   \
    CT_TERNARY_LOOP(bce_bwd_loop_##SFX, T, T, T, bce_bwd_##SFX(c, x) * y)                \
    CT_TERNARY_LOOP(bcel_bwd_plain_##SFX, T, T, T, (CT_VSIGMOID(c) - x) * y)             \
    CT_QUATERNARY_LOOP(bcel_bwd_posw_##SFX, T, bcel_bwd_pw_##SFX(x, y, z) * w)           \
    POS_WEIGHT_LOOP(bcel_bwd_loop_##SFX, bcel_bwd_posw_##SFX, bcel_bwd_plain_##SFX)
LOSS_BWD_KERNELS(float, f32)
LOSS_BWD_KERNELS(double, f64)

/* The float16 / bfloat16 loops of the elementwise losses and their backwards: each
 * run is cut into tiles of CT_REDUCED_TILE elements, every input tile widened to float
 * (cpu/reduced_cvt.h; a broadcast input, stride 0, stays one float), the float32 loop
 * run on the tiles, and the output tile rounded once, to nearest even, on its store.
 * So a reduced loss gives the bits of the float32 kernel on the widened operands, with
 * no buffer beyond the tiles on the stack.  nin: the loop's number of inputs (the
 * with-logits backward has a fourth, the pos_weight, when ctx i says so). */
#define LOSS_MAX_IN 4
#define VIA_FLOAT_TILES(NAME, TS, NIN, F32)                                              \
    static void NAME(char **d, const int64_t *s, int64_t n, const void *ctx) {           \
        const int nin = (NIN);                                                           \
        float tile[LOSS_MAX_IN + 1][CT_REDUCED_TILE];                                    \
        char *td[LOSS_MAX_IN + 1];                                                       \
        int64_t ts[LOSS_MAX_IN + 1];                                                     \
        const int64_t e = sizeof(TS);                                                    \
        for (int k = 0; k <= nin; k++) {                                                 \
            td[k] = (char *)tile[k];                                                     \
            ts[k] = k && !s[k] ? 0 : (int64_t)sizeof(float);                             \
            if (k && !s[k]) tile[k][0] = CT_LOAD_REDUCED(*(const TS *)d[k]);             \
        }                                                                                \
        for (int64_t b = 0; b < n; b += CT_REDUCED_TILE) {                               \
            int64_t len = n - b < CT_REDUCED_TILE ? n - b : CT_REDUCED_TILE;             \
            for (int k = 1; k <= nin; k++) {                                             \
                if (s[k] == e) CT_REDUCED_TO_FLOAT_N(tile[k], (const TS *)d[k] + b, len);  \
                else if (s[k])                                                           \
                    for (int64_t i = 0; i < len; i++)                                    \
                        tile[k][i] = CT_LOAD_REDUCED(*(const TS *)(d[k] + (b + i) * s[k])); \
            }                                                                            \
            F32(td, ts, len, ctx);                                                       \
            if (s[0] == e) CT_FLOAT_TO_REDUCED_N((TS *)d[0] + b, tile[0], len);          \
            else                                                                         \
                for (int64_t i = 0; i < len; i++)                                        \
                    *(TS *)(d[0] + (b + i) * s[0]) = CT_STORE_REDUCED(TS, tile[0][i]);   \
        }                                                                                \
    }
#define POS_WEIGHT_INPUTS(ctx) (((const ct_pw_args *)(ctx))->i ? 4 : 3)
#define REDUCED_LOSS_LOOPS(TS, SFX)                                                      \
    VIA_FLOAT_TILES(bce_##SFX, TS, 2, bce_f32)                                           \
    VIA_FLOAT_TILES(bcel_loop_##SFX, TS, 3, bcel_loop_f32)                               \
    VIA_FLOAT_TILES(mse_##SFX, TS, 2, mse_f32)                                           \
    VIA_FLOAT_TILES(smooth_l1_##SFX, TS, 2, smooth_l1_f32)                               \
    VIA_FLOAT_TILES(huber_loop_##SFX, TS, 2, huber_loop_f32)                             \
    VIA_FLOAT_TILES(mse_bwd_##SFX, TS, 3, mse_bwd_f32)                                   \
    VIA_FLOAT_TILES(sl1_bwd_loop_##SFX, TS, 3, sl1_bwd_loop_f32)                         \
    VIA_FLOAT_TILES(huber_bwd_loop_##SFX, TS, 3, huber_bwd_loop_f32)                     \
    VIA_FLOAT_TILES(bce_bwd_loop_##SFX, TS, 3, bce_bwd_loop_f32)                         \
    VIA_FLOAT_TILES(bcel_bwd_loop_##SFX, TS, POS_WEIGHT_INPUTS(ctx), bcel_bwd_loop_f32)
REDUCED_LOSS_LOOPS(ct_half, f16)
REDUCED_LOSS_LOOPS(ct_bf16, bf16)

#define LOSS_BWD_ENTRIES(DT, SFX)                                                        \
    CT_KERNEL(LOOP, CT_OP_mse_loss_backward, DT, mse_bwd_##SFX),                         \
    CT_KERNEL(LOOP, CT_OP_smooth_l1_loss_backward, DT, sl1_bwd_loop_##SFX),              \
    CT_KERNEL(LOOP, CT_OP_huber_loss_backward, DT, huber_bwd_loop_##SFX),                \
    CT_KERNEL(LOOP, CT_OP_binary_cross_entropy_backward, DT, bce_bwd_loop_##SFX),        \
    CT_KERNEL(LOOP, CT_OP_binary_cross_entropy_with_logits_backward, DT, bcel_bwd_loop_##SFX),

#define LOSS_ENTRIES(DT, SFX)                                                            \
    LOSS_BWD_ENTRIES(DT, SFX)                                                            \
    CT_KERNEL(NLL, CT_OP_nll_loss, DT, nll_fwd_##SFX),                                   \
    CT_KERNEL(NLL_BACKWARD, CT_OP_nll_loss_backward, DT, nll_bwd_##SFX),                 \
    CT_KERNEL(LOOP, CT_OP_binary_cross_entropy, DT, bce_##SFX),                          \
    CT_KERNEL(LOOP, CT_OP_binary_cross_entropy_with_logits, DT, bcel_loop_##SFX),        \
    CT_KERNEL(LOOP, CT_OP_mse_loss, DT, mse_##SFX),                                      \
    CT_KERNEL(LOOP, CT_OP_smooth_l1_loss, DT, smooth_l1_##SFX),                          \
    CT_KERNEL(LOOP, CT_OP_huber_loss, DT, huber_loop_##SFX),

const ct_kernel_entry ct_cpu_loss_kernels[] = {
    LOSS_ENTRIES(CT_F32, f32)
    LOSS_ENTRIES(CT_F64, f64)
    LOSS_ENTRIES(CT_F16, f16)
    LOSS_ENTRIES(CT_BF16, bf16)
    CT_KERNEL_END,
};
