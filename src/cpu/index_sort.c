/* Sorting rows for sort and topk: a stable merge sort of (key, index) pairs per row,
 * rows in parallel, each thread with its own buffers; topk with k <= n / 8 selects
 * with a heap instead (O(n log k)).  NaN orders above every number (last ascending,
 * first descending), as in PyTorch; equal values keep index order. */
#include <omp.h>
#include <stdlib.h>

#include "cpu/iter.h"
#include "kernels/index.h"
#include "cpu/index_types.h"
#include "kernels/kernel.h"
#include "core/mem.h"
#include "cpu/kernel_oom.h"

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
    /* a before b in the total order (key order, then index): for selection */         \
    static inline bool better_##SFX(const pair_##SFX *a, const pair_##SFX *b, bool desc) { \
        return before_##SFX(a, b, desc) || (!before_##SFX(b, a, desc) && a->i < b->i);    \
    }                                                                                    \
    /* Restores the heap below i: every parent comes after its children (the root is    \
     * the last of the k kept so far). */                                                \
    static void sift_##SFX(pair_##SFX *h, int64_t m, int64_t i, bool desc) {             \
        for (;;) {                                                                       \
            int64_t l = 2 * i + 1, r = l + 1, w = i;                                     \
            if (l < m && better_##SFX(&h[w], &h[l], desc)) w = l;                        \
            if (r < m && better_##SFX(&h[w], &h[r], desc)) w = r;                        \
            if (w == i) return;                                                          \
            pair_##SFX t = h[i];                                                         \
            h[i] = h[w];                                                                 \
            h[w] = t;                                                                    \
            i = w;                                                                       \
        }                                                                                \
    }                                                                                    \
    /* The first k of p[0..n) in order, into out[0..k): a heap of the best k seen, then  \
     * emptied from the back.  O(n log k) for topk with small k. */                      \
    static void select_##SFX(pair_##SFX *p, int64_t n, int64_t k, bool desc, pair_##SFX *out) { \
        for (int64_t j = 0; j < k; j++) {                                                \
            for (int64_t c = j; c > 0;) { /* sift up */                                  \
                int64_t par = (c - 1) / 2;                                               \
                if (!better_##SFX(&p[par], &p[c], desc)) break;                          \
                pair_##SFX t = p[par];                                                   \
                p[par] = p[c];                                                           \
                p[c] = t;                                                                \
                c = par;                                                                 \
            }                                                                            \
        }                                                                                \
        for (int64_t j = k; j < n; j++) {                                                \
            if (!better_##SFX(&p[j], &p[0], desc)) continue;                             \
            p[0] = p[j];                                                                 \
            sift_##SFX(p, k, 0, desc);                                                   \
        }                                                                                \
        for (int64_t m = k; m > 0; m--) {                                                \
            out[m - 1] = p[0];                                                           \
            p[0] = p[m - 1];                                                             \
            sift_##SFX(p, m - 1, 0, desc);                                               \
        }                                                                                \
    }                                                                                    \
    /* in [outer, n, inner] -> first k sorted of each row: vals/idx [outer, k, inner] */ \
    static void sort_##SFX(const char *in_, char *vals_, int64_t *idx, const ct_sort_args *a) { \
        const T *in = (const T *)in_;                                                    \
        T *vals = (T *)vals_;                                                            \
        int64_t n = a->n, inner = a->inner, k = a->k, rows = a->outer * inner;           \
        int nt = ct_get_num_threads();                                                   \
        bool par = nt > 1 && rows > 1 && rows * n >= CT_GRAIN;                           \
        atomic_bool failed = false;                                                      \
        _Pragma("omp parallel if (par) num_threads(nt)")                                 \
        {                                                                                \
            pair_##SFX *buf = ct_malloc(sizeof(pair_##SFX) * (size_t)(2 * n + 1));       \
            if (!buf) atomic_store(&failed, true);                                       \
            _Pragma("omp for schedule(static)")                                          \
            for (int64_t r = 0; r < rows; r++) {                                         \
                if (!buf) continue;                                                      \
                int64_t o = r / inner, i = r % inner;                                    \
                const T *src = in + o * n * inner + i;                                   \
                for (int64_t j = 0; j < n; j++) {                                        \
                    buf[j].k = CT_IDX_TOKEY_##SFX(src[j * inner]);                       \
                    buf[j].i = j;                                                        \
                }                                                                        \
                pair_##SFX *s = buf + n;                                                 \
                if (k > 0 && k * 8 <= n) /* topk with a small k: select, do not sort */  \
                    select_##SFX(buf, n, k, a->descending, s);                           \
                else                                                                     \
                    s = msort_##SFX(buf, buf + n, n, a->descending);                     \
                T *vo = vals + o * k * inner + i;                                        \
                int64_t *io = idx + o * k * inner + i;                                   \
                for (int64_t j = 0; j < k; j++) {                                        \
                    vo[j * inner] = src[s[j].i * inner];                                 \
                    io[j * inner] = s[j].i;                                              \
                }                                                                        \
            }                                                                            \
            free(buf);                                                                   \
        }                                                                                \
        if (failed) ct_kernel_out_of_memory("sort");                                     \
    }
CT_IDX_FOREACH(SORT_KERNEL)

#define ENTRY(DT, T, SFX) CT_KERNEL(SORT, CT_OP_sort, DT, sort_##SFX),
const ct_kernel_entry ct_cpu_index_sort_kernels[] = {
    CT_IDX_FOREACH(ENTRY)
    CT_KERNEL_END,
};
