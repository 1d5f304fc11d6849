/* Computations of the indexing ops on host values: see host_index.h. */
#include "ops/host_index.h"

#include <stdbool.h>
#include <string.h>

#include "ctorch/base.h"

/* Any of v[0..n) outside [lo, hi)?  Branch-free, so that it vectorizes: one unsigned
 * compare per value (v - lo wraps to a huge number below lo). */
static bool any_out_of_range(const int64_t *restrict v, int64_t n, int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)hi - (uint64_t)lo, bad = 0;
    for (int64_t i = 0; i < n; i++) bad |= (uint64_t)v[i] - (uint64_t)lo >= span;
    return bad != 0;
}

int64_t ct_host_find_out_of_range(const int64_t *v, int64_t n, int64_t lo, int64_t hi) {
    if (hi <= lo) return n > 0 ? 0 : -1;
    if (!any_out_of_range(v, n, lo, hi)) return -1; /* the common case */
    for (int64_t i = 0; i < n; i++)
        if (v[i] < lo || v[i] >= hi) return i;
    return -1;
}

void ct_host_index_offsets(int k, const int64_t *const *cols, int64_t count, const int64_t *sizes,
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

int64_t ct_host_max_i64(const int64_t *v, int64_t n) {
    int64_t m = v[0];
    for (int64_t i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

void ct_host_one_hot(const int64_t *v, int64_t n, int64_t classes, int64_t *out) {
    memset(out, 0, sizeof(int64_t) * (size_t)(n * classes));
    for (int64_t i = 0; i < n; i++) out[i * classes + v[i]] = 1;
}

int64_t ct_host_count_true(const uint8_t *m, int64_t n) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += m[i] != 0;
    return c;
}

void ct_host_masked_compact(char *dst, const char *src, const uint8_t *m, int64_t n,
                            size_t elsize) {
    for (int64_t i = 0; i < n; i++) {
        if (!m[i]) continue;
        const char *s = src + (size_t)i * elsize;
        switch (elsize) { /* single elements without a memcpy call */
        case 1: *dst = *s; break;
        case 2: memcpy(dst, s, 2); break;
        case 4: memcpy(dst, s, 4); break;
        case 8: memcpy(dst, s, 8); break;
        default: memcpy(dst, s, elsize);
        }
        dst += elsize;
    }
}

void ct_host_nonzero_coords(const uint8_t *m, int ndim, const int64_t *sizes, int64_t *out) {
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
