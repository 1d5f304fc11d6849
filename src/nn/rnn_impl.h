/* The recurrent layers' computation (nn/rnn_stack.c), shared by the layer modules,
 * the cell modules (nn/rnn.c) and the stack functions of ctorch/rnn.h. */
#ifndef CT_NN_RNN_IMPL_H
#define CT_NN_RNN_IMPL_H

#include "ctorch/rnn.h"

typedef enum { CT_RNN_KIND_RNN, CT_RNN_KIND_LSTM, CT_RNN_KIND_GRU } ct_rnn_kind;

/* One time step.  gi: the step's input projection x W_ih^T + b_ih [B, G*H]; w_hh_t:
 * W_hh^T.  Returns h' and, for the LSTM, writes c'.  LSTM and GRU run the fused cells
 * (one node per step saving only the activated gates), RNN composes ops. */
ct_tensor *ct_rnn_cell_step(ct_rnn_kind kind, ct_rnn_nonlinearity act, ct_tensor *gi, ct_tensor *h,
                            ct_tensor *c, ct_tensor *w_hh_t, ct_tensor *b_hh, ct_tensor **c_out);
/* x @ W_ih^T + b_ih for 2-D x. */
ct_tensor *ct_rnn_input_projection(ct_tensor *x2d, ct_tensor *w_ih, ct_tensor *b_ih);

/* True when t is ndim-D with sizes want. */
bool ct_rnn_dims_are(const ct_tensor *t, int ndim, const int64_t *want);

/* A layer stack, checked by its caller. */
typedef struct {
    ct_rnn_kind kind;
    ct_rnn_nonlinearity act;   /* RNN only */
    int64_t layers, dirs, hidden;
    double dropout;            /* between layers, when train */
    bool train, batch_first;
} ct_rnn_config;

/* Runs the stack on batched x ([T, B, F], or [B, T, F] batch_first).  init: h0 (and c0)
 * [D*L, B, H], NULL ones zeros; weights: w_ih, w_hh, b_ih, b_hh per (layer, direction),
 * biases NULL when there are none.  Writes output, h_n (and c_n) to outs; false with an
 * error on failure. */
bool ct_rnn_run(const ct_rnn_config *c, ct_tensor *x, ct_tensor *const init[2], ct_tensor *const *weights,
                ct_tensor **outs);

#endif
