/* nll_loss and its backward (itself differentiable, so double backward works), and
 * the reduction shared by every loss.
 *
 * Note [nll shapes]: PyTorch takes input [C] with a 0-d target, [N, C] with [N], and
 * [N, C, d1, ...] with [N, d1, ...]; all are seen here as x [N, C, S] and t [N, S]
 * (S the product of the trailing dims).  The checks follow nll_loss_nd, nll_loss and
 * nll_loss2d, with their messages. */
#include <stdio.h>
#include <string.h>

#include "autograd/node.h"
#include "kernels/loss.h"
#include "ops/host.h"
#include "ops/internal.h"
#include "ops/loss_impl.h"
#include "ops/options.h"
#include "ops/reduce_plan.h"
#include "ops/autocast.h"

/* Saved tensors of a pointwise loss's backward node (input, target, incoming gradient,
 * pos_weight) and of the nll nodes (target, weight). */
enum { SV_INPUT, SV_TARGET, SV_GRAD, SV_POS_WEIGHT };
enum { SV_NLL_TARGET, SV_NLL_WEIGHT };

bool ct_loss_check_reduction(const char *op, ct_reduction r) {
    if (r >= CT_REDUCTION_MEAN && r <= CT_REDUCTION_NONE) return true;
    if (r == CT_REDUCTION_BATCHMEAN)
        ct_error("%s: batchmean is not a valid value for reduction", op);
    else
        ct_error("%s: %d is not a valid value for reduction", op, (int)r);
    return false;
}

ct_tensor *ct_loss_reduce(const char *op, ct_tensor *l, ct_reduction r) {
    if (!l || !ct_loss_check_reduction(op, r)) return NULL;
    if (r == CT_REDUCTION_MEAN) return ct_mean(l);
    return r == CT_REDUCTION_SUM ? ct_sum(l) : l;
}

ct_tensor *ct_pw_loss_forward(const char *fn, const ct_pw_spec *spec, int n, ct_tensor *const *in,
                              const ct_pw_args *args, ct_tensor *w, ct_reduction red,
                              double *numel) {
    char op[64];
    snprintf(op, sizeof op, "ct_%s", fn);
    if (!ct_loss_check_reduction(op, red)) return NULL;
    if (w && ct_requires_grad(w) && ct_is_grad_enabled()) {
        ct_error("%s: The function '%s' is not differentiable with respect to argument "
                 "'weight'. This input cannot have requires_grad True.", op, fn);
        return NULL;
    }
    ct_tensor *l = ct_pointwise(spec, n, in, NULL, args), *r = NULL;
    if (!l) return NULL;
    *numel = (double)l->numel;
    ct_trace_mute(); /* the loss op reports itself, not its weighting and reduction */
    CT_SCOPE {
        CT_NO_GRAD {
            l = ct_ret(l);
            if (l && w) l = ct_mul_(l, w); /* in place: the weight broadcasts to the loss */
            if (l && red != CT_REDUCTION_NONE)
                l = red == CT_REDUCTION_MEAN ? ct_mean(l) : ct_sum(l);
            r = ct_keep(l);
        }
    }
    ct_trace_unmute();
    return r;
}

void ct_pw_loss_save(ct_node *n, ct_tensor *w, ct_reduction red, double numel) {
    if (!n) return;
    if (w) ct_node_save(n, CT_PW_LOSS_WEIGHT, w, false);
    n->state.loss.reduction = red;
    n->state.loss.has_weight = w != NULL;
    n->state.loss.numel = numel;
}

ct_tensor *ct_pw_loss_grad(ct_node *n, ct_tensor *g) {
    if (g && n->state.loss.reduction == CT_REDUCTION_MEAN) g = ct_div_scalar(g, n->state.loss.numel);
    if (g && n->state.loss.has_weight) {
        ct_tensor *w = ct_node_saved(n, CT_PW_LOSS_WEIGHT);
        g = w ? ct_mul(g, w) : NULL;
    }
    return g;
}

/* Reports a fused loss backward: g arrives scaled by the reduction (and weighted), so
 * the op itself is elementwise: reduction None (0). */
static void trace_loss_backward(ct_op_id op, ct_tensor *x, ct_tensor *y, ct_tensor *pw,
                                ct_tensor *g, double p, ct_tensor *out) {
    ct_tensor *in[5] = {g, x, y, NULL, pw};
    /* every one's first attribute is the reduction; smooth_l1's and huber's second p */
    ct_smooth_l1_loss_backward_attrs at = {0, p};
    int n_in = op == CT_OP_binary_cross_entropy_backward                ? 4
             : op == CT_OP_binary_cross_entropy_with_logits_backward ? 5
                                                                      : 3;
    CT_TRACE_ATTRS(op, n_in, in, 1, &out, &at);
}

ct_tensor *ct_pw_loss_backward(const ct_pw_spec *spec, ct_tensor *x, ct_tensor *y, ct_tensor *pw,
                               ct_tensor *g, double p) {
    if (!x || !y || !g) return NULL;
    ct_tensor *in[4] = {x, y, pw ? pw : g, g};
    ct_tensor *out = ct_pointwise(spec, pw ? 4 : 3, in, NULL, &(ct_pw_args){.a = p, .i = pw != NULL});
    if (!out) return NULL;
    ct_tensor *din[3] = {x, y, g};
    ct_node *n = ct_node_record(spec->op, 3, din, 1);
    if (n) {
        ct_node_save(n, SV_INPUT, x, false);
        ct_node_save(n, SV_TARGET, y, false);
        ct_node_save(n, SV_GRAD, g, false);
        if (pw) ct_node_save(n, SV_POS_WEIGHT, pw, false);
        n->state.loss.has_pos_weight = pw != NULL;
        n->state.loss.p = p;
        ct_node_give_output(n, out, 0);
    }
    if (__builtin_expect(ct_trace_active != 0, 0)) trace_loss_backward(spec->op, x, y, pw, g, p, out);
    return ct_ret(out);
}

bool ct_pw_loss_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi, ct_tensor **gg,
                                  ct_tensor **x, ct_tensor **y, ct_tensor **pw) {
    *gg = NULL;
    *x = ct_node_saved(n, SV_INPUT);
    *y = ct_node_saved(n, SV_TARGET);
    ct_tensor *g = ct_node_saved(n, SV_GRAD);
    *pw = n->state.loss.has_pos_weight ? ct_node_saved(n, SV_POS_WEIGHT) : NULL;
    if (!*x || !*y || !g || (n->state.loss.has_pos_weight && !*pw)) return false;
    if (n->needs_grad[2]) {
        ct_pw_spec spec = {n->op, CT_PW_PROMOTE, 0};
        if (!(gi[2] = ct_pw_loss_backward(&spec, *x, *y, *pw, go[0], n->state.loss.p))) return false;
    }
    return !(n->needs_grad[0] || n->needs_grad[1]) || (*gg = ct_mul(go[0], g));
}

ct_tensor *ct_loss_grad_fn_as(ct_tensor *t, const char *name) {
    if (t && t->grad_fn) t->grad_fn->name = name;
    return t;
}

static bool nll_check(const char *op, const ct_tensor *x, const ct_tensor *t, const ct_tensor *w,
                      ct_reduction red) {
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    if (!ct_loss_check_reduction(op, red)) return false;
    if (!ct_check_same_device(op, x, t) || (w && !ct_check_same_device(op, x, w))) return false;
    if (x->ndim < 1) {
        ct_error("%s: Expected 1 or more dimensions (got %d)", op, x->ndim);
        return false;
    }
    if (x->ndim != 1 && (t->ndim ? t->sizes[0] : 0) != x->sizes[0]) {
        ct_error("%s: Expected input batch_size (%lld) to match target batch_size (%lld).", op,
                 (long long)x->sizes[0], (long long)(t->ndim ? t->sizes[0] : 0));
        return false;
    }
    int64_t C = x->ndim == 1 ? x->sizes[0] : x->sizes[1];
    if (x->ndim <= 2) {
        if (t->ndim > 1) {
            ct_error("%s: 0D or 1D target tensor expected, multi-target not supported", op);
            return false;
        }
        if (!(x->ndim == 1 && t->ndim == 0) && x->sizes[0] != t->sizes[0]) {
            ct_error("%s: size mismatch (got input: %s, target: %s)", op,
                     ct_shape_str(x->ndim, x->sizes, a), ct_shape_str(t->ndim, t->sizes, b));
            return false;
        }
        if (w && (w->ndim != 1 || w->numel != C)) {
            ct_error("%s: weight tensor should be defined either for all %lld classes or no "
                     "classes but got weight tensor of shape: %s", op, (long long)C,
                     ct_shape_str(w->ndim, w->sizes, a));
            return false;
        }
    } else {
        bool same = t->ndim == x->ndim - 1;
        for (int d = 2; same && d < x->ndim; d++) same = t->sizes[d - 1] == x->sizes[d];
        if (!same && x->ndim == 4) {
            if (t->ndim != 3)
                ct_error("%s: only batches of spatial targets supported (3D tensors) but got "
                         "targets of dimension: %d", op, t->ndim);
            else
                ct_error("%s: size mismatch (got input: %s , target: %s", op,
                         ct_shape_str(x->ndim, x->sizes, a), ct_shape_str(t->ndim, t->sizes, b));
            return false;
        }
        if (!same) {
            int64_t want[CT_MAX_DIMS];
            want[0] = x->sizes[0];
            for (int d = 2; d < x->ndim; d++) want[d - 1] = x->sizes[d];
            ct_error("%s: Expected target size %s, got %s", op,
                     ct_shape_str(x->ndim - 1, want, a), ct_shape_str(t->ndim, t->sizes, b));
            return false;
        }
        if (w && w->numel != C) {
            ct_error("%s: weight tensor should be defined either for all or no classes", op);
            return false;
        }
    }
    if (t->dtype != CT_I64) {
        ct_error("%s: expected scalar type Long but found %s", op, ct_dtype_torch_name(t->dtype));
        return false;
    }
    if (!ct_dtype_is_floating(x->dtype)) {
        ct_error("%s: \"%s\" not implemented for '%s'", op,
                 x->ndim == 4 ? "nll_loss2d_forward_out_frame" : "nll_loss_out_frame",
                 ct_dtype_torch_name(x->dtype));
        return false;
    }
    if (w && w->dtype != x->dtype) {
        ct_error("%s: expected scalar type %s but found %s", op, ct_dtype_torch_name(x->dtype),
                 ct_dtype_torch_name(w->dtype));
        return false;
    }
    return true;
}

/* x's sizes seen as [N, C, S], see Note [nll shapes]. */
static ct_nll_dims nll_dims(int ndim, const int64_t *sizes, int64_t ignore_index) {
    ct_nll_dims d = {.N = 1, .C = sizes[ndim == 1 ? 0 : 1], .S = 1, .ignore_index = ignore_index};
    if (ndim > 1) d.N = sizes[0];
    for (int k = 2; k < ndim; k++) d.S *= sizes[k];
    return d;
}

/* Note [nll2d]: PyTorch's nll_loss_nd runs inputs of 3 or more dims through
 * nll_loss2d (grad_fn NllLoss2DBackward0); for 3 or more than 4 dims it views input
 * as [N, C, 1, S] and target as [N, 1, S], so the unreduced loss comes out as
 * [N, 1, S] and is viewed back to target's shape (grad_fn ViewBackward0).  The
 * kernels need no views (the layout is the same); only the names and that last view
 * are reproduced. */
static bool nll_viewed(const ct_tensor *x, ct_reduction red) {
    return red == CT_REDUCTION_NONE && x->ndim >= 3 && x->ndim != 4;
}

/* The shape of the unreduced loss: target's, or [N, 1, S] (Note [nll2d]). */
static ct_shape nll_out_shape(const ct_tensor *x, const ct_tensor *t) {
    if (!nll_viewed(x, CT_REDUCTION_NONE)) return ct_shape_of(t);
    ct_nll_dims d = nll_dims(x->ndim, x->sizes, 0);
    return CT_SHAPE(d.N, 1, d.S);
}

/* t (any dtype) as a new contiguous tensor of dtype k, or t retained when it is one. */
static ct_tensor *as_contig(const char *op, const ct_tensor *t, ct_dtype k) {
    if (!t) return NULL;
    return t->dtype == k && ct_tensor_is_contiguous(t) ? ct_retain((ct_tensor *)t)
                                                       : ct_cast_new(op, t, k);
}

static bool targets_in_range(const char *op, const ct_tensor *tc, ct_nll_dims d) {
    if (!ct_has_values(tc)) return true; /* meta: no values to check */
    ct_host_buf hb;
    const int64_t *t = ct_host_read(op, tc, CT_I64, &hb);
    bool ok = t != NULL;
    for (int64_t i = 0; ok && i < tc->numel; i++)
        if (t[i] != d.ignore_index && (t[i] < 0 || t[i] >= d.C)) {
            ct_error("%s: Target %lld is out of bounds.", op, (long long)t[i]);
            ok = false;
        }
    ct_host_release(&hb);
    return ok;
}

/* The reduced loss from the kernel's sums (a float64 [2] tensor on the device: the
 * loss's sum and the targets' summed weight), read on the host: out = the sum, or
 * the mean; *total = the summed weight (the mean's divisor, which the backward
 * kernel takes).  On meta, without values, nothing is read and *total is 0. */
static bool nll_reduce(const char *op, ct_tensor *out, const ct_tensor *sums, ct_reduction red,
                       double *total) {
    if (!ct_has_values(sums)) return true;
    ct_host_buf hb;
    const double *s = ct_host_read(op, sums, CT_F64, &hb);
    if (!s) return false;
    *total = s[1];
    ct_fill_raw(out, red == CT_REDUCTION_MEAN ? s[0] / s[1] : s[0]);
    ct_host_release(&hb);
    return true;
}

/* The forward without a node: an unregistered tensor of x's dtype; *total gets the
 * summed weight of the targets (the mean's divisor). */
static ct_tensor *nll_forward(const char *op, ct_tensor *x, ct_tensor *t, ct_tensor *w,
                              ct_reduction red, int64_t ignore_index, double *total) {
    if (!nll_check(op, x, t, w, red)) return NULL;
    ct_device dev = x->storage->device;
    ct_dtype k = ct_compute_dtype_for(CT_OP_nll_loss, dev, x->dtype);
    ct_nll_fwd_fn fn = ct_kernel_nll_for(CT_OP_nll_loss, dev, k);
    if (!fn) return NULL;
    ct_nll_dims d = nll_dims(x->ndim, x->sizes, ignore_index);
    ct_tensor *tc = as_contig(op, t, CT_I64), *xc = NULL, *wc = NULL, *sums = NULL, *out = NULL;
    if (!tc || !targets_in_range(op, tc, d)) goto done;
    xc = as_contig(op, x, k);
    wc = as_contig(op, w, k);
    if (!xc || (w && !wc)) goto done;
    bool reduced = red != CT_REDUCTION_NONE;
    ct_tensor *o = !reduced ? ct_tensor_new(op, nll_out_shape(x, t), k, dev)
                            : ct_tensor_new(op, CT_SHAPE(), x->dtype, dev);
    sums = o && reduced ? ct_tensor_new(op, CT_SHAPE(2), CT_F64, dev) : NULL;
    if (!o || (reduced && !sums)) {
        ct_release(o);
        goto done;
    }
    fn(ct_tensor_data(xc), (const int64_t *)ct_tensor_data(tc), wc ? ct_tensor_data(wc) : NULL,
       reduced ? NULL : ct_tensor_data(o), reduced ? (double *)ct_tensor_data(sums) : NULL, d);
    if (!reduced && k != x->dtype) {
        out = ct_cast_new(op, o, x->dtype);
        ct_release(o);
    } else if (reduced && !nll_reduce(op, o, sums, red, total)) {
        ct_release(o);
    } else {
        out = o;
    }
done:
    ct_release(tc);
    ct_release(xc);
    ct_release(wc);
    ct_release(sums);
    return out;
}

/* Saves what both nll nodes need: target, weight, reduction, ignore_index, total. */
static void nll_save(ct_node *n, ct_tensor *t, ct_tensor *w, ct_reduction red,
                     int64_t ignore_index, double total) {
    ct_node_save(n, SV_NLL_TARGET, t, false);
    if (w) ct_node_save(n, SV_NLL_WEIGHT, w, false);
    n->state.loss = (ct_loss_state){.reduction = red, .has_weight = w != NULL,
                                    .ignore_index = ignore_index, .numel = total};
}

ct_tensor *ct_nll_loss_op(const char *op, ct_tensor *x, ct_tensor *t, ct_tensor *w,
                          ct_reduction red, int64_t ignore_index) {
    CT_AUTOCAST_OP(CT_OP_nll_loss, ct_nll_loss_op(op, x, t, w, red, ignore_index), x, w);
    if (!x || !t) return NULL;
    double total = 0;
    ct_tensor *out = nll_forward(op, x, t, w, red, ignore_index, &total);
    if (!out) return NULL;
    ct_tensor *in[3] = {x, NULL, NULL}; /* no gradient for target and weight, as PyTorch */
    ct_node *n = ct_record1(CT_OP_nll_loss, out, 3, in);
    if (n) nll_save(n, t, w, red, ignore_index, total);
    if (n && x->ndim >= 3) n->name = "NllLoss2DBackward0";
    CT_TRACE_ATTRS(CT_OP_nll_loss, 3, ((ct_tensor *[]){x, t, w}), 1, &out,
                   &(ct_nll_loss_attrs){ct_reduction_aten(red), ignore_index});
    if (!(out = ct_ret(out))) return NULL;
    return nll_viewed(x, red) ? ct_view(out, ct_shape_of(t)) : out;
}

ct_tensor *(ct_nll_loss_with)(ct_tensor *input, ct_tensor *target, ct_nll_loss_options o) {
    if (!ct_alive("ct_nll_loss", 1, input) || !ct_alive("ct_nll_loss", 2, target) ||
        !ct_option_alive("ct_nll_loss", "weight", o.weight))
        return NULL;
    int64_t ignore_index;
    if (!ct_opt_int("ct_nll_loss", "ignore_index", o.ignore_index, -100, &ignore_index)) return NULL;
    return ct_nll_loss_op("ct_nll_loss", input, target, o.weight, o.reduction, ignore_index);
}

/* The gradient of nll_loss for grad_output g: input-shaped (meta), zero except at the
 * targets.  Linear in g, so its own backward is nll_loss of the incoming gradient. */
static ct_tensor *nll_backward_op(ct_tensor *g, ct_tensor *t, ct_tensor *w, const ct_input_meta *m,
                                  ct_reduction red, int64_t ignore_index, double total) {
    ct_dtype k = ct_compute_dtype_for(CT_OP_nll_loss_backward, g->storage->device, m->dtype);
    ct_device dev = g->storage->device;
    ct_nll_bwd_fn fn = ct_kernel_nll_backward_for(CT_OP_nll_loss_backward, dev, k);
    if (!fn) return NULL;
    const char *op = ct_ops[CT_OP_nll_loss_backward].fn;
    ct_shape shape = {.ndim = m->ndim};
    memcpy(shape.d, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    ct_nll_dims d = nll_dims(m->ndim, m->sizes, ignore_index);
    ct_tensor *gc = as_contig(op, g, k), *tc = as_contig(op, t, CT_I64), *wc = as_contig(op, w, k);
    ct_tensor *gi = gc && tc && (wc || !w) ? ct_tensor_new(op, shape, k, dev) : NULL;
    if (gi)
        fn(ct_tensor_data(gc), red != CT_REDUCTION_NONE, (const int64_t *)ct_tensor_data(tc),
           wc ? ct_tensor_data(wc) : NULL, ct_tensor_data(gi),
           red == CT_REDUCTION_MEAN ? total : 1.0, d);
    ct_release(gc);
    ct_release(tc);
    ct_release(wc);
    if (gi && k != m->dtype) {
        ct_tensor *c = ct_cast_new(op, gi, m->dtype);
        ct_release(gi);
        gi = c;
    }
    if (!gi) return NULL;
    ct_node *n = ct_record1(CT_OP_nll_loss_backward, gi, 1, &g);
    if (n) nll_save(n, t, w, red, ignore_index, total);
    if (n && m->ndim >= 3) n->name = "NllLoss2DBackwardBackward0";
    CT_TRACE_ATTRS(CT_OP_nll_loss_backward, 4, ((ct_tensor *[]){g, NULL, t, w}), 1, &gi,
                   &(ct_nll_loss_backward_attrs){ct_reduction_aten(red), ignore_index});
    return ct_ret(gi);
}

/* Reads the saved target and weight of an nll node. */
static bool nll_saved(ct_node *n, ct_tensor **t, ct_tensor **w) {
    *t = ct_node_saved(n, SV_NLL_TARGET);
    *w = n->state.loss.has_weight ? ct_node_saved(n, SV_NLL_WEIGHT) : NULL;
    return *t && (*w || !n->state.loss.has_weight);
}

bool nll_loss_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *t, *w;
    if (!go[0] || !nll_saved(n, &t, &w)) return go[0] == NULL;
    const ct_loss_state *s = &n->state.loss;
    gi[0] = nll_backward_op(go[0], t, w, &n->in_meta[0], (ct_reduction)s->reduction,
                            s->ignore_index, s->numel);
    return gi[0] != NULL;
}

bool nll_loss_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *t, *w;
    if (!go[0] || !nll_saved(n, &t, &w)) return go[0] == NULL;
    gi[0] = ct_nll_loss_op("ct_nll_loss", go[0], t, w, (ct_reduction)n->state.loss.reduction,
                           n->state.loss.ignore_index);
    const ct_input_meta *m = &n->in_meta[0]; /* [N, 1, S] where viewed, Note [nll2d] */
    if (gi[0] && gi[0]->ndim != m->ndim) {
        ct_shape s = {.ndim = m->ndim};
        memcpy(s.d, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
        gi[0] = ct_view(gi[0], s);
    }
    return gi[0] != NULL;
}
