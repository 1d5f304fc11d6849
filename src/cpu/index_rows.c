/* Row kernels along a dim (index_select, embedding, index_add) and the helpers that
 * read index values and masks (range checks, counting, compaction, nonzero). */
#include <omp.h>
#include <string.h>

#include "cpu/index.h"
#include "cpu/index_types.h"
#include "cpu/kernel_util.h"

/* One row of `bytes` bytes; single elements skip the memcpy call. */
static inline void copy_row(char *dst, const char *src, size_t bytes) {
    switch (bytes) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, bytes);
    }
}

/* dst [outer, nindex, inner] = src[:, index, :] — a memcpy per row, rows in parallel
 * for large inputs (each output row is written by one thread). */
static void index_select_rows(char *dst, const char *src, const ct_rows_args *a) {
    size_t row = (size_t)a->inner * a->elsize;
    int64_t total = a->outer * a->nindex;
    int nt = ct_get_num_threads();
    bool par = total > 1 && total * a->inner >= CT_GRAIN && nt > 1;
#pragma omp parallel for if (par) num_threads(nt) schedule(static)
    for (int64_t r = 0; r < total; r++) {
        int64_t o = r / a->nindex, j = r % a->nindex;
        copy_row(dst + (size_t)r * row, src + (size_t)(o * a->src_n + a->index[j]) * row, row);
    }
}

/* dst[:, index[j], :] += alpha * src[:, j, :].  The work is split over (outer, column
 * ranges); within a range the rows j are added in index order, so duplicates sum
 * the same way for any thread count. */
#define INDEX_ADD(DT, T, SFX)                                                            \
    static void index_add_##SFX(char *dst_, const char *src_, const ct_rows_args *a) {   \
        T *dst = (T *)dst_;                                                              \
        const T *src = (const T *)src_;                                                  \
        int64_t inner = a->inner, nchunks = 1;                                           \
        int nt = ct_get_num_threads();                                                   \
        if (nt > 1 && a->outer * inner * a->nindex >= CT_GRAIN && a->outer < nt) {      \
            nchunks = (nt + a->outer - 1) / a->outer;                                    \
            if (nchunks > (inner + 63) / 64) nchunks = (inner + 63) / 64;                \
            if (nchunks < 1) nchunks = 1;                                                \
        }                                                                                \
        int64_t work = a->outer * nchunks;                                               \
        bool par = nt > 1 && work > 1 && a->outer * inner * a->nindex >= CT_GRAIN;       \
        _Pragma("omp parallel for if (par) num_threads(nt) schedule(static)")            \
        for (int64_t w = 0; w < work; w++) {                                             \
            int64_t o = w / nchunks, c = w % nchunks;                                    \
            int64_t c0 = inner * c / nchunks, c1 = inner * (c + 1) / nchunks;            \
            for (int64_t j = 0; j < a->nindex; j++) {                                    \
                T *d = dst + (o * a->dst_n + a->index[j]) * inner;                       \
                const T *s = src + (o * a->nindex + j) * inner;                          \
                for (int64_t i = c0; i < c1; i++) d[i] = CT_IDX_ADD_##SFX(d[i], s[i], a->alpha, a->ialpha); \
            }                                                                            \
        }                                                                                \
    }
CT_IDX_FOREACH(INDEX_ADD)

/* ---- helpers ------------------------------------------------------------- */

/* Any of v[0..n) outside [lo, hi)?  Branch-free and vectorized: one unsigned
 * compare per value (v - lo wraps to a huge number below lo). */
CT_SIMD_FN(bool, any_out_of_range, (const int64_t *restrict v, int64_t n, int64_t lo,
                                     int64_t hi), (v, n, lo, hi), {
    uint64_t span = (uint64_t)hi - (uint64_t)lo, bad = 0;
    for (int64_t i = 0; i < n; i++) bad |= (uint64_t)v[i] - (uint64_t)lo >= span;
    return bad != 0;
})

int64_t ct_cpu_find_out_of_range(const int64_t *v, int64_t n, int64_t lo, int64_t hi) {
    if (hi <= lo) return n > 0 ? 0 : -1;
    if (!any_out_of_range(v, n, lo, hi)) return -1; /* the common case */
    for (int64_t i = 0; i < n; i++)
        if (v[i] < lo || v[i] >= hi) return i;
    return -1;
}

void ct_cpu_index_offsets(int k, const int64_t *const *cols, int64_t count, const int64_t *sizes,
                          const int64_t *strides, int64_t *offsets, int64_t *linear) {
    for (int64_t r = 0; r < count; r++) {
        int64_t off = 0, lin = 0;
        for (int j = 0; j < k; j++) {
            int64_t c = cols[j][r];
            c += c < 0 ? sizes[j] : 0;
            off += c * strides[j];
            lin = lin * sizes[j] + c;
        }
        offsets[r] = off;
        linear[r] = lin;
    }
}

int64_t ct_cpu_max_i64(const int64_t *v, int64_t n) {
    int64_t m = v[0];
    for (int64_t i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

void ct_cpu_one_hot(const int64_t *v, int64_t n, int64_t classes, int64_t *out) {
    for (int64_t i = 0; i < n; i++) out[i * classes + v[i]] = 1;
}

void ct_cpu_arange_along(int64_t *out, int64_t outer, int64_t n, int64_t inner) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < inner; i++) *out++ = j;
}

void ct_cpu_eq_i64(const int64_t *v, int64_t n, int64_t x, uint8_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = v[i] == x;
}

int64_t ct_cpu_count_true(const uint8_t *m, int64_t n) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += m[i] != 0;
    return c;
}

void ct_cpu_masked_compact(char *dst, const char *src, const uint8_t *m, int64_t n,
                           size_t elsize) {
    for (int64_t i = 0; i < n; i++) {
        if (!m[i]) continue;
        copy_row(dst, src + (size_t)i * elsize, elsize);
        dst += elsize;
    }
}

void ct_cpu_nonzero_coords(const uint8_t *m, int ndim, const int64_t *sizes, int64_t *out) {
    int64_t n = 1, idx[CT_MAX_DIMS] = {0};
    for (int d = 0; d < ndim; d++) n *= sizes[d];
    for (int64_t i = 0; i < n; i++) {
        if (m[i]) {
            memcpy(out, idx, sizeof(int64_t) * (size_t)ndim);
            out += ndim;
        }
        for (int d = ndim - 1; d >= 0; d--) { /* advance the multi-index (C order) */
            if (++idx[d] < sizes[d]) break;
            idx[d] = 0;
        }
    }
}

#define ADD_ENTRY(DT, T, SFX) CT_KERNEL(ROWS, CT_OP_index_add, DT, index_add_##SFX),
#define SELECT_ENTRY(DT, T, SFX) CT_KERNEL(ROWS, CT_OP_index_select, DT, index_select_rows),
const ct_kernel_entry ct_cpu_index_rows_kernels[] = {
    CT_IDX_FOREACH(ADD_ENTRY)
    CT_IDX_FOREACH(SELECT_ENTRY)
    CT_KERNEL_END,
};
