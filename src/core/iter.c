/* The elementwise iterator's geometry (core/iter.h): broadcasting, byte strides,
 * dim order, merged dims and cpu scalars. */
#include <string.h>

#include "core/iter.h"

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

/* addressable: every operand's memory is readable where the loop runs, whatever its
 * device (ct_iter_init_addressable); else other devices' operands are cpu scalars. */
static void init(ct_iter *it, int nops, ct_tensor *const *ops, int ndim, const int64_t *shape,
                 bool addressable) {
    CT_ASSERT(nops <= CT_ITER_MAX_OPERANDS);
    int64_t numel = ct_shape_numel(ndim, shape);
    ct_device dev = ops[0]->storage->device;
    /* Fast path: every operand contiguous with the full shape on one device is one
     * flat run. */
    bool flat = true;
    for (int k = 0; k < nops && flat; k++)
        flat = ops[k]->numel == numel && ops[k]->ndim == ndim &&
               (addressable || ct_same_device(ops[k]->storage->device, dev)) &&
               ct_tensor_is_contiguous(ops[k]) &&
               !memcmp(ops[k]->sizes, shape, sizeof(int64_t) * (size_t)ndim);
    if (flat) {
        ct_iter_init_flat(it, ops[0], nops - 1, ops + 1, numel);
        return;
    }
    it->noperands = nops;
    it->numel = numel;
    it->device = dev;
    it->cpu_scalars = 0;
    /* Byte strides with dims reversed (dim 0 innermost); broadcast dims get 0.  A 0-d
     * input on the cpu next to another device is a cpu scalar: its value moves into
     * the iterator, and no host pointer reaches the device's kernel. */
    int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS][CT_ITER_MAX_OPERANDS];
    for (int k = 0; k < nops; k++) {
        const ct_tensor *t = ops[k];
        int64_t es = (int64_t)ct_dtype_size(t->dtype);
        if (addressable || ct_same_device(t->storage->device, dev)) {
            it->data[k] = ct_tensor_data(t);
        } else {
            CT_ASSERT(k > 0 && t->ndim == 0 && t->storage->device.type == CT_DEV_CPU);
            memcpy(it->scalar[k], ct_tensor_data(t), (size_t)es);
            it->data[k] = NULL;
            it->cpu_scalars |= 1u << k;
        }
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


void ct_iter_init(ct_iter *it, int nops, ct_tensor *const *ops, int ndim, const int64_t *shape) {
    init(it, nops, ops, ndim, shape, false);
}

void ct_iter_init_addressable(ct_iter *it, int nops, ct_tensor *const *ops, int ndim,
                              const int64_t *shape) {
    init(it, nops, ops, ndim, shape, true);
}
