/* ctorch/rnn.h — recurrent layers: RNN, LSTM, GRU and their cells.
 *
 * Parameters, shapes and gate layouts are PyTorch's (weight_ih_l0 [4*hidden, input]
 * with gates i, f, g, o for LSTM; r, z, n for GRU; "_reverse" for the backward
 * direction), so state dicts load both ways.  The layers run through
 * ct_forward_multi: inputs (x[, h0[, c0]]), outputs (output, h_n[, c_n]); x is
 * [T, B, input] ([B, T, input] with batch_first, or [T, input] unbatched).
 *
 *     ct_module *lstm = ct_lstm(8, 16, .num_layers = 2, .batch_first = true);
 *     ct_module *gru64 = ct_gru(8, 16, .dtype = CT_F64);   // float64 parameters
 *     ct_tensor *seq = ct_randn(CT_SHAPE(4, 5, 8)), *out[3];
 *     ct_forward_multi(lstm, 1, &seq, out, 3);   // out[0] [4, 5, 16], out[1..2] [2, 4, 16]
 */
#ifndef CTORCH_RNN_H
#define CTORCH_RNN_H

#include "nn.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* The activation of nn.RNN and nn.RNNCell: nonlinearity='tanh' or 'relu'. */
typedef enum { CT_RNN_TANH = 0, CT_RNN_RELU = 1 } ct_rnn_nonlinearity;

/* The most layers a recurrent stack may have (num_layers). */
#define CT_RNN_MAX_LAYERS 32

/* Options of ct_rnn, ct_lstm and ct_gru. */
typedef struct {
    int64_t num_layers;  /* 0: PyTorch's default 1; at most CT_RNN_MAX_LAYERS */
    bool bias;           /* default true (set by the macro) */
    bool batch_first;    /* input and output [B, T, F] instead of [T, B, F] */
    double dropout;      /* between layers, in training mode */
    bool bidirectional;  /* a second, reversed direction per layer (outputs concatenated) */
    ct_rnn_nonlinearity nonlinearity; /* RNN only */
    ct_dtype dtype;      /* the parameters' dtype (floating); default: the default dtype */
} ct_rnn_options;

/* nn.RNN, nn.LSTM, nn.GRU: inputs (x[, h0[, c0]]) with x [T, B, input_size] (or
 * [T, input_size]); outputs (output, h_n[, c_n]) through ct_forward_multi. */
ct_module *ct_rnn_with(int64_t input_size, int64_t hidden_size, ct_rnn_options o);
ct_module *ct_lstm_with(int64_t input_size, int64_t hidden_size, ct_rnn_options o);
ct_module *ct_gru_with(int64_t input_size, int64_t hidden_size, ct_rnn_options o);
#define CT_RNN_DEFAULTS_(...) CT_DEFAULTS(ct_rnn_options, .bias = true, __VA_ARGS__)
#define ct_rnn(input_size, hidden_size, ...) \
    CT_AT(ct_rnn_with(input_size, hidden_size, CT_RNN_DEFAULTS_(__VA_ARGS__)))
#define ct_lstm(input_size, hidden_size, ...) \
    CT_AT(ct_lstm_with(input_size, hidden_size, CT_RNN_DEFAULTS_(__VA_ARGS__)))
#define ct_gru(input_size, hidden_size, ...) \
    CT_AT(ct_gru_with(input_size, hidden_size, CT_RNN_DEFAULTS_(__VA_ARGS__)))

/* Cells: one time step.  Inputs (x[, h[, c]]) with x [B, input] or [input]; outputs
 * h' (RNNCell, GRUCell) or (h', c') (LSTMCell). */
typedef struct {
    bool bias; /* default true (set by the macro) */
    ct_rnn_nonlinearity nonlinearity; /* RNNCell only */
    ct_dtype dtype; /* the parameters' dtype (floating); default: the default dtype */
} ct_cell_options;
ct_module *ct_rnn_cell_with(int64_t input_size, int64_t hidden_size, ct_cell_options o);
ct_module *ct_lstm_cell_with(int64_t input_size, int64_t hidden_size, ct_cell_options o);
ct_module *ct_gru_cell_with(int64_t input_size, int64_t hidden_size, ct_cell_options o);
#define CT_CELL_DEFAULTS_(...) CT_DEFAULTS(ct_cell_options, .bias = true, __VA_ARGS__)
#define ct_rnn_cell(input_size, hidden_size, ...) \
    CT_AT(ct_rnn_cell_with(input_size, hidden_size, CT_CELL_DEFAULTS_(__VA_ARGS__)))
#define ct_lstm_cell(input_size, hidden_size, ...) \
    CT_AT(ct_lstm_cell_with(input_size, hidden_size, CT_CELL_DEFAULTS_(__VA_ARGS__)))
#define ct_gru_cell(input_size, hidden_size, ...) \
    CT_AT(ct_gru_cell_with(input_size, hidden_size, CT_CELL_DEFAULTS_(__VA_ARGS__)))

/* ---- the layer stacks as functions (torch.lstm / torch.gru: aten::lstm.input) ---- */

/* What a stack returns: output [T, B, D*H] ([B, T, D*H] batch_first), the final
 * states h_n (and c_n, LSTM only) [D*L, B, H]. */
typedef struct {
    ct_tensor *output; /* every step's last-layer hidden state */
    ct_tensor *h_n;    /* the final hidden states */
    ct_tensor *c_n;    /* the final cell states (LSTM; NULL for a GRU) */
} ct_rnn_stack_result;
/* A stack's configuration, as the layer module's. */
typedef struct {
    bool has_biases;      /* params hold b_ih and b_hh per layer and direction */
    int64_t num_layers;   /* 0: 1 */
    double dropout;       /* between layers, when train */
    bool train;           /* apply dropout */
    bool bidirectional;   /* D = 2 */
    bool batch_first;     /* input and output [B, T, F] */
} ct_rnn_stack_options;
/* The LSTM / GRU layers' computation on batched input [T, B, F], as one op: what
 * ct_lstm / ct_gru modules run, and what a trace records (one lstm / gru node).
 * hx: n_hx initial states [D*L, B, H] (h0, then c0 for the LSTM; missing ones are
 * zeros); params: PyTorch's flat order, w_ih, w_hh (then b_ih, b_hh) per layer and
 * direction (l0, l0_reverse, l1, ...).  Gradients flow through the cells it runs.
 * All NULL with an error on failure. */
ct_rnn_stack_result ct_lstm_stack_with(ct_tensor *input, int n_hx, ct_tensor *const *hx, int n_params,
                                       ct_tensor *const *params, ct_rnn_stack_options o);
ct_rnn_stack_result ct_gru_stack_with(ct_tensor *input, int n_hx, ct_tensor *const *hx, int n_params,
                                      ct_tensor *const *params, ct_rnn_stack_options o);
#define ct_lstm_stack(input, n_hx, hx, n_params, params, ...)                          \
    CT_AT(ct_lstm_stack_with(input, n_hx, hx, n_params, params,                        \
                             CT_DEFAULTS(ct_rnn_stack_options, .has_biases = true, __VA_ARGS__)))
#define ct_gru_stack(input, n_hx, hx, n_params, params, ...)                           \
    CT_AT(ct_gru_stack_with(input, n_hx, hx, n_params, params,                         \
                            CT_DEFAULTS(ct_rnn_stack_options, .has_biases = true, __VA_ARGS__)))

/* PyTorch's fused cell ops (_thnn_fused_lstm_cell, _thnn_fused_gru_cell; grad_fns
 * ThnnFusedLstmCellBackward0, ThnnFusedGruCellBackward0): one time step from the gate
 * pre-activations, saving only the activated gates for backward (the layers above use
 * them).  Pre-activations are (igates + b_ih) + (hgates + b_hh), biases [G*H] or NULL;
 * every tensor is of one floating dtype; the results are all NULL on error.  Under
 * autocast the cells promote to the widest input (bfloat16 gates with a float32 state
 * run in float32) and keep their workspace in the gates' reduced dtype. */
/* What ct_thnn_fused_lstm_cell returns. */
typedef struct {
    ct_tensor *hy;        /* the new hidden state */
    ct_tensor *cy;        /* the new cell state */
    ct_tensor *workspace; /* what the backward needs */
} ct_lstm_cell_result;
/* igates, hgates [B, 4H] (gates i, f, g, o), cx [B, H]: cy = f cx + i g, hy = o tanh(cy)
 * (i, f, o sigmoids, g a tanh); workspace [B, 4H] holds the activated gates. */
ct_lstm_cell_result ct_thnn_fused_lstm_cell(ct_tensor *igates, ct_tensor *hgates, ct_tensor *cx,
                                            ct_tensor *b_ih, ct_tensor *b_hh);
#define ct_thnn_fused_lstm_cell(ig, hg, cx, b_ih, b_hh) CT_AT(ct_thnn_fused_lstm_cell(ig, hg, cx, b_ih, b_hh))
/* What ct_thnn_fused_gru_cell returns. */
typedef struct {
    ct_tensor *hy;        /* the new hidden state */
    ct_tensor *workspace; /* what the backward needs */
} ct_gru_cell_result;
/* igates, hgates [B, 3H] (gates r, z, n), hx [B, H]: r, z sigmoids, n = tanh(i_n + r h_n),
 * hy = (1 - z) n + z hx; workspace [B, 4H] holds r, z, n and h_n (PyTorch's is [B, 5H]
 * with a copy of hx, which ctorch saves instead). */
ct_gru_cell_result ct_thnn_fused_gru_cell(ct_tensor *igates, ct_tensor *hgates, ct_tensor *hx,
                                          ct_tensor *b_ih, ct_tensor *b_hh);
#define ct_thnn_fused_gru_cell(ig, hg, hx, b_ih, b_hh) CT_AT(ct_thnn_fused_gru_cell(ig, hg, hx, b_ih, b_hh))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
