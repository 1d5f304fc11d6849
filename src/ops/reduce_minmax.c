/* amax, amin, max/min over all elements or along a dim (values and indices),
 * argmax, argmin. */
#include <string.h>

#include "autograd/node.h"
#include "kernels/reduce.h"
#include "kernels/reduce_mask.h"
#include "ops/reduce_plan.h"
#include "ops/trace.h"

/* Saved tensors: amax's and amin's input and result; max_dim's and min_dim's indices. */
enum { SV_SELF, SV_RESULT };
enum { SV_INDICES = 0 };

/* A max/min over an empty dim has no value: PyTorch refuses it. */
static bool check_nonempty(const char *name, const char *torch, const ct_tensor *t,
                           const ct_reduce_plan *p, bool dims_given) {
    if (t->numel != 0 || p->R != 0) return true;
    if (!dims_given) {
        ct_error("%s: %s(): Expected reduction dim to be specified for input.numel() == 0. "
                 "Specify the reduction dim with the 'dim' argument.", name, torch);
        return false;
    }
    for (int d = 0; d < t->ndim; d++)
        if (p->reduced[d] && t->sizes[d] == 0) {
            ct_error("%s: %s(): Expected reduction dim %d to have non-zero size.", name, torch, d);
            return false;
        }
    return true;
}

/* amax/amin (op_kernel) recorded as op: the value of the extreme, any dims. */
static ct_tensor *extreme(ct_op_id op, ct_op_id kop, const char *name, const char *torch,
                          ct_tensor *t, ct_reduce_options o) {
    if (!t) return NULL;
    ct_reduce_plan p;
    if (!ct_reduce_plan_make(name, t, o.dims, o.keepdim, &p)) return NULL;
    if (!check_nonempty(name, torch, t, &p, o.dims.n > 0)) return NULL;
    ct_dtype k = ct_compute_dtype_for(kop, t->storage->device, t->dtype);
    ct_tensor *out = ct_reduce_run(kop, t, &p, k, k, t->dtype, NULL);
    if (!out) return NULL;
    ct_node *n = ct_dtype_is_floating(t->dtype) ? ct_reduce_record(op, out, t, &p, o.keepdim)
                                                : NULL;
    if (n) {
        ct_node_save(n, SV_SELF, t, false);
        ct_node_save(n, SV_RESULT, out, true);
    }
    if (op == CT_OP_amax || op == CT_OP_amin) /* alike */
        CT_TRACE_ATTRS(op, 1, &t, 1, &out, &(ct_amax_attrs){o.dims, o.keepdim});
    else
        CT_TRACE(op, 1, &t, 1, &out);
    return ct_ret(out);
}

ct_tensor *ct_amax_with(ct_tensor *t, ct_reduce_options o) {
    if (!ct_alive("ct_amax", 1, t)) return NULL;
    return extreme(CT_OP_amax, CT_OP_amax, "ct_amax", "amax", t, o);
}
ct_tensor *ct_amin_with(ct_tensor *t, ct_reduce_options o) {
    if (!ct_alive("ct_amin", 1, t)) return NULL;
    return extreme(CT_OP_amin, CT_OP_amin, "ct_amin", "amin", t, o);
}
ct_tensor *(ct_max)(ct_tensor *t) {
    if (!ct_alive("ct_max", 1, t)) return NULL;
    return extreme(CT_OP_max, CT_OP_amax, "ct_max", "max", t, (ct_reduce_options){0});
}
ct_tensor *(ct_min)(ct_tensor *t) {
    if (!ct_alive("ct_min", 1, t)) return NULL;
    return extreme(CT_OP_min, CT_OP_amin, "ct_min", "min", t, (ct_reduce_options){0});
}

/* The gradient is split evenly among the elements equal to the extreme. */
static bool extreme_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = ct_node_saved(n, SV_SELF), *y = ct_node_saved(n, SV_RESULT);
    if (!x || !y) return false;
    ct_tensor *mask = ct_reduce_mask(x, ct_reduce_kept(y, n), CT_MASK_EQ);
    ct_tensor *count = ct_sum_with(mask, (ct_reduce_options){.dims = ct_reduce_dims_of(n),
                                                             .keepdim = true});
    gi[0] = ct_div(ct_mul(ct_reduce_kept(go[0], n), mask), count);
    return gi[0] != NULL;
}
bool amax_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return extreme_backward(n, go, gi); }
bool amin_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return extreme_backward(n, go, gi); }
bool max_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return extreme_backward(n, go, gi); }
bool min_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return extreme_backward(n, go, gi); }

/* Values (when want_values) and int64 indices of the first extreme over the plan's
 * dims; unregistered results. */
static bool arg_extreme(ct_op_id kop, ct_tensor *t, const ct_reduce_plan *p, bool want_values,
                        ct_tensor **values, ct_tensor **indices) {
    ct_dtype k = ct_compute_dtype_for(kop, t->storage->device, t->dtype);
    ct_argreduce_fn fn = ct_kernel_argreduce_for(kop, t->storage->device, k);
    if (!fn) return false;
    int64_t M1 = 0, M2 = 0;
    ct_tensor *x = ct_reduce_block(ct_ops[kop].fn, t, p, k, &M1, &M2);
    if (!x) return false;
    ct_shape s = ct_reduce_out_shape(p);
    ct_tensor *v = want_values ? ct_tensor_new(ct_ops[kop].fn, s, k, t->storage->device) : NULL;
    ct_tensor *i = ct_tensor_new(ct_ops[kop].fn, s, CT_I64, t->storage->device);
    bool ok = i && (v || !want_values);
    if (ok && p->M > 0)
        fn(ct_tensor_data(x), v ? ct_tensor_data(v) : NULL, (int64_t *)ct_tensor_data(i), M1,
           p->R, M2);
    ct_release(x);
    if (ok && v) ok = (v = ct_cast_result(ct_ops[kop].fn, v, t->dtype)) != NULL;
    if (!ok) {
        ct_release(v);
        ct_release(i);
        return false;
    }
    *indices = i;
    if (values) *values = v;
    return true;
}

static ct_values_indices extreme_dim(ct_op_id op, ct_op_id kop, const char *name,
                                     const char *torch, ct_tensor *t, int64_t dim, bool keepdim) {
    ct_values_indices r = {0};
    if (!t) return r;
    ct_reduce_plan p;
    if (!ct_reduce_plan_make(name, t, (ct_dims){.n = 1, .d = {dim}}, keepdim, &p)) return r;
    if (!check_nonempty(name, torch, t, &p, true)) return r;
    ct_tensor *v, *i;
    if (!arg_extreme(kop, t, &p, true, &v, &i)) return r;
    ct_node *n = ct_dtype_is_floating(t->dtype) ? ct_reduce_record(op, v, t, &p, keepdim) : NULL;
    if (n) {
        ct_node_save(n, SV_INDICES, i, false);
        n->state.reduce.dim = (int)ct_wrap_dim(name, dim, t->ndim);
    }
    /* max_dim's and min_dim's attributes are alike */
    CT_TRACE_ATTRS(op, 1, &t, 2, ((ct_tensor *[]){v, i}), &(ct_max_dim_attrs){dim, keepdim});
    r.values = ct_ret(v);
    r.indices = ct_ret(i);
    return r;
}

ct_values_indices (ct_max_dim)(ct_tensor *t, int64_t dim, bool keepdim) {
    if (!ct_alive("ct_max_dim", 1, t)) return (ct_values_indices){0};
    return extreme_dim(CT_OP_max_dim, CT_OP_max_dim, "ct_max_dim", "max", t, dim, keepdim);
}
ct_values_indices (ct_min_dim)(ct_tensor *t, int64_t dim, bool keepdim) {
    if (!ct_alive("ct_min_dim", 1, t)) return (ct_values_indices){0};
    return extreme_dim(CT_OP_min_dim, CT_OP_min_dim, "ct_min_dim", "min", t, dim, keepdim);
}

/* The gradient goes to the selected index only: g times a one-hot mask along dim,
 * made by comparing [0, 1, ..., R-1] (shaped to dim) with the indices. */
static bool extreme_dim_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *idx = ct_node_saved(n, SV_INDICES);
    if (!idx) return false;
    const ct_input_meta *m = &n->in_meta[0];
    int dim = n->state.reduce.dim;
    int64_t R = m->ndim ? m->sizes[dim] : 1;
    ct_shape s = {.ndim = m->ndim};
    for (int d = 0; d < m->ndim; d++) s.d[d] = d == dim ? R : 1;
    ct_tensor *pos = ct_sub_scalar(
        ct_cumsum(ct_ones(s, .dtype = CT_F64, .device = go[0]->storage->device), dim), 1);
    ct_tensor *onehot = ct_reduce_mask(pos, ct_reduce_kept(idx, n), CT_MASK_EQ);
    gi[0] = ct_mul(ct_reduce_kept(go[0], n), onehot);
    return gi[0] != NULL;
}
bool max_dim_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return extreme_dim_backward(n, go, gi); }
bool min_dim_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return extreme_dim_backward(n, go, gi); }

static ct_tensor *argext(ct_op_id kop, const char *name, const char *torch, ct_tensor *t,
                         ct_reduce_options o) {
    if (!t) return NULL;
    if (o.dims.n > 1) {
        ct_error("%s: expected at most one dim (got %d)", name, o.dims.n);
        return NULL;
    }
    ct_reduce_plan p;
    if (!ct_reduce_plan_make(name, t, o.dims, o.keepdim, &p)) return NULL;
    if (!check_nonempty(name, torch, t, &p, o.dims.n > 0)) return NULL;
    ct_tensor *i;
    if (!arg_extreme(kop, t, &p, false, NULL, &i)) return NULL;
    /* No dim: the index into the flattened input (reduced dims in C order). */
    ct_argmax_attrs at = {{o.dims.n > 0, o.dims.d[0]}, o.keepdim}; /* argmin's are alike */
    CT_TRACE_ATTRS(kop == CT_OP_max_dim ? CT_OP_argmax : CT_OP_argmin, 1, &t, 1, &i, &at);
    return ct_ret(i);
}

ct_tensor *ct_argmax_with(ct_tensor *t, ct_reduce_options o) {
    if (!ct_alive("ct_argmax", 1, t)) return NULL;
    return argext(CT_OP_max_dim, "ct_argmax", "argmax", t, o);
}
ct_tensor *ct_argmin_with(ct_tensor *t, ct_reduce_options o) {
    if (!ct_alive("ct_argmin", 1, t)) return NULL;
    return argext(CT_OP_min_dim, "ct_argmin", "argmin", t, o);
}
