/* The BatchNorm1d/2d, LayerNorm and GroupNorm modules, on the fused ops
 * ct_batch_norm, ct_layer_norm and ct_group_norm (src/ops/norm.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/batch_norm.h"
#include "nn/layer_util.h"
#include "nn/module_impl.h"
#include "ops/options.h"

/* ---- BatchNorm1d / BatchNorm2d ------------------------------------------------------ */

typedef ct_bn_state bn_state;

ct_bn_plan ct_nn_batch_norm_plan(ct_module *m, const ct_bn_state *s) {
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
    bool pass_running = !training || s->track;
    return (ct_bn_plan){.use_batch = training || (!rm && !rv), .factor = factor,
                        .rm = pass_running ? rm : NULL, .rv = pass_running ? rv : NULL};
}

static ct_tensor *bn_forward(ct_module *m, ct_tensor *x) {
    const bn_state *s = ct_module_state(m);
    int nd = ct_ndim(x);
    if (s->is2d ? nd != 4 : (nd != 2 && nd != 3)) {
        ct_error("%s: expected %s input (got %dD input)", ct_module_type(m),
                 s->is2d ? "4D" : "2D or 3D", nd);
        return NULL;
    }
    ct_bn_plan p = ct_nn_batch_norm_plan(m, s);
    return ct_batch_norm(x, p.rm, p.rv, .weight = ct_layer_tensor(m, "weight"),
                         .bias = ct_layer_tensor(m, "bias"), .training = p.use_batch,
                         .momentum = CT_SOME(p.factor), .eps = s->eps);
}

void ct_nn_batch_norm_repr(const ct_bn_state *s, char *buf, size_t size) {
    char eps[32], mom[32];
    ct_layer_fmt_float(eps, sizeof eps, s->eps, false);
    ct_layer_fmt_float(mom, sizeof mom, s->momentum, true);
    snprintf(buf, size, "%lld, eps=%s, momentum=%s, affine=%s, track_running_stats=%s",
             (long long)s->num_features, eps, mom, s->affine ? "True" : "False",
             s->track ? "True" : "False");
}

static void bn_repr(const ct_module *m, char *buf, size_t size) {
    ct_nn_batch_norm_repr(ct_module_state(m), buf, size);
}

static const ct_module_class BN1D = {.name = "BatchNorm1d", .forward = bn_forward,
                                     .extra_repr = bn_repr};
static const ct_module_class BN2D = {.name = "BatchNorm2d", .forward = bn_forward,
                                     .extra_repr = bn_repr};

static ct_module *bn_new(bool is2d, int64_t c, ct_batch_norm_layer_options o) {
    ct_module *m = ct_module_new(is2d ? &BN2D : &BN1D, sizeof(bn_state));
    if (!m) return NULL;
    *(bn_state *)ct_module_state(m) =
        (bn_state){c, ct_zero_or(o.eps, 1e-5), o.momentum.none ? NAN : ct_opt_or(o.momentum, 0.1),
                   o.affine, o.track_running_stats, is2d};
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
        ct_layer_discard(m);
        return NULL;
    }
    return m;
}

const ct_bn_state *ct_nn_batch_norm_state(const ct_module *m) {
    bool bn = m && (m->cls == &BN1D || m->cls == &BN2D);
    return bn ? ct_module_state(m) : NULL;
}

ct_module *ct_nn_batch_norm_like(const ct_module *bn, const ct_module_class *cls, size_t state_size) {
    ct_module *m = ct_module_new(cls, state_size);
    if (!m) return NULL;
    memcpy(ct_module_state(m), bn->state, sizeof(ct_bn_state));
    m->training = bn->training;
    bool ok = true;
    /* An inner scope: registration adopts the references taken here, never one that
     * the caller's scope holds on the same tensor. */
    CT_SCOPE {
        for (int i = 0; ok && i < bn->params.len; i++) {
            ct_tensor *p = bn->params.items[i].obj;
            bool rg = ct_requires_grad(p);
            ok = ct_module_add_parameter(m, bn->params.items[i].name, ct_retain(p)) &&
                 ct_set_requires_grad(p, rg) == 0;
        }
        for (int i = 0; ok && i < bn->buffers.len; i++) {
            const slot *b = &bn->buffers.items[i];
            ok = ct_module_add_buffer(m, b->name, ct_retain(b->obj), b->persistent) != NULL;
        }
    }
    if (!ok) {
        ct_layer_discard(m);
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
    if (!m) return NULL;
    *(ln_state *)ct_module_state(m) = s;
    bool ok = true;
    if (s.affine) {
        CT_SCOPE {
            ok = ct_init_ones_(ct_layer_param(m, "weight", pshape, dt)) &&
                 ct_init_zeros_(ct_layer_param(m, "bias", pshape, dt));
        }
    }
    if (!ok) {
        ct_layer_discard(m);
        return NULL;
    }
    return m;
}

ct_module *ct_nn_layer_norm_with(ct_shape shape, ct_layer_norm_options o) {
    ln_state s = {.shape = shape, .eps = ct_zero_or(o.eps, 1e-5), .affine = o.elementwise_affine};
    return norm_new(&LAYER_NORM, s, shape, o.dtype);
}

ct_module *ct_nn_group_norm_with(int64_t groups, int64_t channels, ct_group_norm_options o) {
    if (groups <= 0 || channels % groups) {
        ct_error("ct_nn_group_norm: num_channels must be divisible by num_groups (got %lld and %lld)",
                 (long long)channels, (long long)groups);
        return NULL;
    }
    ln_state s = {.groups = groups, .channels = channels, .eps = ct_zero_or(o.eps, 1e-5),
                  .affine = o.affine};
    return norm_new(&GROUP_NORM, s, CT_SHAPE(channels), o.dtype);
}
