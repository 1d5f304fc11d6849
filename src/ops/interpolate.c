/* Interpolation (F.interpolate, nearest and bilinear) over the last two dims of
 * [N, C, H, W]: source-index tables per dim, kernels in src/cpu/pool.c.  Backward
 * and double backward as for pooling (see src/ops/pool.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/node.h"
#include "ops/pool_impl.h"
#include "ops/trace.h"
#include "core/mem.h"

/* Source index tables of one dim; scale is the given scale factor (0: none). */
static void upsample_tables(bool bilinear, bool align, int64_t I, int64_t O, double sf,
                            int64_t *i0, int64_t *i1, double *l1) {
    if (!bilinear) {
        /* PyTorch's nearest_idx, in float like its kernel. */
        float scale = sf > 0 ? (float)(1.0 / sf) : (float)I / (float)O;
        for (int64_t o = 0; o < O; o++) {
            int64_t s = O == I ? o : O == 2 * I ? o >> 1 : (int64_t)floorf((float)o * scale);
            i0[o] = s < I - 1 ? s : I - 1;
        }
        return;
    }
    double scale = align ? (O > 1 ? (double)(I - 1) / (double)(O - 1) : 0)
                         : (sf > 0 ? 1.0 / sf : (double)I / (double)O);
    for (int64_t o = 0; o < O; o++) {
        double src = align ? scale * (double)o : scale * ((double)o + 0.5) - 0.5;
        if (src < 0) src = 0;
        int64_t a = (int64_t)src;
        if (a > I - 1) a = I - 1;
        i0[o] = a;
        i1[o] = a + (a < I - 1 ? 1 : 0);
        l1[o] = src - (double)a;
    }
}

static ct_tensor *upsample(ct_op_id op, ct_tensor *in, const ct_shape *x_shape, int64_t OH,
                           int64_t OW, bool align, const double *sf, bool backward) {
    bool bil = op == CT_OP_upsample_bilinear2d;
    ct_pool_geom g = ct_pool_geom_of(x_shape, OH, OW);
    int64_t *ib = ct_malloc(sizeof(int64_t) * (size_t)(2 * (OH + OW) + 2));
    double *lb = ct_malloc(sizeof(double) * (size_t)(OH + OW + 2));
    if (!ib || !lb) {
        free(ib);
        free(lb);
        ct_error("ct_interpolate: out of memory");
        return NULL;
    }
    g.ih0 = ib;
    g.ih1 = ib + OH;
    g.iw0 = ib + 2 * OH;
    g.iw1 = ib + 2 * OH + OW;
    g.lh1 = lb;
    g.lw1 = lb + OH;
    upsample_tables(bil, align, g.H, OH, sf[0], ib, ib + OH, lb);
    upsample_tables(bil, align, g.W, OW, sf[1], ib + 2 * OH, ib + 2 * OH + OW, lb + OH);
    ct_shape s = *x_shape;
    if (!backward) {
        s.d[s.ndim - 2] = OH;
        s.d[s.ndim - 1] = OW;
    }
    ct_tensor *out = ct_pool_run(op, &g, backward ? CT_POOL_BACKWARD : CT_POOL_FORWARD, in, NULL, s, in->dtype, NULL);
    free(ib);
    free(lb);
    return out;
}

ct_tensor *ct_interpolate_with(ct_tensor *x, ct_interpolate_options o) {
    if (!ct_alive("ct_interpolate", 1, x)) return NULL;
    const char *op = "ct_interpolate";
    if (!x) return NULL;
    if (x->ndim != 4) {
        ct_error("%s: expected a 4D input [N, C, H, W] (got %dD)", op, x->ndim);
        return NULL;
    }
    if (o.mode != CT_INTERP_NEAREST && o.mode != CT_INTERP_BILINEAR) {
        ct_error("%s: unknown mode %d (expected CT_INTERP_NEAREST or CT_INTERP_BILINEAR)", op,
                 (int)o.mode);
        return NULL;
    }
    if (o.align_corners && o.mode == CT_INTERP_NEAREST) {
        ct_error("%s: align_corners option can only be set with the interpolating modes: "
                 "linear | bilinear | bicubic | trilinear", op);
        return NULL;
    }
    bool has_scale = o.scale_factor[0] > 0 || o.scale_factor[1] > 0;
    if (o.size.n == 0 && !has_scale) {
        ct_error("%s: either size or scale_factor should be defined", op);
        return NULL;
    }
    if (o.size.n && has_scale) {
        ct_error("%s: only one of size or scale_factor should be defined", op);
        return NULL;
    }
    int64_t H = x->sizes[2], W = x->sizes[3], OH, OW;
    double sf[2] = {0, 0};
    if (has_scale) {
        sf[0] = o.scale_factor[0];
        sf[1] = o.scale_factor[1] > 0 ? o.scale_factor[1] : o.scale_factor[0];
        double oh = floor((double)H * sf[0]), ow = floor((double)W * sf[1]);
        if (!(oh < 0x1p62 && ow < 0x1p62)) { /* infinity or NaN included */
            ct_error("%s: scale_factor (%g, %g) gives an output size too large (%g x %g)", op,
                     sf[0], sf[1], oh, ow);
            return NULL;
        }
        OH = (int64_t)oh;
        OW = (int64_t)ow;
    } else {
        int64_t os[2];
        if (!ct_pool_pair(op, "size", o.size, 0, 0, os)) return NULL;
        OH = os[0];
        OW = os[1];
    }
    if (OH <= 0 || OW <= 0 || H <= 0 || W <= 0) {
        char s[CT_SHAPE_STR_MAX];
        ct_error("%s: Input and output sizes should be greater than 0, but got input (H: %lld, "
                 "W: %lld) output (H: %lld, W: %lld) for input %s", op, (long long)H,
                 (long long)W, (long long)OH, (long long)OW, ct_shape_str(x->ndim, x->sizes, s));
        return NULL;
    }
    ct_op_id id = o.mode == CT_INTERP_BILINEAR ? CT_OP_upsample_bilinear2d : CT_OP_upsample_nearest2d;
    ct_shape xs = ct_shape_of(x);
    ct_tensor *out = upsample(id, x, &xs, OH, OW, o.align_corners, sf, false);
    if (!out) return NULL;
    ct_node *n = ct_node_record(id, 1, &x, 1);
    if (n) {
        n->state.upsample = (ct_upsample_state){{sf[0], sf[1]}, o.align_corners};
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    if (__builtin_expect(ct_trace_active != 0, 0)) {
        const int64_t osz[2] = {OH, OW};
        const double scales[2] = {sf[0], sf[1]};
        int ns = sf[0] != 0 ? 2 : -1; /* scale factors given, or None */
        if (id == CT_OP_upsample_bilinear2d)
            CT_TRACE_ATTRS(id, 1, &x, 1, &out,
                           &(ct_upsample_bilinear2d_attrs){ct_attr_dims(2, osz), o.align_corners,
                                                           ct_attr_floats_of(ns, scales)});
        else
            CT_TRACE_ATTRS(id, 1, &x, 1, &out,
                           &(ct_upsample_nearest2d_attrs){ct_attr_dims(2, osz),
                                                          ct_attr_floats_of(ns, scales)});
    }
    return ct_ret(out);
}

static bool upsample_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_shape xs = ct_meta_shape(&n->in_meta[0]);
    ct_tensor *gy = go[0];
    const ct_upsample_state *u = &n->state.upsample;
    ct_tensor *gx = upsample(n->op, gy, &xs, gy->sizes[2], gy->sizes[3], u->align_corners,
                             u->scale_factors, true);
    if (gx) ct_pool_record_backward(n, gy, gx, NULL);
    if (gx && __builtin_expect(ct_trace_active != 0, 0)) {
        ct_op_id op = n->op == CT_OP_upsample_bilinear2d ? CT_OP_upsample_bilinear2d_backward
                                                         : CT_OP_upsample_nearest2d_backward;
        const int64_t osz[2] = {gy->sizes[2], gy->sizes[3]};
        int ns = u->scale_factors[0] != 0 ? 2 : -1;
        ct_dims os = ct_attr_dims(2, osz), is = ct_attr_dims(xs.ndim, xs.d);
        ct_attr_floats sc = ct_attr_floats_of(ns, u->scale_factors);
        if (op == CT_OP_upsample_bilinear2d_backward)
            CT_TRACE_ATTRS(op, 1, &gy, 1, &gx,
                           &(ct_upsample_bilinear2d_backward_attrs){os, is, u->align_corners, sc});
        else
            CT_TRACE_ATTRS(op, 1, &gy, 1, &gx, &(ct_upsample_nearest2d_backward_attrs){os, is, sc});
    }
    return (gi[0] = ct_ret(gx)) != NULL;
}

bool upsample_nearest2d_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return upsample_backward(n, go, gi);
}
bool upsample_bilinear2d_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return upsample_backward(n, go, gi);
}

/* Upsampling's backward is linear: its adjoint is the forward interpolation with the
 * same size or scale factors. */
static bool upsample_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi,
                                       ct_interp_mode mode) {
    ct_shape ys = ct_meta_shape(&n->in_meta[0]);
    const ct_upsample_state *u = &n->state.upsample;
    ct_interpolate_options o = {.mode = mode, .align_corners = u->align_corners};
    if (u->scale_factors[0] > 0) {
        o.scale_factor[0] = u->scale_factors[0];
        o.scale_factor[1] = u->scale_factors[1];
    } else {
        o.size = CT_DIMS(ys.d[2], ys.d[3]);
    }
    return (gi[0] = ct_interpolate_with(go[0], o)) != NULL;
}

bool upsample_nearest2d_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return upsample_backward_backward(n, go, gi, CT_INTERP_NEAREST);
}
bool upsample_bilinear2d_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return upsample_backward_backward(n, go, gi, CT_INTERP_BILINEAR);
}
