/* Dropout, as PyTorch's _dropout_impl (aten/src/ATen/native/Dropout.cpp):
 *   dropout          x * mask,  mask = bernoulli(1 - p) / (1 - p), one draw per element
 *   feature dropout  the same with one draw per (sample, channel), broadcast over the
 *                    rest (dropout1d/2d/3d)
 *   alpha dropout    x * noise + b, keeping zero mean and unit variance (for SELU):
 *                    noise = m a, b = (m - 1) alpha a + alpha a p, m ~ bernoulli(1 - p)
 * Identity (x itself) when !training, p == 0 or x is empty; zeros when p == 1.  The
 * mask comes from the generator like any random op's (Note [Random counters]). */
#include <math.h>

#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/pointwise.h"
#include "ops/trace.h"
#include "ops/sample.h"

/* Saved tensor: the mask. */
enum { SV_MASK };

/* lead: how many leading dims draw independently (0: all of them). */
typedef struct {
    const char *name;
    int lead;
    bool alpha;
} dropout_kind;

/* A 0/1 (or 0/value) mask of x's dtype: x's shape, or its first `lead` sizes then 1s. */
static ct_tensor *make_mask(const ct_tensor *x, int lead, double keep, double value,
                            ct_generator *g) {
    ct_shape s = ct_shape_of(x);
    for (int d = lead; lead > 0 && d < s.ndim; d++) s.d[d] = 1;
    ct_tensor *m = ct_tensor_new("ct_dropout", s, x->dtype, x->storage->device);
    if (m && !ct_draw_random(CT_OP_bernoulli_scalar, m, &(ct_rng_args){.a = keep, .b = value}, g)) {
        ct_release(m);
        return NULL;
    }
    return m;
}

/* x * mask with its own node (MulBackward0, as PyTorch prints it): backward needs
 * only the mask. */
static ct_tensor *apply_mask(ct_tensor *x, ct_tensor *mask, bool inplace) {
    ct_tensor *in[2] = {x, mask};
    const ct_pw_spec mul = {CT_OP_mul, CT_PW_PROMOTE, 0};
    ct_tensor *out = ct_pointwise(&mul, 2, in, inplace ? x : NULL, &(ct_pw_args){.a = 1, .i = 1});
    if (!out) return NULL;
    ct_node *n = ct_node_record(CT_OP_dropout, 1, &x, 1);
    if (n) {
        ct_node_save(n, SV_MASK, mask, false);
        if (inplace) ct_rebase_history(n, out);
        else ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    return ct_ret(out);
}

/* x * noise + b with ops (so the graph is Mul then Add, as in PyTorch). */
static ct_tensor *apply_alpha(ct_tensor *x, ct_tensor *m, double p, bool inplace) {
    const double alpha = 1.7580993408473766, a = 1 / sqrt((alpha * alpha * p + 1) * (1 - p));
    ct_tensor *r = NULL;
    CT_SCOPE {
        ct_tensor *b = ct_add_scalar(ct_mul_scalar(ct_sub_scalar(m, 1), alpha * a), alpha * a * p);
        ct_tensor *noise = ct_mul_scalar(m, a);
        r = inplace ? ct_add_(ct_mul_(x, noise), b) : ct_add(ct_mul(x, noise), b);
        r = ct_keep(r);
    }
    return r;
}

static ct_tensor *dropout(const dropout_kind *k, ct_tensor *x, double p, bool training,
                          ct_dropout_options o) {
    if (!x) return NULL;
    char name[48];
    snprintf(name, sizeof name, "%s%s", k->name, o.inplace ? "_" : "");
    if (!ct_option_alive(name, "generator", o.generator)) return NULL;
    if (!(p >= 0 && p <= 1)) {
        ct_error("%s: dropout probability has to be between 0 and 1, but got %g", name, p);
        return NULL;
    }
    bool plain = k->lead == 0 && !k->alpha; /* the op dropout (the others are composites) */
    if (!training || p == 0 || x->numel == 0) {
        if (plain) CT_TRACE_ATTRS(CT_OP_dropout, 1, &x, 1, &x, &(ct_dropout_attrs){p, training});
        return ct_ret(ct_retain(x));
    }
    if (!ct_dtype_is_floating(x->dtype)) {
        ct_error("%s: expected a floating point tensor (got %s)", name, ct_dtype_name(x->dtype));
        return NULL;
    }
    if (k->lead == 2 && x->ndim < 2) {
        ct_error("%s: Feature dropout requires at least 2 dimensions in the input (got %d)", name,
                 x->ndim);
        return NULL;
    }
    if (o.inplace && !ct_check_inplace(name, x)) return NULL;
    bool alpha = k->alpha && p < 1; /* p == 1: zeros, x * 0 as for dropout */
    double value = alpha ? 1 : p == 1 ? 0 : 1 / (1 - p);
    ct_tensor *mask = make_mask(x, k->lead, 1 - p, value, o.generator);
    if (!mask) return NULL;
    ct_tensor *out = alpha ? apply_alpha(x, mask, p, o.inplace) : apply_mask(x, mask, o.inplace);
    ct_release(mask);
    if (out && plain)
        CT_TRACE_ATTRS(CT_OP_dropout, 1, &x, 1, &out, &(ct_dropout_attrs){p, training});
    return out;
}

bool dropout_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_mul(go[0], ct_node_saved(n, SV_MASK))) != NULL;
}

static const dropout_kind PLAIN = {"ct_dropout", 0, false};
static const dropout_kind FEATURE = {"ct_dropout2d", 2, false};
static const dropout_kind ALPHA = {"ct_alpha_dropout", 0, true};
static const dropout_kind FEATURE_ALPHA = {"ct_feature_alpha_dropout", 2, true};

ct_tensor *ct_dropout_with(ct_tensor *x, double p, bool training, ct_dropout_options o) {
    if (!ct_alive("ct_dropout", 1, x)) return NULL;
    return dropout(&PLAIN, x, p, training, o);
}

ct_tensor *ct_alpha_dropout_with(ct_tensor *x, double p, bool training, ct_dropout_options o) {
    if (!ct_alive("ct_alpha_dropout", 1, x)) return NULL;
    return dropout(&ALPHA, x, p, training, o);
}

ct_tensor *ct_feature_alpha_dropout_with(ct_tensor *x, double p, bool training,
                                         ct_dropout_options o) {
    if (!ct_alive("ct_feature_alpha_dropout", 1, x)) return NULL;
    return dropout(&FEATURE_ALPHA, x, p, training, o);
}

/* dropout2d: PyTorch 1.13 takes any input of 2+ dims as (N, C, ...), a 3-D one too. */
ct_tensor *ct_dropout2d_with(ct_tensor *x, double p, bool training, ct_dropout_options o) {
    if (!ct_alive("ct_dropout2d", 1, x)) return NULL;
    return dropout(&FEATURE, x, p, training, o);
}

/* dropout1d (2-D or 3-D) and dropout3d (4-D or 5-D): without the batch dim, the first
 * dim is the channel dim. */
static ct_tensor *feature_nd(const char *name, int batched_ndim, ct_tensor *x, double p,
                             bool training, ct_dropout_options o) {
    if (!x) return NULL;
    dropout_kind k = {name, x->ndim == batched_ndim ? 2 : 1, false};
    return dropout(&k, x, p, training, o);
}

ct_tensor *ct_dropout1d_with(ct_tensor *x, double p, bool training, ct_dropout_options o) {
    if (!ct_alive("ct_dropout1d", 1, x)) return NULL;
    if (x && x->ndim != 2 && x->ndim != 3) {
        ct_error("ct_dropout1d: Expected 2D or 3D input, but received a %dD input. Note that "
                 "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
                 "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or "
                 "3D inputs).", x->ndim);
        return NULL;
    }
    return feature_nd("ct_dropout1d", 3, x, p, training, o);
}

ct_tensor *ct_dropout3d_with(ct_tensor *x, double p, bool training, ct_dropout_options o) {
    if (!ct_alive("ct_dropout3d", 1, x)) return NULL;
    return feature_nd("ct_dropout3d", 5, x, p, training, o);
}
