/* Row kernels along a dim (index_select, embedding, index_add). */
#include <omp.h>
#include <string.h>

#include "cpu/iter.h"
#include "kernels/index.h"
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

#define ADD_ENTRY(DT, T, SFX) CT_KERNEL(ROWS, CT_OP_index_add, DT, index_add_##SFX),
#define SELECT_ENTRY(DT, T, SFX) CT_KERNEL(ROWS, CT_OP_index_select, DT, index_select_rows),
const ct_kernel_entry ct_cpu_index_rows_kernels[] = {
    CT_IDX_FOREACH(ADD_ENTRY)
    CT_IDX_FOREACH(SELECT_ENTRY)
    CT_KERNEL_END,
};
