/* Activation modules: ReLU, LeakyReLU, GELU, SiLU, Tanh, Sigmoid, Softmax, LogSoftmax. */
#include <math.h>
#include <stdio.h>

#include "nn/layer_util.h"
#include "ops/options.h"

typedef struct {
    bool inplace;
    ct_leaky_relu_options leaky;
    ct_elu_options elu;
    ct_softplus_options softplus;
    ct_hardtanh_options hardtanh;
    int64_t dim;
    ct_gelu_options gelu;
} act_state;

static ct_tensor *relu_fwd(ct_module *m, ct_tensor *x) {
    return ((act_state *)ct_module_state(m))->inplace ? ct_relu_(x) : ct_relu(x);
}
static ct_tensor *silu_fwd(ct_module *m, ct_tensor *x) { (void)m; return ct_silu(x); }
static ct_tensor *tanh_fwd(ct_module *m, ct_tensor *x) { (void)m; return ct_tanh(x); }
static ct_tensor *sigmoid_fwd(ct_module *m, ct_tensor *x) { (void)m; return ct_sigmoid(x); }
static ct_tensor *leaky_fwd(ct_module *m, ct_tensor *x) {
    return ct_leaky_relu_with(x, ((act_state *)ct_module_state(m))->leaky);
}
static ct_tensor *gelu_fwd(ct_module *m, ct_tensor *x) {
    return ct_gelu_with(x, ((act_state *)ct_module_state(m))->gelu);
}
static ct_tensor *softmax_fwd(ct_module *m, ct_tensor *x) {
    return ct_softmax(x, ((act_state *)ct_module_state(m))->dim);
}
static ct_tensor *log_softmax_fwd(ct_module *m, ct_tensor *x) {
    return ct_log_softmax(x, ((act_state *)ct_module_state(m))->dim);
}

static ct_tensor *elu_fwd(ct_module *m, ct_tensor *x) {
    return ct_elu_with(x, ((act_state *)ct_module_state(m))->elu);
}
static ct_tensor *softplus_fwd(ct_module *m, ct_tensor *x) {
    return ct_softplus_with(x, ((act_state *)ct_module_state(m))->softplus);
}
static ct_tensor *hardtanh_fwd(ct_module *m, ct_tensor *x) {
    return ct_hardtanh_with(x, ((act_state *)ct_module_state(m))->hardtanh);
}

/* Softplus prints its arguments as given; PyTorch's defaults are ints. */
static void fmt_number(char *buf, size_t size, double v) {
    if (v == floor(v) && fabs(v) < 1e15) snprintf(buf, size, "%lld", (long long)v);
    else ct_layer_fmt_float(buf, size, v, false);
}
static void elu_repr(const ct_module *m, char *buf, size_t size) {
    char f[32];
    ct_layer_fmt_float(f, sizeof f, ((act_state *)ct_module_state(m))->elu.alpha.v, false);
    snprintf(buf, size, "alpha=%s", f);
}
static void softplus_repr(const ct_module *m, char *buf, size_t size) {
    const ct_softplus_options *a = &((act_state *)ct_module_state(m))->softplus;
    char b[32], t[32];
    fmt_number(b, sizeof b, a->beta.v);
    fmt_number(t, sizeof t, a->threshold.v);
    snprintf(buf, size, "beta=%s, threshold=%s", b, t);
}
static void hardtanh_repr(const ct_module *m, char *buf, size_t size) {
    const ct_hardtanh_options *a = &((act_state *)ct_module_state(m))->hardtanh;
    char lo[32], hi[32];
    ct_layer_fmt_float(lo, sizeof lo, a->min_val.v, false);
    ct_layer_fmt_float(hi, sizeof hi, a->max_val.v, false);
    snprintf(buf, size, "min_val=%s, max_val=%s", lo, hi);
}
static void relu_repr(const ct_module *m, char *buf, size_t size) {
    snprintf(buf, size, "%s", ((act_state *)ct_module_state(m))->inplace ? "inplace=True" : "");
}
static void leaky_repr(const ct_module *m, char *buf, size_t size) {
    char f[32];
    ct_layer_fmt_float(f, sizeof f, ((act_state *)ct_module_state(m))->leaky.negative_slope.v, false);
    snprintf(buf, size, "negative_slope=%s", f);
}
static void gelu_repr(const ct_module *m, char *buf, size_t size) {
    bool tanh = ((act_state *)ct_module_state(m))->gelu.approximate == CT_GELU_TANH;
    snprintf(buf, size, "approximate='%s'", tanh ? "tanh" : "none");
}
static void dim_repr(const ct_module *m, char *buf, size_t size) {
    snprintf(buf, size, "dim=%lld", (long long)((act_state *)ct_module_state(m))->dim);
}

static const ct_module_class RELU = {.name = "ReLU", .forward = relu_fwd, .extra_repr = relu_repr};
static const ct_module_class SILU = {.name = "SiLU", .forward = silu_fwd};
static const ct_module_class TANH = {.name = "Tanh", .forward = tanh_fwd};
static const ct_module_class SIGMOID = {.name = "Sigmoid", .forward = sigmoid_fwd};
static const ct_module_class LEAKY = {.name = "LeakyReLU", .forward = leaky_fwd, .extra_repr = leaky_repr};
static const ct_module_class GELU = {.name = "GELU", .forward = gelu_fwd, .extra_repr = gelu_repr};
static const ct_module_class ELU = {.name = "ELU", .forward = elu_fwd, .extra_repr = elu_repr};
static const ct_module_class SOFTPLUS = {.name = "Softplus", .forward = softplus_fwd,
                                         .extra_repr = softplus_repr};
static const ct_module_class HARDTANH = {.name = "Hardtanh", .forward = hardtanh_fwd,
                                         .extra_repr = hardtanh_repr};
static const ct_module_class SOFTMAX = {.name = "Softmax", .forward = softmax_fwd, .extra_repr = dim_repr};
static const ct_module_class LOG_SOFTMAX = {.name = "LogSoftmax", .forward = log_softmax_fwd,
                                            .extra_repr = dim_repr};

static ct_module *act_new(const ct_module_class *cls, act_state s) {
    ct_module *m = ct_module_new(cls, sizeof s);
    if (m) *(act_state *)ct_module_state(m) = s;
    return m;
}

ct_module *ct_nn_relu_with(ct_relu_options o) { return act_new(&RELU, (act_state){.inplace = o.inplace}); }
ct_module *(ct_nn_silu)(void) { return act_new(&SILU, (act_state){0}); }
ct_module *(ct_nn_tanh)(void) { return act_new(&TANH, (act_state){0}); }
ct_module *(ct_nn_sigmoid)(void) { return act_new(&SIGMOID, (act_state){0}); }
ct_module *ct_nn_leaky_relu_with(ct_leaky_relu_options o) {
    return act_new(&LEAKY, (act_state){.leaky = ct_leaky_relu_resolve(o)});
}
ct_module *ct_nn_gelu_with(ct_gelu_options o) { return act_new(&GELU, (act_state){.gelu = o}); }
ct_module *(ct_nn_softmax)(int64_t dim) { return act_new(&SOFTMAX, (act_state){.dim = dim}); }
ct_module *(ct_nn_log_softmax)(int64_t dim) { return act_new(&LOG_SOFTMAX, (act_state){.dim = dim}); }
ct_module *ct_nn_elu_with(ct_elu_options o) { return act_new(&ELU, (act_state){.elu = ct_elu_resolve(o)}); }
ct_module *ct_nn_softplus_with(ct_softplus_options o) {
    return act_new(&SOFTPLUS, (act_state){.softplus = ct_softplus_resolve(o)});
}
ct_module *ct_nn_hardtanh_with(ct_hardtanh_options o) {
    o = ct_hardtanh_resolve(o);
    if (!(o.max_val.v > o.min_val.v)) {
        ct_error("ct_nn_hardtanh: max_val must be greater than min_val (got %g and %g)", o.max_val.v,
                 o.min_val.v);
        return NULL;
    }
    return act_new(&HARDTANH, (act_state){.hardtanh = o});
}
