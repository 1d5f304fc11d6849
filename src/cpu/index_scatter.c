/* Iterator loops of gather, scatter (tensor and value), scatter_add and masked_fill,
 * and the row kernels of index_put_ and index (t[indices]).  See kernels/index.h for the
 * operand layouts. */
#include <omp.h>
#include <string.h>

#include "cpu/iter.h"
#include "kernels/index.h"
#include "cpu/index_types.h"
#include "cpu/kernel_util.h"

/* Element-moving loops exist once per element size. */
#define MOVE_SIZES(X) X(uint8_t, 1) X(uint16_t, 2) X(uint32_t, 4) X(uint64_t, 8)

/* out[i] = self[i + index[i] * self_stride]   (operands out, index, self) */
#define GATHER(T, N)                                                                     \
    CT_SIMD_PROC(gather_##N, (char **d, const int64_t *s, int64_t n, const void *ctx), (d, s, n, ctx), { \
        const ct_scatter_args *p = ctx;                                                  \
        if (s[0] == sizeof(T) && s[1] == sizeof(int64_t) && s[2] == 0) {                 \
            /* along the innermost dim: a vector gather from one row */                  \
            T *restrict o = (T *)d[0];                                                   \
            const int64_t *restrict ix = (const int64_t *)d[1];                          \
            const char *row = d[2];                                                      \
            for (int64_t i = 0; i < n; i++) o[i] = *(const T *)(row + ix[i] * p->self_stride); \
            return;                                                                      \
        }                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                \
            int64_t k = *(const int64_t *)(d[1] + i * s[1]);                             \
            *(T *)(d[0] + i * s[0]) = *(const T *)(d[2] + i * s[2] + k * p->self_stride); \
        }                                                                                \
    })
MOVE_SIZES(GATHER)

/* One column along dim per iterator element (operands out, index[, src]): for j in
 * order, BODY sees `dst` = out's element at index[j] and `sv` = src's j-th element
 * (NULL without src). */
#define COLUMN_LOOP(NAME, HAS_SRC, BODY)                                                 \
    static void NAME(char **d, const int64_t *s, int64_t n, const void *ctx) {           \
        const ct_scatter_args *p = ctx;                                                  \
        for (int64_t i = 0; i < n; i++) {                                                \
            char *o = d[0] + i * s[0];                                                   \
            const char *ix = d[1] + i * s[1], *sr = HAS_SRC ? d[2] + i * s[2] : NULL;    \
            for (int64_t j = 0; j < p->n; j++) {                                         \
                int64_t k = *(const int64_t *)(ix + j * p->index_stride);                \
                char *dst = o + k * p->self_stride;                                      \
                const char *sv = HAS_SRC ? sr + j * p->src_stride : NULL;                \
                (void)sv;                                                                \
                BODY;                                                                    \
            }                                                                            \
        }                                                                                \
    }

/* out[index[j]] = src[j] / value */
#define SCATTER(T, N)                                                                    \
    COLUMN_LOOP(scatter_##N, 1, memcpy(dst, sv, sizeof(T)))                              \
    COLUMN_LOOP(scatter_value_##N, 0, memcpy(dst, p->value, sizeof(T)))
MOVE_SIZES(SCATTER)

/* out = mask ? value : self   (operands out, self, mask; mask bytes are bool/uint8) */
#define MASKED_FILL(T, N)                                                                \
    CT_SIMD_PROC(masked_fill_##N, (char **d, const int64_t *s, int64_t n,           \
                                        const void *ctx), (d, s, n, ctx), {                               \
        const ct_scatter_args *p = ctx;                                                  \
        T v;                                                                             \
        memcpy(&v, p->value, sizeof v);                                                  \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == 1) {                       \
            T *restrict o = (T *)d[0];                                                   \
            const T *x = (const T *)d[1];                                                \
            const uint8_t *restrict m = (const uint8_t *)d[2];                           \
            for (int64_t i = 0; i < n; i++) o[i] = m[i] ? v : x[i];                      \
            return;                                                                      \
        }                                                                                \
        for (int64_t i = 0; i < n; i++)                                                  \
            if (*(const uint8_t *)(d[2] + i * s[2])) *(T *)(d[0] + i * s[0]) = v;        \
            else *(T *)(d[0] + i * s[0]) = *(const T *)(d[1] + i * s[1]);                \
    })
MOVE_SIZES(MASKED_FILL)

/* out[index[j]] += src[j], j in order */
#define SCATTER_ADD(DT, T, SFX)                                                          \
    COLUMN_LOOP(scatter_add_##SFX, 1,                                                    \
                *(T *)dst = CT_IDX_ADD_##SFX(*(T *)dst, *(const T *)sv, 1.0, 1))
CT_IDX_FOREACH(SCATTER_ADD)

/* Every element of the indexed rows (see ct_put_args): BODY runs with `e` pointing at
 * the element in t and `v` its position in the contiguous [nrows, rest] operand.
 * Rows run in order (duplicates resolve deterministically) unless PAR, when they are
 * split across threads (only for kernels that write each element once). */
#define ROWS_WALK(T, BASE, A, PAR, BODY)                                                 \
    do {                                                                                 \
        const ct_put_args *a_ = (A);                                                     \
        int nd_ = a_->rest_ndim;                                                         \
        int64_t len_ = 1;                                                                \
        bool contig_ = true;                                                             \
        for (int k_ = nd_ - 1; k_ >= 0; k_--) {                                          \
            if (a_->rest_sizes[k_] != 1 && a_->rest_strides[k_] != len_) contig_ = false; \
            len_ *= a_->rest_sizes[k_];                                                  \
        }                                                                                \
        int nt_ = ct_get_num_threads();                                                  \
        bool par_ = (PAR) && nt_ > 1 && a_->nrows > 1 && a_->nrows * len_ >= CT_GRAIN;   \
        _Pragma("omp parallel for if (par_) num_threads(nt_) schedule(static)")          \
        for (int64_t r_ = 0; r_ < a_->nrows; r_++) {                                     \
            T *row_ = (BASE) + a_->offsets[r_];                                          \
            int64_t v = r_ * len_;                                                       \
            if (contig_) { /* a plain loop the compiler vectorizes */                    \
                for (int64_t i_ = 0; i_ < len_; i_++, v++) {                             \
                    T *e = row_ + i_;                                                    \
                    BODY;                                                                \
                }                                                                        \
                continue;                                                                \
            }                                                                            \
            int64_t idx_[CT_MAX_DIMS] = {0}, off_ = 0;                                   \
            for (int64_t i_ = 0; i_ < len_; i_++, v++) {                                 \
                T *e = row_ + off_;                                                      \
                BODY;                                                                    \
                for (int k_ = nd_ - 1; k_ >= 0; k_--) {                                  \
                    off_ += a_->rest_strides[k_];                                        \
                    if (++idx_[k_] < a_->rest_sizes[k_]) break;                          \
                    off_ -= a_->rest_strides[k_] * a_->rest_sizes[k_];                   \
                    idx_[k_] = 0;                                                        \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    } while (0)

/* index_put_: each indexed row of t gets (or adds) one contiguous row of vals. */
#define INDEX_PUT(DT, T, SFX)                                                            \
    static void index_put_##SFX(char *base_, const char *vals_, const ct_put_args *a) {  \
        T *base = (T *)base_;                                                            \
        const T *vals = (const T *)vals_;                                                \
        if (a->accumulate)                                                               \
            ROWS_WALK(T, base, a, false, *e = CT_IDX_ADD_##SFX(*e, vals[v], 1.0, 1));    \
        else                                                                             \
            ROWS_WALK(T, base, a, false, *e = vals[v]);                                  \
    }
CT_IDX_FOREACH(INDEX_PUT)

/* index (t[indices]): each indexed row of t is copied to one contiguous row of out. */
#define INDEX_GET(T, N)                                                                  \
    static void index_get_##N(const char *base, char *out_, const ct_put_args *a) {      \
        T *out = (T *)out_;                                                              \
        ROWS_WALK(const T, (const T *)base, a, true, out[v] = *e);                       \
    }
MOVE_SIZES(INDEX_GET)

/* Element-moving kernels are registered for every dtype of their size. */
#define BY_SIZE(FAMILY, OP, PREFIX, DT, T)                                               \
    CT_KERNEL(FAMILY, OP, DT,                                                            \
              sizeof(T) == 1   ? PREFIX##1                                               \
              : sizeof(T) == 2 ? PREFIX##2                                               \
              : sizeof(T) == 4 ? PREFIX##4                                               \
                               : PREFIX##8),
#define MOVE_ENTRIES(DT, T, SFX)                                                         \
    BY_SIZE(LOOP, CT_OP_gather, gather_, DT, T) BY_SIZE(LOOP, CT_OP_scatter, scatter_, DT, T) \
    BY_SIZE(LOOP, CT_OP_scatter_value, scatter_value_, DT, T)                            \
    BY_SIZE(LOOP, CT_OP_masked_fill, masked_fill_, DT, T)                                \
    BY_SIZE(INDEX_GET, CT_OP_index, index_get_, DT, T)
#define TYPED_ENTRIES(DT, T, SFX)                                                        \
    CT_KERNEL(LOOP, CT_OP_scatter_add, DT, scatter_add_##SFX),                           \
    CT_KERNEL(INDEX_PUT, CT_OP_index_put, DT, index_put_##SFX),
const ct_kernel_entry ct_cpu_index_scatter_kernels[] = {
    CT_IDX_FOREACH(MOVE_ENTRIES)
    CT_IDX_FOREACH(TYPED_ENTRIES)
    CT_KERNEL_END,
};
