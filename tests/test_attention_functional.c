/* ct_multi_head_attention_forward (F.multi_head_attention_forward): against PyTorch
 * (tests/fixtures/gen_mha_functional.py) and against the MultiheadAttention module. */
#include <stdlib.h>

#include "ct_test.h"
#include "fixtures.h"

static ct_tensor *as_bool(ct_tensor *t) { return ct_to(t, .dtype = CT_BOOL); }

/* A fixture tensor case.name as a float64 leaf requiring grad. */
static ct_tensor *leaf(fx_file *f, const char *c, const char *name) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", c, name);
    return fx_get_as(f, key, CT_F64, true);
}

/* The gradient of each leaf equals PyTorch's case.grad.name. */
static void check_grads(fx_file *f, const char *c, int n, const char *const *names, ct_tensor *const *leaves) {
    char key[96];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s.grad.%s", c, names[i]);
        double d = ct_test_max_diff(ct_grad(leaves[i]), fx_get(f, key));
        if (!(d < 1e-9)) ct_test_fail(__FILE__, __LINE__, "%s: grad of %s differs by %g", c, names[i], d);
    }
}

/* out and weights equal PyTorch's; then backward of sum(out^2) + sum(weights^2). */
static void check_result(fx_file *f, const char *c, ct_attention_result r) {
    char key[96];
    CHECK(r.output && r.weights);
    snprintf(key, sizeof key, "%s.out", c);
    CHECK(ct_test_max_diff(r.output, fx_get(f, key)) < 1e-11);
    snprintf(key, sizeof key, "%s.weights", c);
    CHECK(ct_test_max_diff(r.weights, fx_get(f, key)) < 1e-12);
    CHECK(ct_backward(ct_add(ct_sum(ct_mul(r.output, r.output)), ct_sum(ct_mul(r.weights, r.weights)))) == 0);
}

TEST(packed_projection_matches_pytorch) {
    fx_file *f = fx_load("mha_functional");
    const char *names[] = {"q", "k", "v", "in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias"};
    ct_tensor *t[7];
    for (int i = 0; i < 7; i++) t[i] = leaf(f, "packed", names[i]);
    ct_attention_result r = ct_multi_head_attention_forward(
        t[0], t[1], t[2], 8, 2, t[3], t[4], t[5], t[6], .attn_mask = fx_get(f, "packed.am"),
        .key_padding_mask = as_bool(fx_get(f, "packed.kpm")));
    check_result(f, "packed", r);
    check_grads(f, "packed", 7, names, t);
    fx_free(f);
}

TEST(separate_projections_bias_kv_zero_attn_match_pytorch) {
    fx_file *f = fx_load("mha_functional");
    const char *names[] = {"q", "k", "v", "q_proj_weight", "k_proj_weight", "v_proj_weight",
                           "in_proj_bias", "bias_k", "bias_v", "out_proj_weight"};
    ct_tensor *t[10];
    for (int i = 0; i < 10; i++) t[i] = leaf(f, "sep", names[i]);
    ct_attention_result r = ct_multi_head_attention_forward(
        t[0], t[1], t[2], 8, 2, NULL, t[6], t[9], NULL, .q_proj_weight = t[3], .k_proj_weight = t[4],
        .v_proj_weight = t[5], .bias_k = t[7], .bias_v = t[8], .add_zero_attn = true,
        .per_head_weights = true, .attn_mask = as_bool(fx_get(f, "sep.am")),
        .key_padding_mask = as_bool(fx_get(f, "sep.kpm")));
    CHECK_INT_EQ(ct_ndim(r.weights), 4); /* [B, H, L, S + 2] */
    CHECK_INT_EQ(ct_size(r.weights, 3), 6);
    check_result(f, "sep", r);
    check_grads(f, "sep", 10, names, t);
    fx_free(f);
}

TEST(unbatched_matches_pytorch) {
    fx_file *f = fx_load("mha_functional");
    const char *names[] = {"q", "k", "v", "in_proj_weight", "out_proj_weight", "out_proj_bias"};
    ct_tensor *t[6];
    for (int i = 0; i < 6; i++) t[i] = leaf(f, "unb", names[i]);
    /* batch_first means nothing without a batch dim. */
    ct_attention_result r = ct_multi_head_attention_forward(t[0], t[1], t[2], 8, 2, t[3], NULL, t[4], t[5],
                                                            .key_padding_mask = fx_get(f, "unb.kpm"),
                                                            .batch_first = true);
    CHECK_INT_EQ(ct_ndim(r.output), 2);
    check_result(f, "unb", r);
    check_grads(f, "unb", 6, names, t);
    fx_free(f);
}

/* Detached copies of m's parameters requiring grad (in named_parameters' order). */
static int param_copies(ct_module *m, ct_tensor **out) {
    ct_tensor *ps[8];
    int n = ct_named_parameters(m, NULL, ps, 8);
    for (int i = 0; i < n; i++) {
        out[i] = ct_clone(ct_detach(ps[i]));
        ct_set_requires_grad(out[i], true);
    }
    return n;
}

/* The module's forward is the functional form with its parameters: same output,
 * weights and gradients, batch-first and time-major, per-head weights or not. */
TEST(module_equals_functional_with_its_parameters) {
    for (int batch_first = 0; batch_first <= 1; batch_first++) {
        ct_manual_seed(7);
        ct_module *mha = ct_nn_multihead_attention(12, 3, .batch_first = batch_first);
        CHECK(ct_module_to(mha, .dtype = CT_F64) == 0);
        ct_tensor *p[4];
        CHECK_INT_EQ(param_copies(mha, p), 4); /* in_proj_weight, in_proj_bias, out_proj.weight, .bias */
        /* Non-zero biases, so that their gradients mean something. */
        CT_NO_GRAD {
            ct_tensor *ps[4];
            ct_named_parameters(mha, NULL, ps, 4);
            ct_copy_(ps[1], ct_randn_like(ps[1]));
            ct_copy_(ps[3], ct_randn_like(ps[3]));
            ct_copy_(p[1], ps[1]);
            ct_copy_(p[3], ps[3]);
        }
        ct_shape qs = batch_first ? CT_SHAPE(2, 4, 12) : CT_SHAPE(4, 2, 12);
        ct_shape ks = batch_first ? CT_SHAPE(2, 5, 12) : CT_SHAPE(5, 2, 12);
        ct_tensor *q = ct_randn(qs, .dtype = CT_F64, .requires_grad = true);
        ct_tensor *k = ct_randn(ks, .dtype = CT_F64, .requires_grad = true);
        ct_tensor *v = ct_randn(ks, .dtype = CT_F64, .requires_grad = true);
        ct_tensor *q2 = ct_clone(ct_detach(q)), *k2 = ct_clone(ct_detach(k)), *v2 = ct_clone(ct_detach(v));
        ct_set_requires_grad(q2, true);
        ct_set_requires_grad(k2, true);
        ct_set_requires_grad(v2, true);
        ct_tensor *kpm = ct_tensor_bool(((bool[]){0, 0, 1, 0, 1, 0, 0, 0, 0, 0}), CT_SHAPE(2, 5));
        ct_tensor *am = ct_triu(ct_full(CT_SHAPE(4, 5), -INFINITY, .dtype = CT_F64), 2);
        bool per_head = batch_first;
        ct_attention_result a = ct_attention(mha, q, k, v, .key_padding_mask = kpm, .attn_mask = am,
                                             .per_head_weights = per_head);
        ct_attention_result b = ct_multi_head_attention_forward(
            q2, k2, v2, 12, 3, p[0], p[1], p[2], p[3], .key_padding_mask = kpm, .attn_mask = am,
            .per_head_weights = per_head, .batch_first = batch_first);
        CHECK(ct_test_max_diff(a.output, b.output) == 0);
        CHECK(ct_test_max_diff(a.weights, b.weights) == 0);
        CHECK(ct_backward(ct_add(ct_sum(ct_mul(a.output, a.output)), ct_sum(ct_mul(a.weights, a.weights)))) == 0);
        CHECK(ct_backward(ct_add(ct_sum(ct_mul(b.output, b.output)), ct_sum(ct_mul(b.weights, b.weights)))) == 0);
        CHECK(ct_test_max_diff(ct_grad(q), ct_grad(q2)) == 0);
        CHECK(ct_test_max_diff(ct_grad(k), ct_grad(k2)) == 0);
        CHECK(ct_test_max_diff(ct_grad(v), ct_grad(v2)) == 0);
        ct_tensor *ps[4];
        ct_named_parameters(mha, NULL, ps, 4);
        for (int i = 0; i < 4; i++) CHECK(ct_test_max_diff(ct_grad(ps[i]), ct_grad(p[i])) == 0);
    }
}

/* Dropout on the weights: only when training (F's default) with dropout_p > 0; the
 * module passes its dropout and its mode. */
TEST(dropout_follows_training) {
    ct_module *mha = ct_nn_multihead_attention(8, 2, .dropout = 0.5);
    ct_tensor *p[4];
    ct_named_parameters(mha, NULL, p, 4);
    ct_tensor *x = ct_randn(CT_SHAPE(6, 3, 8));
    ct_attention_result plain = ct_multi_head_attention_forward(x, x, x, 8, 2, p[0], p[1], p[2], p[3]);
    ct_attention_result eval = ct_multi_head_attention_forward(x, x, x, 8, 2, p[0], p[1], p[2], p[3],
                                                               .dropout_p = 0.5, .training = false);
    CHECK(ct_test_max_diff(plain.output, eval.output) == 0);
    ct_attention_result d1 = ct_multi_head_attention_forward(x, x, x, 8, 2, p[0], p[1], p[2], p[3],
                                                             .dropout_p = 0.5, .generator = ct_generator_new(3));
    ct_attention_result d2 = ct_multi_head_attention_forward(x, x, x, 8, 2, p[0], p[1], p[2], p[3],
                                                             .dropout_p = 0.5, .generator = ct_generator_new(3));
    CHECK(ct_test_max_diff(d1.output, d2.output) == 0);
    CHECK(ct_test_max_diff(d1.weights, d2.weights) == 0);
    CHECK(ct_test_max_diff(d1.output, plain.output) > 1e-3);
    /* The module in training mode draws from the default generator as F does. */
    ct_manual_seed(11);
    ct_attention_result m = ct_attention(mha, x, x, x);
    ct_manual_seed(11);
    ct_attention_result d3 = ct_multi_head_attention_forward(x, x, x, 8, 2, p[0], p[1], p[2], p[3], .dropout_p = 0.5);
    CHECK(ct_test_max_diff(m.output, d3.output) == 0);
    ct_module_eval(mha);
    CHECK(ct_test_max_diff(ct_attention(mha, x, x, x).output, plain.output) == 0);
}

TEST(errors_like_pytorch) {
    ct_tensor *w = ct_randn(CT_SHAPE(24, 8)), *ow = ct_randn(CT_SHAPE(8, 8));
    ct_tensor *x = ct_randn(CT_SHAPE(3, 2, 8)), *x4 = ct_randn(CT_SHAPE(3, 2, 8, 1));
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, x, 16, 2, w, NULL, ow, NULL).output,
                "was expecting embedding dimension of 16, but got 8");
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, x, 8, 3, w, NULL, ow, NULL).output,
                "embed_dim 8 not divisible by num_heads 3");
    CHECK_ERROR(ct_multi_head_attention_forward(x4, x4, x4, 8, 2, w, NULL, ow, NULL).output,
                "query should be unbatched 2D or batched 3D tensor but received 4-D query tensor");
    CHECK_ERROR(ct_multi_head_attention_forward(x, ct_randn(CT_SHAPE(3, 8)), x, 8, 2, w, NULL, ow, NULL).output,
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found 2-D and 3-D");
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, ct_randn(CT_SHAPE(4, 2, 8)), 8, 2, w, NULL, ow, NULL).output,
                "key shape [3, 2, 8] does not match value shape [4, 2, 8]");
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, x, 8, 2, NULL, NULL, ow, NULL).output,
                "use_separate_proj_weight is False but in_proj_weight is None");
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, x, 8, 2, NULL, NULL, ow, NULL, .q_proj_weight = ow,
                                                .k_proj_weight = ow).output,
                "use_separate_proj_weight is True but v_proj_weight is None");
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, x, 8, 2, w, NULL, NULL, NULL).output,
                "out_proj_weight is required");
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, x, 8, 2, w, NULL, ow, NULL,
                                                .attn_mask = ct_zeros(CT_SHAPE(3, 4))).output,
                "The shape of the 2D attn_mask is [3, 4], but should be (3, 3).");
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, x, 8, 2, w, NULL, ow, NULL,
                                                .attn_mask = ct_zeros(CT_SHAPE(2, 3, 3))).output,
                "The shape of the 3D attn_mask is [2, 3, 3], but should be (4, 3, 3).");
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, x, 8, 2, w, NULL, ow, NULL,
                                                .attn_mask = ct_zeros(CT_SHAPE(3, 3), .dtype = CT_I64)).output,
                "Only float, byte, and bool types are supported for attn_mask, not torch.int64");
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, x, 8, 2, w, NULL, ow, NULL,
                                                .key_padding_mask = ct_zeros(CT_SHAPE(2, 4), .dtype = CT_BOOL)).output,
                "expecting key_padding_mask shape of (2, 3), but got [2, 4]");
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, x, 8, 2, w, NULL, ow, NULL,
                                                .key_padding_mask = ct_zeros(CT_SHAPE(3), .dtype = CT_BOOL)).output,
                "expected `key_padding_mask` to be `None` or 2-D but found 1-D tensor instead");
    CHECK_ERROR(ct_multi_head_attention_forward(x, x, x, 8, 2, w, NULL, ow, NULL,
                                                .bias_k = ct_zeros(CT_SHAPE(1, 1, 8))).output,
                "bias_k and bias_v must be given together");
    /* Through the module the message names ct_attention. */
    CHECK_ERROR(ct_attention(ct_nn_multihead_attention(4, 2), x, x, x).output,
                "ct_attention: was expecting embedding dimension of 4, but got 8");
}
