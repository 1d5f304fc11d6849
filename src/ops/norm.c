/* batch_norm, layer_norm, group_norm (F.batch_norm, F.layer_norm, F.group_norm): checks,
 * the fused kernels of cpu/norm.c, and one node each (NativeBatchNormBackward0, ...).
 * The node saves the input, the weight and the statistics; its backward runs the fused
 * backward kernel, or with create_graph builds the gradients from differentiable ops
 * (mean, var, rsqrt, ...), so that double backward works. */
#include <string.h>

#include "autograd/node.h"
#include "kernels/norm.h"
#include "ops/internal.h"
#include "ops/trace.h"
#include "ops/options.h"

/* Saved tensors of the nodes (the rest is node->state.norm). */
enum { SV_X, SV_W, SV_MEAN, SV_RSTD };

static ct_shape shape_of_meta(const ct_input_meta *m) {
    ct_shape s = {.ndim = m->ndim};
    memcpy(s.d, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    return s;
}

/* The geometry and options of job j, from a node. */
static ct_norm_job job_of(const ct_node *n) {
    const ct_norm_state *s = &n->state.norm;
    return (ct_norm_job){.N = s->N, .C = s->C, .S = s->S, .G = s->G, .training = s->training,
                         .eps = s->eps};
}

/* Reports a normalization call (outputs: y and the saved statistics). */
static void trace_norm(ct_op_id op, const ct_norm_job *j, ct_tensor *x, ct_tensor *w,
                       ct_tensor *b, ct_tensor *rm, ct_tensor *rv, ct_tensor *y, ct_tensor *mean,
                       ct_tensor *rstd) {
    ct_tensor *out[3] = {y, mean, rstd};
    if (op == CT_OP_batch_norm) {
        CT_TRACE_ATTRS(op, 5, ((ct_tensor *[]){x, w, b, rm, rv}), 3, out,
                       &(ct_batch_norm_attrs){j->training, j->momentum, j->eps});
    } else if (op == CT_OP_layer_norm) { /* normalized_shape: x's last dims, j->C elements */
        int first = x->ndim;
        for (int64_t k = 1; first > 0 && k < j->C;) k *= x->sizes[--first];
        CT_TRACE_ATTRS(op, 3, ((ct_tensor *[]){x, w, b}), 3, out,
                       &(ct_layer_norm_attrs){ct_attr_dims(x->ndim - first, x->sizes + first),
                                              j->eps});
    } else {
        CT_TRACE_ATTRS(op, 3, ((ct_tensor *[]){x, w, b}), 3, out,
                       &(ct_group_norm_attrs){j->N, j->C, j->S, j->G, j->eps});
    }
}

/* Runs the forward of op for job j (geometry and options set) on x, w, b (and the
 * running statistics of batch_norm, updated in place when training); records the
 * node.  nstat: the number of statistics (channels or rows).  The kernel reads x in
 * its dtype (float16 / bfloat16 themselves where it has a reduced kernel) and the
 * parameters and statistics in that dtype's opmath type (float32 then), as PyTorch's
 * mixed-precision batch norm does: a float32 weight or running statistic is used as
 * it is, a reduced one widened exactly. */
static ct_tensor *norm_forward(ct_op_id op, ct_norm_job *j, ct_tensor *x, ct_tensor *w,
                               ct_tensor *b, ct_tensor *rm, ct_tensor *rv, int64_t nstat) {
    ct_dtype kd = ct_compute_dtype_for(op, x->storage->device, x->dtype), pd = ct_opmath_type(kd);
    ct_norm_fn fn = ct_compute_norm_kernel(op, x->storage->device, x->dtype);
    if (!fn) return NULL;
    const char *name = ct_ops[op].fn;
    ct_device dev = x->storage->device;
    ct_tensor *xc = ct_contiguous_as(name, x, kd);
    ct_tensor *wc = w ? ct_contiguous_as(name, w, pd) : NULL,
              *bc = b ? ct_contiguous_as(name, b, pd) : NULL;
    ct_tensor *rmc = rm ? ct_contiguous_as(name, rm, pd) : NULL,
              *rvc = rv ? ct_contiguous_as(name, rv, pd) : NULL;
    ct_tensor *y = ct_tensor_new(name, ct_shape_of(x), kd, dev);
    ct_tensor *mean = ct_tensor_new(name, CT_SHAPE(nstat), pd, dev);
    ct_tensor *rstd = ct_tensor_new(name, CT_SHAPE(nstat), pd, dev);
    bool ok = xc && (!w || wc) && (!b || bc) && (!rm || rmc) && (!rv || rvc) && y && mean && rstd;
    if (ok) {
        j->x = ct_tensor_data(xc);
        j->w = wc ? ct_tensor_data(wc) : NULL;
        j->b = bc ? ct_tensor_data(bc) : NULL;
        j->running_mean = rmc ? ct_tensor_data(rmc) : NULL;
        j->running_var = rvc ? ct_tensor_data(rvc) : NULL;
        j->y = ct_tensor_data(y);
        j->mean = ct_tensor_data(mean);
        j->rstd = ct_tensor_data(rstd);
        fn(j);
        /* The running statistics were updated in place (or in a converted copy). */
        ct_tensor *run[2] = {rm, rv}, *runc[2] = {rmc, rvc};
        for (int i = 0; i < 2 && j->training; i++) {
            if (!run[i]) continue;
            if (runc[i] != run[i]) ct_copy_into(run[i], runc[i]);
            ct_bump_version(run[i]);
        }
        y = ct_cast_result(name, y, x->dtype);
        ok = y != NULL;
    }
    ct_release(xc);
    ct_release(wc);
    ct_release(bc);
    ct_release(rmc);
    ct_release(rvc);
    if (!ok) {
        ct_release(y);
        ct_release(mean);
        ct_release(rstd);
        return NULL;
    }
    ct_tensor *in[3] = {x, w, b};
    ct_node *n = ct_node_record(op, 3, in, 1);
    if (n) {
        ct_node_save(n, SV_X, x, false);
        if (w) ct_node_save(n, SV_W, w, false);
        ct_node_save(n, SV_MEAN, mean, false);
        ct_node_save(n, SV_RSTD, rstd, false);
        n->state.norm = (ct_norm_state){.N = j->N, .C = j->C, .S = j->S, .G = j->G, .eps = j->eps,
                                        .training = j->training, .has_weight = w != NULL};
        ct_node_set_output(n, y, 0);
        ct_release(n);
    }
    if (__builtin_expect(ct_trace_active != 0, 0)) trace_norm(op, j, x, w, b, rm, rv, y, mean, rstd);
    ct_release(mean);
    ct_release(rstd);
    return ct_ret(y);
}

/* The fused backward: gradients of x, weight and bias by op's kernel. */
static bool fused_backward(ct_node *n, ct_tensor *x, ct_tensor *w, ct_tensor *gy, ct_tensor **gi) {
    ct_dtype kd = ct_compute_dtype_for(n->op, x->storage->device, x->dtype), pd = ct_opmath_type(kd);
    ct_norm_fn fn = ct_compute_norm_kernel(n->op, x->storage->device, x->dtype);
    if (!fn) return false;
    const char *name = ct_ops[n->op].fn;
    ct_device dev = x->storage->device;
    ct_norm_job j = job_of(n);
    j.backward = true;
    ct_tensor *mean = ct_node_saved(n, SV_MEAN), *rstd = ct_node_saved(n, SV_RSTD);
    if (!mean || !rstd) return false;
    ct_tensor *xc = ct_contiguous_as(name, x, kd), *gc = ct_contiguous_as(name, gy, kd);
    ct_tensor *wc = w ? ct_contiguous_as(name, w, pd) : NULL;
    ct_tensor *out[3] = {NULL, NULL, NULL};
    bool ok = xc && gc && (!w || wc);
    for (int i = 0; i < 3 && ok; i++)
        if (n->needs_grad[i])
            ok = (out[i] = ct_tensor_new(name, shape_of_meta(&n->in_meta[i]), i ? pd : kd, dev)) != NULL;
    if (ok) {
        j.x = ct_tensor_data(xc);
        j.gy = ct_tensor_data(gc);
        j.w = wc ? ct_tensor_data(wc) : NULL;
        j.mean = ct_tensor_data(mean);
        j.rstd = ct_tensor_data(rstd);
        j.gx = out[0] ? ct_tensor_data(out[0]) : NULL;
        j.gw = out[1] ? ct_tensor_data(out[1]) : NULL;
        j.gb = out[2] ? ct_tensor_data(out[2]) : NULL;
        fn(&j);
    }
    ct_release(xc);
    ct_release(gc);
    ct_release(wc);
    for (int i = 0; i < 3; i++) {
        if (ok && out[i])
            ok = (gi[i] = ct_ret(ct_cast_result(name, out[i], n->in_meta[i].dtype))) != NULL;
        else ct_release(out[i]);
    }
    return ok;
}

/* ---- the gradients as differentiable ops (create_graph) ------------------------ */

/* Normalization of xs over `red` (kept dims) with its own statistics: xhat, and when
 * gs (the gradient of xhat, shaped like xs) is given, the input gradient
 * rstd * (gs - mean(gs) - xhat * mean(gs * xhat)). */
static ct_tensor *train_grad(ct_tensor *xs, ct_tensor *gs, ct_dims red, double eps,
                             ct_tensor **xhat) {
    ct_tensor *mu = ct_mean(xs, .dims = red, .keepdim = true);
    ct_tensor *r = ct_rsqrt(ct_add_scalar(ct_var(xs, .dims = red, .keepdim = true,
                                                 .correction = CT_SOME(0)), eps));
    *xhat = ct_mul(ct_sub(xs, mu), r);
    if (!gs) return NULL;
    ct_tensor *proj = ct_mul(*xhat, ct_mean(ct_mul(gs, *xhat), .dims = red, .keepdim = true));
    return ct_mul(r, ct_sub(ct_sub(gs, ct_mean(gs, .dims = red, .keepdim = true)), proj));
}

/* dims [0, nd) without `skip` (-1: none) from `from` on. */
static ct_dims dims_except(int from, int nd, int skip) {
    ct_dims d = {0};
    for (int i = from; i < nd; i++)
        if (i != skip) d.d[d.n++] = i;
    return d;
}

/* gy reduced over `over` (none: gy itself). */
static ct_tensor *sum_over(ct_tensor *t, ct_dims over) {
    return over.n ? ct_sum(t, .dims = over) : t;
}

/* [1, C, 1, ...]: a per-channel tensor's broadcast shape for an nd-dim input. */
static ct_shape channel_shape(int nd, int64_t c) {
    ct_shape s = {.ndim = nd};
    for (int i = 0; i < nd; i++) s.d[i] = i == 1 ? c : 1;
    return s;
}

static bool backward_with_ops(ct_node *n, ct_tensor *x, ct_tensor *w, ct_tensor *gy,
                              ct_tensor **gi) {
    int nd = x->ndim;
    double eps = n->state.norm.eps;
    bool want_x = n->needs_grad[0];
    ct_tensor *gx = NULL, *xh = NULL;
    ct_dims affine_over; /* the dims weight and bias are broadcast over */
    if (n->op == CT_OP_layer_norm) {
        int k = n->state.norm.norm_dims;
        affine_over = dims_except(0, nd - k, -1);
        gx = train_grad(x, want_x ? (w ? ct_mul(gy, w) : gy) : NULL, dims_except(nd - k, nd, -1),
                        eps, &xh);
    } else {
        int64_t c = x->sizes[1];
        ct_shape cs = channel_shape(nd, c);
        ct_tensor *wc = w ? ct_reshape(w, cs) : NULL;
        ct_tensor *gxh = want_x ? (w ? ct_mul(gy, wc) : gy) : NULL;
        affine_over = dims_except(0, nd, 1);
        if (n->op == CT_OP_group_norm) {
            /* [N, G, K * S] (no -1: N may be 0) */
            int64_t G = n->state.norm.G;
            ct_shape gs = CT_SHAPE(x->sizes[0], G, c / G * n->state.norm.S);
            ct_tensor *g3 = NULL;
            ct_tensor *s = train_grad(ct_reshape(x, gs), gxh ? ct_reshape(gxh, gs) : NULL,
                                      CT_DIMS(2), eps, &g3);
            xh = ct_reshape(g3, ct_shape_of(x));
            if (want_x) gx = ct_reshape(s, ct_shape_of(x));
        } else if (n->state.norm.training) {
            gx = train_grad(x, gxh, affine_over, eps, &xh);
        } else { /* eval: the running statistics are constants */
            ct_tensor *mean = ct_node_saved(n, SV_MEAN), *rstd = ct_node_saved(n, SV_RSTD);
            if (!mean || !rstd) return false;
            ct_tensor *r = ct_reshape(rstd, cs);
            xh = ct_mul(ct_sub(x, ct_reshape(mean, cs)), r);
            if (want_x) gx = ct_mul(gy, w ? ct_mul(r, wc) : r);
        }
    }
    if (want_x && !(gi[0] = gx)) return false;
    if (n->needs_grad[1] && !(gi[1] = sum_over(ct_mul(gy, xh), affine_over))) return false;
    if (n->needs_grad[2] && !(gi[2] = sum_over(gy, affine_over))) return false;
    return true;
}

static bool norm_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *x = ct_node_saved(n, SV_X);
    bool has_w = n->state.norm.has_weight;
    ct_tensor *w = has_w ? ct_node_saved(n, SV_W) : NULL;
    if (!x || (has_w && !w) || !go[0]) return false;
    if (ct_is_grad_enabled()) return backward_with_ops(n, x, w, go[0], gi);
    return fused_backward(n, x, w, go[0], gi);
}
bool batch_norm_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return norm_backward(n, go, gi); }
bool layer_norm_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return norm_backward(n, go, gi); }
bool group_norm_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) { return norm_backward(n, go, gi); }

/* ---- the public functions --------------------------------------------------------- */

/* The options .weight and .bias of a normalization are alive (core/object.h). */
static bool affine_alive(const char *op, const ct_tensor *weight, const ct_tensor *bias) {
    return ct_option_alive(op, "weight", weight) && ct_option_alive(op, "bias", bias);
}

ct_tensor *ct_batch_norm_with(ct_tensor *x, ct_tensor *rm, ct_tensor *rv, ct_batch_norm_options o) {
    if (!ct_alive("ct_batch_norm", 1, x) || !ct_alive("ct_batch_norm", 2, rm) ||
        !ct_alive("ct_batch_norm", 3, rv) || !affine_alive("ct_batch_norm", o.weight, o.bias))
        return NULL;
    if (!x) return NULL;
    int nd = x->ndim;
    if (nd < 2) {
        ct_error("ct_batch_norm: expected at least 2D input (got %dD input)", nd);
        return NULL;
    }
    int64_t c = x->sizes[1], s = ct_shape_numel(nd - 2, x->sizes + 2), n = x->sizes[0] * s;
    if (o.training && n <= 1) {
        char b[CT_SHAPE_STR_MAX];
        ct_error("ct_batch_norm: Expected more than 1 value per channel when training, got input "
                 "size %s", ct_shape_str(nd, x->sizes, b));
        return NULL;
    }
    ct_tensor *per_channel[] = {rm, rv, o.weight, o.bias};
    static const char *const what[] = {"running_mean", "running_var", "weight", "bias"};
    for (int i = 0; i < 4; i++)
        if (per_channel[i] && per_channel[i]->numel != c) {
            ct_error("ct_batch_norm: %s should contain %lld elements not %lld", what[i],
                     (long long)c, (long long)per_channel[i]->numel);
            return NULL;
        }
    if (!o.training && (!rm || !rv)) {
        ct_error("ct_batch_norm: running_mean and running_var must be defined in evaluation mode");
        return NULL;
    }
    ct_norm_job j = {.training = o.training, .N = x->sizes[0], .C = c, .S = s, .G = 1,
                     .eps = ct_zero_or(o.eps, 1e-5), .momentum = ct_opt_or(o.momentum, 0.1)};
    return norm_forward(CT_OP_batch_norm, &j, x, o.weight, o.bias, rm, rv, c);
}

/* An optional affine tensor of `what` must hold `want` elements (shape in the message). */
static bool check_affine(const char *op, ct_tensor *t, ct_shape want, ct_tensor *x, bool ln) {
    if (!t || t->numel == ct_shape_numel(want.ndim, want.d)) return true;
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    if (ln)
        ct_error("%s: Expected weight to be of same shape as normalized_shape, but got weight of "
                 "shape %s and normalized_shape = %s", op, ct_shape_str(t->ndim, t->sizes, a),
                 ct_shape_str(want.ndim, want.d, b));
    else
        ct_error("%s: Expected weight to be a vector of size equal to the number of channels in "
                 "input, but got weight of shape %s and input of shape %s", op,
                 ct_shape_str(t->ndim, t->sizes, a), ct_shape_str(x->ndim, x->sizes, b));
    return false;
}

ct_tensor *ct_layer_norm_with(ct_tensor *x, ct_shape ns, ct_norm_options_f o) {
    if (!ct_alive("ct_layer_norm", 1, x) || !affine_alive("ct_layer_norm", o.weight, o.bias))
        return NULL;
    if (!x) return NULL;
    int nd = x->ndim;
    bool ok = ns.ndim >= 1 && ns.ndim <= nd;
    for (int i = 0; ok && i < ns.ndim; i++) ok = x->sizes[nd - ns.ndim + i] == ns.d[i];
    if (!ok) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_shape_str(ns.ndim, ns.d, a);
        ct_error("ct_layer_norm: Given normalized_shape=%s, expected input with shape [*%s%s, "
                 "but got input of size%s", a, ns.ndim ? ", " : "", ns.ndim ? a + 1 : "]",
                 ct_shape_str(nd, x->sizes, b));
        return NULL;
    }
    if (!check_affine("ct_layer_norm", o.weight, ns, x, true) ||
        !check_affine("ct_layer_norm", o.bias, ns, x, true))
        return NULL;
    int64_t d = ct_shape_numel(ns.ndim, ns.d), m = ct_shape_numel(nd - ns.ndim, x->sizes);
    ct_norm_job j = {.N = m, .C = d, .S = 1, .G = 1, .eps = ct_zero_or(o.eps, 1e-5)};
    ct_tensor *y = norm_forward(CT_OP_layer_norm, &j, x, o.weight, o.bias, NULL, NULL, m);
    if (y && y->grad_fn) y->grad_fn->state.norm.norm_dims = ns.ndim;
    return y;
}

ct_tensor *ct_group_norm_with(ct_tensor *x, int64_t groups, ct_norm_options_f o) {
    if (!ct_alive("ct_group_norm", 1, x) || !affine_alive("ct_group_norm", o.weight, o.bias))
        return NULL;
    if (!x) return NULL;
    int nd = x->ndim;
    if (nd < 2 || groups <= 0 || x->sizes[1] % groups) {
        char s[CT_SHAPE_STR_MAX];
        ct_error("ct_group_norm: Expected number of channels in input to be divisible by "
                 "num_groups, but got input of shape %s and num_groups=%lld",
                 ct_shape_str(nd, x->sizes, s), (long long)groups);
        return NULL;
    }
    int64_t c = x->sizes[1];
    if (!check_affine("ct_group_norm", o.weight, CT_SHAPE(c), x, false) ||
        !check_affine("ct_group_norm", o.bias, CT_SHAPE(c), x, false))
        return NULL;
    ct_norm_job j = {.N = x->sizes[0], .C = c, .S = ct_shape_numel(nd - 2, x->sizes + 2),
                     .G = groups, .eps = ct_zero_or(o.eps, 1e-5)};
    return norm_forward(CT_OP_group_norm, &j, x, o.weight, o.bias, NULL, NULL, x->sizes[0] * groups);
}
