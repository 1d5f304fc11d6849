/* Layers against PyTorch: weights loaded by name from tests/fixtures/layers.fx
 * (gen_layers.py), forward in float64, gradients of the input and of every parameter
 * for sum(y^2), buffers after the forward; reprs; the state-dict keys of a CNN. */
#include <stdlib.h>

#include "ct_test.h"
#include "fixtures.h"

typedef ct_module *(*builder)(void);
typedef struct {
    const char *name;
    builder build;
    bool two_inputs, train;
} layer_case;

static ct_module *b_linear(void) { return ct_nn_linear(5, 3); }
static ct_module *b_linear_nobias(void) { return ct_nn_linear(5, 3, .bias = false); }
static ct_module *b_bilinear(void) { return ct_nn_bilinear(3, 4, 2); }
static ct_module *b_flatten(void) { return ct_nn_flatten(); }
static ct_module *b_unflatten(void) { return ct_nn_unflatten(1, CT_SHAPE(2, 3)); }
static ct_module *b_conv1d(void) {
    return ct_nn_conv1d(4, 6, CT_DIMS(3), .stride = CT_DIMS(2), .padding = CT_DIMS(1), .groups = 2);
}
static ct_module *b_conv2d(void) { return ct_nn_conv2d(3, 4, CT_DIMS(3), .padding = CT_DIMS(1), .bias = false); }
static ct_module *b_conv2d_same(void) {
    return ct_nn_conv2d(2, 4, CT_DIMS(3, 5), .padding_same = true, .dilation = CT_DIMS(1, 2));
}
static ct_module *b_convt2d(void) {
    return ct_nn_conv_transpose2d(4, 6, CT_DIMS(3), .stride = CT_DIMS(2), .padding = CT_DIMS(1),
                                  .output_padding = CT_DIMS(1), .groups = 2);
}
static ct_module *b_maxpool(void) { return ct_nn_max_pool2d(CT_DIMS(3), .stride = CT_DIMS(2), .padding = CT_DIMS(1)); }
static ct_module *b_avgpool(void) { return ct_nn_avg_pool2d(CT_DIMS(2)); }
static ct_module *b_adaptive(void) { return ct_nn_adaptive_avg_pool2d(CT_DIMS(2, 3)); }
static ct_module *b_bn1d(void) { return ct_nn_batch_norm1d(4); }
static ct_module *b_bn1d_3d(void) { return ct_nn_batch_norm1d(3, .momentum = CT_NONE); }
static ct_module *b_bn2d(void) { return ct_nn_batch_norm2d(3); }
static ct_module *b_bn2d_noaffine(void) {
    return ct_nn_batch_norm2d(3, .affine = false, .track_running_stats = false);
}
static ct_module *b_layernorm(void) { return ct_nn_layer_norm(CT_SHAPE(4, 5)); }
static ct_module *b_layernorm6(void) { return ct_nn_layer_norm(CT_SHAPE(6)); }
static ct_module *b_groupnorm(void) { return ct_nn_group_norm(2, 6); }
static ct_module *b_embedding(void) { return ct_nn_embedding(10, 4, .padding_idx = CT_SOME(2)); }
static ct_module *b_embedding_maxnorm(void) { return ct_nn_embedding(6, 5, .max_norm = 1.5); }
static ct_module *b_relu(void) { return ct_nn_relu(); }
static ct_module *b_leaky(void) { return ct_nn_leaky_relu(.negative_slope = CT_SOME(0.2)); }
static ct_module *b_gelu(void) { return ct_nn_gelu(); }
static ct_module *b_gelu_tanh(void) { return ct_nn_gelu(.approximate = CT_GELU_TANH); }
static ct_module *b_silu(void) { return ct_nn_silu(); }
static ct_module *b_tanh(void) { return ct_nn_tanh(); }
static ct_module *b_sigmoid(void) { return ct_nn_sigmoid(); }
static ct_module *b_softmax(void) { return ct_nn_softmax(1); }
static ct_module *b_log_softmax(void) { return ct_nn_log_softmax(0); }
static ct_module *b_sequential(void) {
    return ct_sequential(CT_MODULES(ct_nn_conv2d(2, 3, CT_DIMS(3)), ct_nn_batch_norm2d(3),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_flatten(),
                                    ct_nn_linear(12, 2)));
}
static ct_module *b_conv2d_reflect(void) {
    return ct_nn_conv2d(2, 3, CT_DIMS(3), .padding = CT_DIMS(1, 2), .padding_mode = CT_PADDING_REFLECT);
}
static ct_module *b_conv1d_circular(void) {
    return ct_nn_conv1d(2, 2, CT_DIMS(3), .padding = CT_DIMS(2), .padding_mode = CT_PADDING_CIRCULAR);
}
static ct_module *b_conv2d_replicate_same(void) {
    return ct_nn_conv2d(2, 2, CT_DIMS(3, 4), .padding_same = true, .padding_mode = CT_PADDING_REPLICATE);
}
static ct_module *b_adaptive_max(void) { return ct_nn_adaptive_max_pool2d(CT_DIMS(2, 3)); }
static ct_module *b_elu(void) { return ct_nn_elu(.alpha = CT_SOME(0.5)); }
static ct_module *b_softplus(void) { return ct_nn_softplus(.beta = CT_SOME(2), .threshold = CT_SOME(1)); }
static ct_module *b_hardtanh(void) { return ct_nn_hardtanh(.min_val = CT_SOME(-0.5), .max_val = CT_SOME(0.8)); }

/* Must match tests/fixtures/gen_layers.py. */
static const layer_case cases[] = {
    {"linear", b_linear, false, true},
    {"linear_nobias_3d", b_linear_nobias, false, true},
    {"bilinear", b_bilinear, true, true},
    {"flatten", b_flatten, false, true},
    {"unflatten", b_unflatten, false, true},
    {"conv1d", b_conv1d, false, true},
    {"conv2d", b_conv2d, false, true},
    {"conv2d_same", b_conv2d_same, false, true},
    {"convt2d", b_convt2d, false, true},
    {"maxpool", b_maxpool, false, true},
    {"avgpool", b_avgpool, false, true},
    {"adaptive", b_adaptive, false, true},
    {"bn1d", b_bn1d, false, true},
    {"bn1d_3d", b_bn1d_3d, false, true},
    {"bn2d", b_bn2d, false, true},
    {"bn2d_noaffine", b_bn2d_noaffine, false, true},
    {"bn2d_eval", b_bn2d, false, false},
    {"layernorm", b_layernorm, false, true},
    {"layernorm_affine", b_layernorm6, false, true},
    {"groupnorm", b_groupnorm, false, true},
    {"embedding", b_embedding, false, true},
    {"embedding_maxnorm", b_embedding_maxnorm, false, true},
    {"relu", b_relu, false, true},
    {"leaky", b_leaky, false, true},
    {"gelu", b_gelu, false, true},
    {"gelu_tanh", b_gelu_tanh, false, true},
    {"silu", b_silu, false, true},
    {"tanh", b_tanh, false, true},
    {"sigmoid", b_sigmoid, false, true},
    {"softmax", b_softmax, false, true},
    {"log_softmax", b_log_softmax, false, true},
    {"sequential", b_sequential, false, true},
    {"conv2d_reflect", b_conv2d_reflect, false, true},
    {"conv1d_circular", b_conv1d_circular, false, true},
    {"conv2d_replicate_same", b_conv2d_replicate_same, false, true},
    {"adaptive_max", b_adaptive_max, false, true},
    {"elu", b_elu, false, true},
    {"softplus", b_softplus, false, true},
    {"hardtanh", b_hardtanh, false, true},
};

/* Absolute tol; with scale_tol (float32 runs) scale_tol times the largest expected
 * magnitude (at least 1).  want is rounded to got's dtype first. */
static double scale_tol = 0;
static void check_close(const char *what, ct_tensor *got, ct_tensor *want, double tol) {
    ct_tensor *w = ct_to(want, .dtype = got ? ct_dtype_of(got) : CT_F64);
    if (scale_tol > 0) CHECK_TENSOR_CLOSE(what, got, w, .atol = scale_tol, .atol_of_max = true);
    else CHECK_TENSOR_CLOSE(what, got, w, .atol = tol);
}

/* Loads the fixture's state dict into m by the names m itself lists. */
static void load_by_name(fx_file *f, const char *name, ct_module *m) {
    ct_state_dict *mine = ct_module_state_dict(m);
    ct_state_dict *sd = ct_state_dict_new();
    char key[256];
    for (int i = 0; i < ct_state_dict_len(mine); i++) {
        snprintf(key, sizeof key, "%s.sd.%s", name, ct_state_dict_key(mine, i));
        ct_state_dict_set(sd, ct_state_dict_key(mine, i), fx_get(f, key));
    }
    snprintf(key, sizeof key, "%s.nsd", name);
    CHECK_INT_EQ(ct_state_dict_len(mine), ct_item_int(fx_get(f, key)));
    CHECK(ct_load_state_dict(m, sd) == 0);
}

static void run_case(fx_file *f, const layer_case *c, ct_dtype dt) {
    char key[256];
    ct_module *m = c->build();
    CHECK(m != NULL);
    if (!m) return;
    CHECK(ct_module_to(m, .dtype = dt) == 0);
    load_by_name(f, c->name, m);
    ct_module_train(m, c->train);
    snprintf(key, sizeof key, "%s.x", c->name);
    ct_tensor *x = fx_get(f, key);
    bool float_in = ct_dtype_is_floating(ct_dtype_of(x));
    if (float_in) x = fx_get_as(f, key, dt, true);
    ct_tensor *y;
    ct_tensor *x2 = NULL;
    if (c->two_inputs) {
        snprintf(key, sizeof key, "%s.x2", c->name);
        x2 = fx_get_as(f, key, dt, true);
        ct_tensor *in[2] = {x, x2};
        CHECK_INT_EQ(ct_forward_multi(m, 2, in, &y, 1), 1);
    } else {
        y = ct_forward(m, x);
    }
    CHECK(y != NULL);
    if (!y) return;
    snprintf(key, sizeof key, "%s.y", c->name);
    check_close(key, y, fx_get(f, key), 1e-10);
    CHECK(ct_backward(ct_sum(ct_mul(y, y))) == 0);
    if (float_in) {
        snprintf(key, sizeof key, "%s.gx", c->name);
        check_close(key, ct_grad(x), fx_get(f, key), 1e-9);
    }
    if (x2) {
        snprintf(key, sizeof key, "%s.gx2", c->name);
        check_close(key, ct_grad(x2), fx_get(f, key), 1e-9);
    }
    const char *names[32];
    ct_tensor *ts[32];
    int n = ct_named_parameters(m, names, ts, 32);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s.g.%s", c->name, names[i]);
        check_close(key, ct_grad(ts[i]), fx_get(f, key), 1e-9);
    }
    n = ct_named_buffers(m, names, ts, 32);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s.after.%s", c->name, names[i]);
        check_close(key, ts[i], fx_get(f, key), 1e-12);
    }
    /* Embedding with max_norm renormalizes its weight in place. */
    if (!strcmp(c->name, "embedding_maxnorm"))
        check_close("embedding_maxnorm.after_weight", ct_module_get_parameter(m, "weight"),
                    fx_get(f, "embedding_maxnorm.after_weight"), 1e-12);
}

TEST(layers_match_pytorch) {
    fx_file *f = fx_load("layers");
    if (!f) return;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CT_SCOPE { run_case(f, &cases[i], CT_F64); }
    }
    fx_free(f);
}

/* The same in float32: the fixtures were computed in float64, so the tolerance is
 * relative, 1e-4 of the largest expected magnitude (a few hundred float32 roundings
 * in the longest chains, the sequential CNN's backward). */
TEST(layers_match_pytorch_float32) {
    fx_file *f = fx_load("layers");
    if (!f) return;
    scale_tol = 1e-4;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CT_SCOPE { run_case(f, &cases[i], CT_F32); }
    }
    scale_tol = 0;
    fx_free(f);
}
