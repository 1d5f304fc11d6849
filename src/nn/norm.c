/* F.batch_norm, F.layer_norm, F.group_norm (composed of mean/var/rsqrt, so their
 * gradients and double backward come from those ops) and the BatchNorm1d/2d,
 * LayerNorm and GroupNorm modules. */
#include <math.h>
#include <stdio.h>

#include "nn/layer_util.h"

/* [1, C, 1, ...] with nd dims: a per-channel tensor's broadcast shape. */
static ct_shape channel_shape(int nd, int64_t c) {
    ct_shape s = {.ndim = nd};
    for (int i = 0; i < nd; i++) s.d[i] = i == 1 ? c : 1;
    return s;
}

/* y * weight + bias over channel dim 1 (either may be NULL). */
static ct_tensor *affine_channels(ct_tensor *y, ct_tensor *w, ct_tensor *b, ct_shape cs) {
    if (w) y = ct_mul(y, ct_reshape(w, cs));
    if (b) y = ct_add(y, ct_reshape(b, cs));
    return y;
}

/* running = (1 - f) * running + f * stat, without recording. */
static void blend_(ct_tensor *running, ct_tensor *stat, double f) {
    CT_NO_GRAD {
        ct_copy_(running, ct_add(ct_mul_scalar(running, 1 - f),
                                 ct_mul_scalar(ct_reshape(ct_detach(stat), ct_shape_of(running)), f)));
    }
}

ct_tensor *ct_batch_norm_with(ct_tensor *x, ct_tensor *rm, ct_tensor *rv, ct_batch_norm_options o) {
    if (!x) return NULL;
    int nd = ct_ndim(x);
    if (nd < 2) {
        ct_error("ct_batch_norm: expected at least 2D input (got %dD input)", nd);
        return NULL;
    }
    int64_t c = ct_size(x, 1), n = c ? ct_numel(x) / c : 0;
    if (o.training && n <= 1) {
        char s[128];
        ct_layer_fmt_shape(s, sizeof s, ct_shape_of(x));
        ct_error("ct_batch_norm: Expected more than 1 value per channel when training, got input "
                 "size %s", s);
        return NULL;
    }
    ct_tensor *per_channel[] = {rm, rv, o.weight, o.bias};
    static const char *const what[] = {"running_mean", "running_var", "weight", "bias"};
    for (int i = 0; i < 4; i++)
        if (per_channel[i] && ct_numel(per_channel[i]) != c) {
            ct_error("ct_batch_norm: %s should contain %lld elements not %lld", what[i],
                     (long long)c, (long long)ct_numel(per_channel[i]));
            return NULL;
        }
    if (!o.training && (!rm || !rv)) {
        ct_error("ct_batch_norm: running_mean and running_var must be defined in evaluation mode");
        return NULL;
    }
    ct_dims dims = {.n = nd - 1};
    dims.d[0] = 0;
    for (int i = 2; i < nd; i++) dims.d[i - 1] = i;
    ct_shape cs = channel_shape(nd, c);
    ct_tensor *y = NULL;
    CT_SCOPE {
        ct_tensor *mean, *var;
        if (o.training) {
            mean = ct_mean(x, .dims = dims, .keepdim = true);
            var = ct_var(x, .dims = dims, .keepdim = true, CT_CORRECTION(0));
            if (!mean || !var) break;
            /* The running variance is the unbiased estimate, as PyTorch keeps it. */
            if (rm) blend_(rm, mean, o.momentum);
            if (rv) blend_(rv, ct_mul_scalar(var, (double)n / (double)(n - 1)), o.momentum);
        } else {
            mean = ct_reshape(rm, cs);
            var = ct_reshape(rv, cs);
        }
        /* y = x * scale + shift with per-channel scale = weight / sqrt(var + eps) and
         * shift = bias - mean * scale: two passes over x instead of four, and the
         * same arithmetic as PyTorch's cpu kernel. */
        ct_tensor *scale = ct_rsqrt(ct_add_scalar(var, o.eps));
        if (o.weight) scale = ct_mul(scale, ct_reshape(o.weight, cs));
        ct_tensor *shift = ct_neg(ct_mul(mean, scale));
        if (o.bias) shift = ct_add(shift, ct_reshape(o.bias, cs));
        y = ct_keep(ct_add(ct_mul(x, scale), shift));
    }
    return y;
}

ct_tensor *ct_layer_norm_with(ct_tensor *x, ct_shape ns, ct_norm_options_f o) {
    if (!x) return NULL;
    int nd = ct_ndim(x);
    bool ok = ns.ndim >= 1 && ns.ndim <= nd;
    for (int i = 0; ok && i < ns.ndim; i++) ok = ct_size(x, nd - ns.ndim + i) == ns.d[i];
    if (!ok) {
        char a[128], b[128];
        ct_layer_fmt_shape(a, sizeof a, ns);
        ct_layer_fmt_shape(b, sizeof b, ct_shape_of(x));
        ct_error("ct_layer_norm: Given normalized_shape=%s, expected input with shape [*%s%.*s, "
                 "but got input of size%s", a, ns.ndim ? ", " : "", (int)(ns.ndim ? sizeof a : 0),
                 a + 1, b);
        return NULL;
    }
    ct_dims dims = {.n = ns.ndim};
    for (int i = 0; i < ns.ndim; i++) dims.d[i] = nd - ns.ndim + i;
    ct_tensor *y = NULL;
    CT_SCOPE {
        ct_tensor *mean = ct_mean(x, .dims = dims, .keepdim = true);
        ct_tensor *var = ct_var(x, .dims = dims, .keepdim = true, CT_CORRECTION(0));
        ct_tensor *r = ct_mul(ct_sub(x, mean), ct_rsqrt(ct_add_scalar(var, o.eps)));
        if (o.weight) r = ct_mul(r, o.weight);
        if (o.bias) r = ct_add(r, o.bias);
        y = ct_keep(r);
    }
    return y;
}

ct_tensor *ct_group_norm_with(ct_tensor *x, int64_t groups, ct_norm_options_f o) {
    if (!x) return NULL;
    int nd = ct_ndim(x);
    if (nd < 2 || groups <= 0 || ct_size(x, 1) % groups) {
        char s[128];
        ct_layer_fmt_shape(s, sizeof s, ct_shape_of(x));
        ct_error("ct_group_norm: Expected number of channels in input to be divisible by "
                 "num_groups, but got input of shape %s and num_groups=%lld", s, (long long)groups);
        return NULL;
    }
    int64_t n = ct_size(x, 0), c = ct_size(x, 1);
    ct_tensor *y = NULL;
    CT_SCOPE {
        ct_tensor *g = ct_reshape(x, CT_SHAPE(n, groups, -1));
        ct_tensor *mean = ct_mean(g, .dims = CT_DIMS(-1), .keepdim = true);
        ct_tensor *var = ct_var(g, .dims = CT_DIMS(-1), .keepdim = true, CT_CORRECTION(0));
        ct_tensor *r = ct_mul(ct_sub(g, mean), ct_rsqrt(ct_add_scalar(var, o.eps)));
        r = ct_reshape(r, ct_shape_of(x));
        y = ct_keep(affine_channels(r, o.weight, o.bias, channel_shape(nd, c)));
    }
    return y;
}

/* ---- BatchNorm1d / BatchNorm2d ------------------------------------------------------ */

typedef struct {
    int64_t num_features;
    double eps, momentum;
    bool affine, track, is2d;
} bn_state;

static ct_tensor *bn_forward(ct_module *m, ct_tensor *x) {
    const bn_state *s = ct_module_state(m);
    int nd = ct_ndim(x);
    if (s->is2d ? nd != 4 : (nd != 2 && nd != 3)) {
        ct_error("%s: expected %s input (got %dD input)", ct_module_type(m),
                 s->is2d ? "4D" : "2D or 3D", nd);
        return NULL;
    }
    bool training = ct_module_is_training(m);
    double factor = isnan(s->momentum) ? 0 : s->momentum;
    ct_tensor *rm = ct_layer_tensor(m, "running_mean"), *rv = ct_layer_tensor(m, "running_var");
    if (training && s->track) {
        ct_tensor *nbt = ct_layer_tensor(m, "num_batches_tracked");
        CT_NO_GRAD {
            CT_SCOPE { ct_add_scalar_(nbt, 1); }
        }
        if (isnan(s->momentum)) factor = 1.0 / (double)ct_item_int(nbt);
    }
    bool use_batch = training || (!rm && !rv);
    bool pass_running = !training || s->track;
    return ct_batch_norm(x, pass_running ? rm : NULL, pass_running ? rv : NULL,
                         .weight = ct_layer_tensor(m, "weight"), .bias = ct_layer_tensor(m, "bias"),
                         .training = use_batch, .momentum = factor, .eps = s->eps);
}

static void bn_repr(const ct_module *m, char *buf, size_t size) {
    const bn_state *s = ct_module_state(m);
    char eps[32], mom[32];
    ct_layer_fmt_float(eps, sizeof eps, s->eps, false);
    ct_layer_fmt_float(mom, sizeof mom, s->momentum, true);
    snprintf(buf, size, "%lld, eps=%s, momentum=%s, affine=%s, track_running_stats=%s",
             (long long)s->num_features, eps, mom, s->affine ? "True" : "False",
             s->track ? "True" : "False");
}

static const ct_module_class BN1D = {.name = "BatchNorm1d", .forward = bn_forward,
                                     .extra_repr = bn_repr};
static const ct_module_class BN2D = {.name = "BatchNorm2d", .forward = bn_forward,
                                     .extra_repr = bn_repr};

static ct_module *bn_new(bool is2d, int64_t c, ct_batch_norm_layer_options o) {
    ct_module *m = ct_module_new(is2d ? &BN2D : &BN1D, sizeof(bn_state));
    *(bn_state *)ct_module_state(m) =
        (bn_state){c, o.eps, o.momentum, o.affine, o.track_running_stats, is2d};
    bool ok = true;
    if (o.affine) {
        CT_SCOPE {
            ok = ct_init_ones_(ct_layer_param(m, "weight", CT_SHAPE(c), o.dtype)) &&
                 ct_init_zeros_(ct_layer_param(m, "bias", CT_SHAPE(c), o.dtype));
        }
    }
    if (ok && o.track_running_stats) {
        ok = ct_module_add_buffer(m, "running_mean", ct_zeros(CT_SHAPE(c), .dtype = o.dtype), true) &&
             ct_module_add_buffer(m, "running_var", ct_ones(CT_SHAPE(c), .dtype = o.dtype), true) &&
             ct_module_add_buffer(m, "num_batches_tracked", ct_zeros(CT_SHAPE(), .dtype = CT_I64),
                                  true);
    }
    if (!ok) {
        ct_release(m);
        return NULL;
    }
    return m;
}
ct_module *ct_nn_batch_norm1d_with(int64_t c, ct_batch_norm_layer_options o) { return bn_new(false, c, o); }
ct_module *ct_nn_batch_norm2d_with(int64_t c, ct_batch_norm_layer_options o) { return bn_new(true, c, o); }

/* ---- LayerNorm, GroupNorm -------------------------------------------------------------- */

typedef struct {
    ct_shape shape; /* LayerNorm's normalized_shape */
    int64_t groups, channels;
    double eps;
    bool affine;
} ln_state;

static ct_tensor *ln_forward(ct_module *m, ct_tensor *x) {
    const ln_state *s = ct_module_state(m);
    return ct_layer_norm(x, s->shape, .weight = ct_layer_tensor(m, "weight"),
                         .bias = ct_layer_tensor(m, "bias"), .eps = s->eps);
}
static ct_tensor *gn_forward(ct_module *m, ct_tensor *x) {
    const ln_state *s = ct_module_state(m);
    return ct_group_norm(x, s->groups, .weight = ct_layer_tensor(m, "weight"),
                         .bias = ct_layer_tensor(m, "bias"), .eps = s->eps);
}
static void ln_repr(const ct_module *m, char *buf, size_t size) {
    const ln_state *s = ct_module_state(m);
    char shape[128], eps[32];
    ct_layer_fmt_dims(shape, sizeof shape, s->shape.d, s->shape.ndim, false);
    ct_layer_fmt_float(eps, sizeof eps, s->eps, false);
    snprintf(buf, size, "%s, eps=%s, elementwise_affine=%s", shape, eps, s->affine ? "True" : "False");
}
static void gn_repr(const ct_module *m, char *buf, size_t size) {
    const ln_state *s = ct_module_state(m);
    char eps[32];
    ct_layer_fmt_float(eps, sizeof eps, s->eps, false);
    snprintf(buf, size, "%lld, %lld, eps=%s, affine=%s", (long long)s->groups,
             (long long)s->channels, eps, s->affine ? "True" : "False");
}
static const ct_module_class LAYER_NORM = {.name = "LayerNorm", .forward = ln_forward,
                                           .extra_repr = ln_repr};
static const ct_module_class GROUP_NORM = {.name = "GroupNorm", .forward = gn_forward,
                                           .extra_repr = gn_repr};

static ct_module *norm_new(const ct_module_class *cls, ln_state s, ct_shape pshape, ct_dtype dt) {
    ct_module *m = ct_module_new(cls, sizeof s);
    *(ln_state *)ct_module_state(m) = s;
    bool ok = true;
    if (s.affine) {
        CT_SCOPE {
            ok = ct_init_ones_(ct_layer_param(m, "weight", pshape, dt)) &&
                 ct_init_zeros_(ct_layer_param(m, "bias", pshape, dt));
        }
    }
    if (!ok) {
        ct_release(m);
        return NULL;
    }
    return m;
}

ct_module *ct_nn_layer_norm_with(ct_shape shape, ct_norm_layer_options o) {
    ln_state s = {.shape = shape, .eps = o.eps, .affine = o.elementwise_affine};
    return norm_new(&LAYER_NORM, s, shape, o.dtype);
}

ct_module *ct_nn_group_norm_with(int64_t groups, int64_t channels, ct_norm_layer_options o) {
    if (groups <= 0 || channels % groups) {
        ct_error("ct_nn_group_norm: num_channels must be divisible by num_groups (got %lld and %lld)",
                 (long long)channels, (long long)groups);
        return NULL;
    }
    ln_state s = {.groups = groups, .channels = channels, .eps = o.eps, .affine = o.elementwise_affine};
    return norm_new(&GROUP_NORM, s, CT_SHAPE(channels), o.dtype);
}
