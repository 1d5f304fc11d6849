/* Mask ops: masked_fill (scalar and 0-d tensor value, out of place and in place) and
 * masked_select, forward and backward. */
#include <stdlib.h>
#include <string.h>

#include "autograd/node.h"
#include "core/iter.h"
#include "ops/host.h"
#include "ops/host_index.h"
#include "ops/index_util.h"
#include "ops/pointwise.h"
#include "ops/trace.h"
#include "core/mem.h"

/* Saved tensor: the mask. */
enum { SV_MASK };

/* Checks mask (device, dtype with PyTorch's message for masked_fill or
 * masked_select) and the shape t and mask broadcast to; false with the error set. */
static bool check_mask(const char *op, const ct_tensor *t, const ct_tensor *mask, bool fill,
                       int *nd, int64_t *shape) {
    if (!ct_check_same_device(op, t, mask)) return false;
    if (mask->dtype != CT_BOOL && mask->dtype != CT_U8) {
        if (fill)
            ct_error("%s: masked_fill_ only supports boolean masks, but got mask with dtype %s",
                     op, ct_dtype_name(mask->dtype));
        else
            ct_error("%s: masked_select: expected BoolTensor or ByteTensor for mask (got %s)", op,
                     ct_dtype_name(mask->dtype));
        return false;
    }
    if (ct_broadcast_shapes(t->ndim, t->sizes, mask->ndim, mask->sizes, nd, shape)) return true;
    char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
    ct_error("%s: shapes %s and %s of self and mask cannot be broadcast together", op,
             ct_shape_str(t->ndim, t->sizes, sa), ct_shape_str(mask->ndim, mask->sizes, sb));
    return false;
}

static ct_tensor *masked_fill_impl(const char *op, ct_tensor *t, ct_tensor *mask,
                                   ct_tensor *value_t, double value, bool inplace) {
    if (!t || !mask) return NULL;
    int nd;
    int64_t shape[CT_MAX_DIMS];
    if (!check_mask(op, t, mask, true, &nd, shape))
        return NULL;
    if (value_t) {
        /* A 0-d cpu value goes with t on any device (a cpu scalar); others must be on t's. */
        if (!(value_t->ndim == 0 && value_t->storage->device.type == CT_DEV_CPU) &&
            !ct_check_same_device(op, t, value_t))
            return NULL;
        if (value_t->ndim != 0) {
            ct_error("%s: masked_fill_ only supports a 0-dimensional value tensor, but got "
                     "tensor with %d dimension(s).", op, value_t->ndim);
            return NULL;
        }
        value = ct_has_values(value_t) ? ct_item(value_t) : 0; /* meta: no value */
    }
    if (inplace && !ct_check_inplace_of(op, t, value_t ? 1 : 0, &value_t)) return NULL;
    if (inplace && (nd != t->ndim || memcmp(shape, t->sizes, sizeof(int64_t) * (size_t)nd))) {
        char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
        ct_error("%s: mask of shape %s cannot be broadcast to self of shape %s (an in-place "
                 "op cannot change self's shape)", op, ct_shape_str(mask->ndim, mask->sizes, sa),
                 ct_shape_str(t->ndim, t->sizes, sb));
        return NULL;
    }
    ct_loop_fn k = ct_kernel_loop_for(CT_OP_masked_fill, t->storage->device, t->dtype);
    if (!k) return NULL;
    ct_scatter_args a = {0};
    if (value_t && !ct_dtype_is_floating(value_t->dtype) && ct_has_values(value_t))
        ct_store_i64(a.value, t->dtype, ct_item_int(value_t)); /* exact for large ints */
    else
        ct_store_f64(a.value, t->dtype, value);
    ct_tensor *out = t;
    if (!inplace) {
        ct_shape s = {.ndim = nd};
        memcpy(s.d, shape, sizeof(int64_t) * (size_t)nd);
        if (!(out = ct_tensor_new(op, s, t->dtype, t->storage->device))) return NULL;
    }
    ct_tensor *ops[3] = {out, t, mask};
    ct_iter it;
    ct_iter_init(&it, 3, ops, nd, shape);
    ct_iter_run(&it, k, &a);
    if (inplace) ct_bump_version(t);
    ct_op_id opid = value_t ? CT_OP_masked_fill_tensor : CT_OP_masked_fill;
    ct_tensor *in[3] = {t, NULL, value_t};
    ct_node *n = ct_node_record(opid, value_t ? 3 : 2, in, 1);
    if (n) {
        ct_node_save(n, SV_MASK, mask, false);
        if (inplace) ct_rebase_history(n, out);
        else ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    if (value_t)
        CT_TRACE(opid, 3, ((ct_tensor *[]){t, mask, value_t}), 1, &out);
    else
        CT_TRACE_ATTRS(opid, 2, ((ct_tensor *[]){t, mask}), 1, &out,
                       &(ct_masked_fill_attrs){value});
    return ct_ret(inplace ? ct_retain(t) : out);
}

ct_tensor *ct_masked_fill(ct_tensor *t, ct_tensor *mask, double value) {
    if (!ct_alive("ct_masked_fill", 1, t) || !ct_alive("ct_masked_fill", 2, mask)) return NULL;
    return masked_fill_impl("ct_masked_fill", t, mask, NULL, value, false);
}
ct_tensor *ct_masked_fill_tensor(ct_tensor *t, ct_tensor *mask, ct_tensor *value) {
    if (!ct_alive("ct_masked_fill_tensor", 1, t) || !ct_alive("ct_masked_fill_tensor", 2, mask) ||
        !ct_alive("ct_masked_fill_tensor", 3, value))
        return NULL;
    if (!value) return NULL;
    return masked_fill_impl("ct_masked_fill_tensor", t, mask, value, 0, false);
}
ct_tensor *ct_masked_fill_(ct_tensor *t, ct_tensor *mask, double value) {
    if (!ct_alive("ct_masked_fill_", 1, t) || !ct_alive("ct_masked_fill_", 2, mask)) return NULL;
    return masked_fill_impl("ct_masked_fill_", t, mask, NULL, value, true);
}
ct_tensor *ct_masked_fill_tensor_(ct_tensor *t, ct_tensor *mask, ct_tensor *value) {
    if (!ct_alive("ct_masked_fill_tensor_", 1, t) || !ct_alive("ct_masked_fill_tensor_", 2, mask) ||
        !ct_alive("ct_masked_fill_tensor_", 3, value))
        return NULL;
    if (!value) return NULL;
    return masked_fill_impl("ct_masked_fill_tensor_", t, mask, value, 0, true);
}

/* MaskedFillBackward0: the filled positions get no gradient. */
bool masked_fill_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *mask = ct_node_saved(n, SV_MASK);
    return mask && (gi[0] = ct_masked_fill(go[0], mask, 0)) != NULL;
}

/* MaskedFillBackward1: as above; the value gets the sum of the filled positions'
 * gradient (summed in place, not gathered by masked_select: the meta device can run it). */
bool masked_fill_tensor_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *mask = ct_node_saved(n, SV_MASK);
    if (!mask) return false;
    if (n->needs_grad[0] && !(gi[0] = ct_masked_fill(go[0], mask, 0))) return false;
    if (n->needs_grad[2] && !(gi[2] = ct_sum(ct_masked_fill(go[0], ct_logical_not(mask), 0)))) return false;
    return true;
}

ct_tensor *ct_masked_select(ct_tensor *t, ct_tensor *mask) {
    if (!ct_alive("ct_masked_select", 1, t) || !ct_alive("ct_masked_select", 2, mask)) return NULL;
    static const char *op = "ct_masked_select";
    if (!t || !mask) return NULL;
    int nd;
    int64_t shape[CT_MAX_DIMS];
    if (!check_mask(op, t, mask, false, &nd, shape)) return NULL;
    ct_tensor *m = ct_index_broadcast_copy(op, mask, nd, shape, NULL, CT_BOOL);
    ct_tensor *x = m ? ct_index_broadcast_copy(op, t, nd, shape, NULL, t->dtype) : NULL;
    ct_tensor *out = NULL;
    ct_host_buf mb = {0}, xb = {0}, ob;
    const uint8_t *mv = x ? ct_host_read(op, m, CT_BOOL, &mb) : NULL; /* meta: no values */
    const char *xv = mv ? ct_host_read(op, x, CT_DTYPE_UNSET, &xb) : NULL;
    if (xv) {
        int64_t count = ct_host_count_true(mv, m->numel);
        out = ct_tensor_new(op, CT_SHAPE(count), t->dtype, t->storage->device);
        char *o = out ? ct_host_write(op, out, &ob) : NULL;
        if (o) {
            ct_host_masked_compact(o, xv, mv, m->numel, ct_dtype_size(t->dtype));
            ct_host_release(&ob);
        } else {
            ct_release(out);
            out = NULL;
        }
        ct_host_release(&xb);
    }
    ct_host_release(&mb);
    ct_release(m);
    ct_release(x);
    if (!out) return NULL;
    ct_tensor *in[2] = {t, NULL};
    ct_node *n = ct_record1(CT_OP_masked_select, out, 2, in);
    if (n) {
        ct_node_save(n, SV_MASK, mask, false);
        ct_shape *s = ct_malloc(sizeof *s); /* the broadcast shape, for the backward */
        if (s) {
            s->ndim = nd;
            memcpy(s->d, shape, sizeof(int64_t) * (size_t)nd);
            n->extra = s;
            n->extra_free = free;
        } else {
            ct_error_fail_result("ct_masked_select: out of memory recording the graph");
        }
    }
    CT_TRACE(CT_OP_masked_select, 2, ((ct_tensor *[]){t, mask}), 1, &out);
    return ct_ret(out);
}

/* MaskedSelectBackward0: grad put back at the mask's positions of zeros shaped like
 * the broadcast (the engine sums that down to self's shape). */
bool masked_select_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *mask = ct_node_saved(n, SV_MASK);
    if (!mask) return false;
    ct_shape s = *(const ct_shape *)n->extra;
    ct_tensor *full = ct_expand(mask, s);
    ct_tensor *z = ct_zeros(s, .dtype = go[0]->dtype, .device = go[0]->storage->device);
    return (gi[0] = ct_index_put_(z, 1, &full, go[0], false)) != NULL;
}
