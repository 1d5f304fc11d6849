/* The options convention of ctorch/base.h: calls that leave options out get
 * PyTorch's defaults, zero-initialised options structs mean the same, CT_SOME gives
 * a zero that is not the default, and a layer's functional and module forms share
 * one struct.  Expected values are PyTorch 1.13's (float64). */
#include <math.h>

#include <stdlib.h>

#include "ct_test.h"

static void check_repr(ct_module *m, const char *want) {
    char *s = ct_module_to_string(m);
    CHECK_STR_EQ(s, want);
    free(s);
}

static ct_tensor *xs(void) {
    return ct_tensor_f64(((double[]){-30, -2.5, -0.5, 0, 0.75, 3, 25}), CT_SHAPE(7));
}

TEST(activations_take_pytorch_defaults) {
    ct_tensor *x = xs();
    /* F.leaky_relu(x), F.leaky_relu(x, 0.2) */
    CHECK_VALUES(ct_leaky_relu(x), 1e-15, -0.3, -0.025, -0.005, 0, 0.75, 3, 25);
    CHECK_VALUES(ct_leaky_relu(x, .negative_slope = CT_SOME(0.2)), 1e-15, -6, -0.5, -0.1, 0, 0.75, 3, 25);
    /* F.softplus(x): beta 1, threshold 20 */
    CHECK_VALUES(ct_softplus(x), 1e-15, 9.357622968839737e-14, 0.07888973429254963,
                 0.4740769841801067, 0.6931471805599453, 1.1368710061148999, 3.048587351573742, 25);
    /* F.elu(x): alpha 1 */
    CHECK_VALUES(ct_elu(x), 1e-15, -0.9999999999999064, -0.9179150013761012, -0.3934693402873666, 0,
                 0.75, 3, 25);
    /* F.hardtanh(x) and F.hardtanh(x, 0., 6.): a zero bound is CT_SOME(0) */
    CHECK_VALUES(ct_hardtanh(x), 0, -1, -1, -0.5, 0, 0.75, 1, 1);
    CHECK_VALUES(ct_hardtanh(x, .min_val = CT_SOME(0), .max_val = CT_SOME(6)), 0, 0, 0, 0, 0, 0.75, 3, 6);
}

TEST(zero_options_are_the_defaults) {
    ct_tensor *x = xs();
    CHECK(ct_test_max_diff(ct_leaky_relu_with(x, (ct_leaky_relu_options){0}), ct_leaky_relu(x)) == 0);
    CHECK(ct_test_max_diff(ct_softplus_with(x, (ct_softplus_options){0}),
                           ct_softplus(x, .beta = CT_SOME(1), .threshold = CT_SOME(20))) == 0);
    CHECK(ct_test_max_diff(ct_elu_with(x, (ct_elu_options){0}), ct_elu(x, .alpha = CT_SOME(1))) == 0);
    CHECK(ct_test_max_diff(ct_hardtanh_with(x, (ct_hardtanh_options){0}),
                           ct_hardtanh(x, .min_val = CT_SOME(-1), .max_val = CT_SOME(1))) == 0);
}

TEST(functional_and_module_share_options) {
    ct_tensor *x = xs();
    ct_leaky_relu_options lo = {.negative_slope = CT_SOME(0.3)};
    CHECK(ct_test_max_diff(ct_forward(ct_nn_leaky_relu_with(lo), x), ct_leaky_relu_with(x, lo)) == 0);
    ct_softplus_options so = {.beta = CT_SOME(2), .threshold = CT_SOME(4)};
    CHECK(ct_test_max_diff(ct_forward(ct_nn_softplus_with(so), x), ct_softplus_with(x, so)) == 0);
    ct_elu_options eo = {.alpha = CT_SOME(0.5)};
    CHECK(ct_test_max_diff(ct_forward(ct_nn_elu_with(eo), x), ct_elu_with(x, eo)) == 0);
    ct_hardtanh_options ho = {.min_val = CT_SOME(0), .max_val = CT_SOME(6)};
    CHECK(ct_test_max_diff(ct_forward(ct_nn_hardtanh_with(ho), x), ct_hardtanh_with(x, ho)) == 0);
    CHECK(ct_test_max_diff(ct_forward(ct_nn_leaky_relu(), x), ct_leaky_relu(x)) == 0);
    ct_module *relu6 = ct_nn_hardtanh(.min_val = CT_SOME(0), .max_val = CT_SOME(6));
    check_repr(relu6, "Hardtanh(min_val=0.0, max_val=6.0)");
}

TEST(addmm_defaults) {
    ct_tensor *c = ct_tensor_f64(((double[]){1, -2}), CT_SHAPE(2));
    ct_tensor *a = ct_tensor_f64(((double[]){1, 2, 3, -1, 0.5, 4}), CT_SHAPE(2, 3));
    ct_tensor *b = ct_tensor_f64(((double[]){0.5, -1, 2, 1, -3, 0.25}), CT_SHAPE(3, 2));
    /* torch.addmm(c, a, b) and torch.addmm(c, a, b, beta=0, alpha=2) */
    CHECK_VALUES(ct_addmm(c, a, b), 1e-15, -3.5, -0.25, -10.5, 0.5);
    CHECK_VALUES(ct_addmm(c, a, b, .beta = CT_SOME(0), .alpha = CT_SOME(2)), 1e-15, -9, 3.5, -23, 5);
    CHECK(ct_test_max_diff(ct_addmm_with(c, a, b, (ct_addmm_options){0}), ct_addmm(c, a, b)) == 0);
}

TEST(embedding_input_first_with_padding_zero) {
    ct_tensor *w = ct_tensor_f64(((double[]){1, 2, 3, 4, 5, 6}), CT_SHAPE(3, 2), .requires_grad = true);
    ct_tensor *i = ct_tensor_i64(((int64_t[]){0, 2, 0, 1}), CT_SHAPE(4));
    /* F.embedding(i, w, padding_idx=0); (e * arange(8).reshape(4, 2)).sum().backward() */
    ct_tensor *e = ct_embedding(i, w, .padding_idx = CT_SOME(0));
    CHECK_VALUES(e, 0, 1, 2, 5, 6, 1, 2, 3, 4);
    ct_backward(ct_sum(ct_mul(e, ct_reshape(ct_arange(8, .dtype = CT_F64), CT_SHAPE(4, 2)))));
    CHECK_VALUES(ct_grad(w), 0, 0, 0, 6, 7, 2, 3);
    /* No padding_idx: row 0 gets its gradient. */
    ct_set_grad(w, NULL);
    ct_backward(ct_sum(ct_embedding(i, w)));
    CHECK_VALUES(ct_grad(w), 0, 2, 2, 1, 1, 1, 1);
    CHECK_ERROR(ct_embedding(i, w, .padding_idx = CT_SOME(0.5)), "padding_idx must be an integer");
    CHECK_ERROR(ct_embedding(i, w, .dtype = CT_F32), "dtype is an option of nn.Embedding");
    check_repr(ct_nn_embedding(5, 2, .padding_idx = CT_SOME(-1)), "Embedding(5, 2, padding_idx=4)");
}

TEST(var_std_correction_zero) {
    ct_tensor *t = ct_tensor_f64(((double[]){1, 4, 2, 8, 3, -1, 0.5, 2}), CT_SHAPE(2, 4));
    /* t.var(1, correction=0), t.var(1), t.std(1, unbiased=False), t.var(unbiased=False) */
    CHECK_VALUES(ct_var(t, .dims = CT_DIMS(1), .correction = CT_SOME(0)), 1e-14, 7.187499999999999, 2.296875);
    CHECK_VALUES(ct_var(t, .dims = CT_DIMS(1)), 1e-14, 9.583333333333332, 3.0625);
    CHECK_VALUES(ct_std(t, .dims = CT_DIMS(1), .correction = CT_SOME(0)), 1e-14, 2.680951323690902,
                 1.5155444566227676);
    CHECK_VALUES(ct_var(t, .correction = CT_SOME(0)), 1e-14, 6.46484375);
}

TEST(batch_norm_momentum_none_and_zero) {
    check_repr(ct_nn_batch_norm1d(3, .momentum = CT_NONE),
               "BatchNorm1d(3, eps=1e-05, momentum=None, affine=True, track_running_stats=True)");
    check_repr(ct_nn_batch_norm1d(3),
               "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
    /* momentum=0: the running statistics stay as they are. */
    ct_module *bn = ct_nn_batch_norm1d(2, .momentum = CT_SOME(0));
    ct_forward(bn, ct_randn(CT_SHAPE(8, 2)));
    CHECK_VALUES(ct_module_get_buffer(bn, "running_mean"), 0, 0, 0);
    CHECK_VALUES(ct_module_get_buffer(bn, "running_var"), 0, 1, 1);
}

TEST(rnn_layers_take_dtype) {
    ct_module *gru = ct_gru(3, 4, .dtype = CT_F64);
    ct_module *cell = ct_lstm_cell(3, 4, .dtype = CT_F64);
    ct_tensor *p[8];
    int n = ct_parameters(gru, p, 8);
    CHECK_INT_EQ(n, 4);
    for (int k = 0; k < n; k++) CHECK(ct_dtype_of(p[k]) == CT_F64);
    CHECK(ct_dtype_of(ct_module_get_parameter(cell, "weight_ih")) == CT_F64);
    ct_tensor *seq = ct_randn(CT_SHAPE(5, 2, 3), .dtype = CT_F64), *out[2];
    CHECK_INT_EQ(ct_forward_multi(gru, 1, &seq, out, 2), 2);
    CHECK(ct_dtype_of(out[0]) == CT_F64);
    CHECK_INT_EQ(ct_parameters(ct_rnn(3, 4), p, 8), 4); /* num_layers 0 means 1 */
    CHECK(ct_dtype_of(p[0]) == CT_F32);
    CHECK_ERROR(ct_lstm(3, 4, .dtype = CT_I64), "dtype must be a floating point dtype");
    CHECK_ERROR(ct_gru_cell(3, 4, .dtype = CT_BOOL), "dtype must be a floating point dtype");
}

TEST(gain_param_is_optional) {
    CHECK_CLOSE(ct_init_calculate_gain("leaky_relu"), sqrt(2 / (1 + 0.01 * 0.01)), 1e-15);
    CHECK_CLOSE(ct_init_calculate_gain("leaky_relu", .param = CT_SOME(0)), sqrt(2.0), 1e-15);
}

TEST(group_options_are_optional) {
    ct_tensor *a = ct_zeros(CT_SHAPE(2), .requires_grad = true), *b = ct_zeros(CT_SHAPE(2), .requires_grad = true);
    ct_optim *opt = ct_sgd(&a, 1, .lr = CT_SOME(0.1), .momentum = 0.9);
    CHECK(ct_optim_add_param_group(opt, &b, 1, .momentum = CT_SOME(0)) == 0);
    CHECK_CLOSE(ct_optim_get(opt, 1, "lr"), 0.1, 0);
    CHECK_CLOSE(ct_optim_get(opt, 1, "momentum"), 0, 0);
    CHECK_ERROR(ct_sgd(&a, 1), "required argument lr is missing");
}
