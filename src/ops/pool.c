/* Pooling (max, avg, adaptive) over the last two dims, and the helpers it shares
 * with interpolation (ops/pool_impl.h).  Forward and backward run kernels
 * (src/cpu/pool.c); a backward that builds a graph records itself as a *_backward op,
 * whose own backward is the forward op (or a gather by the max indices), so every
 * order is differentiable. */
#include <stdlib.h>
#include <string.h>

#include "autograd/node.h"
#include "ops/pool_impl.h"
#include "ops/trace.h"
#include "core/mem.h"

/* Saved tensor: max pooling's argmax indices. */
enum { SV_INDICES };

/* The pools' nodes hold their schema attributes (node->attrs.max_pool2d, .avg_pool2d);
 * a backward op's are its forward's, the same fields in the same order, so that a
 * backward node takes its forward's as they are (ct_pool_record_backward). */
_Static_assert(sizeof(ct_max_pool2d_attrs) == sizeof(ct_max_pool2d_backward_attrs),
               "max_pool2d_backward's attributes are max_pool2d's");
_Static_assert(sizeof(ct_avg_pool2d_attrs) == sizeof(ct_avg_pool2d_backward_attrs),
               "avg_pool2d_backward's attributes are avg_pool2d's");

typedef struct {
    int64_t k[2], s[2], p[2], d[2];
    bool ceil_mode, count_include_pad;
    int64_t divisor;
} pool_params;

#define INTS2(a) ((ct_attr_ints2){2, {(a)[0], (a)[1]}})

/* The schema attributes of max_pool2d (is_max) or avg_pool2d (and of their backwards). */
static void pool_attrs(bool is_max, const pool_params *p, ct_op_attrs *at) {
    if (is_max)
        at->max_pool2d = (ct_max_pool2d_attrs){INTS2(p->k), INTS2(p->s), INTS2(p->p),
                                               INTS2(p->d), p->ceil_mode};
    else
        at->avg_pool2d = (ct_avg_pool2d_attrs){INTS2(p->k), INTS2(p->s), INTS2(p->p), p->ceil_mode,
                                               p->count_include_pad, {p->divisor != 0, p->divisor}};
}

/* Reports a pooling call to the record hook, with its schema's attributes. */
static void trace_pool(ct_op_id op, ct_tensor *x, ct_tensor *out, ct_tensor *idx,
                       const pool_params *p, const int64_t *adaptive_out) {
    ct_tensor *outs[2] = {out, idx};
    ct_op_attrs at;
    switch (op) {
    case CT_OP_max_pool2d:
    case CT_OP_avg_pool2d:
        pool_attrs(op == CT_OP_max_pool2d, p, &at);
        CT_TRACE_ATTRS(op, 1, &x, op == CT_OP_max_pool2d ? 2 : 1, outs, &at);
        break;
    default: /* adaptive_max_pool2d's and adaptive_avg_pool2d's attributes are alike */
        at.adaptive_max_pool2d = (ct_adaptive_max_pool2d_attrs){INTS2(adaptive_out)};
        CT_TRACE_ATTRS(op, 1, &x, op == CT_OP_adaptive_max_pool2d ? 2 : 1, outs, &at);
        break;
    }
}

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

/* Runs op's kernel: forward (x -> [planes..., OH, OW], indices when idx_out),
 * backward (gy -> gx shaped like `shape`) or gather (max: in[idx_in] -> shape).
 * Returns an unregistered tensor of dtype dt. */
ct_tensor *ct_pool_run(ct_op_id op, ct_pool_geom *g, ct_pool_mode mode, ct_tensor *in,
                      ct_tensor *idx_in, ct_shape shape, ct_dtype dt, ct_tensor **idx_out) {
    ct_dtype kd = ct_compute_dtype_for(op, in->storage->device, dt);
    ct_pool_fn k = ct_compute_pool_kernel(op, in->storage->device, dt);
    if (!k) return NULL;
    ct_tensor *A = ct_contiguous_as(ct_ops[op].fn, in, kd);
    ct_tensor *out = A ? ct_tensor_new(ct_ops[op].fn, shape, kd, in->storage->device) : NULL;
    ct_tensor *idx = NULL;
    if (out && idx_out) {
        idx = ct_tensor_new(ct_ops[op].fn, shape, CT_I64, in->storage->device);
        if (!idx) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_tensor *I = out && idx_in ? ct_contiguous_as(ct_ops[op].fn, idx_in, CT_I64) : NULL;
    if (idx_in && !I) { /* widening saved indices failed (out of memory) */
        ct_release(out);
        out = NULL;
    }
    if (out) {
        ct_pool_job job = {g, mode == CT_POOL_BACKWARD, mode == CT_POOL_GATHER, ct_tensor_data(A),
                           ct_tensor_data(out),
                           idx ? (int64_t *)ct_tensor_data(idx)
                               : I ? (int64_t *)ct_tensor_data(I) : NULL};
        k(&job);
        out = ct_cast_result(ct_ops[op].fn, out, dt);
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

ct_pool_geom ct_pool_geom_of(const ct_shape *in, int64_t OH, int64_t OW) {
    ct_pool_geom g = {.H = in->d[in->ndim - 2], .W = in->d[in->ndim - 1], .OH = OH, .OW = OW};
    g.planes = ct_shape_numel(in->ndim - 2, in->d);
    return g;
}

bool ct_pool_pair(const char *op, const char *what, ct_dims d, int64_t dflt_a, int64_t dflt_b,
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

/* The geometry both poolings share (p's ceil_mode, count_include_pad and divisor set
 * by the caller), with defaults filled and checked. */
static bool pool_params_of(const char *op, ct_dims kernel_size, ct_dims stride, ct_dims padding,
                           ct_dims dilation, pool_params *p) {
    if (kernel_size.n == 0) {
        ct_error("%s: kernel_size is required", op);
        return false;
    }
    if (!ct_pool_pair(op, "kernel_size", kernel_size, 0, 0, p->k)) return false;
    if (!ct_pool_pair(op, "stride", stride, p->k[0], p->k[1], p->s) ||
        !ct_pool_pair(op, "padding", padding, 0, 0, p->p) ||
        !ct_pool_pair(op, "dilation", dilation, 1, 1, p->d))
        return false;
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
    if (p->divisor < 0) {
        ct_error("%s: divisor must be not zero (got %lld)", op, (long long)p->divisor);
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

static bool is_max_node(const ct_node *n) {
    return n->op == CT_OP_max_pool2d || n->op == CT_OP_max_pool2d_backward;
}

static void save_pool_args(ct_node *n, const pool_params *p) { pool_attrs(is_max_node(n), p, &n->attrs); }

static pool_params load_pool_args(const ct_node *n) {
    pool_params p = {0};
    const ct_attr_ints2 *k, *s, *pad;
    if (is_max_node(n)) {
        const ct_max_pool2d_attrs *a = &n->attrs.max_pool2d;
        k = &a->kernel_size, s = &a->stride, pad = &a->padding;
        memcpy(p.d, a->dilation.d, sizeof p.d);
        p.ceil_mode = a->ceil_mode;
    } else {
        const ct_avg_pool2d_attrs *a = &n->attrs.avg_pool2d;
        k = &a->kernel_size, s = &a->stride, pad = &a->padding;
        p.d[0] = p.d[1] = 1; /* average pooling has no dilation */
        p.ceil_mode = a->ceil_mode;
        p.count_include_pad = a->count_include_pad;
        p.divisor = a->divisor_override.some ? a->divisor_override.v : 0;
    }
    memcpy(p.k, k->d, sizeof p.k);
    memcpy(p.s, s->d, sizeof p.s);
    memcpy(p.p, pad->d, sizeof p.p);
    return p;
}

/* Window tables for (H, W) -> (OH, OW); freed by the caller. */
static bool windows(const char *op, ct_pool_geom *g, const pool_params *p, bool is_max,
                    bool adaptive) {
    ct_pool_win *wh = ct_malloc(sizeof *wh * (size_t)(g->OH + 1));
    ct_pool_win *ww = ct_malloc(sizeof *ww * (size_t)(g->OW + 1));
    if (!wh || !ww) {
        free(wh);
        free(ww);
        ct_error("%s: out of memory", op);
        return false;
    }
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

/* Saves max pooling's argmax for backward: when only backward reads it, in the
 * narrowest integer type that holds a plane's offsets (int16 for planes up to 181x181:
 * a quarter of PyTorch's int64 indices; the kernels widen them again), else idx. */
static void save_indices(ct_node *n, ct_tensor *idx, bool private_use, int64_t plane) {
    ct_trace_mute(); /* storage detail of the node, not an op of the program */
    ct_dtype dt = plane <= INT16_MAX ? CT_I16 : plane <= INT32_MAX ? CT_I32 : CT_I64;
    ct_tensor *narrow = private_use && dt != CT_I64 ? ct_to_dtype_new("max_pool2d", idx, dt) : NULL;
    ct_trace_unmute();
    ct_node_save(n, SV_INDICES, narrow ? narrow : idx, false);
    ct_release(narrow);
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
    ct_pool_geom g = ct_pool_geom_of(&xs, OH, OW);
    if (!windows(name, &g, p, is_max, adaptive_out != NULL)) return NULL;
    ct_tensor *idx = NULL;
    ct_tensor *out = ct_pool_run(op, &g, CT_POOL_FORWARD, x, NULL, with_hw(x, OH, OW), x->dtype,
                         is_max ? &idx : NULL);
    free_windows(&g);
    if (!out) return NULL;
    ct_node *n = ct_node_record(op, 1, &x, 1);
    if (n) {
        if (p) save_pool_args(n, p);
        if (idx) save_indices(n, idx, indices == NULL, g.H * g.W);
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    if (__builtin_expect(ct_trace_active != 0, 0)) trace_pool(op, x, out, idx, p, adaptive_out);
    if (indices) *indices = ct_ret(idx);
    else ct_release(idx);
    return ct_ret(out);
}

static ct_tensor *max_pool(ct_tensor *x, ct_tensor **indices, ct_max_pool2d_options o) {
    const char *op = "ct_max_pool2d";
    pool_params p = {.ceil_mode = o.ceil_mode, .count_include_pad = true};
    if (indices) *indices = NULL;
    if (!x || !pool_params_of(op, o.kernel_size, o.stride, o.padding, o.dilation, &p)) return NULL;
    return pool(CT_OP_max_pool2d, op, x, &p, NULL, indices);
}

ct_tensor *ct_max_pool2d_with_indices_with(ct_tensor *x, ct_tensor **indices,
                                           ct_max_pool2d_options o) {
    if (!ct_alive("ct_max_pool2d_with_indices", 1, x)) return NULL;
    return max_pool(x, indices, o);
}

ct_tensor *ct_max_pool2d_with(ct_tensor *x, ct_max_pool2d_options o) {
    if (!ct_alive("ct_max_pool2d", 1, x)) return NULL;
    if (o.return_indices) {
        ct_error("ct_max_pool2d: return_indices=True gives two results: call "
                 "ct_max_pool2d_with_indices");
        return NULL;
    }
    return max_pool(x, NULL, o);
}

ct_tensor *ct_avg_pool2d_with(ct_tensor *x, ct_avg_pool2d_options o) {
    if (!ct_alive("ct_avg_pool2d", 1, x)) return NULL;
    pool_params p = {.ceil_mode = o.ceil_mode, .count_include_pad = o.count_include_pad,
                     .divisor = o.divisor_override};
    if (!x || !pool_params_of("ct_avg_pool2d", o.kernel_size, o.stride, o.padding, CT_DIMS(), &p))
        return NULL;
    return pool(CT_OP_avg_pool2d, "ct_avg_pool2d", x, &p, NULL, NULL);
}

static bool adaptive_size(const char *op, ct_dims size, const ct_tensor *x, int64_t *out) {
    if (!ct_pool_pair(op, "output_size", size, 0, 0, out)) return false;
    if (size.n == 0) {
        ct_error("%s: output_size is required", op);
        return false;
    }
    (void)x;
    return true;
}

ct_tensor *ct_adaptive_avg_pool2d(ct_tensor *x, ct_dims output_size) {
    if (!ct_alive("ct_adaptive_avg_pool2d", 1, x)) return NULL;
    int64_t os[2];
    if (!x || !adaptive_size("ct_adaptive_avg_pool2d", output_size, x, os)) return NULL;
    return pool(CT_OP_adaptive_avg_pool2d, "ct_adaptive_avg_pool2d", x, NULL, os, NULL);
}

ct_tensor *ct_adaptive_max_pool2d_with_indices(ct_tensor *x, ct_dims output_size,
                                               ct_tensor **indices) {
    if (!ct_alive("ct_adaptive_max_pool2d_with_indices", 1, x)) return NULL;
    int64_t os[2];
    if (indices) *indices = NULL;
    if (!x || !adaptive_size("ct_adaptive_max_pool2d", output_size, x, os)) return NULL;
    return pool(CT_OP_adaptive_max_pool2d, "ct_adaptive_max_pool2d", x, NULL, os, indices);
}

ct_tensor *ct_adaptive_max_pool2d(ct_tensor *x, ct_dims output_size) {
    if (!ct_alive("ct_adaptive_max_pool2d", 1, x)) return NULL;
    return ct_adaptive_max_pool2d_with_indices(x, output_size, NULL);
}

/* The op that a forward op's backward records (for double backward). */
static ct_op_id backward_op(ct_op_id op) {
    switch (op) {
    case CT_OP_max_pool2d: return CT_OP_max_pool2d_backward;
    case CT_OP_adaptive_max_pool2d: return CT_OP_adaptive_max_pool2d_backward;
    case CT_OP_avg_pool2d: return CT_OP_avg_pool2d_backward;
    case CT_OP_adaptive_avg_pool2d: return CT_OP_adaptive_avg_pool2d_backward;
    case CT_OP_upsample_nearest2d: return CT_OP_upsample_nearest2d_backward;
    default: return CT_OP_upsample_bilinear2d_backward;
    }
}

/* Records gx = backward(gy) as op bop (when building a graph), with the forward
 * node's arguments and indices: gx is linear in gy, and its backward applies the
 * forward (or, for max, the gather by indices) to the incoming gradient. */
void ct_pool_record_backward(const ct_node *fwd, ct_tensor *gy, ct_tensor *gx, ct_tensor *idx) {
    ct_node *b = ct_node_record(backward_op(fwd->op), 1, &gy, 1);
    if (!b) return;
    b->attrs = fwd->attrs; /* a pool's backward op has its forward's attributes */
    b->state = fwd->state;
    if (idx) ct_node_save(b, SV_INDICES, idx, false);
    ct_node_set_output(b, gx, 0);
    ct_release(b);
}

ct_shape ct_meta_shape(const ct_input_meta *m) {
    ct_shape s = {.ndim = m->ndim};
    memcpy(s.d, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    return s;
}

/* Reports a pooling backward (gx from gy; the input itself is not kept: None). */
static void trace_pool_backward(ct_op_id fwd, ct_tensor *gy, ct_tensor *gx, ct_tensor *idx,
                                const pool_params *p) {
    ct_tensor *in[3] = {gy, NULL, idx};
    ct_op_id op = backward_op(fwd);
    ct_op_attrs at;
    switch (fwd) {
    case CT_OP_max_pool2d:
    case CT_OP_avg_pool2d:
        pool_attrs(fwd == CT_OP_max_pool2d, p, &at); /* the backward's are the forward's */
        CT_TRACE_ATTRS(op, fwd == CT_OP_max_pool2d ? 3 : 2, in, 1, &gx, &at);
        break;
    case CT_OP_adaptive_max_pool2d: CT_TRACE(op, 3, in, 1, &gx); break;
    default: CT_TRACE(op, 2, in, 1, &gx); break;
    }
}

/* Backward of the pools: gx from gy with the forward's windows (or indices). */
static bool pool_backward(ct_node *n, ct_tensor **go, ct_tensor **gi, bool is_max,
                          bool adaptive) {
    ct_tensor *gy = go[0], *idx = NULL;
    if (is_max && !(idx = ct_node_saved(n, SV_INDICES))) return false;
    ct_shape xs = ct_meta_shape(&n->in_meta[0]);
    ct_pool_geom g = ct_pool_geom_of(&xs, gy->sizes[gy->ndim - 2], gy->sizes[gy->ndim - 1]);
    pool_params p = load_pool_args(n);
    if (!is_max && !windows(ct_ops[n->op].fn, &g, &p, false, adaptive)) return false;
    ct_tensor *gx = ct_pool_run(n->op, &g, CT_POOL_BACKWARD, gy, idx, xs, gy->dtype, NULL);
    if (!is_max) free_windows(&g);
    if (gx) ct_pool_record_backward(n, gy, gx, idx);
    if (gx && __builtin_expect(ct_trace_active != 0, 0)) trace_pool_backward(n->op, gy, gx, idx, &p);
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

/* Double backward of max pooling: gather the incoming gradient at the indices,
 * recorded as the forward op (whose backward scatters by the same indices). */
static bool gather_backward(ct_node *n, ct_tensor **go, ct_tensor **gi, ct_op_id fwd) {
    ct_tensor *gg = go[0], *idx = ct_node_saved(n, SV_INDICES);
    if (!idx) return false;
    ct_shape xs = ct_shape_of(gg), ys = ct_meta_shape(&n->in_meta[0]);
    ct_pool_geom g = ct_pool_geom_of(&xs, ys.d[ys.ndim - 2], ys.d[ys.ndim - 1]);
    ct_tensor *r = ct_pool_run(fwd, &g, CT_POOL_GATHER, gg, idx, ys, gg->dtype, NULL);
    if (!r) return false;
    ct_node *b = ct_node_record(fwd, 1, &gg, 1);
    if (b) {
        b->attrs = n->attrs; /* max_pool2d_backward's attributes are max_pool2d's */
        b->state = n->state;
        ct_node_save(b, SV_INDICES, idx, false);
        ct_node_set_output(b, r, 0);
        ct_release(b);
    }
    return (gi[0] = ct_ret(r)) != NULL;
}

bool max_pool2d_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return gather_backward(n, go, gi, CT_OP_max_pool2d);
}
bool adaptive_max_pool2d_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return gather_backward(n, go, gi, CT_OP_adaptive_max_pool2d);
}

/* Average pooling's backward is linear: its adjoint is the forward pooling. */
bool avg_pool2d_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    pool_params p = load_pool_args(n);
    ct_avg_pool2d_options o = {.kernel_size = CT_DIMS(p.k[0], p.k[1]),
                               .stride = CT_DIMS(p.s[0], p.s[1]),
                               .padding = CT_DIMS(p.p[0], p.p[1]), .ceil_mode = p.ceil_mode,
                               .count_include_pad = p.count_include_pad,
                               .divisor_override = p.divisor};
    return (gi[0] = ct_avg_pool2d_with(go[0], o)) != NULL;
}

bool adaptive_avg_pool2d_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_shape ys = ct_meta_shape(&n->in_meta[0]);
    return (gi[0] = ct_adaptive_avg_pool2d(go[0], CT_DIMS(ys.d[ys.ndim - 2], ys.d[ys.ndim - 1]))) != NULL;
}
