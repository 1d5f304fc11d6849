/* Copies that rearrange elements: repeat, tile, flip, roll, tril, triu.
 *
 * Each builds a source view whose geometry already says where every element goes
 * (stride 0 for repeats, negative strides for flips, shifted blocks for rolls) and
 * runs one strided copy over it; see cpu/shape.h. */
#include <stdlib.h>
#include <string.h>

#include "kernels/shape.h"
#include "ops/internal.h"
#include "ops/shape_internal.h"
#include "ops/trace.h"
#include "core/mem.h"

void ct_copy_region(ct_copy_kernel k, ct_tensor *dst, int64_t doff, const int64_t *dstrides, ct_tensor *src,
                        int64_t soff, const int64_t *sstrides, int ndim, const int64_t *sizes) {
    ct_tensor *d = ct_tensor_view_of(dst, ndim, sizes, dstrides, doff);
    ct_tensor *s = ct_tensor_view_of(src, ndim, sizes, sstrides, soff);
    if (d && s) k(d, s);
    else ct_error_fail_result("out of memory in a shape op");
    ct_release(d);
    ct_release(s);
}

/* ---- repeat, tile ------------------------------------------------------------ */

/* Note [Repeat as a broadcast copy]: the output (r0*s0, r1*s1, ...) in C order is
 * the array (r0, s0, r1, s1, ...); the input read with stride 0 along each r_i fills
 * it in one copy.  Dims with r_i == 1 or s_i == 1 need no split.  The backward sums
 * the gradient, viewed the same way, over the r_i dims. */
static int repeat_split(int nr, const int64_t *r, int ndim, const int64_t *sizes,
                        const int64_t *strides, int64_t *ssz, int64_t *sst, ct_dims *rdims) {
    int n = 0, lead = nr - ndim;
    rdims->n = 0;
    for (int i = 0; i < nr; i++) {
        int64_t s = i < lead ? 1 : sizes[i - lead], st = i < lead || !strides ? 0 : strides[i - lead];
        if (r[i] != 1) {
            if (n == CT_MAX_DIMS) return -1;
            rdims->d[rdims->n++] = n;
            ssz[n] = r[i];
            sst[n++] = 0;
        }
        if (s != 1) { /* size-1 dims need no place: their index is always 0 */
            if (n == CT_MAX_DIMS) return -1;
            ssz[n] = s;
            sst[n++] = st;
        }
    }
    return n;
}

ct_tensor *ct_repeat(ct_tensor *t, ct_shape repeats) {
    if (!ct_alive("ct_repeat", 1, t)) return NULL;
    if (!t) return NULL;
    if (repeats.ndim < t->ndim) {
        ct_error("ct_repeat: Number of dimensions of repeat dims can not be smaller than number "
                 "of dimensions of tensor (got %d and %d)", repeats.ndim, t->ndim);
        return NULL;
    }
    if (repeats.ndim > CT_MAX_DIMS) {
        ct_error("ct_repeat: tensors have at most %d dims (got %d)", CT_MAX_DIMS, repeats.ndim);
        return NULL;
    }
    int lead = repeats.ndim - t->ndim;
    ct_shape shape = {.ndim = repeats.ndim};
    bool negative = false, overflow = false;
    for (int i = 0; i < repeats.ndim; i++) {
        overflow |= __builtin_mul_overflow(repeats.d[i], i < lead ? 1 : t->sizes[i - lead],
                                           &shape.d[i]);
        negative |= repeats.d[i] < 0;
    }
    if (overflow && !negative) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error("ct_repeat: numel: integer multiplication overflow: repeats %s of a tensor of "
                 "shape %s", ct_shape_str(repeats.ndim, repeats.d, a),
                 ct_shape_str(t->ndim, t->sizes, b));
        return NULL;
    }
    if (negative) {
        char buf[CT_SHAPE_STR_MAX];
        for (int i = 0; i < repeats.ndim; i++)
            if (repeats.d[i] < 0) {
                ct_error("ct_repeat: Trying to create tensor with negative dimension %lld: %s",
                         (long long)shape.d[i], ct_shape_str(shape.ndim, shape.d, buf));
                break;
            }
        return NULL;
    }
    int64_t ssz[CT_MAX_DIMS], sst[CT_MAX_DIMS], dst_st[CT_MAX_DIMS];
    ct_dims rdims;
    int n = repeat_split(repeats.ndim, repeats.d, t->ndim, t->sizes, t->strides, ssz, sst, &rdims);
    if (n < 0) {
        ct_error("ct_repeat: repeating a %d-dim tensor by %d dims needs more than %d dims "
                 "internally", t->ndim, repeats.ndim, CT_MAX_DIMS);
        return NULL;
    }
    ct_copy_kernel k = ct_kernel_copy_for(CT_OP_repeat, t->storage->device, t->dtype);
    ct_tensor *out = k ? ct_tensor_new("ct_repeat", shape, t->dtype, t->storage->device) : NULL;
    if (!out) return NULL;
    ct_contiguous_strides(n, ssz, dst_st);
    if (out->numel > 0) ct_copy_region(k, out, 0, dst_st, t, t->offset, sst, n, ssz);
    ct_node *node = ct_record1(CT_OP_repeat, out, 1, &t);
    ct_repeat_attrs a = {.repeats.n = repeats.ndim};
    memcpy(a.repeats.d, repeats.d, sizeof(int64_t) * (size_t)repeats.ndim);
    if (node) node->attrs.repeat = a;
    CT_TRACE_ATTRS(CT_OP_repeat, 1, &t, 1, &out, &a);
    return ct_ret(out);
}

bool repeat_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    const ct_input_meta *m = &n->in_meta[0];
    ct_shape split = {0}, in = {.ndim = m->ndim};
    int64_t unused[CT_MAX_DIMS];
    ct_dims rdims;
    const ct_dims *r = &n->attrs.repeat.repeats;
    split.ndim = repeat_split(r->n, r->d, m->ndim, m->sizes, NULL, split.d,
                              unused, &rdims);
    memcpy(in.d, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    ct_tensor *g = ct_reshape(go[0], split);
    if (g && rdims.n) g = ct_sum_with(g, (ct_reduce_options){.dims = rdims});
    return (gi[0] = ct_reshape(g, in)) != NULL;
}

ct_tensor *ct_tile(ct_tensor *t, ct_shape dims) {
    if (!ct_alive("ct_tile", 1, t)) return NULL;
    if (!t) return NULL;
    if (dims.ndim < t->ndim) { /* missing leading repeats are 1 */
        int lead = t->ndim - dims.ndim;
        memmove(dims.d + lead, dims.d, sizeof(int64_t) * (size_t)dims.ndim);
        for (int i = 0; i < lead; i++) dims.d[i] = 1;
        dims.ndim = t->ndim;
    }
    return ct_repeat(t, dims);
}

/* ---- flip ------------------------------------------------------------------------ */

/* Wraps dims into out (unique); false with PyTorch's error on a repeated dim. */
static bool wrap_unique_dims(const char *op, ct_dims dims, int ndim, int *out) {
    bool seen[CT_MAX_DIMS] = {0};
    for (int i = 0; i < dims.n; i++) {
        int d = ct_wrap_dim(op, dims.d[i], ndim);
        if (d < 0) return false;
        if (seen[d]) {
            ct_error("%s: dim %d appears multiple times in the list of dims", op, d);
            return false;
        }
        seen[d] = true;
        out[i] = d;
    }
    return true;
}

ct_tensor *ct_flip(ct_tensor *t, ct_dims dims) {
    if (!ct_alive("ct_flip", 1, t)) return NULL;
    if (!t) return NULL;
    int ds[CT_MAX_DIMS];
    if (dims.n < 0 || dims.n > CT_MAX_DIMS) {
        ct_error("ct_flip: invalid number of dims %d", dims.n);
        return NULL;
    }
    if (!wrap_unique_dims("ct_flip", dims, t->ndim, ds)) return NULL;
    ct_copy_kernel k = ct_kernel_copy_for(CT_OP_flip, t->storage->device, t->dtype);
    ct_tensor *out =
        k ? ct_tensor_new("ct_flip", ct_shape_of(t), t->dtype, t->storage->device) : NULL;
    if (!out) return NULL;
    if (t->numel > 0) {
        /* the input read backwards along the flipped dims */
        int64_t st[CT_MAX_DIMS], off = t->offset;
        memcpy(st, t->strides, sizeof(int64_t) * (size_t)t->ndim);
        for (int i = 0; i < dims.n && t->ndim > 0; i++) {
            off += (t->sizes[ds[i]] - 1) * t->strides[ds[i]];
            st[ds[i]] = -t->strides[ds[i]];
        }
        ct_copy_region(k, out, 0, out->strides, t, off, st, t->ndim, t->sizes);
    }
    ct_node *n = ct_record1(CT_OP_flip, out, 1, &t);
    if (n) n->attrs.flip.dims = dims; /* as given: go has t's dims */
    CT_TRACE_ATTRS(CT_OP_flip, 1, &t, 1, &out, &(ct_flip_attrs){dims});
    return ct_ret(out);
}

bool flip_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_flip(go[0], n->attrs.flip.dims)) != NULL;
}

/* ---- roll ------------------------------------------------------------------------- */

/* dst = src rolled by shift[j] (in [0, size)) along dims[j]: along each dim the
 * elements [0, n-s) move to [s, n) and [n-s, n) to [0, s), so the result is 2^nd
 * block copies. */
static void roll_copy(ct_copy_kernel k, ct_tensor *dst, ct_tensor *src, int nd, const int *dims,
                      const int64_t *shift) {
    for (int mask = 0; mask < (1 << nd); mask++) {
        int64_t sizes[CT_MAX_DIMS], soff = src->offset, doff = dst->offset;
        memcpy(sizes, src->sizes, sizeof(int64_t) * (size_t)src->ndim);
        bool empty = false;
        for (int j = 0; j < nd; j++) {
            int d = dims[j];
            int64_t n = src->sizes[d], s = shift[j];
            bool wrapped = mask >> j & 1;
            sizes[d] = wrapped ? s : n - s;
            soff += (wrapped ? n - s : 0) * src->strides[d];
            doff += (wrapped ? 0 : s) * dst->strides[d];
            empty |= sizes[d] == 0;
        }
        if (!empty)
            ct_copy_region(k, dst, doff, dst->strides, src, soff, src->strides, src->ndim, sizes);
    }
}

static int64_t wrap_shift(int64_t s, int64_t n) { return n ? ((s % n) + n) % n : 0; }

ct_tensor *ct_roll(ct_tensor *t, ct_dims shifts, ct_dims dims) {
    if (!ct_alive("ct_roll", 1, t)) return NULL;
    if (!t) return NULL;
    if (shifts.n <= 0) {
        ct_error("ct_roll: `shifts` required");
        return NULL;
    }
    bool flat = dims.n == 0 && shifts.n == 1;
    if (!flat && shifts.n != dims.n) {
        ct_error("ct_roll: shifts and dimensions must align. shifts: %d, dims:%d", shifts.n, dims.n);
        return NULL;
    }
    /* Shifts of one dim add up; a dim may be listed twice. */
    int ds[CT_MAX_DIMS], nd = 0;
    int64_t total[CT_MAX_DIMS] = {0};
    for (int i = 0; i < dims.n; i++) {
        int d = ct_wrap_dim("ct_roll", dims.d[i], t->ndim);
        if (d < 0) return NULL;
        total[d] += shifts.d[i];
    }
    ct_copy_kernel k = ct_kernel_copy_for(CT_OP_roll, t->storage->device, t->dtype);
    ct_tensor *out =
        k ? ct_tensor_new("ct_roll", ct_shape_of(t), t->dtype, t->storage->device) : NULL;
    if (!out) return NULL;
    if (t->numel > 0 && flat) {
        ct_tensor *c =
            ct_tensor_is_contiguous(t) ? ct_retain(t) : ct_cast_new("ct_roll", t, t->dtype);
        int64_t n = t->numel, one = 1, s = wrap_shift(shifts.d[0], n);
        ct_tensor *src = c ? ct_tensor_view_of(c, 1, &n, &one, c->offset) : NULL;
        ct_tensor *dst = src ? ct_tensor_view_of(out, 1, &n, &one, 0) : NULL;
        if (dst) roll_copy(k, dst, src, 1, (int[]){0}, &s);
        else ct_error_fail_result("ct_roll: out of memory");
        ct_release(src);
        ct_release(dst);
        ct_release(c);
    } else if (t->numel > 0) {
        int64_t sh[CT_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) {
            int64_t s = wrap_shift(total[d], t->sizes[d]);
            if (s) {
                ds[nd] = d;
                sh[nd++] = s;
            }
        }
        roll_copy(k, out, t, nd, ds, sh);
    }
    ct_node *n = ct_record1(CT_OP_roll, out, 1, &t);
    ct_roll_attrs a = {shifts, dims};
    if (n) { /* too big for node->attrs: kept in extra */
        ct_roll_attrs *saved = ct_malloc(sizeof *saved);
        if (saved) {
            *saved = a;
            n->extra = saved;
            n->extra_free = free;
        } else {
            ct_error_fail_result("ct_roll: out of memory recording the graph");
        }
    }
    CT_TRACE_ATTRS(CT_OP_roll, 1, &t, 1, &out, &a);
    return ct_ret(out);
}

bool roll_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    const ct_roll_attrs *saved = n->extra;
    ct_dims back = saved->shifts;
    for (int i = 0; i < back.n; i++) back.d[i] = -back.d[i];
    return (gi[0] = ct_roll(go[0], back, saved->dims)) != NULL;
}

/* ---- tril, triu ------------------------------------------------------------------- */

static ct_tensor *band(ct_op_id op, const char *name, ct_tensor *t, int64_t k, bool upper) {
    if (!t) return NULL;
    if (ct_wrap_dim(name, -2, t->ndim) < 0) return NULL; /* PyTorch's message for 1-D input */
    ct_band_kernel kern = ct_kernel_band_for(op, t->storage->device, t->dtype);
    if (!kern) return NULL;
    ct_tensor *src = ct_tensor_is_contiguous(t) ? ct_retain(t) : ct_cast_new(name, t, t->dtype);
    ct_tensor *out = src ? ct_tensor_new(name, ct_shape_of(t), t->dtype, t->storage->device) : NULL;
    if (!out) {
        ct_release(src);
        return NULL;
    }
    int64_t R = t->sizes[t->ndim - 2], C = t->sizes[t->ndim - 1];
    if (t->numel > 0)
        kern(ct_tensor_data(out), ct_tensor_data(src), ct_dtype_size(t->dtype),
              t->numel / (R * C), R, C, k, upper);
    ct_release(src);
    ct_node *n = ct_record1(op, out, 1, &t);
    if (n && op == CT_OP_tril) n->attrs.tril.diagonal = k;
    if (n && op == CT_OP_triu) n->attrs.triu.diagonal = k;
    CT_TRACE_ATTRS(op, 1, &t, 1, &out, &(ct_tril_attrs){k}); /* tril's and triu's are alike */
    return ct_ret(out);
}

ct_tensor *ct_tril(ct_tensor *t, int64_t diagonal) {
    if (!ct_alive("ct_tril", 1, t)) return NULL;
    return band(CT_OP_tril, "ct_tril", t, diagonal, false);
}
ct_tensor *ct_triu(ct_tensor *t, int64_t diagonal) {
    if (!ct_alive("ct_triu", 1, t)) return NULL;
    return band(CT_OP_triu, "ct_triu", t, diagonal, true);
}
bool tril_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_tril(go[0], n->attrs.tril.diagonal)) != NULL;
}
bool triu_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_triu(go[0], n->attrs.triu.diagonal)) != NULL;
}
