/* The recurrent layer stacks: ct_rnn_run, the loop over layers, directions and time
 * steps that the RNN, LSTM and GRU modules share, and ct_lstm_stack / ct_gru_stack,
 * the stacks as one op (PyTorch's aten::lstm.input), which a trace records as one
 * node.  The input projections of a whole sequence are one GEMM; each time step adds
 * the hidden projection and applies the gate formulas of PyTorch's documentation. */
#include <stdlib.h>

#include "ctorch.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/object.h"
#include "nn/rnn_impl.h"
#include "ops/trace.h"

static const int gate_count[] = {1, 4, 3};

ct_tensor *ct_rnn_cell_step(ct_rnn_kind kind, ct_rnn_nonlinearity act, ct_tensor *gi, ct_tensor *h,
                            ct_tensor *c, ct_tensor *w_hh_t, ct_tensor *b_hh, ct_tensor **c_out) {
    if (kind == CT_RNN_KIND_LSTM) {
        ct_lstm_cell_result r = ct_thnn_fused_lstm_cell(gi, ct_mm(h, w_hh_t), c, NULL, b_hh);
        *c_out = r.cy;
        return r.hy;
    }
    if (kind == CT_RNN_KIND_GRU) return ct_thnn_fused_gru_cell(gi, ct_mm(h, w_hh_t), h, NULL, b_hh).hy;
    ct_tensor *pre = ct_add(gi, b_hh ? ct_addmm(b_hh, h, w_hh_t) : ct_mm(h, w_hh_t));
    return act == CT_RNN_RELU ? ct_relu(pre) : ct_tanh(pre);
}

ct_tensor *ct_rnn_input_projection(ct_tensor *x2d, ct_tensor *w_ih, ct_tensor *b_ih) {
    return b_ih ? ct_addmm(b_ih, x2d, ct_t(w_ih)) : ct_mm(x2d, ct_t(w_ih));
}

/* One direction of one layer over the sequence seq [T, B, in]: every step's hidden
 * state [T, B, H]; writes the last h (and c). */
static ct_tensor *run_direction(const ct_rnn_config *c, ct_tensor *seq, ct_tensor *const *w, bool reverse,
                                ct_tensor *h, ct_tensor *cell, ct_tensor **h_last, ct_tensor **c_last) {
    const int64_t T = ct_size(seq, 0), B = ct_size(seq, 1), H = c->hidden;
    const int G = gate_count[c->kind];
    ct_tensor *proj = ct_view(ct_rnn_input_projection(ct_reshape(seq, CT_SHAPE(T * B, ct_size(seq, 2))), w[0], w[2]),
                              CT_SHAPE(T, B, G * H));
    ct_tensor **hs = ct_malloc(sizeof *hs * (size_t)(T > 0 ? T : 1));
    /* The steps' input projections as views from one unbind: one backward node (a
     * stack) instead of a full-size zero tensor per step's select. */
    ct_tensor **gis = ct_calloc((size_t)(T > 0 ? T : 1), sizeof *gis);
    if (!hs || !gis) {
        free(hs);
        free(gis);
        ct_error("%s: out of memory", c->kind == CT_RNN_KIND_LSTM ? "ct_lstm" : c->kind == CT_RNN_KIND_GRU ? "ct_gru" : "ct_rnn");
        return NULL;
    }
    if (T > 0) ct_unbind(proj, 0, gis, (int)T); /* on failure gis stay NULL: errors propagate */
    ct_tensor *w_hh_t = ct_t(w[1]); /* one transpose node for all steps */
    for (int64_t step = 0; step < T; step++) {
        int64_t t = reverse ? T - 1 - step : step;
        /* A scope per step: its temporaries (the hidden projection) die here, not at
         * the end of the sequence. */
        CT_SCOPE {
            ct_tensor *c_new = NULL;
            h = ct_keep(ct_rnn_cell_step(c->kind, c->act, gis[t], h, cell, w_hh_t, w[3], &c_new));
            cell = c_new ? ct_keep(c_new) : cell;
        }
        hs[t] = h;
    }
    ct_tensor *out = T > 0 ? ct_stack((int)T, hs, 0)
                           : ct_zeros(CT_SHAPE(0, B, H), .dtype = ct_dtype_of(seq), .device = ct_device_of(seq));
    free(hs);
    free(gis);
    *h_last = h;
    *c_last = cell;
    return out;
}

bool ct_rnn_run(const ct_rnn_config *c, ct_tensor *x, ct_tensor *const init[2], ct_tensor *const *weights,
                ct_tensor **outs) {
    const int64_t D = c->dirs, L = c->layers, H = c->hidden;
    const int n_states = c->kind == CT_RNN_KIND_LSTM ? 2 : 1;
    bool ok = true;
    CT_SCOPE {
        ct_tensor *seq = c->batch_first ? ct_transpose(x, 0, 1) : x; /* time-major */
        const int64_t B = ct_size(seq, 1);
        ct_tensor *state[2];
        for (int k = 0; k < n_states; k++)
            state[k] = init[k] ? init[k] : ct_zeros(CT_SHAPE(D * L, B, H), .dtype = ct_dtype_of(x), .device = ct_device_of(x));
        ct_tensor *h_n[2 * CT_RNN_MAX_LAYERS], *c_n[2 * CT_RNN_MAX_LAYERS];
        ct_tensor *layer_in = seq;
        for (int64_t l = 0; l < L && ok; l++) {
            ct_tensor *dir_out[2];
            for (int64_t d = 0; d < D && ok; d++) {
                int64_t i = l * D + d;
                dir_out[d] = run_direction(c, layer_in, &weights[i * 4], d == 1, ct_select(state[0], 0, i),
                                           n_states > 1 ? ct_select(state[1], 0, i) : NULL, &h_n[i], &c_n[i]);
                ok = dir_out[d] != NULL;
            }
            if (!ok) break;
            layer_in = D == 2 ? ct_cat(2, dir_out, 2) : dir_out[0];
            if (layer_in && c->dropout > 0 && l < L - 1 && c->train) layer_in = ct_dropout(layer_in, c->dropout, true);
            ok = layer_in != NULL;
        }
        if (!ok) break;
        ct_tensor *res[3] = {c->batch_first ? ct_transpose(layer_in, 0, 1) : layer_in, ct_stack((int)(D * L), h_n, 0),
                             n_states > 1 ? ct_stack((int)(D * L), c_n, 0) : NULL};
        for (int k = 0; k < 1 + n_states; k++) ok = ok && res[k];
        for (int k = 0; ok && k < 3; k++) outs[k] = res[k] ? ct_keep(res[k]) : NULL;
    }
    return ok;
}

/* ---- the stacks as one op ---- */

bool ct_rnn_dims_are(const ct_tensor *t, int ndim, const int64_t *want) {
    if (!t || ct_ndim(t) != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (ct_size(t, d) != want[d]) return false;
    return true;
}

/* Checks the arguments of a stack against each other; fills weights (4 per layer and
 * direction, biases NULL without) and the configuration. */
static bool check_stack(const char *op, ct_rnn_kind kind, ct_tensor *x, int n_hx, ct_tensor *const *hx, int n_params,
                        ct_tensor *const *params, ct_rnn_stack_options o, ct_rnn_config *c, ct_tensor **weights) {
    const int G = gate_count[kind], n_states = kind == CT_RNN_KIND_LSTM ? 2 : 1;
    const int64_t L = o.num_layers ? o.num_layers : 1, D = o.bidirectional ? 2 : 1;
    const int per = o.has_biases ? 4 : 2;
    if (!x || ct_ndim(x) != 3 || !ct_dtype_is_floating(ct_dtype_of(x))) {
        ct_error("%s: input must be a 3-D floating tensor (batched; unsqueeze an unbatched sequence)", op);
        return false;
    }
    if (L < 1 || L > CT_RNN_MAX_LAYERS) {
        ct_error("%s: num_layers must be between 1 and %d (got %lld)", op, CT_RNN_MAX_LAYERS, (long long)o.num_layers);
        return false;
    }
    if (!(o.dropout >= 0 && o.dropout <= 1)) {
        ct_error("%s: dropout must be in [0, 1] (got %g)", op, o.dropout);
        return false;
    }
    if (n_params != L * D * per || !params) {
        ct_error("%s: expected %lld parameters for %lld layer(s)%s%s, got %d", op, (long long)(L * D * per), (long long)L,
                 D == 2 ? ", bidirectional" : "", o.has_biases ? ", with biases" : "", n_params);
        return false;
    }
    if (n_hx < 0 || n_hx > n_states || (n_hx && !hx)) {
        ct_error("%s: expected up to %d initial states, got %d", op, n_states, n_hx);
        return false;
    }
    if (!params[1] || ct_ndim(params[1]) != 2) {
        ct_error("%s: weight_hh_l0 must be 2-D", op);
        return false;
    }
    const int64_t H = ct_size(params[1], 1), B = ct_size(x, o.batch_first ? 0 : 1);
    for (int64_t l = 0; l < L; l++)
        for (int64_t d = 0; d < D; d++) {
            int64_t i = l * D + d, in = l == 0 ? ct_size(x, 2) : D * H;
            ct_tensor *const *p = &params[i * per];
            int64_t w_ih[2] = {G * H, in}, w_hh[2] = {G * H, H}, b[1] = {G * H};
            bool good = ct_rnn_dims_are(p[0], 2, w_ih) && ct_rnn_dims_are(p[1], 2, w_hh) &&
                        (!o.has_biases || (ct_rnn_dims_are(p[2], 1, b) && ct_rnn_dims_are(p[3], 1, b)));
            if (!good) {
                ct_error("%s: the parameters of layer %lld%s must be w_ih [%lld, %lld], w_hh [%lld, %lld]%s", op,
                         (long long)l, d ? " (reverse)" : "", (long long)(G * H), (long long)in, (long long)(G * H),
                         (long long)H, o.has_biases ? " and biases of that first size" : "");
                return false;
            }
            for (int k = 0; k < 4; k++) weights[i * 4 + k] = k < per ? p[k] : NULL;
        }
    for (int k = 0; k < n_hx; k++)
        if (!ct_rnn_dims_are(hx[k], 3, (int64_t[]){D * L, B, H})) {
            char want[CT_SHAPE_STR_MAX];
            ct_error("%s: Expected hidden size %s for initial state %d", op,
                     ct_shape_str(3, (int64_t[]){D * L, B, H}, want), k);
            return false;
        }
    *c = (ct_rnn_config){.kind = kind, .layers = L, .dirs = D, .hidden = H, .dropout = o.dropout,
                         .train = o.train, .batch_first = o.batch_first};
    return true;
}

static ct_rnn_stack_result run_stack(ct_op_id op_id, ct_rnn_kind kind, ct_tensor *x, int n_hx, ct_tensor *const *hx,
                                     int n_params, ct_tensor *const *params, ct_rnn_stack_options o) {
    const char *op = kind == CT_RNN_KIND_LSTM ? "ct_lstm_stack" : "ct_gru_stack";
    ct_rnn_stack_result r = {0};
    ct_rnn_config c;
    ct_tensor *weights[4 * 2 * CT_RNN_MAX_LAYERS];
    if (!check_stack(op, kind, x, n_hx, hx, n_params, params, o, &c, weights)) return r;
    ct_tensor *init[2] = {n_hx > 0 ? hx[0] : NULL, n_hx > 1 ? hx[1] : NULL}, *outs[3] = {0};
    ct_trace_mute(); /* the stack reports itself, not its cells */
    bool ok = ct_rnn_run(&c, x, init, weights, outs);
    ct_trace_unmute();
    if (!ok) return r;
    if (ct_trace_active) {
        ct_tensor *in[1 + 2 + 4 * 2 * CT_RNN_MAX_LAYERS];
        int n_in = 1 + n_hx + n_params;
        in[0] = x;
        for (int k = 0; k < n_hx; k++) in[1 + k] = hx[k];
        for (int k = 0; k < n_params; k++) in[1 + n_hx + k] = params[k];
        CT_TRACE(op_id, n_in, in, kind == CT_RNN_KIND_LSTM ? 3 : 2, outs, CT_V_BOOL(o.has_biases),
                 CT_V_INT(c.layers), CT_V_FLOAT(o.dropout), CT_V_BOOL(o.train), CT_V_BOOL(o.bidirectional),
                 CT_V_BOOL(o.batch_first));
    }
    return (ct_rnn_stack_result){outs[0], outs[1], outs[2]};
}

ct_rnn_stack_result ct_lstm_stack_with(ct_tensor *input, int n_hx, ct_tensor *const *hx, int n_params,
                                       ct_tensor *const *params, ct_rnn_stack_options o) {
    if (!ct_alive("ct_lstm_stack", 1, input) || !ct_all_alive("ct_lstm_stack", 3, hx, n_hx) ||
        !ct_all_alive("ct_lstm_stack", 5, params, n_params))
        return (ct_rnn_stack_result){0};
    return run_stack(CT_OP_lstm, CT_RNN_KIND_LSTM, input, n_hx, hx, n_params, params, o);
}

ct_rnn_stack_result ct_gru_stack_with(ct_tensor *input, int n_hx, ct_tensor *const *hx, int n_params,
                                      ct_tensor *const *params, ct_rnn_stack_options o) {
    if (!ct_alive("ct_gru_stack", 1, input) || !ct_all_alive("ct_gru_stack", 3, hx, n_hx) ||
        !ct_all_alive("ct_gru_stack", 5, params, n_params))
        return (ct_rnn_stack_result){0};
    return run_stack(CT_OP_gru, CT_RNN_KIND_GRU, input, n_hx, hx, n_params, params, o);
}
