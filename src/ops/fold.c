/* im2col / col2im as ops: F.unfold and F.fold.  Each is the other's backward, so
 * they are differentiable to any order; the convolution's double backward is built
 * on them (src/ops/conv.c). */
#include <stdlib.h>

#include "autograd/node.h"
#include "ops/conv_impl.h"
#include "ops/trace.h"
#include "core/mem.h"

typedef struct { int64_t k[2], d[2], p[2], s[2]; } fold_params;

static bool pair_of(const char *op, const char *what, ct_dims d, int64_t dflt, int64_t *out) {
    if (d.n == 0) {
        out[0] = out[1] = dflt;
        return true;
    }
    if (d.n > 2) {
        ct_error("%s: %s must be one int or two ints (got %d values)", op, what, d.n);
        return false;
    }
    out[0] = d.d[0];
    out[1] = d.d[d.n - 1];
    return true;
}

static bool params_of(const char *op, ct_fold_options o, fold_params *p) {
    if (o.kernel_size.n == 0) {
        ct_error("%s: kernel_size is required", op);
        return false;
    }
    if (!pair_of(op, "kernel_size", o.kernel_size, 1, p->k) ||
        !pair_of(op, "dilation", o.dilation, 1, p->d) ||
        !pair_of(op, "padding", o.padding, 0, p->p) || !pair_of(op, "stride", o.stride, 1, p->s))
        return false;
    for (int i = 0; i < 2; i++)
        if (p->k[i] <= 0 || p->d[i] <= 0 || p->s[i] <= 0 || p->p[i] < 0) {
            ct_error("%s: kernel_size, dilation and stride must be positive and padding "
                     "non-negative (got kernel_size=%lld, dilation=%lld, padding=%lld, "
                     "stride=%lld)", op, (long long)p->k[i], (long long)p->d[i],
                     (long long)p->p[i], (long long)p->s[i]);
            return false;
        }
    return true;
}

/* The geometry of an image [N, C, H, W] and its blocks; false when none fit. */
static bool geometry(const char *op, const fold_params *p, int64_t N, int64_t C, int64_t H,
                     int64_t W, ct_conv_geom *g) {
    *g = (ct_conv_geom){.N = N, .C = C, .H = H, .W = W, .O = C, .KH = p->k[0], .KW = p->k[1],
                        .sh = p->s[0], .sw = p->s[1], .ph = p->p[0], .pw = p->p[1],
                        .dh = p->d[0], .dw = p->d[1], .groups = 1};
    int64_t sh = H + 2 * p->p[0] - p->d[0] * (p->k[0] - 1) - 1;
    int64_t sw = W + 2 * p->p[1] - p->d[1] * (p->k[1] - 1) - 1;
    if (sh < 0 || sw < 0) {
        ct_error("%s: Given input with spatial size (%lld, %lld), kernel_size=(%lld, %lld), "
                 "dilation=(%lld, %lld), padding=(%lld, %lld), calculated shape of the array "
                 "of sliding blocks is non-positive", op, (long long)H, (long long)W,
                 (long long)p->k[0], (long long)p->k[1], (long long)p->d[0], (long long)p->d[1],
                 (long long)p->p[0], (long long)p->p[1]);
        return false;
    }
    g->OH = sh / p->s[0] + 1;
    g->OW = sw / p->s[1] + 1;
    return true;
}

#define INTS2(a) ((ct_attr_ints2){2, {(a)[0], (a)[1]}})

/* im2col's schema attributes: kernel_size, dilation, padding, stride (col2im's after
 * its output_size). */
static ct_im2col_attrs attrs_of(const fold_params *p) {
    return (ct_im2col_attrs){INTS2(p->k), INTS2(p->d), INTS2(p->p), INTS2(p->s)};
}

/* The backward's options from a node's attributes: im2col's in node->attrs, col2im's
 * (too big for it) in extra. */
static ct_fold_options load(const ct_node *n) {
    const ct_im2col_attrs *a = &n->attrs.im2col;
    ct_im2col_attrs c;
    if (n->op == CT_OP_col2im) {
        const ct_col2im_attrs *ca = n->extra;
        c = (ct_im2col_attrs){ca->kernel_size, ca->dilation, ca->padding, ca->stride};
        a = &c;
    }
    return (ct_fold_options){.kernel_size = CT_DIMS(a->kernel_size.d[0], a->kernel_size.d[1]),
                             .dilation = CT_DIMS(a->dilation.d[0], a->dilation.d[1]),
                             .padding = CT_DIMS(a->padding.d[0], a->padding.d[1]),
                             .stride = CT_DIMS(a->stride.d[0], a->stride.d[1])};
}

ct_tensor *ct_im2col_with(ct_tensor *x, ct_fold_options o) {
    if (!ct_alive("ct_im2col", 1, x)) return NULL;
    const char *op = "ct_im2col";
    fold_params p;
    if (!x || !params_of(op, o, &p)) return NULL;
    if (x->ndim != 4) {
        char s[CT_SHAPE_STR_MAX];
        ct_error("%s: expected a 4D input [N, C, H, W] (got %s)", op,
                 ct_shape_str(x->ndim, x->sizes, s));
        return NULL;
    }
    ct_conv_geom g;
    if (!geometry(op, &p, x->sizes[0], x->sizes[1], x->sizes[2], x->sizes[3], &g)) return NULL;
    ct_shape shape = CT_SHAPE(g.N, g.C * g.KH * g.KW, g.OH * g.OW);
    ct_tensor *out = ct_conv_run(CT_CONV_IM2COL, &g, x, x, NULL, shape, x->dtype);
    if (!out) return NULL;
    ct_node *n = ct_record1(CT_OP_im2col, out, 1, &x);
    ct_im2col_attrs a = attrs_of(&p);
    if (n) n->attrs.im2col = a;
    CT_TRACE_ATTRS(CT_OP_im2col, 1, &x, 1, &out, &a);
    return ct_ret(out);
}

ct_tensor *ct_col2im_with(ct_tensor *cols, ct_dims output_size, ct_fold_options o) {
    if (!ct_alive("ct_col2im", 1, cols)) return NULL;
    const char *op = "ct_col2im";
    fold_params p;
    int64_t hw[2];
    if (!cols || !params_of(op, o, &p) || !pair_of(op, "output_size", output_size, 0, hw))
        return NULL;
    if (cols->ndim != 3) {
        char s[CT_SHAPE_STR_MAX];
        ct_error("%s: expected a 3D input [N, C * kh * kw, L] (got %s)", op,
                 ct_shape_str(cols->ndim, cols->sizes, s));
        return NULL;
    }
    int64_t kk = p.k[0] * p.k[1];
    if (cols->sizes[1] % kk) {
        ct_error("%s: Expected size of input's dimension 1 to be divisible by the product of "
                 "kernel_size, but got input.size(1)=%lld and kernel_size=(%lld, %lld).", op,
                 (long long)cols->sizes[1], (long long)p.k[0], (long long)p.k[1]);
        return NULL;
    }
    ct_conv_geom g;
    if (!geometry(op, &p, cols->sizes[0], cols->sizes[1] / kk, hw[0], hw[1], &g)) return NULL;
    if (cols->sizes[2] != g.OH * g.OW) {
        ct_error("%s: Given output_size=(%lld, %lld), expected size of input's dimension 2 to "
                 "match the calculated number of sliding blocks %lld * %lld = %lld, but got "
                 "input.size(2)=%lld.", op, (long long)hw[0], (long long)hw[1], (long long)g.OH,
                 (long long)g.OW, (long long)(g.OH * g.OW), (long long)cols->sizes[2]);
        return NULL;
    }
    ct_tensor *out = ct_conv_run(CT_CONV_COL2IM, &g, cols, cols, NULL,
                                 CT_SHAPE(g.N, g.C, g.H, g.W), cols->dtype);
    if (!out) return NULL;
    ct_node *n = ct_record1(CT_OP_col2im, out, 1, &cols);
    ct_im2col_attrs f = attrs_of(&p);
    ct_col2im_attrs a = {INTS2(hw), f.kernel_size, f.dilation, f.padding, f.stride};
    if (n) {
        ct_col2im_attrs *saved = ct_malloc(sizeof *saved);
        if (saved) {
            *saved = a;
            n->extra = saved;
            n->extra_free = free;
        } else {
            ct_error_fail_result("ct_col2im: out of memory recording the graph");
        }
    }
    CT_TRACE_ATTRS(CT_OP_col2im, 1, &cols, 1, &out, &a);
    return ct_ret(out);
}

bool im2col_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_col2im_with(go[0], CT_DIMS(n->in_meta[0].sizes[2], n->in_meta[0].sizes[3]), load(n))) != NULL;
}

bool col2im_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_im2col_with(go[0], load(n))) != NULL;
}
