/* The fused recurrent cells against PyTorch (tests/fixtures/gen_rnn_cell.py): the ops
 * in float64 against the formulas PyTorch's cells compose, LSTM and GRU layers in
 * float32 (the kernels' sigmoid and tanh), the same bits for any thread count, and
 * the errors. */
#include <string.h>

#include "ct_test.h"
#include "fixtures.h"

static void check_diff(const char *what, int i, ct_tensor *a, ct_tensor *b, double tol) {
    double d = ct_test_max_diff(a, b);
    if (!(d <= tol)) ct_test_fail(__FILE__, __LINE__, "%s %d differs by %g", what, i, d);
}

/* Runs one cell op on the fixture's inputs; outputs hy[, cy]; loss sum of squares. */
static void cell_op(fx_file *f, const char *name, bool lstm) {
    char key[64];
    ct_tensor *in[5];
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "%s.in%d", name, i);
        in[i] = fx_get_as(f, key, CT_F64, true);
    }
    ct_tensor *out[2] = {NULL, NULL};
    int n_out = lstm ? 2 : 1;
    if (lstm) {
        ct_lstm_cell_result r = ct_thnn_fused_lstm_cell(in[0], in[1], in[2], in[3], in[4]);
        out[0] = r.hy;
        out[1] = r.cy;
        CHECK_STR_EQ(ct_node_name(ct_grad_fn(r.hy)), "ThnnFusedLstmCellBackward0");
    } else {
        out[0] = ct_thnn_fused_gru_cell(in[0], in[1], in[2], in[3], in[4]).hy;
        CHECK_STR_EQ(ct_node_name(ct_grad_fn(out[0])), "ThnnFusedGruCellBackward0");
    }
    ct_tensor *loss = NULL;
    for (int i = 0; i < n_out; i++) {
        snprintf(key, sizeof key, "%s.out%d", name, i);
        check_diff(name, i, out[i], fx_get(f, key), 1e-14);
        ct_tensor *sq = ct_sum(ct_mul(out[i], out[i]));
        loss = loss ? ct_add(loss, sq) : sq;
    }
    CHECK(ct_backward(loss) == 0);
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "%s.gin%d", name, i);
        check_diff("gradient of input", i, ct_grad(in[i]), fx_get(f, key), 1e-13);
    }
}

TEST(fused_cells_match_pytorch_float64) {
    fx_file *f = fx_load("rnn_cell");
    cell_op(f, "lstm", true);
    cell_op(f, "gru", false);
    fx_free(f);
}

/* A float32 layer: outputs and gradients within float32 rounding of PyTorch's (seen:
 * 1e-7 for outputs, 2e-6 for the largest weight gradients). */
static void layer32(fx_file *f, const char *name, ct_module *m) {
    char key[128];
    const char *names[8];
    ct_tensor *params[8];
    int np = ct_named_parameters(m, names, params, 8);
    ct_state_dict *sd = ct_state_dict_new();
    for (int i = 0; i < np; i++) {
        snprintf(key, sizeof key, "%s.w.%s", name, names[i]);
        ct_state_dict_set(sd, names[i], ct_to(fx_get(f, key), .dtype = CT_F32));
    }
    CHECK(ct_load_state_dict(m, sd) == 0);
    snprintf(key, sizeof key, "%s.in", name);
    ct_tensor *x = fx_get_as(f, key, CT_F32, true), *out[3];
    CHECK(ct_forward_multi(m, 1, &x, out, 3) >= 2);
    snprintf(key, sizeof key, "%s.out", name);
    check_diff(name, 0, out[0], fx_get(f, key), 1e-6);
    CHECK(ct_backward(ct_sum(ct_mul(out[0], out[0]))) == 0);
    snprintf(key, sizeof key, "%s.gin", name);
    check_diff("input gradient", 0, ct_grad(x), fx_get(f, key), 1e-5);
    for (int i = 0; i < np; i++) {
        snprintf(key, sizeof key, "%s.grad.%s", name, names[i]);
        check_diff(names[i], i, ct_grad(params[i]), fx_get(f, key), 1e-5);
    }
}

TEST(float32_layers_match_pytorch) {
    fx_file *f = fx_load("rnn_cell");
    layer32(f, "lstm32", ct_lstm(8, 16));
    layer32(f, "gru32", ct_gru(8, 16));
    fx_free(f);
}

/* Forward and fused backward of a batch large enough to be split across threads. */
static void run_cells(int threads, ct_tensor **res) {
    ct_set_num_threads(threads);
    ct_manual_seed(3);
    ct_tensor *ig = ct_randn(CT_SHAPE(40, 4 * 300), .requires_grad = true);
    ct_tensor *hg = ct_randn(CT_SHAPE(40, 4 * 300)), *cx = ct_randn(CT_SHAPE(40, 300));
    ct_lstm_cell_result l = ct_thnn_fused_lstm_cell(ig, hg, cx, NULL, NULL);
    ct_tensor *gx = ct_narrow(ig, 1, 0, 3 * 300);
    ct_gru_cell_result g = ct_thnn_fused_gru_cell(gx, ct_narrow(hg, 1, 0, 900), cx, NULL, NULL);
    ct_backward(ct_sum(ct_mul(ct_add(l.hy, l.cy), g.hy)));
    res[0] = l.hy;
    res[1] = l.cy;
    res[2] = g.hy;
    res[3] = ct_grad(ig);
}

TEST(fused_cells_identical_for_any_thread_count) {
    ct_tensor *one[4], *two[4];
    run_cells(1, one);
    run_cells(2, two);
    for (int i = 0; i < 4; i++) CHECK(ct_test_max_diff(one[i], two[i]) == 0);
}

TEST(fused_cells_errors) {
    ct_tensor *ig = ct_randn(CT_SHAPE(2, 8)), *cx = ct_randn(CT_SHAPE(2, 2));
    CHECK_ERROR(ct_thnn_fused_lstm_cell(ig, ct_randn(CT_SHAPE(3, 8)), cx, NULL, NULL).hy,
                "Expected argument #2 'hidden_gates' of size [2, 8], but got [3, 8]");
    CHECK_ERROR(ct_thnn_fused_lstm_cell(ig, ig, ct_randn(CT_SHAPE(2, 3)), NULL, NULL).hy,
                "argument #3 'cx' of size [2, 2], but got [2, 3]");
    CHECK_ERROR(ct_thnn_fused_gru_cell(ig, ig, cx, NULL, NULL).hy, "must be a multiple of 3 (got 8)");
    CHECK_ERROR(ct_thnn_fused_lstm_cell(ct_randn(CT_SHAPE(8)), ig, cx, NULL, NULL).hy,
                "Expected 2-dimensional tensor, but got 1-dimensional tensor for argument #1");
    CHECK_ERROR(ct_thnn_fused_lstm_cell(ig, ig, cx, ct_randn(CT_SHAPE(8), .dtype = CT_F64), NULL).hy,
                "expected scalar type Float but found Double");
    CHECK_ERROR(ct_thnn_fused_lstm_cell(ig, ig, cx, NULL, ct_randn(CT_SHAPE(4))).hy,
                "argument #5 'hidden_bias' of size [8], but got [4]");
    ct_tensor *i64 = ct_zeros(CT_SHAPE(2, 6), .dtype = CT_I64);
    CHECK_ERROR(ct_thnn_fused_gru_cell(i64, i64, ct_zeros(CT_SHAPE(2, 2), .dtype = CT_I64), NULL, NULL).hy,
                "not implemented for 'Long'");
    CHECK(ct_thnn_fused_gru_cell(NULL, ig, cx, NULL, NULL).hy == NULL);
}
