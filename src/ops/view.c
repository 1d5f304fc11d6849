/* View ops: new geometry over the same storage, and their backward formulas. */
#include <string.h>

#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/shape_internal.h"
#include "ops/trace.h"

ct_tensor *ct_view_make(ct_op_id op, ct_tensor *t, int ndim, const int64_t *sizes,
                            const int64_t *strides, int64_t offset, ct_node **node) {
    ct_tensor *out = ct_tensor_view_of(t, ndim, sizes, strides, offset);
    if (!out) return NULL;
    ct_view_mark(out, t, CT_VIEW_DEFAULT);
    ct_node *n = ct_record1(op, out, 1, &t);
    if (node) *node = n;
    /* view and expand report their size here; the other view ops where their
     * attributes are known */
    if (op == CT_OP_view)
        CT_TRACE_ATTRS(op, 1, &t, 1, &out, &(ct_view_attrs){ct_attr_dims(ndim, sizes)});
    else if (op == CT_OP_expand)
        CT_TRACE_ATTRS(op, 1, &t, 1, &out, &(ct_expand_attrs){ct_attr_dims(ndim, sizes), false});
    return out;
}

/* Resolves one -1 and checks the element count. */
static bool infer_shape(const char *op, ct_shape *shape, int64_t numel) {
    int infer = -1;
    int64_t known = 1; /* the product of the nonzero sizes given */
    bool zero = false, overflow = false;
    for (int i = 0; i < shape->ndim; i++) {
        int64_t s = shape->d[i];
        if (s == -1) {
            if (infer >= 0) {
                ct_error("%s: only one dimension can be inferred", op);
                return false;
            }
            infer = i;
        } else if (s < 0) {
            ct_error("%s: invalid shape dimension %lld", op, (long long)s);
            return false;
        } else if (s == 0) {
            zero = true;
        } else {
            overflow |= __builtin_mul_overflow(known, s, &known);
        }
    }
    if (overflow) { /* ct_check_shape words the error: the -1 counts as 1 */
        ct_shape given = *shape;
        if (infer >= 0) given.d[infer] = 1;
        return ct_check_shape(op, given.ndim, given.d);
    }
    if (zero) known = 0;
    if (infer >= 0 && known != 0 && numel % known == 0) shape->d[infer] = numel / known;
    if ((infer >= 0 && (known == 0 || numel % known)) || ct_shape_numel(shape->ndim, shape->d) != numel) {
        char buf[CT_SHAPE_STR_MAX];
        ct_error("%s: shape '%s' is invalid for input of size %lld", op,
                 ct_shape_str(shape->ndim, shape->d, buf), (long long)numel);
        return false;
    }
    return true;
}

/* Strides for viewing t with shape, or false when the memory layout forbids it
 * (a dim that would span two non-adjacent chunks). */
static bool view_strides(const ct_tensor *t, const ct_shape *shape, int64_t *strides) {
    if (t->numel == 0 || t->ndim == 0) {
        ct_contiguous_strides(shape->ndim, shape->d, strides);
        return true;
    }
    int view_d = shape->ndim - 1;
    int64_t chunk_base = t->strides[t->ndim - 1], tensor_numel = 1, view_numel = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        tensor_numel *= t->sizes[d];
        if (d == 0 || (t->sizes[d - 1] != 1 && t->strides[d - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape->d[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base;
                view_numel *= shape->d[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (d > 0) {
                chunk_base = t->strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

ct_tensor *ct_view(ct_tensor *t, ct_shape shape) {
    if (!ct_alive("ct_view", 1, t)) return NULL;
    if (!t || !infer_shape("ct_view", &shape, t->numel)) return NULL;
    int64_t strides[CT_MAX_DIMS];
    if (!view_strides(t, &shape, strides)) {
        ct_error("ct_view: view size is not compatible with input tensor's size and stride (at "
                 "least one dimension spans across two contiguous subspaces). Use ct_reshape "
                 "instead.");
        return NULL;
    }
    return ct_ret(ct_view_make(CT_OP_view, t, shape.ndim, shape.d, strides, t->offset, NULL));
}

ct_tensor *ct_reshape(ct_tensor *t, ct_shape shape) {
    if (!ct_alive("ct_reshape", 1, t)) return NULL;
    if (!t || !infer_shape("ct_reshape", &shape, t->numel)) return NULL;
    int64_t strides[CT_MAX_DIMS];
    if (view_strides(t, &shape, strides))
        return ct_ret(ct_view_make(CT_OP_view, t, shape.ndim, shape.d, strides, t->offset, NULL));
    ct_tensor *out = NULL;
    CT_SCOPE { out = ct_keep(ct_view(ct_contiguous(t), shape)); }
    return out;
}

bool view_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_shape s = {.ndim = n->in_meta[0].ndim};
    memcpy(s.d, n->in_meta[0].sizes, sizeof(int64_t) * (size_t)s.ndim);
    return (gi[0] = ct_reshape(go[0], s)) != NULL;
}

ct_tensor *ct_expand(ct_tensor *t, ct_shape shape) {
    if (!ct_alive("ct_expand", 1, t)) return NULL;
    if (!t) return NULL;
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    if (shape.ndim < t->ndim) {
        ct_error("ct_expand: the number of sizes provided (%d) must be greater or equal to the "
                 "number of dimensions in the tensor (%d)", shape.ndim, t->ndim);
        return NULL;
    }
    int64_t strides[CT_MAX_DIMS];
    int lead = shape.ndim - t->ndim;
    for (int i = shape.ndim - 1; i >= 0; i--) {
        int td = i - lead;
        int64_t want = shape.d[i];
        if (td < 0) {
            if (want < 0) {
                ct_error("ct_expand: the expanded size of the tensor (%lld) isn't allowed in a "
                         "leading, non-existing dimension %d", (long long)want, i);
                return NULL;
            }
            strides[i] = 0;
            continue;
        }
        if (want == -1) want = shape.d[i] = t->sizes[td];
        if (t->sizes[td] == want) {
            strides[i] = t->strides[td];
        } else if (t->sizes[td] == 1 && want >= 0) {
            strides[i] = 0;
        } else {
            ct_error("ct_expand: The expanded size of the tensor (%lld) must match the existing "
                     "size (%lld) at non-singleton dimension %d.  Target sizes: %s.  Tensor "
                     "sizes: %s", (long long)want, (long long)t->sizes[td], i,
                     ct_shape_str(shape.ndim, shape.d, a), ct_shape_str(t->ndim, t->sizes, b));
            return NULL;
        }
    }
    /* [2^32, 2^32] is 2^64 elements: no int64 numel, refused as PyTorch does */
    if (!ct_check_shape("ct_expand", shape.ndim, shape.d)) return NULL;
    return ct_ret(ct_view_make(CT_OP_expand, t, shape.ndim, shape.d, strides, t->offset, NULL));
}

ct_tensor *ct_expand_as(ct_tensor *t, ct_tensor *other) {
    if (!ct_alive("ct_expand_as", 1, t) || !ct_alive("ct_expand_as", 2, other)) return NULL;
    if (!t || !other) return NULL;
    return ct_expand(t, ct_shape_of(other));
}

/* The engine sums the gradient back down to the input's shape. */
bool expand_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    gi[0] = go[0];
    return true;
}

ct_tensor *ct_transpose(ct_tensor *t, int64_t dim0, int64_t dim1) {
    if (!ct_alive("ct_transpose", 1, t)) return NULL;
    if (!t) return NULL;
    int d0 = ct_wrap_dim("ct_transpose", dim0, t->ndim);
    int d1 = d0 < 0 ? -1 : ct_wrap_dim("ct_transpose", dim1, t->ndim);
    if (d1 < 0) return NULL;
    int64_t sizes[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    memcpy(sizes, t->sizes, sizeof sizes);
    memcpy(strides, t->strides, sizeof strides);
    if (t->ndim > 0) {
        sizes[d0] = t->sizes[d1];
        sizes[d1] = t->sizes[d0];
        strides[d0] = t->strides[d1];
        strides[d1] = t->strides[d0];
    }
    ct_node *n = NULL;
    ct_tensor *out = ct_view_make(CT_OP_transpose, t, t->ndim, sizes, strides, t->offset, &n);
    ct_transpose_attrs a = {dim0, dim1};
    if (n) n->attrs.transpose = a;
    if (out) CT_TRACE_ATTRS(CT_OP_transpose, 1, &t, 1, &out, &a);
    return ct_ret(out);
}

ct_tensor *ct_t(ct_tensor *t) {
    if (!ct_alive("ct_t", 1, t)) return NULL;
    if (!t) return NULL;
    if (t->ndim > 2) {
        ct_error("ct_t: expects a tensor with <= 2 dimensions, but self is %dD", t->ndim);
        return NULL;
    }
    return t->ndim < 2 ? ct_transpose(t, 0, 0) : ct_transpose(t, 0, 1);
}

bool transpose_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_transpose(go[0], n->attrs.transpose.dim0, n->attrs.transpose.dim1)) != NULL;
}

ct_tensor *ct_permute(ct_tensor *t, ct_dims dims) {
    if (!ct_alive("ct_permute", 1, t)) return NULL;
    if (!t) return NULL;
    if (dims.n != t->ndim) {
        ct_error("ct_permute: number of dims don't match in permute (got %d dims for a %dD "
                 "tensor)", dims.n, t->ndim);
        return NULL;
    }
    int64_t sizes[CT_MAX_DIMS] = {0}, strides[CT_MAX_DIMS] = {0};
    bool seen[CT_MAX_DIMS] = {0};
    for (int i = 0; i < dims.n; i++) {
        int d = ct_wrap_dim("ct_permute", dims.d[i], t->ndim);
        if (d < 0) return NULL;
        if (seen[d]) {
            ct_error("ct_permute: repeated dim %d in permute", d);
            return NULL;
        }
        seen[d] = true;
        sizes[i] = t->sizes[d];
        strides[i] = t->strides[d];
    }
    ct_node *n = NULL;
    ct_tensor *out = ct_view_make(CT_OP_permute, t, t->ndim, sizes, strides, t->offset, &n);
    if (n) n->attrs.permute.dims = dims;
    if (out) CT_TRACE_ATTRS(CT_OP_permute, 1, &t, 1, &out, &(ct_permute_attrs){dims});
    return ct_ret(out);
}

bool permute_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    int nd = n->in_meta[0].ndim;
    ct_dims inv = {.n = nd};
    const ct_dims *perm = &n->attrs.permute.dims; /* as given: wrapped here */
    for (int i = 0; i < nd; i++) inv.d[perm->d[i] < 0 ? perm->d[i] + nd : perm->d[i]] = i;
    return (gi[0] = ct_permute(go[0], inv)) != NULL;
}
