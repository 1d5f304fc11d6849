/* Convolutions: conv1d, conv2d, conv_transpose2d.  One op (ConvolutionBackward0)
 * covers them all; its kernels are in src/cpu/conv.c.  The backward computes the
 * gradients with kernels (GEMM + col2im); with create_graph it builds them from
 * differentiable ops instead (transposed conv, ct_im2col, ct_matmul). */
#include <stdlib.h>
#include <string.h>

#include "autograd/node.h"
#include "kernels/conv.h"
#include "ops/conv_impl.h"
#include "ops/internal.h"
#include "ops/trace.h"
#include "core/mem.h"
#include "ops/autocast.h"

/* Saved tensors: the input (for the weight's gradient) and the weight (for the input's). */
enum { SV_INPUT, SV_WEIGHT };

/* Geometry and options after defaults; kept for the backward in the node's extra
 * (convolution's schema attributes, int[] lists, are too big for node->attrs). */
typedef struct {
    int nd;            /* spatial dims: 1 or 2 */
    bool transposed;
    int64_t stride[2], pad[2], dil[2], out_pad[2], groups;
    int64_t pad_end[2]; /* padding after the last element (differs for odd 'same') */
} conv_params;

/* convolution's schema attributes (convolution_backward's between its first and last). */
static ct_convolution_attrs conv_attrs(const conv_params *p) {
    return (ct_convolution_attrs){ct_attr_dims(p->nd, p->stride), ct_attr_dims(p->nd, p->pad),
                                  ct_attr_dims(p->nd, p->dil), p->transposed,
                                  ct_attr_dims(p->nd, p->out_pad), p->groups};
}

/* One option list: empty -> dflt, one value -> every dim, nd values -> per dim. */
static bool expand_dims(const char *op, const char *what, ct_dims d, int nd, int64_t dflt,
                        int64_t *out) {
    if (d.n == 0) {
        for (int i = 0; i < nd; i++) out[i] = dflt;
        return true;
    }
    if (d.n == 1 || d.n == nd) {
        for (int i = 0; i < nd; i++) out[i] = d.d[d.n == 1 ? 0 : i];
        return true;
    }
    char buf[CT_SHAPE_STR_MAX];
    ct_error("%s: expected %s to be a single integer value or a list of %d values to match the "
             "convolution dimensions, but got %s=%s", op, what, nd, what,
             ct_shape_str(d.n, d.d, buf));
    return false;
}

/* Where the kernel's "conv input" and "conv output" live: for a transposed conv the
 * roles swap (its forward is a conv's grad_input). */
static ct_conv_geom geometry(const conv_params *p, const ct_tensor *x, const ct_tensor *w,
                             const int64_t *out_sp) {
    int nd = p->nd;
    const int64_t *xs = x->sizes + 2, *ks = w->sizes + 2;
    ct_conv_geom g = {
        .N = x->sizes[0], .KH = nd == 2 ? ks[0] : 1, .KW = ks[nd - 1],
        .sh = nd == 2 ? p->stride[0] : 1, .sw = p->stride[nd - 1],
        .ph = nd == 2 ? p->pad[0] : 0, .pw = p->pad[nd - 1],
        .dh = nd == 2 ? p->dil[0] : 1, .dw = p->dil[nd - 1], .groups = p->groups};
    /* conv input spatial = x's (forward) or the output's (transposed). */
    const int64_t *in_sp = p->transposed ? out_sp : xs, *o_sp = p->transposed ? xs : out_sp;
    g.H = nd == 2 ? in_sp[0] : 1;
    g.W = in_sp[nd - 1];
    g.OH = nd == 2 ? o_sp[0] : 1;
    g.OW = o_sp[nd - 1];
    if (p->transposed) {
        g.C = w->sizes[1] * p->groups; /* conv input channels = transposed output channels */
        g.O = w->sizes[0];
    } else {
        g.C = x->sizes[1];
        g.O = w->sizes[0];
    }
    return g;
}

/* ct_conv_run; with gb, a conv's GRAD_WEIGHT job also returns the bias gradient
 * (*gb, unregistered; gy read once for both). */
static ct_tensor *conv_run(ct_conv_kind kind, const ct_conv_geom *g, ct_tensor *a, ct_tensor *b,
                           ct_tensor *bias, ct_shape shape, ct_dtype dt, ct_tensor **gb) {
    ct_dtype kd = ct_compute_dtype_for(CT_OP_convolution, a->storage->device, dt);
    ct_conv_fn k = ct_compute_conv_kernel(CT_OP_convolution, a->storage->device, dt);
    if (!k) return NULL;
    const char *name = ct_ops[CT_OP_convolution].fn;
    ct_tensor *A = ct_contiguous_as(name, a, kd), *B = A ? ct_contiguous_as(name, b, kd) : NULL;
    ct_tensor *Z = B && bias ? ct_contiguous_as(name, bias, kd) : NULL;
    ct_tensor *out = B && (!bias || Z) ? ct_tensor_new(name, shape, kd, a->storage->device) : NULL;
    ct_tensor *GB = out && gb ? ct_tensor_new(name, CT_SHAPE(g->O), kd, a->storage->device) : NULL;
    if (gb && !GB) {
        ct_release(out);
        out = NULL;
    }
    if (out) {
        ct_conv_job job = {kind, g, ct_tensor_data(A), ct_tensor_data(B),
                           Z ? ct_tensor_data(Z) : NULL, ct_tensor_data(out), 0, 0,
                           GB ? ct_tensor_data(GB) : NULL};
        if (kind == CT_CONV_GRAD_BIAS) { /* a is gy [N, channels, *spatial] */
            job.channels = A->ndim > 1 ? A->sizes[1] : 0;
            job.plane = ct_shape_numel(A->ndim - 2, A->sizes + 2);
        }
        k(&job);
        if (ct_error_take_failed_result()) { /* the kernel ran out of memory */
            ct_release(out);
            ct_release(GB);
            out = NULL;
        } else {
            out = ct_cast_result(name, out, dt);
            if (gb) *gb = ct_cast_result(name, GB, dt);
        }
    }
    ct_release(A);
    ct_release(B);
    ct_release(Z);
    return out;
}

ct_tensor *ct_conv_run(ct_conv_kind kind, const ct_conv_geom *g, ct_tensor *a, ct_tensor *b,
                       ct_tensor *bias, ct_shape shape, ct_dtype dt) {
    return conv_run(kind, g, a, b, bias, shape, dt, NULL);
}

static bool check_params(const char *op, conv_params *p, ct_conv_options o, const ct_tensor *w) {
    int nd = p->nd;
    if (!expand_dims(op, "stride", o.stride, nd, 1, p->stride) ||
        !expand_dims(op, "padding", o.padding, nd, 0, p->pad) ||
        !expand_dims(op, "dilation", o.dilation, nd, 1, p->dil) ||
        !expand_dims(op, "output_padding", o.output_padding, nd, 0, p->out_pad))
        return false;
    p->groups = o.groups ? o.groups : 1;
    for (int i = 0; i < nd; i++) {
        if (p->stride[i] <= 0) {
            ct_error("%s: non-positive stride is not supported", op);
            return false;
        }
        if (p->pad[i] < 0) {
            ct_error("%s: negative padding is not supported", op);
            return false;
        }
        if (p->dil[i] <= 0) {
            ct_error("%s: dilation should be greater than zero", op);
            return false;
        }
        if (p->out_pad[i] < 0) {
            ct_error("%s: negative output_padding is not supported", op);
            return false;
        }
    }
    if (p->groups <= 0) {
        ct_error("%s: non-positive groups is not supported", op);
        return false;
    }
    if (o.padding_same) {
        if (p->transposed) {
            ct_error("%s: padding='same' is not supported for transposed convolutions", op);
            return false;
        }
        for (int i = 0; i < nd; i++)
            if (p->stride[i] != 1) {
                ct_error("%s: padding='same' is not supported for strided convolutions", op);
                return false;
            }
        /* PyTorch pads the extra element (odd total) at the end: the kernel only needs
         * the padding before, and the output size equals the input's. */
        for (int i = 0; i < nd; i++) {
            int64_t total = p->dil[i] * (w->sizes[2 + i] - 1);
            p->pad[i] = total / 2;
            p->pad_end[i] = total - total / 2;
        }
    } else {
        for (int i = 0; i < nd; i++) p->pad_end[i] = p->pad[i];
    }
    if (!p->transposed)
        for (int i = 0; i < nd; i++)
            if (p->out_pad[i]) {
                ct_error("%s: output_padding is only used by transposed convolutions", op);
                return false;
            }
    for (int i = 0; p->transposed && i < nd; i++)
        if (p->out_pad[i] >= p->stride[i] && p->out_pad[i] >= p->dil[i]) {
            ct_error("%s: output padding must be smaller than either stride or dilation, but got "
                     "output_padding=%lld, stride=%lld, dilation=%lld in dim %d", op,
                     (long long)p->out_pad[i], (long long)p->stride[i], (long long)p->dil[i], i);
            return false;
        }
    return true;
}

static bool check_tensors(const char *op, const conv_params *p, const ct_tensor *x,
                          const ct_tensor *w, const ct_tensor *bias) {
    char ws[CT_SHAPE_STR_MAX], xs[CT_SHAPE_STR_MAX], bs[CT_SHAPE_STR_MAX];
    int nd = p->nd;
    if (!ct_check_same_device(op, x, w) || (bias && !ct_check_same_device(op, x, bias)))
        return false;
    if (w->ndim != nd + 2) {
        ct_error("%s: Expected %dD weight for %dD input, but got weight of size %s", op, nd + 2,
                 nd + 2, ct_shape_str(w->ndim, w->sizes, ws));
        return false;
    }
    if (x->dtype != w->dtype || (bias && bias->dtype != x->dtype)) {
        ct_error("%s: expected input, weight and bias to have the same dtype, but got %s, %s "
                 "and %s", op, ct_dtype_name(x->dtype), ct_dtype_name(w->dtype),
                 bias ? ct_dtype_name(bias->dtype) : "None");
        return false;
    }
    ct_shape_str(w->ndim, w->sizes, ws);
    ct_shape_str(x->ndim, x->sizes, xs);
    int64_t g = p->groups;
    if (!p->transposed && w->sizes[0] % g) {
        ct_error("%s: Given groups=%lld, expected weight to be divisible by %lld at dimension 0, "
                 "but got weight of size %s instead", op, (long long)g, (long long)g, ws);
        return false;
    }
    int64_t want_c = p->transposed ? w->sizes[0] : w->sizes[1] * g;
    if (x->sizes[1] != want_c) {
        if (p->transposed)
            ct_error("%s: Given transposed=1, weight of size %s, expected input%s to have %lld "
                     "channels, but got %lld channels instead", op, ws, xs, (long long)want_c,
                     (long long)x->sizes[1]);
        else
            ct_error("%s: Given groups=%lld, weight of size %s, expected input%s to have %lld "
                     "channels, but got %lld channels instead", op, (long long)g, ws, xs,
                     (long long)want_c, (long long)x->sizes[1]);
        return false;
    }
    if (p->transposed && w->sizes[0] % g) {
        ct_error("%s: Given groups=%lld, expected weight to be divisible by %lld at dimension 0, "
                 "but got weight of size %s instead", op, (long long)g, (long long)g, ws);
        return false;
    }
    int64_t out_c = p->transposed ? w->sizes[1] * g : w->sizes[0];
    if (bias && (bias->ndim != 1 || bias->sizes[0] != out_c)) {
        ct_error("%s: Given weight of size %s, expected bias to be 1-dimensional with %lld "
                 "elements, but got bias of size %s instead", op, ws, (long long)out_c,
                 ct_shape_str(bias->ndim, bias->sizes, bs));
        return false;
    }
    return true;
}

/* Output spatial sizes; false with PyTorch's message when the kernel does not fit. */
static bool output_size(const char *op, const conv_params *p, const ct_tensor *x,
                        const ct_tensor *w, int64_t *out) {
    int nd = p->nd;
    for (int i = 0; i < nd; i++) {
        int64_t in = x->sizes[2 + i], k = w->sizes[2 + i];
        if (p->transposed) {
            out[i] = (in - 1) * p->stride[i] - 2 * p->pad[i] + p->dil[i] * (k - 1) +
                     p->out_pad[i] + 1;
        } else {
            int64_t padded = in + p->pad[i] + p->pad_end[i], span = p->dil[i] * (k - 1) + 1;
            out[i] = (padded - span) / p->stride[i] + 1;
            if (padded < span) out[i] = -1;
        }
    }
    bool ok = true;
    for (int i = 0; i < nd; i++) ok = ok && out[i] >= 0;
    if (ok) return true;
    char a[64] = "", b[64] = "";
    for (int i = 0; i < nd; i++) {
        char t[32];
        snprintf(t, sizeof t, "%s%lld", i ? " x " : "", (long long)(x->sizes[2 + i] + 2 * p->pad[i]));
        strcat(a, t);
        snprintf(t, sizeof t, "%s%lld", i ? " x " : "", (long long)(p->dil[i] * (w->sizes[2 + i] - 1) + 1));
        strcat(b, t);
    }
    ct_error("%s: Calculated padded input size per channel: (%s). Kernel size: (%s). Kernel "
             "size can't be greater than actual input size", op, a, b);
    return false;
}

/* The op on batched input [N, C, *spatial]. */
static ct_tensor *convolution(const char *op, conv_params *p, ct_tensor *x, ct_tensor *w,
                              ct_tensor *bias) {
    int64_t osp[2] = {0, 0};
    if (!output_size(op, p, x, w, osp)) return NULL;
    ct_conv_geom g = geometry(p, x, w, osp);
    ct_shape shape = {.ndim = x->ndim, .d = {x->sizes[0], p->transposed ? g.C : g.O}};
    for (int i = 0; i < p->nd; i++) shape.d[2 + i] = osp[i];
    ct_tensor *out = ct_conv_run(p->transposed ? CT_CONV_GRAD_INPUT : CT_CONV_FORWARD, &g, x,
                                 w, bias, shape, x->dtype);
    if (!out) return NULL;
    ct_tensor *in[] = {x, w, bias};
    ct_node *n = ct_node_record(CT_OP_convolution, 3, in, 1);
    if (n) {
        conv_params *saved = ct_malloc(sizeof *saved);
        if (saved) {
            *saved = *p;
            n->extra = saved;
            n->extra_free = free;
        } else {
            ct_error_fail_result("%s: out of memory recording the graph", op);
        }
        if (n->needs_grad[1]) ct_node_save(n, SV_INPUT, x, false);
        if (n->needs_grad[0]) ct_node_save(n, SV_WEIGHT, w, false);
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    if (__builtin_expect(ct_trace_active != 0, 0)) {
        ct_convolution_attrs at = conv_attrs(p);
        CT_TRACE_ATTRS(CT_OP_convolution, 3, in, 1, &out, &at);
    }
    return out;
}

/* Checks, then the op; unbatched input (one dim less) gets a batch dim of 1. */
static ct_tensor *conv_entry(const char *op, int nd, bool transposed, ct_tensor *x, ct_tensor *w,
                             ct_tensor *bias, ct_conv_options o) {
    CT_AUTOCAST_OP(CT_OP_convolution, conv_entry(op, nd, transposed, x, w, bias, o), x, w,
                   bias);
    if (!x || !w) return NULL;
    conv_params p = {.nd = nd, .transposed = transposed};
    if (x->ndim != nd + 1 && x->ndim != nd + 2) {
        char xs[CT_SHAPE_STR_MAX];
        ct_error("%s: Expected %dD (unbatched) or %dD (batched) input to %s, but got input of "
                 "size: %s", op, nd + 1, nd + 2, op + 3, ct_shape_str(x->ndim, x->sizes, xs));
        return NULL;
    }
    if (w->ndim != nd + 2) {
        char ws[CT_SHAPE_STR_MAX];
        ct_error("%s: Expected %dD weight, but got weight of size %s", op, nd + 2,
                 ct_shape_str(w->ndim, w->sizes, ws));
        return NULL;
    }
    if (!check_params(op, &p, o, w)) return NULL;
    ct_tensor *out = NULL;
    CT_SCOPE {
        bool unbatched = x->ndim == nd + 1;
        ct_tensor *xb = x;
        if (unbatched) {
            ct_shape s = ct_shape_of(x);
            memmove(s.d + 1, s.d, sizeof(int64_t) * (size_t)s.ndim);
            s.d[0] = 1;
            s.ndim++;
            xb = ct_view(ct_contiguous(x), s);
        }
        if (!xb || !check_tensors(op, &p, xb, w, bias)) break;
        ct_tensor *y = ct_ret(convolution(op, &p, xb, w, bias));
        if (y && unbatched) {
            ct_shape s = ct_shape_of(y);
            memmove(s.d, s.d + 1, sizeof(int64_t) * (size_t)(s.ndim - 1));
            s.ndim--;
            y = ct_view(y, s);
        }
        out = ct_keep(y);
    }
    return out;
}

ct_tensor *ct_conv2d_with(ct_tensor *x, ct_tensor *w, ct_tensor *bias, ct_conv_options o) {
    if (!ct_alive("ct_conv2d", 1, x) || !ct_alive("ct_conv2d", 2, w) ||
        !ct_alive("ct_conv2d", 3, bias))
        return NULL;
    return conv_entry("ct_conv2d", 2, false, x, w, bias, o);
}
ct_tensor *ct_conv1d_with(ct_tensor *x, ct_tensor *w, ct_tensor *bias, ct_conv_options o) {
    if (!ct_alive("ct_conv1d", 1, x) || !ct_alive("ct_conv1d", 2, w) ||
        !ct_alive("ct_conv1d", 3, bias))
        return NULL;
    return conv_entry("ct_conv1d", 1, false, x, w, bias, o);
}
ct_tensor *ct_conv_transpose2d_with(ct_tensor *x, ct_tensor *w, ct_tensor *bias,
                                    ct_conv_options o) {
    if (!ct_alive("ct_conv_transpose2d", 1, x) || !ct_alive("ct_conv_transpose2d", 2, w) ||
        !ct_alive("ct_conv_transpose2d", 3, bias))
        return NULL;
    return conv_entry("ct_conv_transpose2d", 2, true, x, w, bias, o);
}

/* ---- double backward: the gradients as differentiable ops -------------------- */

/* t [N, C, L] as [N, C, 1, L] (1-D convs run as 2-D ones); 4-D t as it is. */
static ct_tensor *as_2d(ct_tensor *t, int nd) {
    if (nd == 2) return t;
    return ct_reshape(t, CT_SHAPE(t->sizes[0], t->sizes[1], 1, t->sizes[2]));
}

static conv_params params_2d(const conv_params *p) {
    if (p->nd == 2) return *p;
    conv_params q = {.nd = 2, .transposed = p->transposed, .groups = p->groups,
                     .stride = {1, p->stride[0]}, .pad = {0, p->pad[0]}, .dil = {1, p->dil[0]},
                     .out_pad = {0, p->out_pad[0]}, .pad_end = {0, p->pad[0]}};
    return q;
}

static bool not_expressible(void) {
    ct_error("ConvolutionBackward0: double backward is not implemented for this geometry "
             "(asymmetric 'same' padding or output_padding >= stride)");
    return false;
}

/* With create_graph: grad_input is the transposed (or plain) convolution of gy, and
 * grad_weight sums gy @ im2col(input)^T over the batch (ct_im2col + ct_matmul), so the
 * gradients are themselves differentiable. */
static bool backward_with_ops(ct_node *n, const conv_params *p0, ct_tensor *gy,
                              ct_tensor **gi) {
    conv_params p = params_2d(p0);
    int nd = p0->nd;
    ct_tensor *g4 = as_2d(gy, nd);
    if (!g4) return false;
    if (n->needs_grad[0]) {
        ct_tensor *w = ct_node_saved(n, SV_WEIGHT), *x_like = NULL;
        if (!w) return false;
        ct_tensor *w4 = as_2d(w, nd);
        conv_params q = p;
        q.transposed = !p.transposed;
        for (int i = 0; i < 2; i++) q.pad_end[i] = q.pad[i];
        /* The shape grad_input must have: the input's, as 4-D. */
        const ct_input_meta *xm = &n->in_meta[0];
        int64_t want[2] = {nd == 2 ? xm->sizes[2] : 1, xm->sizes[xm->ndim - 1]};
        if (q.transposed) { /* output_padding that gives back the input's size */
            for (int i = 0; i < 2; i++) {
                int64_t base = (g4->sizes[2 + i] - 1) * q.stride[i] - 2 * q.pad[i] +
                               q.dil[i] * (w4->sizes[2 + i] - 1) + 1;
                q.out_pad[i] = want[i] - base;
                if (q.out_pad[i] < 0 || (q.out_pad[i] >= q.stride[i] && q.out_pad[i] >= q.dil[i]))
                    return not_expressible();
            }
        } else {
            q.out_pad[0] = q.out_pad[1] = 0;
        }
        x_like = ct_ret(convolution("ct_conv", &q, g4, w4, NULL));
        if (!x_like || x_like->sizes[2] != want[0] || x_like->sizes[3] != want[1])
            return x_like ? not_expressible() : false;
        ct_shape xs = {.ndim = xm->ndim};
        memcpy(xs.d, xm->sizes, sizeof(int64_t) * (size_t)xm->ndim);
        if (!(gi[0] = ct_reshape(x_like, xs))) return false;
    }
    if (n->needs_grad[1]) {
        ct_tensor *x = ct_node_saved(n, SV_INPUT);
        if (!x) return false;
        ct_tensor *x4 = as_2d(x, nd);
        /* image: the conv's input; grads: the conv's output gradient. */
        ct_tensor *img = p.transposed ? g4 : x4, *og = p.transposed ? x4 : g4;
        const ct_input_meta *wm = &n->in_meta[1];
        int64_t kh = nd == 2 ? wm->sizes[2] : 1, kw = wm->sizes[wm->ndim - 1];
        ct_tensor *cols = ct_im2col_with(img, (ct_fold_options){
            .kernel_size = CT_DIMS(kh, kw), .dilation = CT_DIMS(p.dil[0], p.dil[1]),
            .padding = CT_DIMS(p.pad[0], p.pad[1]), .stride = CT_DIMS(p.stride[0], p.stride[1])});
        if (!cols) return false;
        int64_t N = og->sizes[0], G = p.groups, L = og->sizes[2] * og->sizes[3];
        if (cols->sizes[2] != L) return not_expressible();
        ct_tensor *cv = ct_view(cols, CT_SHAPE(N, G, cols->sizes[1] / G, L));
        ct_tensor *ov = ct_reshape(og, CT_SHAPE(N, G, og->sizes[1] / G, L));
        ct_tensor *sum = ct_sum_with(ct_matmul(ov, ct_transpose(cv, -1, -2)),
                                     (ct_reduce_options){.dims = CT_DIMS(0)});
        ct_shape ws = {.ndim = wm->ndim};
        memcpy(ws.d, wm->sizes, sizeof(int64_t) * (size_t)wm->ndim);
        if (!(gi[1] = ct_reshape(sum, ws))) return false;
    }
    if (n->needs_grad[2]) {
        ct_dims d = nd == 2 ? CT_DIMS(0, 2, 3) : CT_DIMS(0, 2);
        if (!(gi[2] = ct_sum_with(gy, (ct_reduce_options){.dims = d}))) return false;
    }
    return true;
}

/* Gradients by kernels (see Note [Conv determinism] in cpu/conv.h); with
 * create_graph, by differentiable ops (backward_with_ops). */
bool convolution_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    conv_params p = *(const conv_params *)n->extra;
    ct_tensor *gy = go[0];
    if (ct_is_grad_enabled()) return backward_with_ops(n, &p, gy, gi);
    /* gy made contiguous once for all three jobs (sum's gradient is an expanded view) */
    if (!(gy = ct_ret(ct_contiguous_as(ct_ops[n->op].fn, gy, ct_compute_dtype_for(CT_OP_convolution, gy->storage->device, gy->dtype)))))
        return false;
    const ct_input_meta *xm = &n->in_meta[0], *wm = &n->in_meta[1];
    ct_shape xs = {.ndim = xm->ndim}, ws = {.ndim = wm->ndim};
    memcpy(xs.d, xm->sizes, sizeof(int64_t) * (size_t)xs.ndim);
    memcpy(ws.d, wm->sizes, sizeof(int64_t) * (size_t)ws.ndim);
    /* The geometry only needs shapes: fake tensors carrying x's and w's sizes. */
    ct_tensor xt = {.ndim = xs.ndim}, wt = {.ndim = ws.ndim};
    memcpy(xt.sizes, xs.d, sizeof xs.d);
    memcpy(wt.sizes, ws.d, sizeof ws.d);
    ct_conv_geom g = geometry(&p, &xt, &wt, gy->sizes + 2);
    ct_dtype dt = gy->dtype;
    /* For a transposed conv, its input plays the conv output and gy the conv input. */
    ct_tensor *x = NULL, *w = NULL;
    if (n->needs_grad[0]) {
        if (!(w = ct_node_saved(n, SV_WEIGHT))) return false;
        ct_tensor *r = p.transposed ? ct_conv_run(CT_CONV_FORWARD, &g, gy, w, NULL, xs, dt)
                                    : ct_conv_run(CT_CONV_GRAD_INPUT, &g, gy, w, NULL, xs, dt);
        if (!(gi[0] = ct_ret(r))) return false;
    }
    if (n->needs_grad[1]) {
        if (!(x = ct_node_saved(n, SV_INPUT))) return false;
        /* a conv's bias gradient comes with its weight gradient (one pass over gy) */
        ct_tensor *gb = NULL, **gbp = !p.transposed && n->needs_grad[2] ? &gb : NULL;
        ct_tensor *r = p.transposed ? ct_conv_run(CT_CONV_GRAD_WEIGHT, &g, gy, x, NULL, ws, dt)
                                    : conv_run(CT_CONV_GRAD_WEIGHT, &g, x, gy, NULL, ws, dt, gbp);
        gi[1] = ct_ret(r); /* both registered before either is checked: none leaks */
        if (gbp) gi[2] = ct_ret(gb);
        if (!gi[1] || (gbp && !gi[2])) return false;
    }
    if (n->needs_grad[2] && !gi[2]) {
        ct_shape bs = CT_SHAPE(gy->sizes[1]);
        if (!(gi[2] = ct_ret(ct_conv_run(CT_CONV_GRAD_BIAS, &g, gy, gy, NULL, bs, dt)))) return false;
    }
    if (__builtin_expect(ct_trace_active != 0, 0)) {
        ct_convolution_attrs c = conv_attrs(&p);
        ct_convolution_backward_attrs at = {
            ct_attr_dims(n->needs_grad[2] ? 1 : -1, &gy->sizes[1]), c.stride, c.padding,
            c.dilation, c.transposed, c.output_padding, c.groups,
            {3, {n->needs_grad[0], n->needs_grad[1], n->needs_grad[2]}}};
        CT_TRACE_ATTRS(CT_OP_convolution_backward, 3, ((ct_tensor *[]){go[0], x, w}), 3, gi, &at);
    }
    return true;
}
