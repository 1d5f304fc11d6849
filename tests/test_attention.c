/* MultiheadAttention and TransformerEncoderLayer against PyTorch
 * (tests/fixtures/gen_attention.py). */
#include <stdlib.h>

#include "ct_test.h"
#include "fixtures.h"

/* Loads prefix.w.* into m (converted to float64 first). */
static void load(fx_file *f, const char *prefix, ct_module *m) {
    CHECK(ct_module_to(m, .dtype = CT_F64) == 0);
    const char *names[64];
    ct_tensor *ps[64];
    int n = ct_named_parameters(m, names, ps, 64);
    ct_state_dict *sd = ct_state_dict_new();
    char key[128];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s.w.%s", prefix, names[i]);
        ct_state_dict_set(sd, names[i], fx_get(f, key));
    }
    CHECK(ct_load_state_dict(m, sd) == 0);
}

static void check_param_grads(fx_file *f, const char *prefix, ct_module *m) {
    const char *names[64];
    ct_tensor *ps[64];
    int n = ct_named_parameters(m, names, ps, 64);
    char key[128];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s.grad.%s", prefix, names[i]);
        double d = ct_test_max_diff(ct_grad(ps[i]), fx_get(f, key));
        if (!(d < 1e-9)) ct_test_fail(__FILE__, __LINE__, "%s: grad of %s differs by %g", prefix, names[i], d);
    }
}

static ct_tensor *as_bool(ct_tensor *t) { return ct_to(t, .dtype = CT_BOOL); }

TEST(multihead_attention_matches_pytorch) {
    fx_file *f = fx_load("attention");
    ct_module *mha = ct_nn_multihead_attention(8, 2, .batch_first = true);
    load(f, "mha", mha);
    ct_tensor *q = fx_get_as(f, "mha.q", CT_F64, true), *k = fx_get_as(f, "mha.k", CT_F64, true),
              *v = fx_get_as(f, "mha.v", CT_F64, true);
    ct_attention_result r = ct_attention(mha, q, k, v, .key_padding_mask = as_bool(fx_get(f, "mha.kpm")),
                                         .attn_mask = as_bool(fx_get(f, "mha.am")));
    CHECK(ct_test_max_diff(r.output, fx_get(f, "mha.out")) < 1e-12);
    CHECK(ct_test_max_diff(r.weights, fx_get(f, "mha.weights")) < 1e-12);
    CHECK(ct_backward(ct_add(ct_sum(ct_mul(r.output, r.output)), ct_sum(ct_mul(r.weights, r.weights)))) == 0);
    CHECK(ct_test_max_diff(ct_grad(q), fx_get(f, "mha.gq")) < 1e-10);
    CHECK(ct_test_max_diff(ct_grad(k), fx_get(f, "mha.gk")) < 1e-10);
    CHECK(ct_test_max_diff(ct_grad(v), fx_get(f, "mha.gv")) < 1e-10);
    check_param_grads(f, "mha", mha);
    const char *names[4];
    CHECK_INT_EQ(ct_named_parameters(mha, names, NULL, 4), 4);
    CHECK_STR_EQ(names[0], "in_proj_weight");
    CHECK_STR_EQ(names[2], "out_proj.weight");
    CHECK_ERROR(ct_nn_multihead_attention(10, 3), "embed_dim must be divisible by num_heads");
    fx_free(f);
}

TEST(transformer_encoder_layer_matches_pytorch) {
    fx_file *f = fx_load("attention");
    const char *prefixes[] = {"enc", "enc_nf"};
    for (int i = 0; i < 2; i++) {
        char key[64];
        ct_module *enc = ct_nn_transformer_encoder_layer(8, 2, .dim_feedforward = 16, .dropout = CT_SOME(0),
                                                        .norm_first = i == 1,
                                                        .activation = i == 1 ? CT_ACT_GELU : CT_ACT_RELU);
        load(f, prefixes[i], enc);
        snprintf(key, sizeof key, "%s.x", prefixes[i]);
        ct_tensor *x = fx_get_as(f, key, CT_F64, true);
        snprintf(key, sizeof key, "%s.pad", prefixes[i]);
        ct_tensor *y = ct_encoder_layer_forward(enc, x, NULL, as_bool(fx_get(f, key)));
        snprintf(key, sizeof key, "%s.out", prefixes[i]);
        CHECK(ct_test_max_diff(y, fx_get(f, key)) < 1e-12);
        CHECK(ct_backward(ct_sum(ct_mul(y, y))) == 0);
        snprintf(key, sizeof key, "%s.gx", prefixes[i]);
        CHECK(ct_test_max_diff(ct_grad(x), fx_get(f, key)) < 1e-10);
        check_param_grads(f, prefixes[i], enc);
    }
    fx_free(f);
}

/* A fixture mask: bool masks are stored as int64, float (additive) ones as float64. */
static ct_tensor *mask_of(fx_file *f, const char *key) {
    ct_tensor *m = fx_get(f, key);
    return ct_dtype_of(m) == CT_I64 ? as_bool(m) : m;
}

static double diff_of(fx_file *f, const char *name, const char *what, ct_tensor *t) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", name, what);
    return ct_test_max_diff(t, fx_get(f, key));
}

/* Float and 3-D attention masks, float padding masks, time-major and unbatched inputs,
 * per-head and no weights (gen_attention.py's second table). */
TEST(multihead_attention_masks_layouts_and_weight_options_match_pytorch) {
    static const struct {
        const char *name;
        bool batch_first, am, kpm, per_head, no_weights;
    } cases[] = {
        {"mha_fam", true, true, false, false, false},  {"mha_fkpm", false, false, true, true, false},
        {"mha_3d", false, true, true, false, false},   {"mha_unb", false, true, true, true, false},
        {"mha_nw", true, false, true, false, true},
    };
    fx_file *f = fx_load("attention");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) CT_SCOPE {
        const char *name = cases[c].name;
        char key[96];
        ct_module *mha = ct_nn_multihead_attention(4, 2, .batch_first = cases[c].batch_first);
        load(f, name, mha);
        ct_tensor *in[3];
        const char *qkv[] = {"q", "k", "v"};
        for (int i = 0; i < 3; i++) {
            snprintf(key, sizeof key, "%s.%s", name, qkv[i]);
            in[i] = fx_get_as(f, key, CT_F64, true);
        }
        snprintf(key, sizeof key, "%s.am", name);
        ct_tensor *am = cases[c].am ? mask_of(f, key) : NULL;
        snprintf(key, sizeof key, "%s.kpm", name);
        ct_tensor *kpm = cases[c].kpm ? mask_of(f, key) : NULL;
        ct_attention_result r = ct_attention(mha, in[0], in[1], in[2], .attn_mask = am, .key_padding_mask = kpm,
                                             .per_head_weights = cases[c].per_head,
                                             .no_weights = cases[c].no_weights);
        if (!(diff_of(f, name, "out", r.output) < 1e-12)) ct_test_fail(__FILE__, __LINE__, "%s: output", name);
        ct_tensor *loss = ct_sum(ct_mul(r.output, r.output));
        if (cases[c].no_weights) {
            CHECK(r.weights == NULL);
        } else {
            if (!(diff_of(f, name, "weights", r.weights) < 1e-12))
                ct_test_fail(__FILE__, __LINE__, "%s: weights", name);
            loss = ct_add(loss, ct_sum(ct_mul(r.weights, r.weights)));
        }
        CHECK(ct_backward(loss) == 0);
        const char *grads[] = {"gq", "gk", "gv"};
        for (int i = 0; i < 3; i++)
            if (!(diff_of(f, name, grads[i], ct_grad(in[i])) < 1e-10))
                ct_test_fail(__FILE__, __LINE__, "%s: %s", name, grads[i]);
        check_param_grads(f, name, mha);
    }
    fx_free(f);
}

/* The encoder layer with src_mask: time-major with a bool mask, batch_first with a
 * float one, both with padding. */
TEST(transformer_encoder_layer_src_mask_and_batch_first_match_pytorch) {
    fx_file *f = fx_load("attention");
    const char *names[] = {"enc_m", "enc_bf"};
    for (int i = 0; i < 2; i++) CT_SCOPE {
        char key[64];
        ct_module *enc = ct_nn_transformer_encoder_layer(4, 2, .dim_feedforward = 8, .dropout = CT_SOME(0),
                                                        .batch_first = i == 1);
        load(f, names[i], enc);
        snprintf(key, sizeof key, "%s.x", names[i]);
        ct_tensor *x = fx_get_as(f, key, CT_F64, true);
        snprintf(key, sizeof key, "%s.mask", names[i]);
        ct_tensor *mask = mask_of(f, key);
        snprintf(key, sizeof key, "%s.pad", names[i]);
        ct_tensor *y = ct_encoder_layer_forward(enc, x, mask, as_bool(fx_get(f, key)));
        if (!(diff_of(f, names[i], "out", y) < 1e-12)) ct_test_fail(__FILE__, __LINE__, "%s: output", names[i]);
        CHECK(ct_backward(ct_sum(ct_mul(y, y))) == 0);
        if (!(diff_of(f, names[i], "gx", ct_grad(x)) < 1e-10)) ct_test_fail(__FILE__, __LINE__, "%s: gx", names[i]);
        check_param_grads(f, names[i], enc);
    }
    fx_free(f);
}

/* Module reprs as PyTorch 1.13 prints them: out_proj is a NonDynamicallyQuantizableLinear. */
TEST(attention_modules_print_like_pytorch) {
    char *s = ct_module_to_string(ct_nn_multihead_attention(8, 2, .bias = false));
    CHECK_STR_EQ(s, "MultiheadAttention(\n"
                    "  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, "
                    "bias=False)\n"
                    ")");
    free(s);
    s = ct_module_to_string(ct_nn_transformer_encoder_layer(8, 2, .dim_feedforward = 16));
    CHECK_STR_EQ(s, "TransformerEncoderLayer(\n"
                    "  (self_attn): MultiheadAttention(\n"
                    "    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, "
                    "bias=True)\n"
                    "  )\n"
                    "  (linear1): Linear(in_features=8, out_features=16, bias=True)\n"
                    "  (dropout): Dropout(p=0.1, inplace=False)\n"
                    "  (linear2): Linear(in_features=16, out_features=8, bias=True)\n"
                    "  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
                    "  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
                    "  (dropout1): Dropout(p=0.1, inplace=False)\n"
                    "  (dropout2): Dropout(p=0.1, inplace=False)\n"
                    ")");
    free(s);
}
