/* RNN, LSTM and GRU layers and cells, composed of ops (so autograd and double
 * backward come for free): the modules, their parameters and checks; the layers'
 * computation is nn/rnn_stack.c. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ctorch.h"
#include "ctorch/rnn.h"
#include "core/error.h"
#include "nn/layer_util.h"
#include "core/mem.h"
#include "nn/rnn_impl.h"


static const int gate_count[] = {1, 4, 3};

typedef struct {
    ct_rnn_kind kind;
    int64_t input_size, hidden_size;
    ct_rnn_options o;
    /* per (layer, direction): w_ih, w_hh, b_ih, b_hh (biases NULL without bias) */
    ct_tensor **weights;
    int n_weights;
} rnn_state;

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

/* Checks an initial state against [D*L, B, H] (or [D*L, H] unbatched). */
static bool check_state(const char *op, const ct_tensor *h, bool batched, int64_t dl, int64_t B, int64_t H) {
    int64_t want[3] = {dl, B, H}, want_unbatched[2] = {dl, H};
    if (batched ? ct_rnn_dims_are(h, 3, want) : ct_rnn_dims_are(h, 2, want_unbatched)) return true;
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
    const char *op = s->kind == CT_RNN_KIND_LSTM ? "ct_lstm" : s->kind == CT_RNN_KIND_GRU ? "ct_gru" : "ct_rnn";
    int n_states = s->kind == CT_RNN_KIND_LSTM ? 2 : 1;
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
    int total = 1 + n_states, written = 0;
    CT_SCOPE {
        /* An unbatched sequence [T, F] runs as a batch of one, time-major. */
        ct_tensor *xb = batched ? x : ct_unsqueeze(x, 1);
        const bool batch_first = batched && s->o.batch_first;
        const int64_t B = ct_size(xb, batch_first ? 0 : 1);
        ct_tensor *init[2] = {NULL, NULL};
        int n_hx = n_in - 1;
        for (int k = 0; k < n_hx; k++) {
            if (!check_state(op, in[1 + k], batched, D * L, B, H)) {
                total = -1;
                break;
            }
            init[k] = batched ? in[1 + k] : ct_unsqueeze(in[1 + k], 1);
        }
        if (total < 0) break;
        ct_tensor *outs[3] = {0};
        bool train = ct_module_is_training(m);
        if (s->kind == CT_RNN_KIND_RNN) {
            ct_rnn_config c = {.kind = CT_RNN_KIND_RNN, .act = s->o.nonlinearity, .layers = L, .dirs = D, .hidden = H,
                               .dropout = s->o.dropout, .train = train, .batch_first = batch_first};
            if (!ct_rnn_run(&c, xb, init, s->weights, outs)) total = -1;
        } else {
            /* PyTorch's flat parameter order: the weights without absent biases. */
            ct_tensor *params[4 * 2 * CT_RNN_MAX_LAYERS];
            int n_params = 0;
            for (int i = 0; i < s->n_weights; i++)
                if (s->weights[i]) params[n_params++] = s->weights[i];
            ct_rnn_stack_options so = {.has_biases = s->o.bias, .num_layers = L, .dropout = s->o.dropout,
                                       .train = train, .bidirectional = s->o.bidirectional,
                                       .batch_first = batch_first};
            ct_rnn_stack_result r = s->kind == CT_RNN_KIND_LSTM ? ct_lstm_stack_with(xb, n_hx, init, n_params, params, so)
                                                         : ct_gru_stack_with(xb, n_hx, init, n_params, params, so);
            outs[0] = r.output, outs[1] = r.h_n, outs[2] = r.c_n;
            if (!r.output) total = -1;
        }
        if (total < 0) break;
        if (!batched) {
            for (int k = 0; k < total; k++) outs[k] = ct_squeeze_dim(outs[k], 1);
        }
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

static ct_module *rnn_new(ct_rnn_kind kind, int64_t input_size, int64_t hidden_size, ct_rnn_options o) {
    const char *op = kind == CT_RNN_KIND_LSTM ? "ct_lstm" : kind == CT_RNN_KIND_GRU ? "ct_gru" : "ct_rnn";
    if (!check_sizes(op, input_size, hidden_size) || !check_dtype(op, o.dtype)) return NULL;
    if (o.num_layers == 0) o.num_layers = 1;
    if (o.num_layers < 1 || o.num_layers > CT_RNN_MAX_LAYERS) {
        ct_error("%s: num_layers must be between 1 and %d (got %lld)", op, CT_RNN_MAX_LAYERS,
                 (long long)o.num_layers);
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

ct_module *ct_rnn_with(int64_t i, int64_t h, ct_rnn_options o) { return rnn_new(CT_RNN_KIND_RNN, i, h, o); }
ct_module *ct_lstm_with(int64_t i, int64_t h, ct_rnn_options o) { return rnn_new(CT_RNN_KIND_LSTM, i, h, o); }
ct_module *ct_gru_with(int64_t i, int64_t h, ct_rnn_options o) { return rnn_new(CT_RNN_KIND_GRU, i, h, o); }

/* ---- cells ----------------------------------------------------------------------------- */

typedef struct {
    ct_rnn_kind kind;
    int64_t input_size, hidden_size;
    ct_cell_options o;
    ct_tensor *w_ih, *w_hh, *b_ih, *b_hh;
} cell_state;

static void cell_repr(const ct_module *m, char *buf, size_t size) {
    const cell_state *s = ct_module_state(m);
    int n = snprintf(buf, size, "%lld, %lld", (long long)s->input_size, (long long)s->hidden_size);
    if (!s->o.bias && n < (int)size) n += snprintf(buf + n, size - n, ", bias=False");
    if (s->kind == CT_RNN_KIND_RNN && s->o.nonlinearity == CT_RNN_RELU && n < (int)size)
        snprintf(buf + n, size - n, ", nonlinearity=relu");
}

static int cell_forward(ct_module *m, int n_in, ct_tensor *const *in, ct_tensor **out, int max_out) {
    cell_state *s = ct_module_state(m);
    const char *op = s->kind == CT_RNN_KIND_LSTM ? "ct_lstm_cell" : s->kind == CT_RNN_KIND_GRU ? "ct_gru_cell" : "ct_rnn_cell";
    int n_states = s->kind == CT_RNN_KIND_LSTM ? 2 : 1;
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
                if (batched ? !ct_rnn_dims_are(h, 2, want) : !ct_rnn_dims_are(h, 1, &H)) {
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
        ct_tensor *h = ct_rnn_cell_step(s->kind, s->o.nonlinearity, ct_rnn_input_projection(xb, s->w_ih, s->b_ih), st[0],
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

static ct_module *cell_new(ct_rnn_kind kind, int64_t input_size, int64_t hidden_size, ct_cell_options o) {
    const char *op = kind == CT_RNN_KIND_LSTM ? "ct_lstm_cell" : kind == CT_RNN_KIND_GRU ? "ct_gru_cell" : "ct_rnn_cell";
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

ct_module *ct_rnn_cell_with(int64_t i, int64_t h, ct_cell_options o) { return cell_new(CT_RNN_KIND_RNN, i, h, o); }
ct_module *ct_lstm_cell_with(int64_t i, int64_t h, ct_cell_options o) { return cell_new(CT_RNN_KIND_LSTM, i, h, o); }
ct_module *ct_gru_cell_with(int64_t i, int64_t h, ct_cell_options o) { return cell_new(CT_RNN_KIND_GRU, i, h, o); }
