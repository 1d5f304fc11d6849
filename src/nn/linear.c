/* Identity, Linear, Bilinear, Flatten, Unflatten and F.linear / F.bilinear. */
#include <math.h>
#include <stdio.h>

#include "core/object.h"
#include "nn/layer_util.h"
#include "ops/autocast.h"
#include "ops/options.h"

ct_tensor *(ct_linear)(ct_tensor *x, ct_tensor *weight, ct_tensor *bias) {
    if (!ct_alive("ct_linear", 1, x) || !ct_alive("ct_linear", 2, weight) ||
        !ct_alive("ct_linear", 3, bias))
        return NULL;
    /* F.linear casts its weight itself (not a transposed view of it): addmm's row */
    CT_AUTOCAST_OP(CT_OP_addmm, ct_linear(x, weight, bias), x, weight, bias);
    if (!x || !weight) return NULL;
    ct_tensor *y = NULL;
    CT_SCOPE {
        if (bias && ct_ndim(x) == 2)
            y = ct_keep(ct_addmm(bias, x, ct_t(weight)));
        else {
            ct_tensor *r = ct_matmul(x, ct_t(weight));
            y = ct_keep(bias ? ct_add(r, bias) : r);
        }
    }
    return y;
}

/* y[.., o] = sum_ij x1[.., i] w[o, i, j] x2[.., j]: one GEMM of x1 with w laid out
 * as [in1, out * in2], then a product with x2 summed over j. */
ct_tensor *(ct_bilinear)(ct_tensor *x1, ct_tensor *x2, ct_tensor *weight, ct_tensor *bias) {
    if (!ct_alive("ct_bilinear", 1, x1) || !ct_alive("ct_bilinear", 2, x2) ||
        !ct_alive("ct_bilinear", 3, weight) || !ct_alive("ct_bilinear", 4, bias))
        return NULL;
    if (!x1 || !x2 || !weight) return NULL;
    if (ct_ndim(weight) != 3 || ct_size(x1, -1) != ct_size(weight, 1) ||
        ct_size(x2, -1) != ct_size(weight, 2)) {
        ct_error("ct_bilinear: input1 [.., %lld], input2 [.., %lld] and weight of %d dims do not "
                 "match (expected weight [out, in1_features, in2_features])",
                 (long long)ct_size(x1, -1), (long long)ct_size(x2, -1), ct_ndim(weight));
        return NULL;
    }
    int64_t out = ct_size(weight, 0), in1 = ct_size(weight, 1), in2 = ct_size(weight, 2);
    ct_tensor *y = NULL;
    CT_SCOPE {
        ct_shape lead = ct_shape_of(x1);
        lead.ndim--;
        ct_tensor *w = ct_reshape(ct_permute(weight, CT_DIMS(1, 0, 2)), CT_SHAPE(in1, out * in2));
        ct_tensor *t = ct_matmul(ct_reshape(x1, CT_SHAPE(-1, in1)), w);
        t = ct_view(t, CT_SHAPE(-1, out, in2));
        ct_tensor *r = ct_sum(ct_mul(t, ct_unsqueeze(ct_reshape(x2, CT_SHAPE(-1, in2)), 1)),
                              .dims = CT_DIMS(-1));
        lead.d[lead.ndim++] = out;
        r = ct_reshape(r, lead);
        y = ct_keep(bias ? ct_add(r, bias) : r);
    }
    return y;
}

/* ---- Identity ---------------------------------------------------------------- */

static ct_tensor *identity_forward(ct_module *m, ct_tensor *x) {
    (void)m;
    ct_retain(x);
    return ct_scope_register(x);
}
static const ct_module_class IDENTITY = {.name = "Identity", .forward = identity_forward};
ct_module *(ct_nn_identity)(void) { return ct_module_new(&IDENTITY, 0); }

/* ---- Linear, Bilinear ----------------------------------------------------------- */

typedef struct {
    int64_t in1, in2, out;
} linear_state;

static ct_tensor *linear_forward(ct_module *m, ct_tensor *x) {
    return ct_linear(x, ct_layer_tensor(m, "weight"), ct_layer_tensor(m, "bias"));
}
static void linear_repr(const ct_module *m, char *buf, size_t size) {
    const linear_state *s = ct_module_state(m);
    snprintf(buf, size, "in_features=%lld, out_features=%lld, bias=%s", (long long)s->in1,
             (long long)s->out, ct_layer_tensor(m, "bias") ? "True" : "False");
}
static const ct_module_class LINEAR = {.name = "Linear", .forward = linear_forward,
                                       .extra_repr = linear_repr};
/* PyTorch's Linear subclass for MultiheadAttention's out_proj: a Linear in all but
 * the name it prints. */
static const ct_module_class NDQ_LINEAR = {.name = "NonDynamicallyQuantizableLinear",
                                           .forward = linear_forward, .extra_repr = linear_repr};

static ct_module *linear_new(const ct_module_class *cls, int64_t in, int64_t out,
                             ct_linear_options o) {
    if (in < 0 || out < 0) {
        ct_error("ct_nn_linear: in_features and out_features must be non-negative (got %lld, %lld)",
                 (long long)in, (long long)out);
        return NULL;
    }
    ct_module *m = ct_module_new(cls, sizeof(linear_state));
    if (!m) return NULL;
    *(linear_state *)ct_module_state(m) = (linear_state){in, 0, out};
    ct_tensor *w = ct_layer_param(m, "weight", CT_SHAPE(out, in), o.dtype);
    ct_tensor *b = o.bias ? ct_layer_param(m, "bias", CT_SHAPE(out), o.dtype) : NULL;
    if (!w || (o.bias && !b) || ct_layer_reset_kaiming(w, b)) {
        ct_layer_discard(m);
        return NULL;
    }
    return m;
}

ct_module *ct_nn_linear_with(int64_t in, int64_t out, ct_linear_options o) {
    return linear_new(&LINEAR, in, out, o);
}

ct_module *ct_nn_out_proj_linear(int64_t in, int64_t out, ct_linear_options o) {
    return linear_new(&NDQ_LINEAR, in, out, o);
}

static int bilinear_forward(ct_module *m, int n_in, ct_tensor *const *in, ct_tensor **out,
                            int max_out) {
    if (n_in != 2 || max_out < 1) {
        ct_error("Bilinear: forward takes two inputs and gives one output (got %d inputs)", n_in);
        return -1;
    }
    out[0] = ct_bilinear(in[0], in[1], ct_layer_tensor(m, "weight"), ct_layer_tensor(m, "bias"));
    return out[0] ? 1 : -1;
}
static void bilinear_repr(const ct_module *m, char *buf, size_t size) {
    const linear_state *s = ct_module_state(m);
    snprintf(buf, size, "in1_features=%lld, in2_features=%lld, out_features=%lld, bias=%s",
             (long long)s->in1, (long long)s->in2, (long long)s->out,
             ct_layer_tensor(m, "bias") ? "True" : "False");
}
static const ct_module_class BILINEAR = {.name = "Bilinear", .forward_multi = bilinear_forward,
                                         .extra_repr = bilinear_repr};

ct_module *ct_nn_bilinear_with(int64_t in1, int64_t in2, int64_t out, ct_linear_options o) {
    ct_module *m = ct_module_new(&BILINEAR, sizeof(linear_state));
    if (!m) return NULL;
    *(linear_state *)ct_module_state(m) = (linear_state){in1, in2, out};
    ct_tensor *w = ct_layer_param(m, "weight", CT_SHAPE(out, in1, in2), o.dtype);
    ct_tensor *b = o.bias ? ct_layer_param(m, "bias", CT_SHAPE(out), o.dtype) : NULL;
    /* reset_parameters: U(-1/sqrt(in1), 1/sqrt(in1)) for both. */
    double bound = in1 > 0 ? 1 / sqrt((double)in1) : 0;
    bool ok = false;
    CT_SCOPE {
        ok = w && (!o.bias || b) && ct_init_uniform_(w, -bound, bound) &&
             (!b || ct_init_uniform_(b, -bound, bound));
    }
    if (!ok) {
        ct_layer_discard(m);
        return NULL;
    }
    return m;
}

/* ---- Flatten, Unflatten ---------------------------------------------------------- */

typedef struct {
    int64_t dim, end_dim;
    ct_shape sizes;
} flatten_state;

static ct_tensor *flatten_forward(ct_module *m, ct_tensor *x) {
    const flatten_state *s = ct_module_state(m);
    return ct_flatten(x, s->dim, s->end_dim);
}
static void flatten_repr(const ct_module *m, char *buf, size_t size) {
    const flatten_state *s = ct_module_state(m);
    snprintf(buf, size, "start_dim=%lld, end_dim=%lld", (long long)s->dim, (long long)s->end_dim);
}
static const ct_module_class FLATTEN = {.name = "Flatten", .forward = flatten_forward,
                                        .extra_repr = flatten_repr};

ct_module *ct_nn_flatten_with(ct_flatten_options o) {
    int64_t start, end;
    if (!ct_opt_int("ct_nn_flatten", "start_dim", o.start_dim, 1, &start) ||
        !ct_opt_int("ct_nn_flatten", "end_dim", o.end_dim, -1, &end))
        return NULL;
    ct_module *m = ct_module_new(&FLATTEN, sizeof(flatten_state));
    if (m) *(flatten_state *)ct_module_state(m) = (flatten_state){.dim = start, .end_dim = end};
    return m;
}

static ct_tensor *unflatten_forward(ct_module *m, ct_tensor *x) {
    const flatten_state *s = ct_module_state(m);
    return ct_unflatten(x, s->dim, s->sizes);
}
static void unflatten_repr(const ct_module *m, char *buf, size_t size) {
    const flatten_state *s = ct_module_state(m);
    char sizes[256];
    ct_layer_fmt_dims(sizes, sizeof sizes, s->sizes.d, s->sizes.ndim, false);
    snprintf(buf, size, "dim=%lld, unflattened_size=%s", (long long)s->dim, sizes);
}
static const ct_module_class UNFLATTEN = {.name = "Unflatten", .forward = unflatten_forward,
                                          .extra_repr = unflatten_repr};

ct_module *(ct_nn_unflatten)(int64_t dim, ct_shape sizes) {
    ct_module *m = ct_module_new(&UNFLATTEN, sizeof(flatten_state));
    if (m) *(flatten_state *)ct_module_state(m) = (flatten_state){.dim = dim, .sizes = sizes};
    return m;
}
