/* Train vs eval behaviour (Dropout, Dropout2d, BatchNorm), running statistics,
 * gradchecks of the normalization functionals, errors. */
#include <stdlib.h>

#include "ct_test.h"

TEST(dropout_train_and_eval) {
    ct_manual_seed(0);
    ct_module *d = ct_nn_dropout(0.3);
    ct_tensor *x = ct_ones(CT_SHAPE(100, 100));
    ct_tensor *y = ct_forward(d, x);
    double *v = ct_test_values(y);
    int zeros = 0;
    for (int i = 0; i < 10000; i++) {
        if (v[i] == 0) zeros++;
        else CHECK_CLOSE(v[i], 1 / 0.7, 1e-6);
    }
    free(v);
    /* Binomial(10^4, 0.3): sd 46; 6 sd. */
    CHECK(abs(zeros - 3000) < 6 * 46);
    ct_module_eval(d);
    CHECK(ct_forward(d, x) == x); /* identity in eval */
    ct_module_train(d, true);
    CHECK(ct_forward(ct_nn_dropout(0), x) == x);
    CHECK_ERROR(ct_nn_dropout(1.5), "dropout probability has to be between 0 and 1, but got 1.5");
}

TEST(dropout2d_zeroes_whole_channels) {
    ct_manual_seed(1);
    ct_module *d = ct_nn_dropout2d(0.5);
    ct_tensor *x = ct_ones(CT_SHAPE(20, 30, 3, 4), .requires_grad = true);
    ct_tensor *y = ct_forward(d, x);
    double *v = ct_test_values(y);
    int dropped = 0;
    for (int c = 0; c < 600; c++) {
        double first = v[c * 12];
        CHECK(first == 0 || first == 2);
        for (int k = 1; k < 12; k++) CHECK(v[c * 12 + k] == first);
        dropped += first == 0;
    }
    free(v);
    CHECK(abs(dropped - 300) < 6 * 13); /* Binomial(600, 0.5): sd 12.2 */
    CHECK(ct_backward(ct_sum(y)) == 0);
    CHECK(ct_test_max_diff(ct_grad(x), y) == 0); /* gradient: the same mask */
    ct_module_eval(d);
    CHECK(ct_forward(d, x) == x);
    ct_tensor *z = ct_dropout2d(ct_ones(CT_SHAPE(2, 3, 4)), 1, true);
    CHECK_CLOSE(ct_item(ct_sum(z)), 0, 0);
}

TEST(batch_norm_running_stats_train_and_eval) {
    ct_manual_seed(2);
    ct_module *bn = ct_nn_batch_norm1d(3);
    ct_tensor *x = ct_add_scalar(ct_mul_scalar(ct_randn(CT_SHAPE(64, 3), .dtype = CT_F32), 2), 5);
    ct_forward(bn, x);
    ct_tensor *rm = ct_module_get_buffer(bn, "running_mean");
    ct_tensor *rv = ct_module_get_buffer(bn, "running_var");
    ct_tensor *want_rm = ct_mul_scalar(ct_mean(x, .dims = CT_DIMS(0)), 0.1);
    ct_tensor *want_rv = ct_add_scalar(ct_mul_scalar(ct_var(x, .dims = CT_DIMS(0)), 0.1), 0.9);
    CHECK(ct_test_max_diff(rm, want_rm) < 1e-5);
    CHECK(ct_test_max_diff(rv, want_rv) < 1e-5); /* unbiased variance */
    CHECK_VALUES(ct_module_get_buffer(bn, "num_batches_tracked"), 0, 1);
    CHECK(!ct_requires_grad(rm));
    /* eval: the running statistics, and nothing is updated. */
    ct_module_eval(bn);
    ct_tensor *y = ct_forward(bn, x);
    ct_tensor *want = ct_div(ct_sub(x, rm), ct_sqrt(ct_add_scalar(rv, 1e-5)));
    CHECK(ct_test_max_diff(y, want) < 1e-5);
    CHECK_VALUES(ct_module_get_buffer(bn, "num_batches_tracked"), 0, 1);
    CHECK(ct_test_max_diff(rm, want_rm) == 0);
    /* Eval accepts one value per channel; training does not. */
    CHECK(ct_forward(bn, ct_ones(CT_SHAPE(1, 3))) != NULL);
    ct_module_train(bn, true);
    CHECK_ERROR(ct_forward(bn, ct_ones(CT_SHAPE(1, 3))),
                "Expected more than 1 value per channel when training, got input size [1, 3]");
    CHECK_ERROR(ct_forward(bn, ct_ones(CT_SHAPE(2, 3, 4, 5))), "expected 2D or 3D input (got 4D input)");
    CHECK_ERROR(ct_forward(ct_nn_batch_norm2d(3), ct_ones(CT_SHAPE(2, 3, 4))),
                "expected 4D input (got 3D input)");
    CHECK_ERROR(ct_forward(ct_nn_batch_norm2d(3), ct_ones(CT_SHAPE(2, 4, 3, 3))),
                "running_mean should contain 4 elements not 3");
}

TEST(batch_norm_cumulative_average_and_untracked) {
    ct_manual_seed(3);
    ct_module *bn = ct_nn_batch_norm2d(2, .momentum = CT_NONE);
    ct_tensor *sum = ct_zeros(CT_SHAPE(2));
    for (int i = 0; i < 3; i++) {
        ct_tensor *x = ct_add_scalar(ct_randn(CT_SHAPE(4, 2, 3, 3)), i);
        ct_forward(bn, x);
        sum = ct_add(sum, ct_mean(x, .dims = CT_DIMS(0, 2, 3)));
    }
    /* momentum None: the plain average of the batch means. */
    CHECK(ct_test_max_diff(ct_module_get_buffer(bn, "running_mean"), ct_div_scalar(sum, 3)) < 1e-5);
    CHECK_VALUES(ct_module_get_buffer(bn, "num_batches_tracked"), 0, 3);

    ct_module *nt = ct_nn_batch_norm2d(2, .track_running_stats = false);
    CHECK(ct_module_get_buffer(nt, "running_mean") == NULL);
    ct_state_dict *sd = ct_module_state_dict(nt);
    CHECK_INT_EQ(ct_state_dict_len(sd), 2);
    ct_module_eval(nt); /* without running statistics eval uses the batch's */
    ct_tensor *y = ct_forward(nt, ct_add_scalar(ct_randn(CT_SHAPE(8, 2, 4, 4)), 3));
    ct_tensor *m = ct_mean(y, .dims = CT_DIMS(0, 2, 3));
    CHECK_VALUES(m, 1e-5, 0, 0);
}

static ct_tensor *bn_fn(ct_tensor *const *in, void *ctx) {
    (void)ctx;
    return ct_batch_norm(in[0], NULL, NULL, .weight = in[1], .bias = in[2], .training = true);
}
static ct_tensor *ln_fn(ct_tensor *const *in, void *ctx) {
    (void)ctx;
    return ct_layer_norm(in[0], CT_SHAPE(3, 2), .weight = in[1], .bias = in[2]);
}
static ct_tensor *gn_fn(ct_tensor *const *in, void *ctx) {
    (void)ctx;
    return ct_group_norm(in[0], 2, .weight = in[1], .bias = in[2]);
}
static ct_tensor *bilinear_fn(ct_tensor *const *in, void *ctx) {
    (void)ctx;
    return ct_bilinear(in[0], in[1], in[2], in[3]);
}
static ct_tensor *linear_fn(ct_tensor *const *in, void *ctx) {
    (void)ctx;
    return ct_linear(in[0], in[1], in[2]);
}

static ct_tensor *rnd(ct_shape s) { return ct_randn(s, .dtype = CT_F64, .requires_grad = true); }

TEST(normalization_functionals_gradcheck) {
    ct_manual_seed(4);
    ct_tensor *bn[] = {rnd(CT_SHAPE(4, 3, 2)), rnd(CT_SHAPE(3)), rnd(CT_SHAPE(3))};
    CHECK(ct_gradcheck(bn_fn, 3, bn, NULL) == 0);
    CHECK(ct_gradgradcheck(bn_fn, 3, bn, NULL) == 0);
    ct_tensor *ln[] = {rnd(CT_SHAPE(2, 4, 3, 2)), rnd(CT_SHAPE(3, 2)), rnd(CT_SHAPE(3, 2))};
    CHECK(ct_gradcheck(ln_fn, 3, ln, NULL) == 0);
    CHECK(ct_gradgradcheck(ln_fn, 3, ln, NULL) == 0);
    ct_tensor *gn[] = {rnd(CT_SHAPE(2, 4, 3)), rnd(CT_SHAPE(4)), rnd(CT_SHAPE(4))};
    CHECK(ct_gradcheck(gn_fn, 3, gn, NULL) == 0);
    CHECK(ct_gradgradcheck(gn_fn, 3, gn, NULL) == 0);
    ct_tensor *bl[] = {rnd(CT_SHAPE(2, 3, 2)), rnd(CT_SHAPE(2, 3, 4)), rnd(CT_SHAPE(5, 2, 4)),
                       rnd(CT_SHAPE(5))};
    CHECK(ct_gradcheck(bilinear_fn, 4, bl, NULL) == 0);
    ct_tensor *li[] = {rnd(CT_SHAPE(2, 3, 4)), rnd(CT_SHAPE(5, 4)), rnd(CT_SHAPE(5))};
    CHECK(ct_gradcheck(linear_fn, 3, li, NULL) == 0);
    CHECK(ct_gradgradcheck(linear_fn, 3, li, NULL) == 0);
}

TEST(layer_errors) {
    CHECK_ERROR(ct_nn_group_norm(3, 4), "num_channels must be divisible by num_groups");
    CHECK_ERROR(ct_group_norm(ct_ones(CT_SHAPE(2, 4, 3)), 3),
                "Expected number of channels in input to be divisible by num_groups");
    CHECK_ERROR(ct_layer_norm(ct_ones(CT_SHAPE(2, 4)), CT_SHAPE(5)),
                "Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[2, 4]");
    CHECK_ERROR(ct_nn_conv2d(3, 4, CT_DIMS(3), .groups = 2), "in_channels must be divisible by groups");
    CHECK_ERROR(ct_nn_conv2d(4, 3, CT_DIMS(3), .groups = 2), "out_channels must be divisible by groups");
    CHECK_ERROR(ct_nn_conv2d(4, 4, CT_DIMS(3), .padding_same = true, .stride = CT_DIMS(2)),
                "padding='same' is not supported for strided convolutions");
    CHECK_ERROR(ct_nn_conv_transpose2d(2, 2, CT_DIMS(3), .padding_mode = CT_PADDING_REFLECT),
                "Only \"zeros\" padding mode is supported for ConvTranspose2d");
    CHECK_ERROR(ct_forward(ct_nn_conv1d(1, 1, CT_DIMS(3), .padding = CT_DIMS(4),
                                        .padding_mode = CT_PADDING_CIRCULAR),
                           ct_ones(CT_SHAPE(1, 1, 3))),
                "circular padding");
    CHECK_ERROR(ct_nn_embedding(5, 2, .padding_idx = CT_SOME(5)), "Padding_idx must be within num_embeddings");
    ct_module *lin = ct_nn_linear(4, 3);
    CHECK_ERROR(ct_forward(lin, ct_ones(CT_SHAPE(2, 5))), "");
    ct_module *bil = ct_nn_bilinear(2, 3, 4);
    CHECK_ERROR(ct_forward(bil, ct_ones(CT_SHAPE(1, 2))), "two inputs");
}

TEST(embedding_max_norm_renormalizes_looked_up_rows) {
    ct_manual_seed(5);
    ct_module *e = ct_nn_embedding(6, 4, .max_norm = 0.5);
    ct_tensor *w = ct_module_get_parameter(e, "weight");
    ct_tensor *before = ct_clone(ct_detach(w));
    int64_t idx[] = {1, 4, 4};
    ct_tensor *y = ct_forward(e, ct_tensor_i64(idx, CT_SHAPE(3)));
    ct_tensor *norms = ct_norm(ct_detach(y), .dims = CT_DIMS(1));
    double *n = ct_test_values(norms);
    for (int i = 0; i < 3; i++) CHECK(n[i] <= 0.5 + 1e-6);
    free(n);
    /* Rows not looked up are untouched. */
    CHECK(ct_test_max_diff(ct_select(w, 0, 0), ct_select(before, 0, 0)) == 0);
    CHECK(ct_test_max_diff(ct_select(w, 0, 5), ct_select(before, 0, 5)) == 0);
}

TEST(relu_inplace_writes_its_input) {
    ct_tensor *x = ct_tensor_f32(((float[]){-1, 2, -3}), CT_SHAPE(3));
    ct_tensor *y = ct_forward(ct_nn_relu(.inplace = true), x);
    CHECK(y == x);
    CHECK_VALUES(x, 0, 0, 2, 0);
    ct_tensor *leaf = ct_ones(CT_SHAPE(2), .requires_grad = true);
    CHECK_ERROR(ct_forward(ct_nn_relu(.inplace = true), leaf), "leaf");
}

TEST(max_pools_return_indices_through_forward_multi) {
    ct_manual_seed(6);
    ct_tensor *x = ct_randn(CT_SHAPE(2, 3, 6, 6));
    ct_tensor *out[2];
    /* nn.MaxPool2d(2): the values only; return_indices=True: both */
    CHECK_INT_EQ(ct_forward_multi(ct_nn_max_pool2d(CT_DIMS(2)), 1, &x, out, 2), 1);
    ct_module *mp = ct_nn_max_pool2d(CT_DIMS(2), .return_indices = true);
    CHECK_INT_EQ(ct_forward_multi(mp, 1, &x, out, 2), 2);
    ct_tensor *idx;
    ct_tensor *want = ct_max_pool2d_with_indices(x, &idx, .kernel_size = CT_DIMS(2));
    CHECK(ct_test_max_diff(out[0], want) == 0);
    CHECK(ct_test_max_diff(out[1], idx) == 0);
    CHECK(ct_dtype_of(out[1]) == CT_I64);
    CHECK(ct_test_max_diff(ct_forward(mp, x), want) == 0); /* one output: the values */
    ct_module *amp = ct_nn_adaptive_max_pool2d(CT_DIMS(2));
    CHECK_INT_EQ(ct_forward_multi(amp, 1, &x, out, 2), 2);
    want = ct_adaptive_max_pool2d_with_indices(x, CT_DIMS(2), &idx);
    CHECK(ct_test_max_diff(out[1], idx) == 0);
    CHECK_ERROR(ct_nn_hardtanh(.min_val = CT_SOME(1), .max_val = CT_SOME(0)), "max_val must be greater than min_val");
}
