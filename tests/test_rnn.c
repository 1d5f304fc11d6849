/* RNN, LSTM and GRU beyond their values against PyTorch (the MODVALUES rows of
 * tests/moduleinfo.def): dropout between layers in training mode, parameter names,
 * shapes, printing and errors, forward hooks of multi-output modules. */
#include <stdlib.h>

#include "ct_test.h"

/* Dropout between layers: none in eval mode (the same as dropout=0 with the same
 * weights); in training mode it changes the output, the same way for the same seed. */
TEST(recurrent_dropout_between_layers) {
    ct_module *(*make[])(int64_t, int64_t, ct_rnn_options) = {ct_rnn_with, ct_lstm_with, ct_gru_with};
    for (int k = 0; k < 3; k++) CT_SCOPE {
        ct_module *drop = make[k](3, 4, (ct_rnn_options){.num_layers = 2, .bias = true, .dropout = 0.5});
        ct_module *plain = make[k](3, 4, (ct_rnn_options){.num_layers = 2, .bias = true});
        CHECK(ct_load_state_dict(plain, ct_module_state_dict(drop)) == 0);
        ct_tensor *x = ct_randn(CT_SHAPE(5, 2, 3));
        ct_tensor *ref = ct_forward(plain, x);
        ct_module_eval(drop);
        CHECK(ct_test_max_diff(ct_forward(drop, x), ref) == 0);
        ct_module_train(drop, true);
        ct_manual_seed(7);
        ct_tensor *a = ct_forward(drop, x);
        ct_manual_seed(7);
        ct_tensor *b = ct_forward(drop, x);
        CHECK(ct_test_max_diff(a, b) == 0);
        CHECK(ct_test_max_diff(a, ref) > 1e-6);
    }
}

TEST(recurrent_names_shapes_and_printing) {
    ct_module *lstm = ct_lstm(10, 20, .num_layers = 2, .bidirectional = true, .batch_first = true);
    const char *names[32];
    ct_tensor *ps[32];
    CHECK_INT_EQ(ct_named_parameters(lstm, names, ps, 32), 16);
    CHECK_STR_EQ(names[0], "weight_ih_l0");
    CHECK_STR_EQ(names[4], "weight_ih_l0_reverse");
    CHECK_STR_EQ(names[8], "weight_ih_l1");
    CHECK_INT_EQ(ct_size(ps[8], 1), 40); /* layer 1 sees both directions */
    CHECK_INT_EQ(ct_size(ps[0], 0), 80);
    char *s = ct_module_to_string(lstm);
    CHECK_STR_EQ(s, "LSTM(10, 20, num_layers=2, batch_first=True, bidirectional=True)");
    free(s);
    ct_tensor *x = ct_randn(CT_SHAPE(3, 7, 10)), *out[3];
    CHECK_INT_EQ(ct_forward_multi(lstm, 1, &x, out, 3), 3);
    CHECK_INT_EQ(ct_size(out[0], 1), 7);
    CHECK_INT_EQ(ct_size(out[0], 2), 40);
    CHECK_INT_EQ(ct_size(out[1], 0), 4);
    /* ct_forward gives the output sequence alone. */
    CHECK_INT_EQ(ct_size(ct_forward(lstm, x), 2), 40);
    CHECK_ERROR(ct_forward(lstm, ct_randn(CT_SHAPE(3, 7, 9))), "input.size(-1) must be equal to input_size. Expected 10, got 9");
    ct_tensor *bad[] = {x, ct_zeros(CT_SHAPE(1, 3, 20))};
    CHECK_ERROR(ct_forward_multi(lstm, 2, bad, out, 3), "Expected hidden size [4, 3, 20], got [1, 3, 20]");
    ct_module *cell = ct_rnn_cell(3, 4, .nonlinearity = CT_RNN_RELU, .bias = false);
    s = ct_module_to_string(cell);
    CHECK_STR_EQ(s, "RNNCell(3, 4, bias=False, nonlinearity=relu)");
    free(s);
}

static ct_tensor *count_hook(ct_module *m, ct_tensor *in, ct_tensor *out, void *ctx) {
    (void)m;
    (void)in;
    (*(int *)ctx)++;
    return ct_mul_scalar(out, 0); /* replaces the first output */
}

TEST(forward_hooks_run_for_multi_output_modules) {
    ct_module *gru = ct_gru(3, 4);
    int calls = 0;
    CHECK(ct_module_register_forward_hook(gru, count_hook, &calls) >= 0);
    ct_tensor *x = ct_randn(CT_SHAPE(5, 2, 3)), *out[2];
    CHECK_INT_EQ(ct_forward_multi(gru, 1, &x, out, 2), 2);
    CHECK_INT_EQ(calls, 1);
    CHECK_VALUES(ct_amax(ct_abs(out[0])), 0, 0);
    CHECK(ct_item(ct_amax(ct_abs(out[1]))) > 0); /* h_n untouched */
}
