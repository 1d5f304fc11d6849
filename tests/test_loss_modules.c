/* The loss modules (nn.NLLLoss, nn.BCELoss, nn.KLDivLoss, nn.CosineEmbeddingLoss,
 * nn.BCEWithLogitsLoss) compute what their functional forms compute with the same
 * options, for every reduction, and match values worked out by hand. */
#include "ct_test.h"

static const ct_reduction REDUCTIONS[] = {CT_REDUCTION_MEAN, CT_REDUCTION_SUM, CT_REDUCTION_NONE};
#define N_REDUCTIONS (int)(sizeof REDUCTIONS / sizeof REDUCTIONS[0])

/* module(input, target) equals want, in values and shape. */
#define CHECK_MODULE_EQ(module, input, target, want)                                 \
    do {                                                                             \
        ct_tensor *got_ = ct_loss(module, input, target);                            \
        CHECK(got_ != NULL && (want) != NULL);                                       \
        CHECK_CLOSE(ct_test_max_diff(got_, want), 0, 1e-6);                          \
    } while (0)

TEST(nll_loss_module) {
    ct_tensor *x = ct_log_softmax(ct_randn(CT_SHAPE(5, 4)), 1);
    ct_tensor *t = ct_tensor_i64(((int64_t[]){0, 3, 1, 3, 2}), CT_SHAPE(5));
    ct_tensor *w = ct_tensor_f32(((float[]){0.5f, 1, 2, 3}), CT_SHAPE(4));
    for (int i = 0; i < N_REDUCTIONS; i++) {
        ct_reduction red = REDUCTIONS[i];
        CHECK_MODULE_EQ(ct_nn_nll_loss(.reduction = red), x, t, ct_nll_loss(x, t, .reduction = red));
        CHECK_MODULE_EQ(ct_nn_nll_loss(.weight = w, .ignore_index = CT_SOME(3), .reduction = red), x, t,
                        ct_nll_loss(x, t, .weight = w, .ignore_index = CT_SOME(3), .reduction = red));
    }
    /* By hand: -sum(w[t] * x[n, t]) / sum(w[t]) = (3*3 + 2*5) / (3 + 2). */
    ct_tensor *lp = ct_tensor_f32(((float[]){-1, -2, -3, -4, -5, -6}), CT_SHAPE(2, 3));
    ct_tensor *lt = ct_tensor_i64(((int64_t[]){2, 1}), CT_SHAPE(2));
    ct_tensor *lw = ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3));
    CHECK_VALUES(ct_loss(ct_nn_nll_loss(.weight = lw), lp, lt), 1e-6, 3.8);
    CHECK_VALUES(ct_loss(ct_nn_nll_loss(.weight = lw, .ignore_index = CT_SOME(2)), lp, lt), 1e-6, 5);
    CHECK_VALUES(ct_loss(ct_nn_nll_loss(.reduction = CT_REDUCTION_NONE), lp, lt), 1e-6, 3, 5);
    /* The module's gradient is the functional one. */
    ct_tensor *a = ct_detach(x), *b = ct_detach(x);
    ct_set_requires_grad(a, true);
    ct_set_requires_grad(b, true);
    CHECK(ct_backward(ct_loss(ct_nn_nll_loss(.weight = w), a, t)) == 0);
    CHECK(ct_backward(ct_nll_loss(b, t, .weight = w)) == 0);
    CHECK_CLOSE(ct_test_max_diff(ct_grad(a), ct_grad(b)), 0, 1e-7);
}

TEST(bce_loss_module) {
    ct_tensor *p = ct_sigmoid(ct_randn(CT_SHAPE(3, 4)));
    ct_tensor *t = ct_bernoulli(ct_full(CT_SHAPE(3, 4), 0.5));
    ct_tensor *w = ct_rand(CT_SHAPE(4)); /* broadcast over the rows */
    for (int i = 0; i < N_REDUCTIONS; i++) {
        ct_reduction red = REDUCTIONS[i];
        CHECK_MODULE_EQ(ct_nn_bce_loss(.reduction = red), p, t,
                        ct_binary_cross_entropy(p, t, .reduction = red));
        CHECK_MODULE_EQ(ct_nn_bce_loss(.weight = w, .reduction = red), p, t,
                        ct_binary_cross_entropy(p, t, .weight = w, .reduction = red));
    }
    /* By hand: -log(1 - 0.25), -log(0.5). */
    ct_tensor *hp = ct_tensor_f32(((float[]){0.25f, 0.5f}), CT_SHAPE(2));
    ct_tensor *ht = ct_tensor_f32(((float[]){0, 1}), CT_SHAPE(2));
    CHECK_VALUES(ct_loss(ct_nn_bce_loss(.reduction = CT_REDUCTION_NONE), hp, ht), 1e-6,
                 0.2876820725, 0.6931471806);
    CHECK_VALUES(ct_loss(ct_nn_bce_loss(), hp, ht), 1e-6, (0.2876820725 + 0.6931471806) / 2);
    CHECK_ERROR(ct_loss(ct_nn_bce_loss(), ct_full(CT_SHAPE(2), 1.5), ht),
                "all elements of input should be between 0 and 1");
}

TEST(bce_with_logits_loss_module) {
    ct_tensor *x = ct_mul_scalar(ct_randn(CT_SHAPE(3, 4)), 3);
    ct_tensor *t = ct_bernoulli(ct_full(CT_SHAPE(3, 4), 0.5));
    ct_tensor *w = ct_rand(CT_SHAPE(3, 1));
    ct_tensor *pw = ct_tensor_f32(((float[]){1, 2, 0.5f, 4}), CT_SHAPE(4));
    for (int i = 0; i < N_REDUCTIONS; i++) {
        ct_reduction red = REDUCTIONS[i];
        CHECK_MODULE_EQ(ct_nn_bce_with_logits_loss(.reduction = red), x, t,
                        ct_binary_cross_entropy_with_logits(x, t, .reduction = red));
        CHECK_MODULE_EQ(ct_nn_bce_with_logits_loss(.weight = w, .pos_weight = pw, .reduction = red),
                        x, t,
                        ct_binary_cross_entropy_with_logits(x, t, .weight = w, .pos_weight = pw,
                                                            .reduction = red));
    }
    /* The logits form is BCE of the sigmoid. */
    CHECK_CLOSE(ct_item(ct_loss(ct_nn_bce_with_logits_loss(), x, t)),
                ct_item(ct_binary_cross_entropy(ct_sigmoid(x), t)), 1e-5);
    /* By hand: logit 0, target 1, pos_weight 2: 2 log 2; target 0: log 2. */
    ct_tensor *z = ct_zeros(CT_SHAPE(2));
    ct_tensor *zt = ct_tensor_f32(((float[]){1, 0}), CT_SHAPE(2));
    ct_tensor *two = ct_full(CT_SHAPE(1), 2);
    CHECK_VALUES(ct_loss(ct_nn_bce_with_logits_loss(.pos_weight = two, .reduction = CT_REDUCTION_NONE),
                         z, zt),
                 1e-6, 2 * M_LN2, M_LN2);
}

TEST(kl_div_loss_module) {
    ct_tensor *x = ct_log_softmax(ct_randn(CT_SHAPE(4, 5)), 1);
    ct_tensor *q = ct_softmax(ct_randn(CT_SHAPE(4, 5)), 1);
    ct_tensor *lq = ct_log(q);
    const ct_reduction reds[] = {CT_REDUCTION_MEAN, CT_REDUCTION_SUM, CT_REDUCTION_NONE,
                                 CT_REDUCTION_BATCHMEAN};
    for (int i = 0; i < 4; i++) {
        CHECK_MODULE_EQ(ct_nn_kl_div_loss(.reduction = reds[i]), x, q,
                        ct_kl_div(x, q, .reduction = reds[i]));
        CHECK_MODULE_EQ(ct_nn_kl_div_loss(.reduction = reds[i], .log_target = true), x, lq,
                        ct_kl_div(x, lq, .reduction = reds[i], .log_target = true));
    }
    /* log_target only changes how the target is read. */
    CHECK_MODULE_EQ(ct_nn_kl_div_loss(.log_target = true), x, lq, ct_kl_div(x, q));
    /* By hand: input log([0.5, 0.5]), target [0.25, 0.75]:
     * 0.25 log(0.25 / 0.5) + 0.75 log(0.75 / 0.5), summed over one row. */
    double kl = 0.25 * log(0.5) + 0.75 * log(1.5);
    ct_tensor *hx = ct_log(ct_full(CT_SHAPE(1, 2), 0.5));
    ct_tensor *ht = ct_tensor_f32(((float[]){0.25f, 0.75f}), CT_SHAPE(1, 2));
    CHECK_VALUES(ct_loss(ct_nn_kl_div_loss(.reduction = CT_REDUCTION_BATCHMEAN), hx, ht), 1e-6, kl);
    CHECK_VALUES(ct_loss(ct_nn_kl_div_loss(), hx, ht), 1e-6, kl / 2);
    CHECK_VALUES(ct_loss(ct_nn_kl_div_loss(.reduction = CT_REDUCTION_NONE), hx, ht), 1e-6,
                 0.25 * log(0.5), 0.75 * log(1.5));
}

TEST(cosine_embedding_loss_module) {
    ct_tensor *x1 = ct_randn(CT_SHAPE(6, 3)), *x2 = ct_randn(CT_SHAPE(6, 3));
    ct_tensor *y = ct_tensor_f32(((float[]){1, -1, 1, -1, -1, 1}), CT_SHAPE(6));
    const double margins[] = {0, 0.2, -0.5};
    for (int i = 0; i < N_REDUCTIONS; i++)
        for (int m = 0; m < 3; m++) {
            ct_reduction red = REDUCTIONS[i];
            ct_tensor *want = ct_cosine_embedding_loss(x1, x2, y, .margin = margins[m], .reduction = red);
            ct_tensor *got = ct_loss3(ct_nn_cosine_embedding_loss(.margin = margins[m], .reduction = red),
                                      x1, x2, y);
            CHECK(got != NULL && want != NULL);
            CHECK_CLOSE(ct_test_max_diff(got, want), 0, 1e-6);
        }
    /* By hand: row 0 orthogonal with target 1: 1 - 0; row 1 parallel with target -1
     * and margin 0.5: max(0, 1 - 0.5). */
    ct_tensor *a = ct_tensor_f32(((float[]){1, 0, 1, 1}), CT_SHAPE(2, 2));
    ct_tensor *b = ct_tensor_f32(((float[]){0, 1, 2, 2}), CT_SHAPE(2, 2));
    ct_tensor *t = ct_tensor_f32(((float[]){1, -1}), CT_SHAPE(2));
    ct_module *m = ct_nn_cosine_embedding_loss(.margin = 0.5, .reduction = CT_REDUCTION_NONE);
    CHECK_VALUES(ct_loss3(m, a, b, t), 1e-6, 1, 0.5);
    CHECK_VALUES(ct_loss3(ct_nn_cosine_embedding_loss(.margin = 0.5), a, b, t), 1e-6, 0.75);
    CHECK_ERROR(ct_loss(m, a, b), "CosineEmbeddingLoss takes 3 inputs");
}
