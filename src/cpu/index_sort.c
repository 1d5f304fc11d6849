/* Sorting rows for sort and topk: a stable merge sort of (key, index) pairs per row,
 * rows in parallel, each thread with its own buffers.  NaN orders above every
 * number (last ascending, first descending), as in PyTorch. */
#include <omp.h>
#include <stdlib.h>

#include "cpu/index.h"
#include "cpu/index_types.h"

/* Runs shorter than this are insertion sorted before merging. */
#define RUN 16

#define SORT_KERNEL(DT, T, SFX)                                                          \
    typedef struct { CT_IDX_KEY_##SFX k; int64_t i; } pair_##SFX;                        \
    /* a strictly before b in the requested order (ties are decided by stability) */     \
    static inline bool before_##SFX(const pair_##SFX *a, const pair_##SFX *b, bool desc) { \
        bool an = CT_IDX_ISNAN_##SFX(a->k), bn = CT_IDX_ISNAN_##SFX(b->k);               \
        if (desc) return (a->k > b->k) || (an && !bn);                                   \
        return (a->k < b->k) || (bn && !an);                                             \
    }                                                                                    \
    /* Stable merge sort of p[0..n); tmp has room for n pairs.  Returns the sorted      \
     * array (p or tmp). */                                                              \
    static pair_##SFX *msort_##SFX(pair_##SFX *p, pair_##SFX *tmp, int64_t n, bool desc) { \
        for (int64_t s = 0; s < n; s += RUN) {                                           \
            int64_t e = s + RUN < n ? s + RUN : n;                                       \
            for (int64_t i = s + 1; i < e; i++) {                                        \
                pair_##SFX x = p[i];                                                     \
                int64_t j = i;                                                           \
                for (; j > s && before_##SFX(&x, &p[j - 1], desc); j--) p[j] = p[j - 1]; \
                p[j] = x;                                                                \
            }                                                                            \
        }                                                                                \
        for (int64_t w = RUN; w < n; w *= 2) {                                           \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                                  \
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n; \
                int64_t i = lo, j = mid, o = lo;                                         \
                while (i < mid && j < hi)                                                \
                    tmp[o++] = before_##SFX(&p[j], &p[i], desc) ? p[j++] : p[i++];       \
                while (i < mid) tmp[o++] = p[i++];                                       \
                while (j < hi) tmp[o++] = p[j++];                                        \
            }                                                                            \
            pair_##SFX *t = p;                                                           \
            p = tmp;                                                                     \
            tmp = t;                                                                     \
        }                                                                                \
        return p;                                                                        \
    }                                                                                    \
    /* in [outer, n, inner] -> first k sorted of each row: vals/idx [outer, k, inner] */ \
    static void sort_##SFX(const char *in_, char *vals_, int64_t *idx, const ct_sort_args *a) { \
        const T *in = (const T *)in_;                                                    \
        T *vals = (T *)vals_;                                                            \
        int64_t n = a->n, inner = a->inner, k = a->k, rows = a->outer * inner;           \
        int nt = ct_get_num_threads();                                                   \
        bool par = nt > 1 && rows > 1 && rows * n >= CT_GRAIN;                           \
        _Pragma("omp parallel if (par) num_threads(nt)")                                 \
        {                                                                                \
            pair_##SFX *buf = malloc(sizeof(pair_##SFX) * (size_t)(2 * n + 1));          \
            if (!buf) ct_fatal("out of memory sorting %lld elements", (long long)n);     \
            _Pragma("omp for schedule(static)")                                          \
            for (int64_t r = 0; r < rows; r++) {                                         \
                int64_t o = r / inner, i = r % inner;                                    \
                const T *src = in + o * n * inner + i;                                   \
                for (int64_t j = 0; j < n; j++) {                                        \
                    buf[j].k = CT_IDX_TOKEY_##SFX(src[j * inner]);                       \
                    buf[j].i = j;                                                        \
                }                                                                        \
                pair_##SFX *s = msort_##SFX(buf, buf + n, n, a->descending);             \
                T *vo = vals + o * k * inner + i;                                        \
                int64_t *io = idx + o * k * inner + i;                                   \
                for (int64_t j = 0; j < k; j++) {                                        \
                    vo[j * inner] = src[s[j].i * inner];                                 \
                    io[j * inner] = s[j].i;                                              \
                }                                                                        \
            }                                                                            \
            free(buf);                                                                   \
        }                                                                                \
    }
CT_IDX_FOREACH(SORT_KERNEL)

#define ENTRY(DT, T, SFX) {CT_OP_sort, DT, (ct_kernel)sort_##SFX},
const ct_kernel_entry ct_cpu_index_sort_kernels[] = {
    CT_IDX_FOREACH(ENTRY)
    {0, 0, NULL},
};
