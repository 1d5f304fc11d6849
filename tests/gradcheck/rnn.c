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
