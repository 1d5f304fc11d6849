/* Gradcheck cases of the fused recurrent cells (thnn_fused_lstm_cell,
 * thnn_fused_gru_cell): with and without biases, non-contiguous inputs, one row and
 * one unit, an empty batch.  The function either returns the states only (the
 * workspace gets no gradient: the first order runs the fused kernel) or every output
 * joined (the workspace's gradient path too); gradgradcheck runs the op-composed
 * backward. */
#include "gc.h"

/* x: igates, hgates, state[, b_ih, b_hh]; *(int *)c: 1 joins the workspace too. */
static ct_tensor *f_lstm(ct_tensor *const *x, void *c) {
    bool ws = c && *(int *)c, bias = c && ((int *)c)[1];
    ct_lstm_cell_result r = ct_thnn_fused_lstm_cell(x[0], x[1], x[2], bias ? x[3] : NULL,
                                                    bias ? x[4] : NULL);
    if (!r.hy) return NULL;
    return ws ? ct_cat(3, ((ct_tensor *[]){r.hy, r.cy, r.workspace}), 1)
              : ct_cat(2, ((ct_tensor *[]){r.hy, r.cy}), 1);
}
static ct_tensor *f_gru(ct_tensor *const *x, void *c) {
    bool ws = c && *(int *)c, bias = c && ((int *)c)[1];
    ct_gru_cell_result r = ct_thnn_fused_gru_cell(x[0], x[1], x[2], bias ? x[3] : NULL,
                                                  bias ? x[4] : NULL);
    if (!r.hy) return NULL;
    return ws ? ct_cat(2, ((ct_tensor *[]){r.hy, r.workspace}), 1) : r.hy;
}

/* One case: B rows, H units, G gates; noncontig makes the gates non-contiguous. */
static void cell_case(const char *op, ct_gradcheck_fn f, int G, int64_t B, int64_t H,
                      bool noncontig, int ws, int bias, bool second) {
    ct_tensor *(*mk)(ct_shape) = noncontig ? gc_noncontig : gc_rand;
    ct_tensor *in[5] = {mk(CT_SHAPE(B, G * H)), mk(CT_SHAPE(B, G * H)), gc_rand(CT_SHAPE(B, H)),
                        gc_rand(CT_SHAPE(G * H)), gc_rand(CT_SHAPE(G * H))};
    int ctx[2] = {ws, bias};
    if (second)
        GRADGRADCHECK(op, f, bias ? 5 : 3, in, ctx);
    else
        GRADCHECK(op, f, bias ? 5 : 3, in, ctx);
}

/* Workspace joined or not, biases or not, contiguous or not, one row and one unit
 * (second order), an empty batch (first order). */
static void cell_cases(const char *op, ct_gradcheck_fn f, int G) {
    for (int ws = 0; ws < 2; ws++)
        for (int bias = 0; bias < 2; bias++) {
            cell_case(op, f, G, 3, 2, false, ws, bias, true);
            cell_case(op, f, G, 2, 3, true, ws, bias, true);
        }
    cell_case(op, f, G, 1, 1, false, 1, 1, true);
    cell_case(op, f, G, 0, 2, false, 0, 1, false);
}

TEST(grad_thnn_fused_lstm_cell) { cell_cases("thnn_fused_lstm_cell", f_lstm, 4); }
TEST(grad_thnn_fused_gru_cell) { cell_cases("thnn_fused_gru_cell", f_gru, 3); }

/* The state's gradient alone through two chained steps (the layers' pattern: a saved
 * state that is an earlier step's output). */
static ct_tensor *f_lstm_chain(ct_tensor *const *x, void *c) {
    (void)c;
    ct_lstm_cell_result r = ct_thnn_fused_lstm_cell(x[0], x[1], x[2], NULL, NULL);
    ct_lstm_cell_result s = ct_thnn_fused_lstm_cell(x[1], x[0], r.cy, NULL, NULL);
    return s.hy ? ct_mul(s.hy, r.hy) : NULL;
}
static ct_tensor *f_gru_chain(ct_tensor *const *x, void *c) {
    (void)c;
    ct_gru_cell_result r = ct_thnn_fused_gru_cell(x[0], x[1], x[2], NULL, NULL);
    ct_gru_cell_result s = ct_thnn_fused_gru_cell(x[1], x[0], r.hy, NULL, NULL);
    return s.hy;
}

TEST(grad_fused_cells_chained) {
    ct_tensor *l[] = {gc_rand(CT_SHAPE(2, 8)), gc_rand(CT_SHAPE(2, 8)), gc_rand(CT_SHAPE(2, 2))};
    GRADGRADCHECK("thnn_fused_lstm_cell", f_lstm_chain, 3, l, NULL);
    ct_tensor *g[] = {gc_rand(CT_SHAPE(2, 6)), gc_rand(CT_SHAPE(2, 6)), gc_rand(CT_SHAPE(2, 2))};
    GRADGRADCHECK("thnn_fused_gru_cell", f_gru_chain, 3, g, NULL);
}

/* The layer stacks as one op (ct_lstm_stack, ct_gru_stack): the cells above, run over
 * layers, directions and steps; gradients reach the input, the initial states and
 * every parameter.  x: input, h0[, c0], params; c: {lstm, layers, bidirectional}. */
static ct_tensor *f_stack(ct_tensor *const *x, void *c) {
    const int *k = c;
    int n_hx = k[0] ? 2 : 1, n_params = k[1] * (k[2] ? 2 : 1) * 4;
    ct_rnn_stack_options o = {.has_biases = true, .num_layers = k[1], .bidirectional = k[2]};
    ct_rnn_stack_result r = k[0] ? ct_lstm_stack_with(x[0], n_hx, x + 1, n_params, x + 1 + n_hx, o)
                                 : ct_gru_stack_with(x[0], n_hx, x + 1, n_params, x + 1 + n_hx, o);
    if (!r.output) return NULL;
    ct_tensor *parts[3] = {ct_flatten(r.output, 0, -1), ct_flatten(r.h_n, 0, -1), r.c_n ? ct_flatten(r.c_n, 0, -1) : NULL};
    return ct_cat(k[0] ? 3 : 2, parts, 0);
}

static void stack_case(const char *op, bool lstm, int layers, bool bidirectional) {
    const int64_t T = 3, B = 2, F = 2, H = 2, G = lstm ? 4 : 3, D = bidirectional ? 2 : 1;
    ct_tensor *in[3 + 4 * 2 * 2];
    int n = 0;
    in[n++] = gc_rand(CT_SHAPE(T, B, F));
    for (int k = 0; k < (lstm ? 2 : 1); k++) in[n++] = gc_rand(CT_SHAPE(D * layers, B, H));
    for (int l = 0; l < layers; l++)
        for (int d = 0; d < D; d++) {
            in[n++] = gc_rand(CT_SHAPE(G * H, l ? D * H : F));
            in[n++] = gc_rand(CT_SHAPE(G * H, H));
            in[n++] = gc_rand(CT_SHAPE(G * H));
            in[n++] = gc_rand(CT_SHAPE(G * H));
        }
    int ctx[3] = {lstm, layers, bidirectional};
    GRADCHECK(op, f_stack, n, in, ctx);
}

TEST(grad_lstm_stack) {
    stack_case("lstm", true, 1, true);
    stack_case("lstm", true, 2, false);
}
TEST(grad_gru_stack) {
    stack_case("gru", false, 1, true);
    stack_case("gru", false, 2, false);
}
