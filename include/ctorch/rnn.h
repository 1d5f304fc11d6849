/* ctorch/rnn.h — recurrent layers: RNN, LSTM, GRU and their cells.
 *
 * Parameters, shapes and gate layouts are PyTorch's (weight_ih_l0 [4*hidden, input]
 * with gates i, f, g, o for LSTM; r, z, n for GRU; "_reverse" for the backward
 * direction), so state dicts load both ways.  The layers run through
 * ct_forward_multi: inputs (x[, h0[, c0]]), outputs (output, h_n[, c_n]); x is
 * [T, B, input] ([B, T, input] with batch_first, or [T, input] unbatched).
 *
 *     ct_module *lstm = ct_lstm(8, 16, .num_layers = 2, .batch_first = true);
 *     ct_tensor *seq = ct_randn(CT_SHAPE(4, 5, 8)), *out[3];
 *     ct_forward_multi(lstm, 1, &seq, out, 3);   // out[0] [4, 5, 16], out[1..2] [2, 4, 16]
 */
#ifndef CTORCH_RNN_H
#define CTORCH_RNN_H

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CT_RNN_TANH = 0, CT_RNN_RELU = 1 } ct_rnn_nonlinearity;

typedef struct {
    int64_t num_layers;  /* default 1 */
    bool bias;           /* default true */
    bool batch_first;
    double dropout;      /* between layers, in training mode */
    bool bidirectional;
    ct_rnn_nonlinearity nonlinearity; /* RNN only */
} ct_rnn_options;

ct_module *ct_rnn_with(int64_t input_size, int64_t hidden_size, ct_rnn_options o);
ct_module *ct_lstm_with(int64_t input_size, int64_t hidden_size, ct_rnn_options o);
ct_module *ct_gru_with(int64_t input_size, int64_t hidden_size, ct_rnn_options o);
#define CT_RNN_DEFAULTS_(...) CT_DEFAULTS(ct_rnn_options, .num_layers = 1, .bias = true, __VA_ARGS__)
#define ct_rnn(input_size, hidden_size, ...) \
    CT_AT(ct_rnn_with(input_size, hidden_size, CT_RNN_DEFAULTS_(__VA_ARGS__)))
#define ct_lstm(input_size, hidden_size, ...) \
    CT_AT(ct_lstm_with(input_size, hidden_size, CT_RNN_DEFAULTS_(__VA_ARGS__)))
#define ct_gru(input_size, hidden_size, ...) \
    CT_AT(ct_gru_with(input_size, hidden_size, CT_RNN_DEFAULTS_(__VA_ARGS__)))

/* Cells: one time step.  Inputs (x[, h[, c]]) with x [B, input] or [input]; outputs
 * h' (RNNCell, GRUCell) or (h', c') (LSTMCell). */
typedef struct {
    bool bias; /* default true */
    ct_rnn_nonlinearity nonlinearity;
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

#ifdef __cplusplus
}
#endif
#endif
