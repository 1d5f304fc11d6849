/* More views: narrow, slice, select, squeeze, unsqueeze, flatten, unflatten and
 * as_strided; and strided_scatter, the adjoint of a view, which their backward
 * formulas are written with. */
#include <stdlib.h>
#include <string.h>

#include "kernels/shape.h"
#include "ops/host.h"
#include "ops/internal.h"
#include "ops/shape_internal.h"
#include "ops/trace.h"
#include "core/mem.h"

static ct_shape meta_shape(const ct_input_meta *m) {
    ct_shape s = {.ndim = m->ndim};
    memcpy(s.d, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    return s;
}

/* The geometry of a contiguous tensor shaped like input m (what a view's gradient
 * is scattered into). */
static ct_geom contiguous_geom(const ct_input_meta *m) {
    ct_geom g = {.ndim = m->ndim};
    memcpy(g.sizes, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    ct_contiguous_strides(g.ndim, g.sizes, g.strides);
    return g;
}

static void geom_drop_dim(ct_geom *g, int d) {
    for (int i = d; i < g->ndim - 1; i++) {
        g->sizes[i] = g->sizes[i + 1];
        g->strides[i] = g->strides[i + 1];
    }
    g->ndim--;
}

static ct_geom geom_of(const ct_tensor *t) {
    ct_geom g = {.ndim = t->ndim, .offset = t->offset};
    memcpy(g.sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    memcpy(g.strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    return g;
}

static ct_tensor *view_geom(ct_op_id op, ct_tensor *t, const ct_geom *g, ct_node **node) {
    return ct_view_make(op, t, g->ndim, g->sizes, g->strides, g->offset, node);
}

/* NULL when out of memory: then the op's result fails (ct_error_fail_result). */
static void *copy_extra(ct_node *n, const void *data, size_t size) {
    void *p = ct_malloc(size);
    if (!p) {
        ct_error_fail_result("%s: out of memory recording the graph", ct_ops[n->op].fn);
        return NULL;
    }
    memcpy(p, data, size);
    n->extra = p;
    n->extra_free = free;
    return p;
}

/* dim wrapped for an op that needs a dim to work on; -1 with PyTorch's error for a
 * 0-dim input. */
static int wrap_dim_of_nonscalar(const char *op, const char *what, const ct_tensor *t, int64_t dim) {
    if (t->ndim == 0) {
        ct_error("%s: %s cannot be applied to a 0-dim tensor.", op, what);
        return -1;
    }
    return ct_wrap_dim(op, dim, t->ndim);
}

/* ---- slice and narrow --------------------------------------------------- */

/* start and end already clamped to [0, size] with start <= end. */
static ct_tensor *slice_clamped(ct_tensor *t, int d, int64_t start, int64_t end, int64_t step) {
    ct_geom g = geom_of(t);
    g.sizes[d] = (end - start + step - 1) / step;
    g.offset += start * t->strides[d];
    g.strides[d] *= step;
    ct_node *n = NULL;
    ct_tensor *out = view_geom(CT_OP_slice, t, &g, &n);
    if (n) n->state.slice = (ct_slice_state){d, start, step};
    if (out)
        CT_TRACE_ATTRS(CT_OP_slice, 1, &t, 1, &out,
                       &(ct_slice_attrs){d, CT_ATTR_SOME(start), CT_ATTR_SOME(end), step});
    return ct_ret(out);
}

/* Python's clamping of a slice bound to [0, size]. */
static int64_t clamp_bound(int64_t v, int64_t size) {
    if (v < 0) v = v < -size ? 0 : v + size;
    return v > size ? size : v;
}

ct_tensor *ct_slice(ct_tensor *t, int64_t dim, int64_t start, int64_t end, int64_t step) {
    if (!ct_alive("ct_slice", 1, t)) return NULL;
    if (!t) return NULL;
    int d = wrap_dim_of_nonscalar("ct_slice", "slice()", t, dim);
    if (d < 0) return NULL;
    if (step <= 0) {
        ct_error("ct_slice: slice step must be positive (got %lld)", (long long)step);
        return NULL;
    }
    int64_t n = t->sizes[d];
    start = clamp_bound(start, n);
    end = clamp_bound(end, n);
    return slice_clamped(t, d, start, end < start ? start : end, step);
}

ct_tensor *ct_narrow(ct_tensor *t, int64_t dim, int64_t start, int64_t length) {
    if (!ct_alive("ct_narrow", 1, t)) return NULL;
    if (!t) return NULL;
    int d = wrap_dim_of_nonscalar("ct_narrow", "narrow()", t, dim);
    if (d < 0) return NULL;
    int64_t n = t->sizes[d];
    if (start < -n || start > n) {
        ct_error("ct_narrow: start out of range (expected to be in range of [%lld, %lld], but "
                 "got %lld)", (long long)-n, (long long)n, (long long)start);
        return NULL;
    }
    if (start < 0) start += n;
    if (start > n - length) {
        ct_error("ct_narrow: start (%lld) + length (%lld) exceeds dimension size (%lld).",
                 (long long)start, (long long)length, (long long)n);
        return NULL;
    }
    if (length < 0) {
        ct_error("ct_narrow: narrow(): length must be non-negative (got %lld)", (long long)length);
        return NULL;
    }
    return slice_clamped(t, d, start, start + length, 1);
}

bool slice_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    const ct_input_meta *m = &n->in_meta[0];
    const ct_slice_state *s = &n->state.slice;
    int d = s->dim;
    ct_geom g = contiguous_geom(m);
    g.offset = s->start * g.strides[d];
    g.sizes[d] = go[0]->sizes[d];
    g.strides[d] *= s->step;
    return (gi[0] = ct_strided_scatter(go[0], m->ndim, m->sizes, &g)) != NULL;
}

/* ---- select ---------------------------------------------------------------- */

ct_tensor *ct_select(ct_tensor *t, int64_t dim, int64_t index) {
    if (!ct_alive("ct_select", 1, t)) return NULL;
    if (!t) return NULL;
    int d = wrap_dim_of_nonscalar("ct_select", "select()", t, dim);
    if (d < 0) return NULL;
    int64_t n = t->sizes[d];
    if (index < -n || index >= n) {
        char buf[CT_SHAPE_STR_MAX];
        ct_error("ct_select: select(): index %lld out of range for tensor of size %s at "
                 "dimension %d", (long long)index, ct_shape_str(t->ndim, t->sizes, buf), d);
        return NULL;
    }
    if (index < 0) index += n;
    ct_geom g = geom_of(t);
    g.offset += index * t->strides[d];
    geom_drop_dim(&g, d);
    ct_node *node = NULL;
    ct_tensor *out = view_geom(CT_OP_select, t, &g, &node);
    if (node) node->state.slice = (ct_slice_state){d, index, 1};
    if (out) CT_TRACE_ATTRS(CT_OP_select, 1, &t, 1, &out, &(ct_select_attrs){dim, index});
    return ct_ret(out);
}

bool select_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    const ct_input_meta *m = &n->in_meta[0];
    int d = n->state.slice.dim;
    ct_geom g = contiguous_geom(m);
    g.offset = n->state.slice.start * g.strides[d];
    geom_drop_dim(&g, d);
    return (gi[0] = ct_strided_scatter(go[0], m->ndim, m->sizes, &g)) != NULL;
}

/* ---- squeeze, unsqueeze ------------------------------------------------------ */

ct_tensor *ct_squeeze(ct_tensor *t) {
    if (!ct_alive("ct_squeeze", 1, t)) return NULL;
    if (!t) return NULL;
    ct_geom g = geom_of(t);
    for (int d = g.ndim - 1; d >= 0; d--)
        if (g.sizes[d] == 1) geom_drop_dim(&g, d);
    ct_tensor *out = view_geom(CT_OP_squeeze, t, &g, NULL);
    if (out) CT_TRACE(CT_OP_squeeze, 1, &t, 1, &out);
    return ct_ret(out);
}

ct_tensor *ct_squeeze_dim(ct_tensor *t, int64_t dim) {
    if (!ct_alive("ct_squeeze_dim", 1, t)) return NULL;
    if (!t) return NULL;
    int d = ct_wrap_dim("ct_squeeze_dim", dim, t->ndim);
    if (d < 0) return NULL;
    ct_geom g = geom_of(t);
    if (g.ndim > 0 && g.sizes[d] == 1) geom_drop_dim(&g, d);
    ct_tensor *out = view_geom(CT_OP_squeeze_dim, t, &g, NULL);
    if (out) CT_TRACE_ATTRS(CT_OP_squeeze_dim, 1, &t, 1, &out, &(ct_squeeze_dim_attrs){dim});
    return ct_ret(out);
}

ct_tensor *ct_unsqueeze(ct_tensor *t, int64_t dim) {
    if (!ct_alive("ct_unsqueeze", 1, t)) return NULL;
    if (!t) return NULL;
    int d = ct_wrap_dim("ct_unsqueeze", dim, t->ndim + 1);
    if (d < 0) return NULL;
    if (t->ndim == CT_MAX_DIMS) {
        ct_error("ct_unsqueeze: tensors have at most %d dims", CT_MAX_DIMS);
        return NULL;
    }
    ct_geom g = geom_of(t);
    for (int i = g.ndim; i > d; i--) {
        g.sizes[i] = g.sizes[i - 1];
        g.strides[i] = g.strides[i - 1];
    }
    g.sizes[d] = 1;
    g.strides[d] = d >= t->ndim ? 1 : t->sizes[d] * t->strides[d];
    g.ndim++;
    ct_tensor *out = view_geom(CT_OP_unsqueeze, t, &g, NULL);
    if (out) CT_TRACE_ATTRS(CT_OP_unsqueeze, 1, &t, 1, &out, &(ct_unsqueeze_attrs){dim});
    return ct_ret(out);
}

/* The three only add or drop size-1 dims: the gradient is reshaped back. */
static bool reshape_back(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_reshape(go[0], meta_shape(&n->in_meta[0]))) != NULL;
}
bool squeeze_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return reshape_back(n, go, gi); }
bool squeeze_dim_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return reshape_back(n, go, gi); }
bool unsqueeze_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return reshape_back(n, go, gi); }

/* ---- flatten, unflatten ------------------------------------------------------ */

ct_tensor *ct_flatten(ct_tensor *t, int64_t start_dim, int64_t end_dim) {
    if (!ct_alive("ct_flatten", 1, t)) return NULL;
    if (!t) return NULL;
    int s = ct_wrap_dim("ct_flatten", start_dim, t->ndim);
    int e = s < 0 ? -1 : ct_wrap_dim("ct_flatten", end_dim, t->ndim);
    if (e < 0) return NULL;
    if (s > e) {
        ct_error("ct_flatten: flatten() has invalid args: start_dim cannot come after end_dim");
        return NULL;
    }
    if (t->ndim == 0) return ct_reshape(t, CT_SHAPE(1));
    if (s == e) return ct_ret(ct_retain(t)); /* PyTorch returns the input itself */
    ct_shape shape = {.ndim = 0};
    for (int d = 0; d < t->ndim; d++) {
        if (d <= s || d > e) shape.d[shape.ndim++] = t->sizes[d];
        else shape.d[shape.ndim - 1] *= t->sizes[d];
    }
    return ct_reshape(t, shape);
}

ct_tensor *ct_unflatten(ct_tensor *t, int64_t dim, ct_shape sizes) {
    if (!ct_alive("ct_unflatten", 1, t)) return NULL;
    if (!t) return NULL;
    int d = ct_wrap_dim("ct_unflatten", dim, t->ndim);
    if (d < 0) return NULL;
    if (sizes.ndim <= 0) {
        ct_error("ct_unflatten: sizes must be non-empty");
        return NULL;
    }
    int64_t n = t->ndim ? t->sizes[d] : 1, known = 1;
    int infer = 0;
    bool overflow = false;
    for (int i = 0; i < sizes.ndim; i++) {
        if (sizes.d[i] == -1) infer++;
        else overflow |= __builtin_mul_overflow(known, sizes.d[i], &known);
    }
    if (overflow || infer > 1 || (infer ? known == 0 || n % known : known != n)) {
        char buf[CT_SHAPE_STR_MAX];
        ct_error("ct_unflatten: Provided sizes %s don't multiply up to the size of dim %d (%lld) "
                 "in the input tensor", ct_shape_str(sizes.ndim, sizes.d, buf), d, (long long)n);
        return NULL;
    }
    int nd = t->ndim - (t->ndim ? 1 : 0) + sizes.ndim;
    if (nd > CT_MAX_DIMS) {
        ct_error("ct_unflatten: tensors have at most %d dims (got %d)", CT_MAX_DIMS, nd);
        return NULL;
    }
    ct_shape shape = {.ndim = 0};
    for (int i = 0; i < d; i++) shape.d[shape.ndim++] = t->sizes[i];
    for (int i = 0; i < sizes.ndim; i++) shape.d[shape.ndim++] = sizes.d[i];
    for (int i = d + 1; i < t->ndim; i++) shape.d[shape.ndim++] = t->sizes[i];
    return ct_view(t, shape);
}

/* ---- as_strided ---------------------------------------------------------------- */

/* One past the last storage element the geometry reaches (its offset when empty);
 * false when that overflows int64 (only a user's as_strided geometry can). */
static bool geom_end_checked(const ct_geom *g, int64_t *end) {
    bool overflow = __builtin_add_overflow(g->offset, 1, end);
    for (int i = 0; i < g->ndim; i++) {
        if (g->sizes[i] == 0) {
            *end = g->offset;
            return true;
        }
        int64_t span;
        overflow |= __builtin_mul_overflow(g->sizes[i] - 1, g->strides[i], &span) ||
                    __builtin_add_overflow(*end, span, end);
    }
    return !overflow;
}

static int64_t geom_end(const ct_geom *g) {
    int64_t end;
    CT_ASSERT(geom_end_checked(g, &end));
    return end;
}

ct_tensor *ct_as_strided(ct_tensor *t, ct_shape size, ct_shape stride, int64_t storage_offset) {
    if (!ct_alive("ct_as_strided", 1, t)) return NULL;
    if (!t) return NULL;
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    if (size.ndim != stride.ndim) {
        ct_error("ct_as_strided: mismatch in length of strides and shape (%d and %d)",
                 stride.ndim, size.ndim);
        return NULL;
    }
    if (size.ndim < 0 || size.ndim > CT_MAX_DIMS) {
        ct_error("ct_as_strided: tensors have at most %d dims (got %d)", CT_MAX_DIMS, size.ndim);
        return NULL;
    }
    for (int i = 0; i < size.ndim; i++) {
        if (stride.d[i] < 0) {
            ct_error("ct_as_strided: Negative strides are not supported at the moment, got "
                     "strides: %s", ct_shape_str(stride.ndim, stride.d, a));
            return NULL;
        }
        if (size.d[i] < 0) {
            ct_error("ct_as_strided: Trying to create tensor with negative dimension %lld: %s",
                     (long long)size.d[i], ct_shape_str(size.ndim, size.d, a));
            return NULL;
        }
    }
    if (!ct_check_shape("ct_as_strided", size.ndim, size.d)) return NULL;
    ct_geom y = {.ndim = size.ndim, .offset = storage_offset < 0 ? t->offset : storage_offset};
    memcpy(y.sizes, size.d, sizeof(int64_t) * (size_t)size.ndim);
    memcpy(y.strides, stride.d, sizeof(int64_t) * (size_t)size.ndim);
    size_t es = ct_dtype_size(t->dtype);
    int64_t need, need_bytes;
    if (!geom_end_checked(&y, &need) || __builtin_mul_overflow(need, (int64_t)es, &need_bytes)) {
        ct_error("ct_as_strided: setStorage: sizes %s, strides %s and storage offset %lld: the "
                 "storage size calculation overflowed", ct_shape_str(size.ndim, size.d, a),
                 ct_shape_str(stride.ndim, stride.d, b), (long long)y.offset);
        return NULL;
    }
    if (ct_shape_numel(y.ndim, y.sizes) > 0 && (size_t)need_bytes > t->storage->nbytes) {
        ct_error("ct_as_strided: setStorage: sizes %s, strides %s, storage offset %lld, and "
                 "itemsize %zu requiring a storage size of %lld are out of bounds for storage "
                 "of size %zu", ct_shape_str(size.ndim, size.d, a),
                 ct_shape_str(stride.ndim, stride.d, b), (long long)y.offset, es,
                 (long long)need * (long long)es, t->storage->nbytes);
        return NULL;
    }
    ct_node *n = NULL;
    ct_tensor *out = view_geom(CT_OP_as_strided, t, &y, &n);
    if (n) {
        ct_geom *gs = copy_extra(n, (ct_geom[2]){geom_of(t), y}, 2 * sizeof(ct_geom));
        (void)gs;
    }
    if (out)
        CT_TRACE_ATTRS(CT_OP_as_strided, 1, &t, 1, &out,
                       &(ct_as_strided_attrs){ct_attr_dims(size.ndim, size.d),
                                              ct_attr_dims(stride.ndim, stride.d),
                                              CT_ATTR_SOME(y.offset)});
    return ct_ret(out);
}

/* The gradient lives on the storage: scatter it into a buffer spanning both the
 * input's and the output's elements, then read the input's geometry back out.
 * (An input whose own elements overlap, as after expand, gets each storage element's
 * gradient in every place; PyTorch divides it among them instead.) */
bool as_strided_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    const ct_geom *x = n->extra, *y = x + 1;
    int64_t lo = x->offset < y->offset ? x->offset : y->offset;
    int64_t ex = geom_end(x), ey = geom_end(y);
    int64_t len = (ex > ey ? ex : ey) - lo;
    ct_geom ys = *y;
    ys.offset -= lo;
    ct_tensor *buf = ct_strided_scatter(go[0], 1, &len, &ys);
    if (!buf) return false;
    ct_shape xs = {.ndim = x->ndim}, xt = {.ndim = x->ndim};
    memcpy(xs.d, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
    memcpy(xt.d, x->strides, sizeof(int64_t) * (size_t)x->ndim);
    return (gi[0] = ct_as_strided(buf, xs, xt, buf->offset + x->offset - lo)) != NULL;
}

/* ---- strided_scatter ----------------------------------------------------------- */

/* Whether two elements of the geometry share a storage element. */
static bool geom_overlaps(const ct_geom *g) {
    int idx[CT_MAX_DIMS], n = 0;
    for (int i = 0; i < g->ndim; i++) {
        if (g->sizes[i] == 0) return false;
        if (g->sizes[i] > 1) idx[n++] = i;
    }
    for (int i = 1; i < n; i++) /* by stride, ascending */
        for (int j = i; j > 0 && g->strides[idx[j]] < g->strides[idx[j - 1]]; j--) {
            int tmp = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = tmp;
        }
    int64_t reach = 0; /* largest offset reached by the dims so far */
    for (int i = 0; i < n; i++) {
        int64_t s = g->strides[idx[i]];
        if (s <= reach) return true;
        reach += (g->sizes[idx[i]] - 1) * s;
    }
    return false;
}

/* out[view] += src element by element, for a view that overlaps itself. */
static void scatter_add_overlapping(ct_tensor *out, const ct_tensor *src, const ct_geom *g) {
    if (!ct_has_values(out)) return; /* meta: no data */
    const char *op = ct_ops[CT_OP_strided_scatter].fn;
    ct_host_buf vb, ob;
    const double *v = ct_host_read(op, src, CT_F64, &vb);
    char *base = v ? ct_host_write(op, out, &ob) : NULL; /* out: contiguous */
    if (!base) {
        ct_host_release(&vb);
        ct_error_fail_result("%s: out of memory", op);
        return;
    }
    size_t es = ct_dtype_size(out->dtype);
    memset(base, 0, (size_t)out->numel * es);
    for (int64_t k = 0; k < src->numel; k++) {
        int64_t rem = k, off = g->offset;
        for (int d = g->ndim - 1; d >= 0; d--) {
            off += (rem % g->sizes[d]) * g->strides[d];
            rem /= g->sizes[d];
        }
        char *p = base + (size_t)off * es;
        ct_store_f64(p, out->dtype, ct_load_f64(p, out->dtype) + v[k]);
    }
    ct_host_release(&ob);
    ct_host_release(&vb);
}

ct_tensor *ct_strided_scatter(ct_tensor *src, int ndim, const int64_t *sizes, const ct_geom *g) {
    if (!src) return NULL;
    ct_shape s = {.ndim = ndim};
    memcpy(s.d, sizes, sizeof(int64_t) * (size_t)ndim);
    ct_copy_kernel k = ct_kernel_copy_for(CT_OP_strided_scatter, src->storage->device,
                                                     src->dtype);
    const char *op = ct_ops[CT_OP_strided_scatter].fn;
    ct_tensor *out = k ? ct_tensor_new(op, s, src->dtype, src->storage->device) : NULL;
    if (!out) return NULL;
    ct_fill_raw(out, 0);
    ct_tensor *view = ct_tensor_view_of(out, g->ndim, g->sizes, g->strides, g->offset);
    if (!view) {
        ct_release(out);
        return NULL;
    }
    if (geom_overlaps(g))
        scatter_add_overlapping(out, src, g);
    else
        k(view, src);
    ct_release(view);
    ct_node *n = ct_record1(CT_OP_strided_scatter, out, 1, &src);
    if (n) copy_extra(n, g, sizeof *g);
    /* zeros of `sizes` with src scattered in: self is the (unmaterialised) zeros, None */
    CT_TRACE_ATTRS(CT_OP_strided_scatter, 2, ((ct_tensor *[]){NULL, src}), 1, &out,
                   &(ct_strided_scatter_attrs){ct_attr_dims(g->ndim, g->sizes),
                                               ct_attr_dims(g->ndim, g->strides),
                                               CT_ATTR_SOME(g->offset)});
    return ct_ret(out);
}

bool strided_scatter_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    const ct_geom *g = n->extra;
    ct_shape size = {.ndim = g->ndim}, stride = {.ndim = g->ndim};
    memcpy(size.d, g->sizes, sizeof(int64_t) * (size_t)g->ndim);
    memcpy(stride.d, g->strides, sizeof(int64_t) * (size_t)g->ndim);
    ct_tensor *c = ct_contiguous(go[0]);
    return c && (gi[0] = ct_as_strided(c, size, stride, c->offset + g->offset)) != NULL;
}
