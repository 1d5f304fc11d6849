/* Pooling (max, avg, adaptive) and interpolation (nearest, bilinear) over the last
 * two dims.  Forward and backward run kernels (src/cpu/pool.c); double backward is
 * not implemented and fails with an error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/node.h"
#include "cpu/pool.h"
#include "ops/internal.h"

/* Node iargs: kernel, stride, padding, dilation (2 each), ceil_mode, count_include_pad,
 * divisor; upsampling: align_corners.  args: the scale factors given (0: none). */
enum { IA_K = 0, IA_S = 2, IA_P = 4, IA_D = 6, IA_CEIL = 8, IA_INCL = 9, IA_DIV = 10 };

typedef struct {
    int64_t k[2], s[2], p[2], d[2];
    bool ceil_mode, count_include_pad;
    int64_t divisor;
} pool_params;

/* Window tables of one dim (I inputs, O outputs) for pooling with p's dim i. */
static void pool_windows(const pool_params *p, int i, bool is_max, int64_t I, int64_t O,
                         ct_pool_win *w) {
    for (int64_t o = 0; o < O; o++) {
        int64_t start = o * p->s[i] - p->p[i];
        if (is_max) {
            int64_t lo = start, hi = start + (p->k[i] - 1) * p->d[i] + 1;
            while (lo < 0) lo += p->d[i];
            w[o] = (ct_pool_win){lo, hi < I ? hi : I, p->d[i], 0};
        } else {
            int64_t end = start + p->k[i] < I + p->p[i] ? start + p->k[i] : I + p->p[i];
            w[o] = (ct_pool_win){start > 0 ? start : 0, end < I ? end : I, 1, end - start};
        }
    }
}

static void adaptive_windows(int64_t I, int64_t O, ct_pool_win *w) {
    for (int64_t o = 0; o < O; o++) {
        int64_t lo = o * I / O, hi = ((o + 1) * I + O - 1) / O;
        w[o] = (ct_pool_win){lo, hi, 1, hi - lo};
    }
}

/* Runs op's kernel: forward (x -> [planes..., OH, OW], indices when idx) or backward
 * (gy -> gx shaped like `shape`).  Returns an unregistered tensor of dtype dt. */
static ct_tensor *run(ct_op_id op, ct_pool_geom *g, bool backward, ct_tensor *in,
                      ct_tensor *idx_in, ct_shape shape, ct_dtype dt, ct_tensor **idx_out) {
    ct_dtype kd = ct_compute_dtype(dt);
    ct_pool_fn k = (ct_pool_fn)ct_kernel_for(op, in->storage->device, kd);
    if (!k) {
        if (kd != dt) {
            ct_clear_error();
            ct_kernel_for(op, in->storage->device, dt);
        }
        return NULL;
    }
    ct_tensor *A = ct_contiguous_as(in, kd);
    ct_tensor *out = A ? ct_tensor_new(shape, kd, in->storage->device) : NULL;
    ct_tensor *idx = NULL;
    if (out && idx_out) {
        idx = ct_tensor_new(shape, CT_I64, in->storage->device);
        if (!idx) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_tensor *I = out && idx_in ? ct_contiguous_as(idx_in, CT_I64) : NULL;
    if (out) {
        ct_pool_job job = {g, backward, ct_tensor_data(A), ct_tensor_data(out),
                           idx ? (int64_t *)ct_tensor_data(idx)
                               : I ? (int64_t *)ct_tensor_data(I) : NULL};
        k(&job);
        if (kd != dt) {
            ct_tensor *c = ct_cast_new(out, dt);
            ct_release(out);
            out = c;
        }
    }
    ct_release(A);
    ct_release(I);
    if (idx_out && out) *idx_out = idx;
    else ct_release(idx);
    return out;
}

/* 3-D [C, H, W] or 4-D [N, C, H, W] input, non-empty except in the batch dim. */
static bool check_input(const char *op, const ct_tensor *x) {
    if ((x->ndim != 3 && x->ndim != 4) || x->sizes[x->ndim - 1] == 0 ||
        x->sizes[x->ndim - 2] == 0 || x->sizes[x->ndim - 3] == 0) {
        char s[CT_SHAPE_STR_MAX];
        ct_error("%s: non-empty 3D or 4D (batch mode) tensor expected for input (got %s)", op,
                 ct_shape_str(x->ndim, x->sizes, s));
        return false;
    }
    return true;
}

/* x's shape with the last two dims replaced. */
static ct_shape with_hw(const ct_tensor *x, int64_t h, int64_t w) {
    ct_shape s = ct_shape_of(x);
    s.d[s.ndim - 2] = h;
    s.d[s.ndim - 1] = w;
    return s;
}

static ct_pool_geom geom_of(const ct_shape *in, int64_t OH, int64_t OW) {
    ct_pool_geom g = {.H = in->d[in->ndim - 2], .W = in->d[in->ndim - 1], .OH = OH, .OW = OW};
    g.planes = ct_shape_numel(in->ndim - 2, in->d);
    return g;
}

static bool pair(const char *op, const char *what, ct_dims d, int64_t dflt_a, int64_t dflt_b,
                 int64_t *out) {
    if (d.n == 0) {
        out[0] = dflt_a;
        out[1] = dflt_b;
        return true;
    }
    if (d.n == 1 || d.n == 2) {
        out[0] = d.d[0];
        out[1] = d.d[d.n - 1];
        return true;
    }
    ct_error("%s: %s must either be a single int, or a tuple of two ints (got %d values)", op,
             what, d.n);
    return false;
}

static bool pool_params_of(const char *op, ct_pool_options o, bool is_max, pool_params *p) {
    if (o.kernel_size.n == 0) {
        ct_error("%s: kernel_size is required", op);
        return false;
    }
    if (!pair(op, "kernel_size", o.kernel_size, 0, 0, p->k)) return false;
    if (!pair(op, "stride", o.stride, p->k[0], p->k[1], p->s) ||
        !pair(op, "padding", o.padding, 0, 0, p->p) ||
        !pair(op, "dilation", o.dilation, 1, 1, p->d))
        return false;
    if (!is_max && o.dilation.n) {
        ct_error("%s: dilation is not an option of average pooling", op);
        return false;
    }
    p->ceil_mode = o.ceil_mode;
    p->count_include_pad = !o.exclude_pad;
    p->divisor = o.divisor_override;
    for (int i = 0; i < 2; i++) {
        if (p->k[i] <= 0) {
            ct_error("%s: kernel size should be greater than zero, but got kernel_size=%lld", op,
                     (long long)p->k[i]);
            return false;
        }
        if (p->s[i] <= 0) {
            ct_error("%s: stride should not be zero (got %lld)", op, (long long)p->s[i]);
            return false;
        }
        if (p->d[i] <= 0) {
            ct_error("%s: dilation should be greater than zero (got %lld)", op, (long long)p->d[i]);
            return false;
        }
        if (p->p[i] < 0 || p->p[i] > p->k[i] / 2) {
            ct_error("%s: pad should be at most half of kernel size, but got pad=%lld and "
                     "kernel_size=%lld", op, (long long)p->p[i], (long long)p->k[i]);
            return false;
        }
    }
    if (o.divisor_override < 0) {
        ct_error("%s: divisor must be not zero (got %lld)", op, (long long)o.divisor_override);
        return false;
    }
    return true;
}

/* PyTorch's pooling_output_shape. */
static int64_t pool_out(int64_t I, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil) {
    int64_t num = I + 2 * pad - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil && (o - 1) * s >= I + pad) o--;
    return o;
}

static void save_pool_args(ct_node *n, const pool_params *p) {
    for (int i = 0; i < 2; i++) {
        n->iargs[IA_K + i] = p->k[i];
        n->iargs[IA_S + i] = p->s[i];
        n->iargs[IA_P + i] = p->p[i];
        n->iargs[IA_D + i] = p->d[i];
    }
    n->iargs[IA_CEIL] = p->ceil_mode;
    n->iargs[IA_INCL] = p->count_include_pad;
    n->iargs[IA_DIV] = p->divisor;
}

static pool_params load_pool_args(const ct_node *n) {
    pool_params p = {.ceil_mode = n->iargs[IA_CEIL], .count_include_pad = n->iargs[IA_INCL],
                     .divisor = n->iargs[IA_DIV]};
    for (int i = 0; i < 2; i++) {
        p.k[i] = n->iargs[IA_K + i];
        p.s[i] = n->iargs[IA_S + i];
        p.p[i] = n->iargs[IA_P + i];
        p.d[i] = n->iargs[IA_D + i];
    }
    return p;
}

/* Window tables for (H, W) -> (OH, OW); freed by the caller. */
static bool windows(ct_pool_geom *g, const pool_params *p, bool is_max, bool adaptive) {
    ct_pool_win *wh = malloc(sizeof *wh * (size_t)(g->OH + 1));
    ct_pool_win *ww = malloc(sizeof *ww * (size_t)(g->OW + 1));
    if (!wh || !ww) ct_fatal("out of memory in pooling");
    if (adaptive) {
        adaptive_windows(g->H, g->OH, wh);
        adaptive_windows(g->W, g->OW, ww);
    } else {
        pool_windows(p, 0, is_max, g->H, g->OH, wh);
        pool_windows(p, 1, is_max, g->W, g->OW, ww);
        g->count_include_pad = p->count_include_pad;
        g->divisor = p->divisor;
    }
    g->wh = wh;
    g->ww = ww;
    return true;
}

static void free_windows(ct_pool_geom *g) {
    free((void *)g->wh);
    free((void *)g->ww);
}

/* The forward of all four pools; indices returned (registered) when wanted. */
static ct_tensor *pool(ct_op_id op, const char *name, ct_tensor *x, const pool_params *p,
                       const int64_t *adaptive_out, ct_tensor **indices) {
    if (!x || !check_input(name, x)) return NULL;
    bool is_max = op == CT_OP_max_pool2d || op == CT_OP_adaptive_max_pool2d;
    int64_t H = x->sizes[x->ndim - 2], W = x->sizes[x->ndim - 1], OH, OW;
    if (adaptive_out) {
        OH = adaptive_out[0];
        OW = adaptive_out[1];
        if (OH < 0 || OW < 0) {
            ct_error("%s: output_size must be non-negative (got [%lld, %lld])", name,
                     (long long)OH, (long long)OW);
            return NULL;
        }
    } else {
        OH = pool_out(H, p->k[0], p->p[0], p->s[0], p->d[0], p->ceil_mode);
        OW = pool_out(W, p->k[1], p->p[1], p->s[1], p->d[1], p->ceil_mode);
        if (OH < 1 || OW < 1) {
            ct_error("%s: Given input size: (%lldx%lldx%lld). Calculated output size: "
                     "(%lldx%lldx%lld). Output size is too small", name,
                     (long long)x->sizes[x->ndim - 3], (long long)H, (long long)W,
                     (long long)x->sizes[x->ndim - 3], (long long)OH, (long long)OW);
            return NULL;
        }
    }
    ct_shape xs = ct_shape_of(x);
    ct_pool_geom g = geom_of(&xs, OH, OW);
    windows(&g, p, is_max, adaptive_out != NULL);
    ct_tensor *idx = NULL;
    ct_tensor *out = run(op, &g, false, x, NULL, with_hw(x, OH, OW), x->dtype,
                         is_max ? &idx : NULL);
    free_windows(&g);
    if (!out) return NULL;
    ct_node *n = ct_node_record(op, 1, &x, 1);
    if (n) {
        if (p) save_pool_args(n, p);
        if (idx) ct_node_save(n, 0, idx, false);
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    if (indices) *indices = ct_ret(idx);
    else ct_release(idx);
    return ct_ret(out);
}

ct_tensor *ct_max_pool2d_with_indices_with(ct_tensor *x, ct_tensor **indices, ct_pool_options o) {
    pool_params p;
    if (indices) *indices = NULL;
    if (!x || !pool_params_of("ct_max_pool2d", o, true, &p)) return NULL;
    return pool(CT_OP_max_pool2d, "ct_max_pool2d", x, &p, NULL, indices);
}

ct_tensor *ct_max_pool2d_with(ct_tensor *x, ct_pool_options o) {
    return ct_max_pool2d_with_indices_with(x, NULL, o);
}

ct_tensor *ct_avg_pool2d_with(ct_tensor *x, ct_pool_options o) {
    pool_params p;
    if (!x || !pool_params_of("ct_avg_pool2d", o, false, &p)) return NULL;
    return pool(CT_OP_avg_pool2d, "ct_avg_pool2d", x, &p, NULL, NULL);
}

static bool adaptive_size(const char *op, ct_dims size, const ct_tensor *x, int64_t *out) {
    if (!pair(op, "output_size", size, 0, 0, out)) return false;
    if (size.n == 0) {
        ct_error("%s: output_size is required", op);
        return false;
    }
    (void)x;
    return true;
}

ct_tensor *ct_adaptive_avg_pool2d(ct_tensor *x, ct_dims output_size) {
    int64_t os[2];
    if (!x || !adaptive_size("ct_adaptive_avg_pool2d", output_size, x, os)) return NULL;
    return pool(CT_OP_adaptive_avg_pool2d, "ct_adaptive_avg_pool2d", x, NULL, os, NULL);
}

ct_tensor *ct_adaptive_max_pool2d_with_indices(ct_tensor *x, ct_dims output_size,
                                               ct_tensor **indices) {
    int64_t os[2];
    if (indices) *indices = NULL;
    if (!x || !adaptive_size("ct_adaptive_max_pool2d", output_size, x, os)) return NULL;
    return pool(CT_OP_adaptive_max_pool2d, "ct_adaptive_max_pool2d", x, NULL, os, indices);
}

ct_tensor *ct_adaptive_max_pool2d(ct_tensor *x, ct_dims output_size) {
    return ct_adaptive_max_pool2d_with_indices(x, output_size, NULL);
}

/* Backward of the pools: gx from gy with the forward's windows (or indices). */
static bool pool_backward(ct_node *n, ct_tensor **go, ct_tensor **gi, bool is_max,
                          bool adaptive) {
    if (!ct_check_no_double_backward(ct_node_grad_name(n))) return false;
    ct_tensor *gy = go[0], *idx = NULL;
    if (is_max && !(idx = ct_node_saved(n, 0))) return false;
    const ct_input_meta *m = &n->in_meta[0];
    ct_shape xs = {.ndim = m->ndim};
    memcpy(xs.d, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    ct_pool_geom g = geom_of(&xs, gy->sizes[gy->ndim - 2], gy->sizes[gy->ndim - 1]);
    pool_params p = load_pool_args(n);
    if (!is_max) windows(&g, &p, false, adaptive);
    ct_tensor *gx = run(n->op, &g, true, gy, idx, xs, gy->dtype, NULL);
    if (!is_max) free_windows(&g);
    return (gi[0] = ct_ret(gx)) != NULL;
}

bool max_pool2d_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return pool_backward(n, go, gi, true, false);
}
bool adaptive_max_pool2d_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return pool_backward(n, go, gi, true, true);
}
bool avg_pool2d_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return pool_backward(n, go, gi, false, false);
}
bool adaptive_avg_pool2d_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return pool_backward(n, go, gi, false, true);
}

/* ---- interpolate ------------------------------------------------------- */

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
    ct_pool_geom g = geom_of(x_shape, OH, OW);
    int64_t *ib = malloc(sizeof(int64_t) * (size_t)(2 * (OH + OW) + 2));
    double *lb = malloc(sizeof(double) * (size_t)(OH + OW + 2));
    if (!ib || !lb) ct_fatal("out of memory in interpolate");
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
    ct_tensor *out = run(op, &g, backward, in, NULL, s, in->dtype, NULL);
    free(ib);
    free(lb);
    return out;
}

ct_tensor *ct_interpolate_with(ct_tensor *x, ct_interpolate_options o) {
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
        OH = (int64_t)floor((double)H * sf[0]);
        OW = (int64_t)floor((double)W * sf[1]);
    } else {
        int64_t os[2];
        if (!pair(op, "size", o.size, 0, 0, os)) return NULL;
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
        n->args[0] = sf[0];
        n->args[1] = sf[1];
        n->iargs[0] = o.align_corners;
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    return ct_ret(out);
}

static bool upsample_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    if (!ct_check_no_double_backward(ct_node_grad_name(n))) return false;
    const ct_input_meta *m = &n->in_meta[0];
    ct_shape xs = {.ndim = m->ndim};
    memcpy(xs.d, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    ct_tensor *gy = go[0];
    ct_tensor *gx = upsample(n->op, gy, &xs, gy->sizes[2], gy->sizes[3], n->iargs[0] != 0,
                             n->args, true);
    return (gi[0] = ct_ret(gx)) != NULL;
}

bool upsample_nearest2d_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return upsample_backward(n, go, gi);
}
bool upsample_bilinear2d_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return upsample_backward(n, go, gi);
}
