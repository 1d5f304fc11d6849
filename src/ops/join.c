/* Joining and splitting: cat, stack, split, split_with_sizes, chunk, unbind.
 *
 * cat and stack copy every input into its place in a new tensor (one strided copy per
 * input: memcpy of contiguous runs, parallel when large).  The split family returns
 * views of the input that share one multi-output node; their backward joins the
 * pieces' gradients again (zeros for pieces that got none). */
#include <stdlib.h>
#include <string.h>

#include "kernels/shape.h"
#include "ops/internal.h"
#include "ops/shape_internal.h"
#include "ops/trace.h"
#include "core/mem.h"
#include "ops/autocast.h"

/* Copies src into dst's region [start, start + src.size(dim)) along dim (or into
 * dst.select(dim, start) when `drop`). */
static void copy_into_region(ct_copy_kernel k, ct_tensor *dst, ct_tensor *src, int dim, int64_t start, bool drop) {
    int64_t sizes[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < dst->ndim; d++) {
        if (d == dim && drop) continue;
        sizes[nd] = d == dim ? src->sizes[d] : dst->sizes[d];
        strides[nd++] = dst->strides[d];
    }
    ct_tensor *v = ct_tensor_view_of(dst, nd, sizes, strides, dst->offset + start * dst->strides[dim]);
    if (!v) {
        ct_error_fail_result("out of memory joining tensors");
        return;
    }
    k(v, src);
    ct_release(v);
}

/* PyTorch skips 1-D empty tensors in cat (a legacy of size-[0] placeholders). */
static bool cat_skipped(const ct_tensor *t) { return t->ndim == 1 && t->sizes[0] == 0; }

/* A non-empty list of tensors on one device; `empty` is PyTorch's message for none. */
static bool check_list(const char *op, const char *empty, int n, ct_tensor *const *ts) {
    if (n <= 0 || !ts) {
        ct_error("%s: %s", op, empty);
        return false;
    }
    for (int i = 0; i < n; i++)
        if (!ts[i]) return false; /* keep the first error */
    if (!ct_all_alive(op, 2, ts, n)) return false;
    for (int i = 1; i < n; i++)
        if (!ct_check_same_device(op, ts[0], ts[i])) return false;
    return true;
}

static ct_dtype promoted(int n, ct_tensor *const *ts) {
    ct_dtype dt = ts[0]->dtype;
    for (int i = 1; i < n; i++) dt = ct_promote_types(dt, ts[i]->dtype);
    return dt;
}

ct_tensor *ct_cat(int n, ct_tensor *const *ts, int64_t dim) {
    if (!check_list("ct_cat", "torch.cat(): expected a non-empty list of Tensors", n, ts))
        return NULL;
    CT_AUTOCAST_LIST(CT_OP_cat, ct_cat(n, ts, dim), n, ts);
    int ref = -1;
    for (int i = 0; i < n; i++) {
        if (ts[i]->ndim == 0) {
            ct_error("ct_cat: zero-dimensional tensor (at position %d) cannot be concatenated", i);
            return NULL;
        }
        if (ref < 0 && !cat_skipped(ts[i])) ref = i;
    }
    ct_dtype dt = promoted(n, ts);
    ct_device dev = ts[0]->storage->device;
    if (ref < 0) { /* only skipped tensors: an empty 1-D result */
        ct_tensor *out = ct_tensor_new("ct_cat", CT_SHAPE(0), dt, dev);
        if (out && ct_dtype_is_floating(dt)) ct_record1(CT_OP_cat, out, n, ts);
        if (out) CT_TRACE_ATTRS(CT_OP_cat, n, ts, 1, &out, &(ct_cat_attrs){dim});
        return ct_ret(out);
    }
    const ct_tensor *r = ts[ref];
    int d = ct_wrap_dim("ct_cat", dim, r->ndim);
    if (d < 0) return NULL;
    ct_shape shape = ct_shape_of(r);
    shape.d[d] = 0;
    for (int i = 0; i < n; i++) {
        const ct_tensor *t = ts[i];
        if (cat_skipped(t)) continue;
        if (t->ndim != r->ndim) {
            ct_error("ct_cat: Tensors must have same number of dimensions: got %d and %d",
                     r->ndim, t->ndim);
            return NULL;
        }
        for (int k = 0; k < t->ndim; k++)
            if (k != d && t->sizes[k] != r->sizes[k]) {
                ct_error("ct_cat: Sizes of tensors must match except in dimension %d. Expected "
                         "size %lld but got size %lld for tensor number %d in the list.", d,
                         (long long)r->sizes[k], (long long)t->sizes[k], i);
                return NULL;
            }
        if (__builtin_add_overflow(shape.d[d], t->sizes[d], &shape.d[d])) {
            ct_error("ct_cat: the concatenated size along dimension %d overflows int64 (at "
                     "tensor number %d in the list)", d, i);
            return NULL;
        }
    }
    ct_copy_kernel k = ct_kernel_copy_for(CT_OP_cat, dev, dt);
    ct_tensor *out = k ? ct_tensor_new("ct_cat", shape, dt, dev) : NULL;
    if (!out) return NULL;
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        if (cat_skipped(ts[i])) continue;
        copy_into_region(k, out, ts[i], d, at, false);
        at += ts[i]->sizes[d];
    }
    if (ct_dtype_is_floating(dt)) {
        ct_node *node = ct_record1(CT_OP_cat, out, n, ts);
        if (node) node->state.dim = d;
    }
    CT_TRACE_ATTRS(CT_OP_cat, n, ts, 1, &out, &(ct_cat_attrs){dim});
    return ct_ret(out);
}

bool cat_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    int d = (int)n->state.dim;
    int64_t at = 0;
    for (int i = 0; i < n->n_in; i++) {
        const ct_input_meta *m = &n->in_meta[i];
        bool skipped = m->ndim == 1 && m->sizes[0] == 0;
        if (n->needs_grad[i]) {
            gi[i] = skipped ? ct_zeros_with(CT_SHAPE(0), (ct_tensor_options){.dtype = go[0]->dtype,
                                                                        .device = go[0]->storage->device})
                            : ct_narrow(go[0], d, at, m->sizes[d]);
            if (!gi[i]) return false;
        }
        if (!skipped) at += m->sizes[d];
    }
    return true;
}

ct_tensor *ct_stack(int n, ct_tensor *const *ts, int64_t dim) {
    if (!check_list("ct_stack", "stack expects a non-empty TensorList", n, ts)) return NULL;
    CT_AUTOCAST_LIST(CT_OP_stack, ct_stack(n, ts, dim), n, ts);
    const ct_tensor *r = ts[0];
    for (int i = 1; i < n; i++) {
        const ct_tensor *t = ts[i];
        if (t->ndim != r->ndim || memcmp(t->sizes, r->sizes, sizeof(int64_t) * (size_t)r->ndim)) {
            char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
            ct_error("ct_stack: stack expects each tensor to be equal size, but got %s at entry 0 "
                     "and %s at entry %d", ct_shape_str(r->ndim, r->sizes, a),
                     ct_shape_str(t->ndim, t->sizes, b), i);
            return NULL;
        }
    }
    int d = ct_wrap_dim("ct_stack", dim, r->ndim + 1);
    if (d < 0) return NULL;
    if (r->ndim == CT_MAX_DIMS) {
        ct_error("ct_stack: tensors have at most %d dims", CT_MAX_DIMS);
        return NULL;
    }
    ct_shape shape = {.ndim = r->ndim + 1};
    for (int k = 0, j = 0; k < shape.ndim; k++) shape.d[k] = k == d ? n : r->sizes[j++];
    ct_dtype dt = promoted(n, ts);
    ct_copy_kernel k = ct_kernel_copy_for(CT_OP_stack, r->storage->device, dt);
    ct_tensor *out = k ? ct_tensor_new("ct_stack", shape, dt, r->storage->device) : NULL;
    if (!out) return NULL;
    for (int i = 0; i < n; i++) copy_into_region(k, out, ts[i], d, i, true);
    if (ct_dtype_is_floating(dt)) {
        ct_node *node = ct_record1(CT_OP_stack, out, n, ts);
        if (node) node->state.dim = d;
    }
    CT_TRACE_ATTRS(CT_OP_stack, n, ts, 1, &out, &(ct_stack_attrs){dim});
    return ct_ret(out);
}

bool stack_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    for (int i = 0; i < n->n_in; i++)
        if (n->needs_grad[i] && !(gi[i] = ct_select(go[0], n->state.dim, i))) return false;
    return true;
}

/* ---- the split family ---------------------------------------------------------- */

/* Checks room in out (NULL: only counting).  Returns false with an error when short. */
static bool room_for(const char *op, int count, ct_tensor **out, int max_out) {
    if (!out || count <= max_out) return true;
    ct_error("%s: out has room for %d tensors but the result has %d", op, max_out, count);
    return false;
}

/* Makes the pieces of t along d: piece i starts at starts[i] and has sizes[i]
 * elements, or (select) is t.select(d, i).  All share one node of op.  -1 when out of
 * memory (no pieces made). */
static int make_pieces(ct_op_id op, ct_tensor *t, int d, int count, const int64_t *starts,
                       const int64_t *lens, bool select, ct_tensor **out, ct_node **node) {
    *node = count > 0 ? ct_node_record(op, 1, &t, count) : NULL;
    bool made = !ct_error_take_failed_result(); /* the node could not be recorded */
    for (int i = 0; made && i < count; i++) {
        int64_t sizes[CT_MAX_DIMS], strides[CT_MAX_DIMS];
        int nd = 0;
        for (int k = 0; k < t->ndim; k++) {
            if (k == d && select) continue;
            sizes[nd] = k == d ? lens[i] : t->sizes[k];
            strides[nd++] = t->strides[k];
        }
        int64_t off = t->offset + (select ? i : starts[i]) * t->strides[d];
        out[i] = ct_tensor_view_of(t, nd, sizes, strides, off);
        if (!(made = out[i] != NULL)) {
            while (i > 0) ct_release(out[--i]);
            break;
        }
        ct_view_mark(out[i], t, CT_VIEW_MULTI);
        if (*node) ct_node_set_output(*node, out[i], i);
    }
    /* registered only once all are made: a failed registration releases one piece */
    for (int i = 0; made && i < count; i++) made = (out[i] = ct_ret(out[i])) != NULL;
    if (*node) ct_release(*node); /* the pieces hold it */
    if (!made) {
        *node = NULL;
        return -1;
    }
    return count;
}

static int wrap_split_dim(const char *op, const char *what, ct_tensor *t, int64_t dim) {
    if (t->ndim == 0) {
        ct_error("%s: %s expects at least a 1-dimensional tensor", op, what);
        return -1;
    }
    return ct_wrap_dim(op, dim, t->ndim);
}

/* Pieces of equal size `step` (the last one smaller) along d. */
static int split_equal(ct_op_id op, const char *name, ct_tensor *t, int d, int64_t step,
                       ct_tensor **out, int max_out) {
    int64_t size = t->sizes[d];
    int64_t count = step == 0 ? 1 : (size + step - 1) / step;
    if (size == 0 && step > 0) count = 1;
    if (!room_for(name, (int)count, out, max_out)) return -1;
    if (!out) return (int)count;
    int64_t *se = ct_malloc(2 * sizeof(int64_t) * (size_t)(count ? count : 1));
    if (!se) {
        ct_error("%s: out of memory", name);
        return -1;
    }
    for (int64_t i = 0; i < count; i++) {
        se[i] = i * step;
        se[count + i] = size - se[i] < step ? size - se[i] : step;
    }
    ct_node *node;
    int r = make_pieces(op, t, d, (int)count, se, se + count, false, out, &node);
    if (node) node->state.split = (ct_split_state){d, step};
    free(se);
    if (r >= 0) CT_TRACE_ATTRS(op, 1, &t, r, out, &(ct_split_attrs){step, d});
    return r;
}

int ct_split(ct_tensor *t, int64_t split_size, int64_t dim, ct_tensor **out, int max_out) {
    if (!ct_alive("ct_split", 1, t)) return -1;
    if (!t) return -1;
    int d = wrap_split_dim("ct_split", "split", t, dim);
    if (d < 0) return -1;
    if (split_size < 0) {
        ct_error("ct_split: split expects split_size be non-negative, but got split_size=%lld",
                 (long long)split_size);
        return -1;
    }
    if (split_size == 0 && t->sizes[d] != 0) {
        ct_error("ct_split: split_size can only be 0 if dimension size is 0, but got dimension "
                 "size of %lld", (long long)t->sizes[d]);
        return -1;
    }
    return split_equal(CT_OP_split, "ct_split", t, d, split_size, out, max_out);
}

/* The gradient of a piece, or zeros shaped like it when it got none. */
static ct_tensor *piece_grad(ct_tensor *g, const ct_input_meta *m, int d, int64_t len, bool drop,
                             ct_device dev) {
    if (g) return g;
    ct_shape s = {.ndim = 0};
    for (int k = 0; k < m->ndim; k++)
        if (!(drop && k == d)) s.d[s.ndim++] = k == d ? len : m->sizes[k];
    return ct_zeros_with(s, (ct_tensor_options){.dtype = m->dtype, .device = dev});
}

/* Joins the pieces' gradients: cat along d (lens given) or stack (lens NULL). */
static bool join_grads(ct_node *n, ct_tensor **go, ct_tensor **gi, const int64_t *lens) {
    const ct_input_meta *m = &n->in_meta[0];
    int d = n->state.split.dim;
    ct_tensor **gs = ct_malloc(sizeof(ct_tensor *) * (size_t)n->n_out);
    if (!gs) {
        ct_error("%s: out of memory in backward", ct_node_grad_name(n));
        return false;
    }
    bool ok = true;
    ct_device dev = CT_CPU; /* the pieces that got no gradient get zeros where the others are */
    for (int i = 0; i < n->n_out; i++)
        if (go[i]) dev = go[i]->storage->device;
    for (int i = 0; ok && i < n->n_out; i++)
        ok = (gs[i] = piece_grad(go[i], m, d, lens ? lens[i] : 1, !lens, dev)) != NULL;
    if (ok) ok = (gi[0] = lens ? ct_cat(n->n_out, gs, d) : ct_stack(n->n_out, gs, d)) != NULL;
    free(gs);
    return ok;
}

bool split_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    int64_t size = n->in_meta[0].sizes[n->state.split.dim], step = n->state.split.size;
    int64_t *lens = ct_malloc(sizeof(int64_t) * (size_t)n->n_out);
    if (!lens) {
        ct_error("%s: out of memory in backward", ct_node_grad_name(n));
        return false;
    }
    for (int i = 0; i < n->n_out; i++) {
        int64_t left = size - i * step;
        lens[i] = left < step ? left : step;
    }
    bool ok = join_grads(n, go, gi, lens);
    free(lens);
    return ok;
}

int ct_split_with_sizes(ct_tensor *t, int n, const int64_t *sizes, int64_t dim, ct_tensor **out,
                        int max_out) {
    if (!ct_alive("ct_split_with_sizes", 1, t)) return -1;
    if (!t) return -1;
    int d = wrap_split_dim("ct_split_with_sizes", "split_with_sizes", t, dim);
    if (d < 0) return -1;
    if (n < 0 || (n > 0 && !sizes)) {
        ct_error("ct_split_with_sizes: sizes must be an array of n >= 0 entries");
        return -1;
    }
    int64_t sum = 0;
    bool negative = false;
    for (int i = 0; i < n; i++) {
        sum += sizes[i];
        negative |= sizes[i] < 0;
    }
    if (negative || sum != t->sizes[d]) {
        char buf[1024];
        int len = snprintf(buf, sizeof buf, "[");
        for (int i = 0; i < n && len < (int)sizeof buf - 32; i++)
            len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%lld", i ? ", " : "",
                            (long long)sizes[i]);
        snprintf(buf + len, sizeof buf - (size_t)len, "]");
        if (negative)
            ct_error("ct_split_with_sizes: split_with_sizes expects split_sizes have only "
                     "non-negative entries, but got split_sizes=%s", buf);
        else
            ct_error("ct_split_with_sizes: split_with_sizes expects split_sizes to sum exactly "
                     "to %lld (input tensor's size at dimension %d), but got split_sizes=%s",
                     (long long)t->sizes[d], d, buf);
        return -1;
    }
    if (!room_for("ct_split_with_sizes", n, out, max_out)) return -1;
    if (!out) return n;
    int64_t *starts = ct_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!starts) {
        ct_error("ct_split_with_sizes: out of memory");
        return -1;
    }
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        starts[i] = at;
        at += sizes[i];
    }
    ct_node *node;
    int r = make_pieces(CT_OP_split_with_sizes, t, d, n, starts, sizes, false, out, &node);
    if (node) {
        node->state.split = (ct_split_state){d, t->sizes[d]};
        node->extra = starts; /* kept for the backward: piece i has starts[i+1]-starts[i] */
        node->extra_free = free;
    } else {
        free(starts);
    }
    if (r >= 0)
        CT_TRACE_ATTRS(CT_OP_split_with_sizes, 1, &t, r, out,
                       &(ct_split_with_sizes_attrs){ct_attr_dims(n, sizes), dim});
    return r;
}

bool split_with_sizes_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    const int64_t *starts = n->extra;
    int64_t *lens = ct_malloc(sizeof(int64_t) * (size_t)n->n_out);
    if (!lens) {
        ct_error("%s: out of memory in backward", ct_node_grad_name(n));
        return false;
    }
    for (int i = 0; i < n->n_out; i++)
        lens[i] = (i + 1 < n->n_out ? starts[i + 1] : n->state.split.size) - starts[i];
    bool ok = join_grads(n, go, gi, lens);
    free(lens);
    return ok;
}

int ct_chunk(ct_tensor *t, int64_t chunks, int64_t dim, ct_tensor **out, int max_out) {
    if (!ct_alive("ct_chunk", 1, t)) return -1;
    if (!t) return -1;
    int d = wrap_split_dim("ct_chunk", "chunk", t, dim);
    if (d < 0) return -1;
    if (chunks <= 0) {
        ct_error("ct_chunk: chunk expects `chunks` to be greater than 0, got: %lld",
                 (long long)chunks);
        return -1;
    }
    int64_t size = t->sizes[d];
    if (size == 0) { /* `chunks` empty pieces, as PyTorch (through split_with_sizes) */
        if (chunks > (1 << 24)) {
            ct_error("ct_chunk: too many chunks (%lld) for an empty dimension", (long long)chunks);
            return -1;
        }
        int64_t *zeros = ct_calloc((size_t)chunks, sizeof(int64_t));
        if (!zeros) {
            ct_error("ct_chunk: out of memory");
            return -1;
        }
        int r = room_for("ct_chunk", (int)chunks, out, max_out)
                    ? ct_split_with_sizes(t, (int)chunks, zeros, d, out, max_out) : -1;
        free(zeros);
        return r;
    }
    return split_equal(CT_OP_split, "ct_chunk", t, d, (size + chunks - 1) / chunks, out, max_out);
}

int ct_unbind(ct_tensor *t, int64_t dim, ct_tensor **out, int max_out) {
    if (!ct_alive("ct_unbind", 1, t)) return -1;
    if (!t) return -1;
    if (t->ndim == 0) {
        ct_error("ct_unbind: Dimension specified as %lld but tensor has no dimensions",
                 (long long)dim);
        return -1;
    }
    int d = ct_wrap_dim("ct_unbind", dim, t->ndim);
    if (d < 0) return -1;
    int count = (int)t->sizes[d];
    if (!room_for("ct_unbind", count, out, max_out)) return -1;
    if (!out) return count;
    ct_node *node;
    int r = make_pieces(CT_OP_unbind, t, d, count, NULL, NULL, true, out, &node);
    if (node) node->state.split = (ct_split_state){d, 0};
    if (r >= 0) CT_TRACE_ATTRS(CT_OP_unbind, 1, &t, r, out, &(ct_unbind_attrs){dim});
    return r;
}

bool unbind_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return join_grads(n, go, gi, NULL);
}
