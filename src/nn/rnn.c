/* RNN, LSTM and GRU layers and cells, composed of ops (so autograd and double
 * backward come for free).  The input projections of a whole sequence are one GEMM;
 * each time step adds the hidden projection and applies the gate formulas of
 * PyTorch's documentation. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ctorch.h"
#include "ctorch/rnn.h"
#include "core/error.h"
#include "nn/layer_util.h"
#include "core/mem.h"

typedef enum { KIND_RNN, KIND_LSTM, KIND_GRU } rnn_kind;

static const int gate_count[] = {1, 4, 3};

typedef struct {
    rnn_kind kind;
    int64_t input_size, hidden_size;
    ct_rnn_options o;
    /* per (layer, direction): w_ih, w_hh, b_ih, b_hh (biases NULL without bias) */
    ct_tensor **weights;
    int n_weights;
} rnn_state;

/* ---- one cell step ---------------------------------------------------------------- */

/* gi: the input projection x W_ih^T + b_ih for this step [B, G*H]; w_hh_t: W_hh^T.
 * Returns h' and, for LSTM, writes c'.  LSTM and GRU run PyTorch's fused cells (one
 * node per step saving only the activated gates), RNN composes ops. */
static ct_tensor *cell_step(rnn_kind kind, ct_rnn_nonlinearity act, ct_tensor *gi, ct_tensor *h,
                            ct_tensor *c, ct_tensor *w_hh_t, ct_tensor *b_hh, ct_tensor **c_out) {
    if (kind == KIND_LSTM) {
        ct_lstm_cell_result r = ct_thnn_fused_lstm_cell(gi, ct_mm(h, w_hh_t), c, NULL, b_hh);
        *c_out = r.cy;
        return r.hy;
    }
    if (kind == KIND_GRU) return ct_thnn_fused_gru_cell(gi, ct_mm(h, w_hh_t), h, NULL, b_hh).hy;
    ct_tensor *pre = ct_add(gi, b_hh ? ct_addmm(b_hh, h, w_hh_t) : ct_mm(h, w_hh_t));
    return act == CT_RNN_RELU ? ct_relu(pre) : ct_tanh(pre);
}

/* x @ W_ih^T + b_ih for 2-D x. */
static ct_tensor *input_projection(ct_tensor *x2d, ct_tensor *w_ih, ct_tensor *b_ih) {
    return b_ih ? ct_addmm(b_ih, x2d, ct_t(w_ih)) : ct_mm(x2d, ct_t(w_ih));
}

/* ---- the layers ----------------------------------------------------------------------- */

static void rnn_destroy(ct_module *m) {
    rnn_state *s = ct_module_state(m);
    free(s->weights);
}

static void rnn_repr(const ct_module *m, char *buf, size_t size) {
    const rnn_state *s = ct_module_state(m);
    int n = snprintf(buf, size, "%lld, %lld", (long long)s->input_size, (long long)s->hidden_size);
    if (s->o.num_layers != 1 && n < (int)size) n += snprintf(buf + n, size - n, ", num_layers=%lld", (long long)s->o.num_layers);
    if (!s->o.bias && n < (int)size) n += snprintf(buf + n, size - n, ", bias=False");
    if (s->o.batch_first && n < (int)size) n += snprintf(buf + n, size - n, ", batch_first=True");
    if (s->o.dropout != 0 && n < (int)size) n += snprintf(buf + n, size - n, ", dropout=%g", s->o.dropout);
    if (s->o.bidirectional && n < (int)size) snprintf(buf + n, size - n, ", bidirectional=True");
}

static bool same_dims(const ct_tensor *t, int ndim, const int64_t *want) {
    if (ct_ndim(t) != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (ct_size(t, d) != want[d]) return false;
    return true;
}

/* Checks an initial state against [D*L, B, H] (or [D*L, H] unbatched). */
static bool check_state(const char *op, const ct_tensor *h, bool batched, int64_t dl, int64_t B, int64_t H) {
    int64_t want[3] = {dl, B, H}, want_unbatched[2] = {dl, H};
    if (batched ? same_dims(h, 3, want) : same_dims(h, 2, want_unbatched)) return true;
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    ct_shape s = ct_shape_of(h);
    if (batched)
        ct_error("%s: Expected hidden size %s, got %s", op, ct_shape_str(3, want, a), ct_shape_str(s.ndim, s.d, b));
    else
        ct_error("%s: Expected hidden size %s, got %s", op, ct_shape_str(2, want_unbatched, a), ct_shape_str(s.ndim, s.d, b));
    return false;
}

static int rnn_forward(ct_module *m, int n_in, ct_tensor *const *in, ct_tensor **out, int max_out) {
    rnn_state *s = ct_module_state(m);
    const char *op = s->kind == KIND_LSTM ? "ct_lstm" : s->kind == KIND_GRU ? "ct_gru" : "ct_rnn";
    int n_states = s->kind == KIND_LSTM ? 2 : 1;
    if (n_in < 1 || n_in > 1 + n_states) {
        ct_error("%s: expects the input and up to %d initial states (got %d tensors)", op, n_states, n_in);
        return -1;
    }
    ct_tensor *x = in[0];
    bool batched = ct_ndim(x) == 3;
    if (!batched && ct_ndim(x) != 2) {
        ct_error("%s: Expected input to be 2D or 3D, got %dD instead", op, ct_ndim(x));
        return -1;
    }
    if (ct_size(x, -1) != s->input_size) {
        ct_error("%s: input.size(-1) must be equal to input_size. Expected %lld, got %lld", op,
                 (long long)s->input_size, (long long)ct_size(x, -1));
        return -1;
    }
    const int64_t D = s->o.bidirectional ? 2 : 1, L = s->o.num_layers, H = s->hidden_size;
    const int G = gate_count[s->kind];
    int total = 1 + n_states, written = 0;
    CT_SCOPE {
        /* Time-major, batched: [T, B, input]. */
        ct_tensor *seq = batched ? (s->o.batch_first ? ct_transpose(x, 0, 1) : x) : ct_unsqueeze(x, 1);
        const int64_t T = ct_size(seq, 0), B = ct_size(seq, 1);
        ct_tensor *init[2] = {NULL, NULL};
        for (int k = 0; k < n_states; k++) {
            if (n_in > 1 + k) {
                if (!check_state(op, in[1 + k], batched, D * L, B, H)) {
                    total = -1;
                    break;
                }
                init[k] = batched ? in[1 + k] : ct_unsqueeze(in[1 + k], 1);
            } else {
                init[k] = ct_zeros(CT_SHAPE(D * L, B, H), .dtype = ct_dtype_of(x), .device = ct_device_of(x));
            }
        }
        if (total < 0) break;
        ct_tensor *h_n[64], *c_n[64];
        ct_tensor *layer_in = seq;
        for (int64_t l = 0; l < L && total > 0; l++) {
            ct_tensor *dir_out[2];
            for (int64_t d = 0; d < D; d++) {
                ct_tensor **w = &s->weights[(l * D + d) * 4];
                int64_t in_size = ct_size(layer_in, 2);
                ct_tensor *proj = ct_view(input_projection(ct_reshape(layer_in, CT_SHAPE(T * B, in_size)), w[0], w[2]),
                                          CT_SHAPE(T, B, G * H));
                ct_tensor *h = ct_select(init[0], 0, l * D + d);
                ct_tensor *c = n_states > 1 ? ct_select(init[1], 0, l * D + d) : NULL;
                ct_tensor **hs = ct_malloc(sizeof *hs * (size_t)(T > 0 ? T : 1));
                /* The steps' input projections as views from one unbind: one backward node
                 * (a stack) instead of a full-size zero tensor per step's select. */
                ct_tensor **gis = ct_calloc((size_t)(T > 0 ? T : 1), sizeof *gis);
                if (!hs || !gis) {
                    free(hs);
                    free(gis);
                    ct_error("%s: out of memory", op);
                    total = -1;
                    break;
                }
                if (T > 0) ct_unbind(proj, 0, gis, (int)T); /* on failure gis stay NULL: errors propagate */
                ct_tensor *w_hh_t = ct_t(w[1]); /* one transpose node for all steps */
                for (int64_t step = 0; step < T; step++) {
                    int64_t t = d == 0 ? step : T - 1 - step;
                    /* A scope per step: its temporaries (the hidden projection) die here,
                     * not at the end of the sequence. */
                    CT_SCOPE {
                        ct_tensor *c_new = NULL;
                        h = ct_keep(cell_step(s->kind, s->o.nonlinearity, gis[t], h, c, w_hh_t, w[3], &c_new));
                        c = c_new ? ct_keep(c_new) : c;
                    }
                    hs[t] = h;
                }
                dir_out[d] = T > 0 ? ct_stack((int)T, hs, 0) : ct_zeros(CT_SHAPE(0, B, H), .dtype = ct_dtype_of(x), .device = ct_device_of(x));
                free(hs);
                free(gis);
                h_n[l * D + d] = h;
                c_n[l * D + d] = c;
            }
            if (total < 0) break;
            layer_in = D == 2 ? ct_cat(2, dir_out, 2) : dir_out[0];
            if (!layer_in) total = -1;
            if (s->o.dropout > 0 && l < L - 1 && ct_module_is_training(m))
                layer_in = ct_dropout(layer_in, s->o.dropout, true);
        }
        if (total < 0 || !layer_in) {
            total = -1;
            break;
        }
        ct_tensor *outs[3];
        outs[0] = batched ? (s->o.batch_first ? ct_transpose(layer_in, 0, 1) : layer_in) : ct_squeeze_dim(layer_in, 1);
        outs[1] = ct_stack((int)(D * L), h_n, 0);
        if (n_states > 1) outs[2] = ct_stack((int)(D * L), c_n, 0);
        for (int k = 1; k < total && !batched; k++) outs[k] = ct_squeeze_dim(outs[k], 1);
        for (int k = 0; k < total; k++)
            if (!outs[k]) total = -1;
        for (int k = 0; total > 0 && k < total && k < max_out; k++) out[written++] = ct_keep(outs[k]);
    }
    return total < 0 ? -1 : total;
}

static const ct_module_class RNN_CLASSES[3] = {
    {.name = "RNN", .forward_multi = rnn_forward, .extra_repr = rnn_repr, .destroy = rnn_destroy},
    {.name = "LSTM", .forward_multi = rnn_forward, .extra_repr = rnn_repr, .destroy = rnn_destroy},
    {.name = "GRU", .forward_multi = rnn_forward, .extra_repr = rnn_repr, .destroy = rnn_destroy},
};

/* A parameter [rows, cols] (cols 0: a vector) initialised U(-1/sqrt(H), 1/sqrt(H)). */
static ct_tensor *add_weight(ct_module *m, const char *name, int64_t rows, int64_t cols, int64_t hidden,
                             ct_dtype dtype) {
    double k = 1.0 / sqrt((double)hidden);
    ct_tensor *w = ct_layer_param(m, name, cols ? CT_SHAPE(rows, cols) : CT_SHAPE(rows), dtype);
    if (w) CT_NO_GRAD { ct_uniform_(w, -k, k); }
    return w;
}

static bool check_sizes(const char *op, int64_t input_size, int64_t hidden_size) {
    if (input_size > 0 && hidden_size > 0) return true;
    ct_error("%s: input_size and hidden_size must be positive (got %lld and %lld)", op,
             (long long)input_size, (long long)hidden_size);
    return false;
}

/* The layers' parameters are floating point (the default dtype when not given). */
static bool check_dtype(const char *op, ct_dtype dtype) {
    if (dtype == CT_DTYPE_UNSET || ct_dtype_is_floating(dtype)) return true;
    ct_error("%s: dtype must be a floating point dtype (got %s)", op, ct_dtype_name(dtype));
    return false;
}

static ct_module *rnn_new(rnn_kind kind, int64_t input_size, int64_t hidden_size, ct_rnn_options o) {
    const char *op = kind == KIND_LSTM ? "ct_lstm" : kind == KIND_GRU ? "ct_gru" : "ct_rnn";
    if (!check_sizes(op, input_size, hidden_size) || !check_dtype(op, o.dtype)) return NULL;
    if (o.num_layers == 0) o.num_layers = 1;
    if (o.num_layers < 1 || o.num_layers > 32) {
        ct_error("%s: num_layers must be between 1 and 32 (got %lld)", op, (long long)o.num_layers);
        return NULL;
    }
    if (!(o.dropout >= 0 && o.dropout <= 1)) {
        ct_error("%s: dropout should be a number in range [0, 1] representing the probability of an "
                 "element being zeroed (got %g)", op, o.dropout);
        return NULL;
    }
    ct_module *m = NULL;
    CT_SCOPE {
        m = ct_keep(ct_module_new(&RNN_CLASSES[kind], sizeof(rnn_state)));
        if (!m) break;
        rnn_state *s = ct_module_state(m);
        s->kind = kind;
        s->input_size = input_size;
        s->hidden_size = hidden_size;
        s->o = o;
        int64_t D = o.bidirectional ? 2 : 1, G = gate_count[kind];
        s->n_weights = (int)(o.num_layers * D * 4);
        s->weights = ct_calloc((size_t)s->n_weights, sizeof *s->weights);
        if (!s->weights) {
            ct_error("%s: out of memory", op);
            m = NULL;
            break;
        }
        char name[64];
        for (int64_t l = 0; l < o.num_layers; l++)
            for (int64_t d = 0; d < D; d++) {
                const char *sfx = d ? "_reverse" : "";
                int64_t in = l == 0 ? input_size : hidden_size * D;
                ct_tensor **w = &s->weights[(l * D + d) * 4];
                snprintf(name, sizeof name, "weight_ih_l%lld%s", (long long)l, sfx);
                w[0] = add_weight(m, name, G * hidden_size, in, hidden_size, o.dtype);
                snprintf(name, sizeof name, "weight_hh_l%lld%s", (long long)l, sfx);
                w[1] = add_weight(m, name, G * hidden_size, hidden_size, hidden_size, o.dtype);
                if (!o.bias) continue;
                snprintf(name, sizeof name, "bias_ih_l%lld%s", (long long)l, sfx);
                w[2] = add_weight(m, name, G * hidden_size, 0, hidden_size, o.dtype);
                snprintf(name, sizeof name, "bias_hh_l%lld%s", (long long)l, sfx);
                w[3] = add_weight(m, name, G * hidden_size, 0, hidden_size, o.dtype);
            }
    }
    return m;
}

ct_module *ct_rnn_with(int64_t i, int64_t h, ct_rnn_options o) { return rnn_new(KIND_RNN, i, h, o); }
ct_module *ct_lstm_with(int64_t i, int64_t h, ct_rnn_options o) { return rnn_new(KIND_LSTM, i, h, o); }
ct_module *ct_gru_with(int64_t i, int64_t h, ct_rnn_options o) { return rnn_new(KIND_GRU, i, h, o); }

/* ---- cells ----------------------------------------------------------------------------- */

typedef struct {
    rnn_kind kind;
    int64_t input_size, hidden_size;
    ct_cell_options o;
    ct_tensor *w_ih, *w_hh, *b_ih, *b_hh;
} cell_state;

static void cell_repr(const ct_module *m, char *buf, size_t size) {
    const cell_state *s = ct_module_state(m);
    int n = snprintf(buf, size, "%lld, %lld", (long long)s->input_size, (long long)s->hidden_size);
    if (!s->o.bias && n < (int)size) n += snprintf(buf + n, size - n, ", bias=False");
    if (s->kind == KIND_RNN && s->o.nonlinearity == CT_RNN_RELU && n < (int)size)
        snprintf(buf + n, size - n, ", nonlinearity=relu");
}

static int cell_forward(ct_module *m, int n_in, ct_tensor *const *in, ct_tensor **out, int max_out) {
    cell_state *s = ct_module_state(m);
    const char *op = s->kind == KIND_LSTM ? "ct_lstm_cell" : s->kind == KIND_GRU ? "ct_gru_cell" : "ct_rnn_cell";
    int n_states = s->kind == KIND_LSTM ? 2 : 1;
    if (n_in < 1 || n_in > 1 + n_states) {
        ct_error("%s: expects the input and up to %d states (got %d tensors)", op, n_states, n_in);
        return -1;
    }
    ct_tensor *x = in[0];
    bool batched = ct_ndim(x) == 2;
    if ((!batched && ct_ndim(x) != 1) || ct_size(x, -1) != s->input_size) {
        ct_error("%s: expected input of shape [batch, %lld] or [%lld]", op, (long long)s->input_size,
                 (long long)s->input_size);
        return -1;
    }
    int total = n_states, written = 0;
    CT_SCOPE {
        ct_tensor *xb = batched ? x : ct_unsqueeze(x, 0);
        int64_t B = ct_size(xb, 0), H = s->hidden_size;
        ct_tensor *st[2];
        for (int k = 0; k < n_states; k++) {
            if (n_in > 1 + k) {
                ct_tensor *h = in[1 + k];
                int64_t want[2] = {B, H};
                if (batched ? !same_dims(h, 2, want) : !same_dims(h, 1, &H)) {
                    ct_error("%s: state %d has the wrong shape (expected [%lld, %lld])", op, k, (long long)B, (long long)H);
                    total = -1;
                    break;
                }
                st[k] = batched ? h : ct_unsqueeze(h, 0);
            } else {
                st[k] = ct_zeros(CT_SHAPE(B, H), .dtype = ct_dtype_of(x), .device = ct_device_of(x));
            }
        }
        if (total < 0) break;
        ct_tensor *c_new = NULL;
        ct_tensor *h = cell_step(s->kind, s->o.nonlinearity, input_projection(xb, s->w_ih, s->b_ih), st[0],
                                 n_states > 1 ? st[1] : NULL, ct_t(s->w_hh), s->b_hh, &c_new);
        ct_tensor *outs[2] = {h, c_new};
        for (int k = 0; k < total; k++) {
            if (!batched) outs[k] = ct_squeeze_dim(outs[k], 0);
            if (!outs[k]) total = -1;
        }
        for (int k = 0; total > 0 && k < total && k < max_out; k++) out[written++] = ct_keep(outs[k]);
    }
    return total;
}

static const ct_module_class CELL_CLASSES[3] = {
    {.name = "RNNCell", .forward_multi = cell_forward, .extra_repr = cell_repr},
    {.name = "LSTMCell", .forward_multi = cell_forward, .extra_repr = cell_repr},
    {.name = "GRUCell", .forward_multi = cell_forward, .extra_repr = cell_repr},
};

static ct_module *cell_new(rnn_kind kind, int64_t input_size, int64_t hidden_size, ct_cell_options o) {
    const char *op = kind == KIND_LSTM ? "ct_lstm_cell" : kind == KIND_GRU ? "ct_gru_cell" : "ct_rnn_cell";
    if (!check_sizes(op, input_size, hidden_size) || !check_dtype(op, o.dtype)) return NULL;
    ct_module *m = NULL;
    CT_SCOPE {
        m = ct_keep(ct_module_new(&CELL_CLASSES[kind], sizeof(cell_state)));
        if (!m) break;
        cell_state *s = ct_module_state(m);
        *s = (cell_state){.kind = kind, .input_size = input_size, .hidden_size = hidden_size, .o = o};
        int64_t G = gate_count[kind];
        s->w_ih = add_weight(m, "weight_ih", G * hidden_size, input_size, hidden_size, o.dtype);
        s->w_hh = add_weight(m, "weight_hh", G * hidden_size, hidden_size, hidden_size, o.dtype);
        if (o.bias) {
            s->b_ih = add_weight(m, "bias_ih", G * hidden_size, 0, hidden_size, o.dtype);
            s->b_hh = add_weight(m, "bias_hh", G * hidden_size, 0, hidden_size, o.dtype);
        }
    }
    return m;
}

ct_module *ct_rnn_cell_with(int64_t i, int64_t h, ct_cell_options o) { return cell_new(KIND_RNN, i, h, o); }
ct_module *ct_lstm_cell_with(int64_t i, int64_t h, ct_cell_options o) { return cell_new(KIND_LSTM, i, h, o); }
ct_module *ct_gru_cell_with(int64_t i, int64_t h, ct_cell_options o) { return cell_new(KIND_GRU, i, h, o); }
