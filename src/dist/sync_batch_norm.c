/* nn.SyncBatchNorm: BatchNorm whose training-mode statistics are those of the whole
 * process group's batch (PyTorch 1.13's torch/nn/modules/_functions.py, on the CPU).
 *
 * Forward: every rank computes its slice's per-channel mean and sum of squared
 * deviations (M2) with its element count, all-gathers them in float64, and merges
 * them in rank order with Chan's pairwise formula (the parallel Welford merge of
 * PyTorch's batch_norm_gather_stats_with_counts), so unequal slices are weighted by
 * their counts and every rank gets bitwise the same statistics.  The running
 * statistics take the group's mean and unbiased variance.  Backward: the local
 * sum(dy) and sum(dy * (x - mean)) are all-reduced (float64, rank order) for the
 * input gradient; the weight and bias gradients stay the rank's own partial sums,
 * which DDP's gradient averaging turns into the group's (as in PyTorch).
 *
 * PyTorch gathers (mean, invstd) in the input's dtype and recovers the variance as
 * 1 / invstd^2 - eps; gathering M2 in float64 keeps the variance exact to the input's
 * rounding.  Outside synchronised training (eval mode, a world of one, a rank outside
 * the group) the module runs ct_batch_norm itself, as PyTorch falls back to
 * F.batch_norm. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "ctorch/distributed.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/object.h"
#include "nn/batch_norm.h"

typedef struct {
    ct_bn_state bn;          /* first: BatchNorm's options (ct_nn_batch_norm_like) */
    ct_process_group *group; /* NULL: the world */
} sbn_state;

/* What one synchronised forward is given (the function's data during forward). */
typedef struct {
    ct_process_group *group;
    ct_tensor *rm, *rv; /* running statistics to update, or NULL */
    double eps, momentum;
} sync_args;

/* What backward needs besides the saved tensors (the node's data). */
typedef struct {
    ct_process_group *group;
    int64_t count; /* elements per channel over the group */
    bool affine;   /* inputs x, weight, bias (else x alone) */
} sync_ctx;

/* The ranks that share statistics with this one: 1 without a process group, -1 for a
 * rank outside `group` (PyTorch's get_world_size is -1 there: no synchronisation). */
static int group_world(ct_process_group *group) {
    if (!ct_dist_is_initialized()) return 1;
    if (!group) return ct_dist_world_size();
    return ct_dist_group_rank(group) < 0 ? -1 : ct_dist_group_size(group);
}

/* The dims statistics reduce over (all but the channel dim 1) and the shape
 * [1, C, 1, ...] that broadcasts a per-channel tensor over x. */
static ct_dims reduce_dims(int nd) {
    ct_dims d = {.n = 1, .d = {0}};
    for (int i = 2; i < nd; i++) d.d[d.n++] = i;
    return d;
}
static ct_shape channel_shape(int nd, int64_t c) {
    ct_shape s = {.ndim = nd};
    for (int i = 0; i < nd; i++) s.d[i] = i == 1 ? c : 1;
    return s;
}

/* The dtype the elementwise work runs in: x's, float32 for float16 / bfloat16. */
static ct_dtype compute_dtype(ct_dtype dt) { return dt == CT_F16 || dt == CT_BF16 ? CT_F32 : dt; }

/* v[0..c) as a tensor of dtype dt on x's device, shaped to broadcast over x (nd dims). */
static ct_tensor *per_channel(const double *v, int64_t c, ct_dtype dt, const ct_tensor *x) {
    ct_tensor *t = ct_tensor_from(v, CT_F64, CT_SHAPE(c), .dtype = dt, .device = ct_device_of(x));
    return t ? ct_reshape(t, channel_shape(ct_ndim(x), c)) : NULL;
}

/* t (c elements) read into v as doubles; 0 or -1. */
static int read_channels(const ct_tensor *t, double *v, int64_t c) {
    return ct_copy_to_buffer(t, v, CT_F64, sizeof(double) * (size_t)c);
}

/* Puts a head (printf-formatted) in front of a failed collective's error. */
__attribute__((format(printf, 1, 2))) static void collective_failed(const char *fmt, ...) {
    char cause[512], head[256];
    snprintf(cause, sizeof cause, "%s", ct_last_error() ? ct_last_error() : "failed");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    ct_error("%s: %s", head, cause);
}

/* ---- the autograd function ------------------------------------------------------ */

enum { SV_X, SV_MEAN, SV_RSTD, SV_W };

/* Merges the gathered [world, 2C + 1] rows (mean, M2, count) in rank order into the
 * group's mean and M2; returns the group's count.  Ranks with no elements are left
 * out (PyTorch's count mask). */
static int64_t merge_stats(const double *rows, int world, int64_t c, double *mean, double *m2) {
    double n = 0;
    for (int64_t k = 0; k < c; k++) mean[k] = m2[k] = 0;
    for (int r = 0; r < world; r++) {
        const double *row = rows + (size_t)r * (size_t)(2 * c + 1);
        double nr = row[2 * c];
        if (nr < 1) continue;
        double tot = n + nr;
        for (int64_t k = 0; k < c; k++) {
            double delta = row[k] - mean[k];
            mean[k] += delta * (nr / tot);
            m2[k] += row[c + k] + delta * delta * (n * nr / tot);
        }
        n = tot;
    }
    return (int64_t)n;
}

/* rm = momentum * batch + (1 - momentum) * rm, in float64, written back in rm's dtype. */
static int update_running(ct_tensor *rm, const double *batch, int64_t c, double momentum,
                          double *tmp, const ct_tensor *x) {
    if (!rm) return 0;
    if (read_channels(rm, tmp, c)) return -1;
    for (int64_t k = 0; k < c; k++) tmp[k] = momentum * batch[k] + (1 - momentum) * tmp[k];
    ct_tensor *t = ct_tensor_from(tmp, CT_F64, CT_SHAPE(c), .device = ct_device_of(x));
    return t && ct_copy_(rm, t) ? 0 : -1;
}

static ct_tensor *sync_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    const sync_args *a = ct_ctx_data(ctx);
    ct_tensor *x = in[0], *w = n > 1 ? in[1] : NULL, *b = n > 2 ? in[2] : NULL;
    int nd = ct_ndim(x), world = group_world(a->group);
    int64_t c = ct_size(x, 1), local = c ? ct_numel(x) / c : 0;
    ct_dims dims = reduce_dims(nd);
    ct_dtype cd = compute_dtype(ct_dtype_of(x));
    ct_device dev = ct_device_of(x);
    /* mean, m2 (then rstd), scratch: c each; the gathered rows */
    double *buf = ct_malloc(sizeof(double) * (size_t)(3 * c + (int64_t)world * (2 * c + 1)));
    if (!buf) {
        ct_error("SyncBatchNorm: out of memory");
        return NULL;
    }
    double *mean = buf, *m2 = buf + c, *tmp = buf + 2 * c, *rows = buf + 3 * c;
    ct_tensor *y = NULL;
    /* this rank's [mean, M2, count] (zeros for an empty slice, which still takes part) */
    ct_tensor *xs = ct_to(x, .dtype = cd), *mine;
    if (local > 0) {
        ct_tensor *m = ct_mean(xs, .dims = dims, .dtype = CT_F64);
        ct_tensor *v = ct_to(ct_var(xs, .dims = dims, .correction = CT_SOME(0)), .dtype = CT_F64);
        ct_tensor *cnt = ct_full(CT_SHAPE(1), (double)local, .dtype = CT_F64, .device = dev);
        mine = ct_cat(3, ((ct_tensor *[]){m, ct_mul_scalar(v, (double)local), cnt}), 0);
    } else {
        mine = ct_zeros(CT_SHAPE(2 * c + 1), .dtype = CT_F64, .device = dev);
    }
    ct_tensor *all = ct_empty(CT_SHAPE(world, 2 * c + 1), .dtype = CT_F64, .device = dev);
    if (!mine || !all) goto done;
    if (ct_dist_all_gather_into_tensor(all, mine, .group = a->group)) {
        collective_failed("SyncBatchNorm: gathering the statistics of %lld channels (every rank's "
                          "input needs as many)",
                          (long long)c);
        goto done;
    }
    if (read_channels(all, rows, (int64_t)world * (2 * c + 1))) goto done;
    int64_t count = merge_stats(rows, world, c, mean, m2);
    if (count <= 1) {
        ct_error("SyncBatchNorm: Expected more than 1 value per channel when training, got %lld "
                 "over the process group",
                 (long long)count);
        goto done;
    }
    for (int64_t k = 0; k < c; k++) tmp[k] = m2[k] / (double)(count - 1);
    if (update_running(a->rm, mean, c, a->momentum, rows, x) ||
        update_running(a->rv, tmp, c, a->momentum, rows, x))
        goto done;
    /* y: BatchNorm's fused kernel in eval mode, with the group's statistics as the
     * running ones (batch_norm_elemt) */
    for (int64_t k = 0; k < c; k++) tmp[k] = m2[k] / (double)count;
    ct_tensor *mean_t = ct_tensor_from(mean, CT_F64, CT_SHAPE(c), .dtype = cd, .device = dev);
    ct_tensor *var_t = ct_tensor_from(tmp, CT_F64, CT_SHAPE(c), .dtype = cd, .device = dev);
    double *rstd = m2;
    for (int64_t k = 0; k < c; k++) rstd[k] = 1.0 / sqrt(tmp[k] + a->eps);
    ct_tensor *rstd_t = ct_tensor_from(rstd, CT_F64, CT_SHAPE(c), .dtype = cd, .device = dev);
    y = local > 0 ? ct_batch_norm(x, mean_t, var_t, .weight = w, .bias = b, .eps = a->eps)
                  : ct_empty_like(x);
    sync_ctx *s = y ? ct_malloc(sizeof *s) : NULL;
    ct_tensor *save[4] = {x, mean_t, rstd_t, w};
    if (!s || !mean_t || !rstd_t || ct_ctx_save_for_backward(ctx, n == 3 ? 4 : 3, save)) {
        if (y && !s) ct_error("SyncBatchNorm: out of memory");
        free(s);
        y = NULL;
        goto done;
    }
    *s = (sync_ctx){.group = a->group, .count = count, .affine = n == 3};
    ct_ctx_set_data(ctx, s, free);
done:
    free(buf);
    return y;
}

static int sync_backward(ct_function_ctx *ctx, ct_tensor *gy, ct_tensor **gi) {
    const sync_ctx *s = ct_ctx_data(ctx);
    ct_tensor *x = ct_ctx_saved(ctx, SV_X), *mean = ct_ctx_saved(ctx, SV_MEAN),
              *rstd = ct_ctx_saved(ctx, SV_RSTD), *w = s->affine ? ct_ctx_saved(ctx, SV_W) : NULL;
    if (!x || !mean || !rstd || (s->affine && !w)) return -1;
    if (ct_is_grad_enabled()) { /* the all-reduce is not an op of the graph */
        ct_error("SyncBatchNormBackward: double backward (create_graph) is not supported");
        return -1;
    }
    int nd = ct_ndim(x);
    int64_t c = ct_size(x, 1);
    ct_dims dims = reduce_dims(nd);
    ct_shape cs = channel_shape(nd, c);
    ct_dtype cd = ct_dtype_of(mean);
    ct_tensor *xs = ct_to(x, .dtype = cd), *gs = ct_to(gy, .dtype = cd);
    ct_tensor *xmu = ct_sub(xs, ct_reshape(mean, cs));
    /* summed in float64 (a float32 sum over strided dims may add in float32) */
    ct_tensor *sum_dy = ct_sum(gs, .dims = dims, .dtype = CT_F64);
    ct_tensor *sum_dy_xmu = ct_sum(ct_mul(gs, xmu), .dims = dims, .dtype = CT_F64);
    if (!sum_dy || !sum_dy_xmu) return -1;
    /* the weight and bias gradients: this rank's partial sums */
    if (s->affine && ct_ctx_needs_input_grad(ctx, 1) &&
        !(gi[1] = ct_to(ct_mul(sum_dy_xmu, ct_to(rstd, .dtype = CT_F64)), .dtype = ct_dtype_of(w))))
        return -1;
    if (s->affine && ct_ctx_needs_input_grad(ctx, 2) &&
        !(gi[2] = ct_to(sum_dy, .dtype = ct_dtype_of(w)))) /* bias: weight's dtype */
        return -1;
    if (!ct_ctx_needs_input_grad(ctx, 0)) return 0;
    /* the input gradient, from the group's sums (n: the group's count):
     * dx = (dy - sum_dy / n - (x - mean) * rstd^2 * sum_dy_xmu / n) * rstd * w */
    ct_tensor *sums = ct_cat(2, ((ct_tensor *[]){sum_dy, sum_dy_xmu}), 0);
    if (!sums) return -1;
    if (ct_dist_all_reduce(sums, .group = s->group)) {
        collective_failed("SyncBatchNormBackward: all-reducing the gradient sums of %lld channels",
                          (long long)c);
        return -1;
    }
    double *buf = ct_malloc(sizeof(double) * (size_t)(6 * c));
    if (!buf) {
        ct_error("SyncBatchNorm: out of memory");
        return -1;
    }
    /* dx = dy * a + (x - mean) * b + d per channel, with a = rstd * w,
     * b = -a * rstd^2 * sum_dy_xmu / n and d = -a * sum_dy / n (in place on x - mean) */
    double *sd = buf, *sdx = buf + c, *r = buf + 2 * c, *a = buf + 3 * c, *bc = buf + 4 * c,
           *dc = buf + 5 * c;
    int rc = -1;
    if (read_channels(sums, sd, 2 * c) || read_channels(rstd, r, c) ||
        (w && read_channels(w, a, c)))
        goto done;
    double n = (double)s->count;
    for (int64_t i = 0; i < c; i++) {
        a[i] = r[i] * (w ? a[i] : 1.0);
        bc[i] = -a[i] * r[i] * r[i] * (sdx[i] / n);
        dc[i] = -a[i] * (sd[i] / n);
    }
    ct_tensor *gx = ct_mul(gs, per_channel(a, c, cd, x));
    if (!ct_mul_(xmu, per_channel(bc, c, cd, x)) || !ct_add_(xmu, per_channel(dc, c, cd, x)) ||
        !ct_add_(gx, xmu))
        goto done;
    if ((gi[0] = ct_to(gx, .dtype = ct_dtype_of(x)))) rc = 0;
done:
    free(buf);
    return rc;
}

static const ct_function SYNC_BN_FN = {
    .name = "SyncBatchNorm", .forward = sync_forward, .backward = sync_backward};

/* ---- the module ------------------------------------------------------------------- */

static ct_tensor *sbn_forward(ct_module *m, ct_tensor *x) {
    const sbn_state *s = ct_module_state(m);
    if (!x) return NULL;
    int nd = ct_ndim(x);
    if (nd < 2) {
        ct_error("SyncBatchNorm: expected at least 2D input (got %dD input)", nd);
        return NULL;
    }
    if (ct_size(x, 1) == 0) {
        ct_error("SyncBatchNorm number of input channels should be non-zero"); /* PyTorch's words */
        return NULL;
    }
    ct_tensor *w = ct_module_get_parameter(m, "weight"), *b = ct_module_get_parameter(m, "bias");
    ct_bn_plan p = ct_nn_batch_norm_plan(m, &s->bn);
    if (!(ct_module_is_training(m) && group_world(s->group) > 1))
        return ct_batch_norm(x, p.rm, p.rv, .weight = w, .bias = b, .training = p.use_batch,
                             .momentum = CT_SOME(p.factor), .eps = s->bn.eps);
    ct_dtype dt = ct_dtype_of(x);
    if (!ct_dtype_is_floating(dt)) {
        ct_error("SyncBatchNorm: expected a floating point input (got %s)", ct_dtype_name(dt));
        return NULL;
    }
    ct_tensor *checked[] = {p.rm, p.rv, w, b};
    static const char *const what[] = {"running_mean", "running_var", "weight", "bias"};
    for (int i = 0; i < 4; i++)
        if (checked[i] && ct_numel(checked[i]) != ct_size(x, 1)) {
            ct_error("SyncBatchNorm: %s should contain %lld elements not %lld", what[i],
                     (long long)ct_size(x, 1), (long long)ct_numel(checked[i]));
            return NULL;
        }
    sync_args a = {
        .group = s->group, .rm = p.rm, .rv = p.rv, .eps = s->bn.eps, .momentum = p.factor};
    ct_function fn = SYNC_BN_FN;
    fn.data = &a;
    ct_tensor *in[3] = {x, w, b};
    return ct_function_apply(&fn, w && b ? 3 : 1, in);
}

static void sbn_repr(const ct_module *m, char *buf, size_t size) {
    const sbn_state *s = ct_module_state(m);
    ct_nn_batch_norm_repr(&s->bn, buf, size);
}

static const ct_module_class SYNC_BN = {
    .name = "SyncBatchNorm", .forward = sbn_forward, .extra_repr = sbn_repr};

/* Replaces every BatchNorm below m by a SyncBatchNorm; 0 or -1. */
static int convert_children(ct_module *m, ct_process_group *group) {
    int n = ct_named_children(m, NULL, NULL, 0);
    if (n <= 0) return n;
    const char **names = ct_malloc(sizeof *names * (size_t)n);
    ct_module **kids = ct_malloc(sizeof *kids * (size_t)n);
    char **own = ct_calloc((size_t)n, sizeof *own);
    int rc = names && kids && own ? 0 : -1;
    if (rc) ct_error("ct_nn_sync_batch_norm_convert: out of memory");
    /* names are the module's until its sub-tree changes: copied before replacing */
    if (!rc) ct_named_children(m, names, kids, n);
    for (int i = 0; !rc && i < n; i++)
        if (!(own[i] = ct_strdup(names[i]))) {
            ct_error("ct_nn_sync_batch_norm_convert: out of memory");
            rc = -1;
        }
    for (int i = 0; !rc && i < n; i++) {
        const ct_bn_state *bn = ct_nn_batch_norm_state(kids[i]);
        if (!bn) {
            rc = convert_children(kids[i], group);
            continue;
        }
        ct_module *sync = ct_nn_batch_norm_like(kids[i], &SYNC_BN, sizeof(sbn_state));
        if (sync) ((sbn_state *)ct_module_state(sync))->group = group;
        if (!sync || !ct_module_set(m, own[i], sync)) rc = -1;
    }
    for (int i = 0; own && i < n; i++) free(own[i]);
    free(own);
    free(kids);
    free(names);
    return rc;
}

ct_module *ct_nn_sync_batch_norm_convert(ct_module *model, ct_process_group *group) {
    if (!ct_alive("ct_nn_sync_batch_norm_convert", 1, model)) return NULL;
    if (!model) {
        if (!ct_last_error()) ct_error("ct_nn_sync_batch_norm_convert: the module is NULL");
        return NULL;
    }
    if (ct_nn_batch_norm_state(model)) {
        ct_module *sync = ct_nn_batch_norm_like(model, &SYNC_BN, sizeof(sbn_state));
        if (sync) ((sbn_state *)ct_module_state(sync))->group = group;
        return sync;
    }
    return convert_children(model, group) ? NULL : model;
}
