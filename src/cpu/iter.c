#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/iter.h"

bool ct_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                         int64_t *out) {
    int n = na > nb ? na : nb;
    int64_t tmp[CT_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : a[i - (n - na)];
        int64_t db = i < n - nb ? 1 : b[i - (n - nb)];
        if (da != db && da != 1 && db != 1) return false;
        tmp[i] = da == 1 ? db : da;
    }
    for (int i = 0; i < n; i++) out[i] = tmp[i];
    *nout = n;
    return true;
}

void ct_iter_init(ct_iter *it, int nops, ct_tensor *const *ops, int ndim, const int64_t *shape) {
    CT_ASSERT(nops <= CT_ITER_MAX_OPERANDS);
    it->noperands = nops;
    it->numel = ct_shape_numel(ndim, shape);
    /* Fast path: every operand contiguous with the full shape is one flat run. */
    bool flat = true;
    for (int k = 0; k < nops && flat; k++)
        flat = ops[k]->numel == it->numel && ops[k]->ndim == ndim &&
               ct_tensor_is_contiguous(ops[k]) &&
               !memcmp(ops[k]->sizes, shape, sizeof(int64_t) * (size_t)ndim);
    if (flat) {
        it->ndim = 1;
        it->shape[0] = it->numel;
        for (int k = 0; k < nops; k++) {
            it->data[k] = ct_tensor_data(ops[k]);
            it->strides[0][k] = (int64_t)ct_dtype_size(ops[k]->dtype);
        }
        return;
    }
    /* Byte strides with dims reversed (dim 0 innermost); broadcast dims get 0. */
    int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS][CT_ITER_MAX_OPERANDS];
    for (int k = 0; k < nops; k++) {
        const ct_tensor *t = ops[k];
        int64_t es = (int64_t)ct_dtype_size(t->dtype);
        it->data[k] = ct_tensor_data(t);
        for (int d = 0; d < ndim; d++) {
            int td = t->ndim - 1 - d; /* tensor dim aligned from the right */
            st[d][k] = (td >= 0 && t->sizes[td] != 1) ? t->strides[td] * es : 0;
        }
    }
    for (int d = 0; d < ndim; d++) sh[d] = shape[ndim - 1 - d];
    /* Order dims by operand strides (insertion sort, outputs first decide), so that
     * transposed inputs iterate in memory order; then drop size-1 dims. */
    int perm[CT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) perm[d] = d;
    for (int i = 1; i < ndim; i++) {
        for (int j = i; j > 0; j--) {
            int a = perm[j - 1], b = perm[j]; /* should b move inside a? */
            int swap = 0;
            for (int k = 0; k < nops; k++) {
                int64_t sa = st[a][k], sb = st[b][k];
                if (sa == 0 || sb == 0 || sa == sb) continue;
                swap = sb < sa ? 1 : -1;
                break;
            }
            if (swap <= 0) break;
            perm[j - 1] = b;
            perm[j] = a;
        }
    }
    int n = 0;
    for (int i = 0; i < ndim; i++) {
        int d = perm[i];
        if (sh[d] == 1) continue;
        it->shape[n] = sh[d];
        for (int k = 0; k < nops; k++) it->strides[n][k] = st[d][k];
        n++;
    }
    /* Merge dim i+1 into dim i when every operand steps over them as one. */
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0) {
            bool ok = true;
            for (int k = 0; k < nops && ok; k++)
                ok = it->strides[i][k] == it->strides[m - 1][k] * it->shape[m - 1];
            if (ok) {
                it->shape[m - 1] *= it->shape[i];
                continue;
            }
        }
        if (m != i) {
            it->shape[m] = it->shape[i];
            for (int k = 0; k < nops; k++) it->strides[m][k] = it->strides[i][k];
        }
        m++;
    }
    if (m == 0) { /* a single element */
        it->shape[0] = 1;
        for (int k = 0; k < nops; k++) it->strides[0][k] = 0;
        m = 1;
    }
    it->ndim = m;
}

void ct_iter_run_range(const ct_iter *it, int64_t begin, int64_t end, ct_loop_fn loop,
                       const void *ctx) {
    if (begin >= end) return;
    int nops = it->noperands, ndim = it->ndim;
    int64_t idx[CT_MAX_DIMS];
    char *ptr[CT_ITER_MAX_OPERANDS];
    int64_t inner_strides[CT_ITER_MAX_OPERANDS];
    for (int k = 0; k < nops; k++) inner_strides[k] = it->strides[0][k];
    /* Position of `begin` as a multi-index. */
    int64_t rem = begin;
    for (int d = 0; d < ndim; d++) {
        idx[d] = rem % it->shape[d];
        rem /= it->shape[d];
    }
    for (int k = 0; k < nops; k++) {
        ptr[k] = it->data[k];
        for (int d = 0; d < ndim; d++) ptr[k] += idx[d] * it->strides[d][k];
    }
    int64_t left = end - begin;
    while (left > 0) {
        int64_t run = it->shape[0] - idx[0];
        if (run > left) run = left;
        loop(ptr, inner_strides, run, ctx);
        left -= run;
        if (left == 0) break;
        /* Advance to the start of the next inner run. */
        for (int k = 0; k < nops; k++) ptr[k] -= idx[0] * it->strides[0][k];
        idx[0] = 0;
        for (int d = 1; d < ndim; d++) {
            idx[d]++;
            for (int k = 0; k < nops; k++) ptr[k] += it->strides[d][k];
            if (idx[d] < it->shape[d]) break;
            for (int k = 0; k < nops; k++) ptr[k] -= it->shape[d] * it->strides[d][k];
            idx[d] = 0;
        }
    }
}

void ct_iter_run(const ct_iter *it, ct_loop_fn loop, const void *ctx) {
    int64_t numel = it->numel;
    int nthreads = ct_get_num_threads();
    if (numel < CT_GRAIN || nthreads <= 1) {
        ct_iter_run_range(it, 0, numel, loop, ctx);
        return;
    }
    int64_t chunks = (numel + CT_GRAIN - 1) / CT_GRAIN;
    if (chunks > nthreads) chunks = nthreads;
#pragma omp parallel for num_threads((int)chunks) schedule(static)
    for (int64_t c = 0; c < chunks; c++)
        ct_iter_run_range(it, numel * c / chunks, numel * (c + 1) / chunks, loop, ctx);
}
