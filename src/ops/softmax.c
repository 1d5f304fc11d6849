/* softmax, log_softmax and their backward-data ops (themselves differentiable, so
 * double backward works), all by the fused kernel of cpu/softmax.c. */
#include <string.h>

#include "autograd/node.h"
#include "kernels/softmax.h"
#include "ops/reduce_plan.h"
#include "ops/trace.h"

/* Saved tensors: softmax's and log_softmax's result; their backwards' operands. */
enum { SV_RESULT = 0 };
enum { SV_GRAD = 0, SV_OUTPUT = 1 };

/* Runs kind along dim over x (and g); a new unregistered tensor of dtype out_dt. */
static ct_tensor *run(ct_softmax_kind kind, ct_tensor *x, ct_tensor *g, int dim, ct_dtype out_dt) {
    ct_dtype k = ct_compute_dtype_for(CT_OP_softmax, x->storage->device, out_dt);
    ct_softmax_fn fn = ct_kernel_softmax_for(CT_OP_softmax, x->storage->device, k);
    if (!fn) return NULL;
    const char *op = ct_ops[CT_OP_softmax].fn;
    int64_t M1 = 1, L = x->ndim ? x->sizes[dim] : 1, M2 = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (d < dim) M1 *= x->sizes[d];
        if (d > dim) M2 *= x->sizes[d];
    }
    ct_tensor *xc =
        x->dtype == k && ct_tensor_is_contiguous(x) ? ct_retain(x) : ct_cast_new(op, x, k);
    ct_tensor *gc = !g ? NULL
                    : g->dtype == k && ct_tensor_is_contiguous(g) ? ct_retain(g)
                                                                  : ct_cast_new(op, g, k);
    ct_tensor *out =
        xc && (gc || !g) ? ct_tensor_new(op, ct_shape_of(x), k, x->storage->device) : NULL;
    if (out) fn(kind, ct_tensor_data(xc), gc ? ct_tensor_data(gc) : NULL, ct_tensor_data(out),
                M1, L, M2);
    ct_release(xc);
    ct_release(gc);
    return ct_cast_result(op, out, out_dt);
}

static ct_tensor *forward(ct_op_id op, const char *name, ct_tensor *t, int64_t dim) {
    if (!t) return NULL;
    int d = ct_wrap_dim(name, dim, t->ndim);
    if (d < 0) return NULL;
    if (!ct_dtype_is_floating(t->dtype)) {
        /* PyTorch names the kernel that refused the dtype. */
        const char *kernel = d != t->ndim - 1 && t->ndim > 0 ? "softmax_kernel_impl"
                             : op == CT_OP_softmax           ? "softmax_lastdim_kernel_impl"
                                                             : "log_softmax_lastdim_kernel_impl";
        ct_error("%s: \"%s\" not implemented for '%s'", name, kernel,
                 ct_dtype_torch_name(t->dtype));
        return NULL;
    }
    ct_tensor *out = run(op == CT_OP_softmax ? CT_SOFTMAX : CT_LOG_SOFTMAX, t, NULL, d, t->dtype);
    if (!out) return NULL;
    ct_node *n = ct_record1(op, out, 1, &t);
    if (n) {
        n->state.dim = d;
        ct_node_save(n, SV_RESULT, out, true);
    }
    /* softmax's and log_softmax's attributes are alike, and so are their backwards' */
    CT_TRACE_ATTRS(op, 1, &t, 1, &out, &(ct_softmax_attrs){dim, CT_DTYPE_UNSET});
    return ct_ret(out);
}

ct_tensor *(ct_softmax)(ct_tensor *t, int64_t dim) {
    if (!ct_alive("ct_softmax", 1, t)) return NULL;
    return forward(CT_OP_softmax, "ct_softmax", t, dim);
}
ct_tensor *(ct_log_softmax)(ct_tensor *t, int64_t dim) {
    if (!ct_alive("ct_log_softmax", 1, t)) return NULL;
    return forward(CT_OP_log_softmax, "ct_log_softmax", t, dim);
}

/* softmax_backward_data(g, y) = y * (g - sum(g * y)); log_softmax's: g - exp(y) sum(g). */
static ct_tensor *backward_data(ct_op_id op, ct_tensor *g, ct_tensor *y, int dim) {
    if (!g || !y) return NULL;
    ct_softmax_kind kind = op == CT_OP_softmax_backward_data ? CT_SOFTMAX_BWD : CT_LOG_SOFTMAX_BWD;
    ct_tensor *gg = g;
    if (g->ndim != y->ndim || memcmp(g->sizes, y->sizes, sizeof(int64_t) * (size_t)y->ndim))
        gg = ct_expand(g, ct_shape_of(y)); /* a broadcast gradient (zeros, ones) */
    if (!gg) return NULL;
    ct_tensor *out = run(kind, y, gg, dim, y->dtype);
    if (!out) return NULL;
    ct_tensor *in[2] = {g, y};
    ct_node *n = ct_node_record(op, 2, in, 1);
    if (n) {
        n->state.dim = dim;
        ct_node_save(n, SV_GRAD, g, false);
        ct_node_save(n, SV_OUTPUT, y, false);
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    CT_TRACE_ATTRS(op, 2, in, 1, &out, &(ct_softmax_backward_data_attrs){dim, y->dtype});
    return ct_ret(out);
}

bool softmax_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *y = ct_node_saved(n, SV_RESULT);
    return y && (gi[0] = backward_data(CT_OP_softmax_backward_data, go[0], y, (int)n->state.dim));
}

bool log_softmax_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *y = ct_node_saved(n, SV_RESULT);
    return y && (gi[0] = backward_data(CT_OP_log_softmax_backward_data, go[0], y,
                                       (int)n->state.dim));
}

static ct_tensor *sum_dim(ct_tensor *t, int dim) {
    return ct_sum_with(t, (ct_reduce_options){.dims = {.n = 1, .d = {dim}}, .keepdim = true});
}

/* z = y (g - sum(g y)):  dz/dg [G] = softmax_backward_data(G, y);
 * dz/dy [G] = G g - G sum(g y) - g sum(G y). */
bool softmax_backward_data_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *g = ct_node_saved(n, SV_GRAD), *y = ct_node_saved(n, SV_OUTPUT), *G = go[0];
    int dim = (int)n->state.dim;
    if (!g || !y) return false;
    if (n->needs_grad[0] && !(gi[0] = backward_data(CT_OP_softmax_backward_data, G, y, dim)))
        return false;
    if (n->needs_grad[1]) {
        ct_tensor *a = ct_mul(G, ct_sub(g, sum_dim(ct_mul(g, y), dim)));
        gi[1] = ct_sub(a, ct_mul(g, sum_dim(ct_mul(G, y), dim)));
        if (!gi[1]) return false;
    }
    return true;
}

/* z = g - exp(y) sum(g):  dz/dg [G] = G - sum(G exp(y));  dz/dy [G] = -G exp(y) sum(g). */
bool log_softmax_backward_data_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *g = ct_node_saved(n, SV_GRAD), *y = ct_node_saved(n, SV_OUTPUT), *G = go[0];
    int dim = (int)n->state.dim;
    if (!g || !y) return false;
    ct_tensor *e = ct_exp(y);
    if (n->needs_grad[0] && !(gi[0] = ct_sub(G, sum_dim(ct_mul(G, e), dim)))) return false;
    if (n->needs_grad[1] && !(gi[1] = ct_neg(ct_mul(ct_mul(G, e), sum_dim(g, dim)))))
        return false;
    return true;
}
