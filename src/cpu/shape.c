/* Data-movement kernels of the shaping ops; see cpu/shape.h. */
#include <omp.h>
#include <string.h>

#include "cpu/iter.h"
#include "cpu/kernel_util.h"
#include "kernels/shape.h"

/* One inner run of a same-dtype copy: data[0] the destination, data[1] the source.
 * Typed by element size so that strided moves are single loads and stores. */
#define COPY_LOOP(BITS)                                                                  \
    static void copy_##BITS(char **d, const int64_t *s, int64_t n, const void *ctx) {    \
        (void)ctx;                                                                       \
        typedef uint##BITS##_t T;                                                        \
        const int64_t es = (int64_t)sizeof(T);                                           \
        if (s[0] == es && s[1] == es) {                                                  \
            memcpy(d[0], d[1], (size_t)(n * es));                                        \
            return;                                                                      \
        }                                                                                \
        T *restrict o = (T *)d[0];                                                       \
        const T *restrict a = (const T *)d[1];                                           \
        if (s[0] == es && s[1] == -es) { /* flip of the innermost dim */                 \
            for (int64_t i = 0; i < n; i++) o[i] = a[-i];                                \
        } else if (s[0] == es && s[1] == 0) { /* broadcast (repeat of a size-1 dim) */   \
            const T v = a[0];                                                            \
            for (int64_t i = 0; i < n; i++) o[i] = v;                                    \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++)                                              \
                memcpy(d[0] + i * s[0], d[1] + i * s[1], sizeof(T));                     \
        }                                                                                \
    }
COPY_LOOP(8)
COPY_LOOP(16)
COPY_LOOP(32)
COPY_LOOP(64)

static ct_loop_fn copy_loop(size_t es) {
    switch (es) {
    case 1: return copy_8;
    case 2: return copy_16;
    case 4: return copy_32;
    default: CT_ASSERT(es == 8); return copy_64;
    }
}

static void copy_same(ct_tensor *dst, const ct_tensor *src) {
    if (dst->dtype != src->dtype) {
        ct_copy_into(dst, src);
        return;
    }
    if (dst->numel == 0) return;
    ct_iter it;
    ct_tensor *ops[2] = {dst, (ct_tensor *)src};
    ct_iter_init(&it, 2, ops, dst->ndim, dst->sizes);
    ct_cpu_run_loop(&it, copy_loop(ct_dtype_size(dst->dtype)), NULL);
}

static int threads_for(int64_t work) {
    int n = ct_get_num_threads();
    return work >= CT_GRAIN && n > 1 ? n : 1;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static void band(char *out, const char *in, size_t es, int64_t B, int64_t R, int64_t C,
                 int64_t k, bool upper) {
    int64_t rows = B * R;
#pragma omp parallel for num_threads(threads_for(rows * C)) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = r % R;
        /* the kept columns [lo, hi) of row i */
        int64_t lo = upper ? clamp64(i + k, 0, C) : 0;
        int64_t hi = upper ? C : clamp64(i + k + 1, 0, C);
        char *o = out + (size_t)(r * C) * es;
        const char *a = in + (size_t)(r * C) * es;
        memset(o, 0, (size_t)lo * es);
        if (hi > lo) memcpy(o + (size_t)lo * es, a + (size_t)lo * es, (size_t)(hi - lo) * es);
        if (C > hi) memset(o + (size_t)hi * es, 0, (size_t)(C - hi) * es);
    }
}

static inline void copy_elem(char *dst, const char *src, size_t es) {
    switch (es) {
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, 8); break;
    }
}

static void pad_gather(char *out, const char *in, size_t es, const ct_pad_geom *g) {
    const int64_t H = g->in[1], W = g->in[2], Do = g->out[0], Ho = g->out[1], Wo = g->out[2];
    const int64_t D = g->in[0];
    const int64_t *mz = g->map[0], *my = g->map[1], *mx = g->map[2];
    int64_t rows = g->B * Do * Ho;
#pragma omp parallel for num_threads(threads_for(rows * Wo)) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t y = r % Ho, z = (r / Ho) % Do, b = r / (Ho * Do);
        const char *src = in + (size_t)(((b * D + mz[z]) * H + my[y]) * W) * es;
        char *dst = out + (size_t)(r * Wo) * es;
        if (g->x_hi > g->x_lo)
            memcpy(dst + (size_t)g->x_lo * es, src + (size_t)g->x_src * es,
                   (size_t)(g->x_hi - g->x_lo) * es);
        for (int64_t x = 0; x < g->x_lo && x < Wo; x++)
            copy_elem(dst + (size_t)x * es, src + (size_t)mx[x] * es, es);
        for (int64_t x = g->x_hi > g->x_lo ? g->x_hi : g->x_lo; x < Wo; x++)
            copy_elem(dst + (size_t)x * es, src + (size_t)mx[x] * es, es);
    }
}

/* pad_backward: each input row sums, tile by tile, the output rows that read it (the
 * inverse maps of z and y), and of each of those the columns that read the tile: the
 * padded ones through mx, the middle run with ADD_RUN(acc, src, n, LOAD) (a loop
 * that vectorizes).  Sums in A from zero, in ascending output order; loads and stores
 * through LOAD/STORE. */
enum { PAD_TILE = 256 };
#define PAD_BACKWARD(NAME, T, A, LOAD, STORE, ADD_RUN)                                   \
    static void NAME(char *gin_, const char *gout_, const ct_pad_geom *g) {              \
        T *gin = (T *)gin_;                                                              \
        const T *gout = (const T *)gout_;                                                \
        const int64_t D = g->in[0], H = g->in[1], W = g->in[2];                          \
        const int64_t Do = g->out[0], Ho = g->out[1], Wo = g->out[2];                    \
        const int64_t *mx = g->map[2], x_lo = g->x_lo, x_hi = g->x_hi;                   \
        const int64_t l = g->x_lo - g->x_src; /* middle column x reads input x - l */    \
        const int64_t rows = g->B * D * H;                                               \
        _Pragma("omp parallel for num_threads(threads_for(g->B * Do * Ho * Wo)) schedule(static)") \
        for (int64_t r = 0; r < rows; r++) {                                             \
            const int64_t y = r % H, z = (r / H) % D, b = r / (H * D);                   \
            for (int64_t w0 = 0; w0 < W; w0 += PAD_TILE) {                               \
                const int64_t w1 = W - w0 < PAD_TILE ? W : w0 + PAD_TILE;                \
                const int64_t m0 = x_lo > w0 + l ? x_lo : w0 + l;                        \
                const int64_t m1 = x_hi < w1 + l ? x_hi : w1 + l;                        \
                A acc[PAD_TILE];                                                         \
                for (int64_t w = 0; w < w1 - w0; w++) acc[w] = 0;                        \
                for (int64_t i = g->start[0][z]; i < g->start[0][z + 1]; i++)            \
                    for (int64_t j = g->start[1][y]; j < g->start[1][y + 1]; j++) {      \
                        const T *src = gout + ((b * Do + g->inv[0][i]) * Ho + g->inv[1][j]) * Wo; \
                        for (int64_t x = 0; x < x_lo; x++)                               \
                            if (mx[x] >= w0 && mx[x] < w1) acc[mx[x] - w0] += LOAD(src[x]); \
                        /* the offset first (acc + m0 alone may lie past acc), and no  \
                         * run when empty (its start may lie past acc too) */            \
                        if (m1 > m0)                                                     \
                            ADD_RUN(acc + (m0 - l - w0), src + m0, m1 - m0, LOAD);       \
                        for (int64_t x = x_hi; x < Wo; x++)                              \
                            if (mx[x] >= w0 && mx[x] < w1) acc[mx[x] - w0] += LOAD(src[x]); \
                    }                                                                    \
                for (int64_t w = w0; w < w1; w++) gin[r * W + w] = STORE(T, acc[w - w0]); \
            }                                                                            \
        }                                                                                \
    }
#define SAME_LOAD(v) (v)
#define SAME_STORE(T, v) (v)
#define ADD_DIRECT(acc, src, n, LOAD)                                                    \
    for (int64_t k_ = 0; k_ < (n); k_++) (acc)[k_] += LOAD((src)[k_])
/* float16: the run widened with F16C first (gcc does not vectorize the conversion) */
#define ADD_WIDENED(acc, src, n, LOAD)                                                   \
    do {                                                                                 \
        float t_[PAD_TILE];                                                              \
        ct_half_to_float_n(t_, src, n);                                                  \
        for (int64_t k_ = 0; k_ < (n); k_++) (acc)[k_] += t_[k_];                        \
    } while (0)
PAD_BACKWARD(pad_backward_f32, float, float, SAME_LOAD, SAME_STORE, ADD_DIRECT)
PAD_BACKWARD(pad_backward_f64, double, double, SAME_LOAD, SAME_STORE, ADD_DIRECT)
PAD_BACKWARD(pad_backward_f16, ct_half, float, CT_LOAD_REDUCED, CT_STORE_REDUCED, ADD_WIDENED)
PAD_BACKWARD(pad_backward_bf16, ct_bf16, float, CT_LOAD_REDUCED, CT_STORE_REDUCED, ADD_DIRECT)

#define ENTRIES(DT, T)                                                                   \
    CT_KERNEL(COPY, CT_OP_cat, DT, copy_same),                                           \
    CT_KERNEL(COPY, CT_OP_stack, DT, copy_same),                                         \
    CT_KERNEL(COPY, CT_OP_repeat, DT, copy_same),                                        \
    CT_KERNEL(COPY, CT_OP_flip, DT, copy_same),                                          \
    CT_KERNEL(COPY, CT_OP_roll, DT, copy_same),                                          \
    CT_KERNEL(COPY, CT_OP_constant_pad_nd, DT, copy_same),                               \
    CT_KERNEL(COPY, CT_OP_strided_scatter, DT, copy_same),                               \
    CT_KERNEL(BAND, CT_OP_tril, DT, band),                                               \
    CT_KERNEL(BAND, CT_OP_triu, DT, band),                                               \
    CT_KERNEL(PAD_GATHER, CT_OP_reflection_pad, DT, pad_gather),                         \
    CT_KERNEL(PAD_GATHER, CT_OP_replication_pad, DT, pad_gather),
const ct_kernel_entry ct_cpu_shape_kernels[] = {
    CT_FOREACH_DTYPE(ENTRIES)
    CT_KERNEL(PAD_SCATTER, CT_OP_pad_backward, CT_F32, pad_backward_f32),
    CT_KERNEL(PAD_SCATTER, CT_OP_pad_backward, CT_F64, pad_backward_f64),
    CT_KERNEL(PAD_SCATTER, CT_OP_pad_backward, CT_F16, pad_backward_f16),
    CT_KERNEL(PAD_SCATTER, CT_OP_pad_backward, CT_BF16, pad_backward_bf16),
    CT_KERNEL_END,
};
