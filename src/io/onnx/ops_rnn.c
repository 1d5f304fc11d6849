/* LSTM and GRU layers as ONNX's LSTM / GRU ops, one per layer (the op table is in
 * ops.c).
 *
 * The trace holds a layer stack as one node: lstm(input, hx[], params[], has_biases,
 * num_layers, dropout, train, bidirectional, batch_first), params in PyTorch's flat
 * order (w_ih, w_hh, b_ih, b_hh per layer and direction).  ONNX's op is one layer:
 *   W [dirs, G*H, in], R [dirs, G*H, H], B [dirs, 2*G*H] (input then hidden biases),
 *   gates in ONNX's order: LSTM i, o, f, c (PyTorch's i, f, g, o), GRU z, r, h
 *   (PyTorch's r, z, n), with linear_before_reset=1 (PyTorch's GRU applies the reset
 *   gate after the hidden matrix product);
 *   Y [T, dirs, B, H], Y_h and Y_c [dirs, B, H].
 * So each layer's weights are re-ordered into new initializers ("<prefix>W_l0",
 * ...), a layer's Y becomes the next layer's [T, B, dirs*H] input (Squeeze, or
 * Transpose and Reshape when bidirectional), the final states are the layers' Y_h
 * (Y_c) concatenated, and batch_first is a Transpose on each side, as torch.onnx
 * writes it.  Initial states that are zeros (none given) are left out: ONNX's default. */
#include <stdio.h>
#include <string.h>

#include "ctorch/reduce.h"
#include "ctorch/shape.h"
#include "io/onnx/builder.h"

typedef struct {
    bool lstm;
    int gates;        /* 4 (LSTM) or 3 (GRU) */
    const int *order; /* ONNX's gate g is PyTorch's gate order[g] */
    int layers, dirs;
    bool biases;
} rnn_spec;

static const int lstm_order[] = {0, 3, 1, 2}, gru_order[] = {1, 0, 2};

/* w's gate blocks (along dim 0) in ONNX's order. */
static ct_tensor *reorder(const rnn_spec *s, ct_tensor *w) {
    int64_t h = ct_size(w, 0) / s->gates;
    ct_tensor *parts[4];
    for (int g = 0; g < s->gates; g++) parts[g] = ct_narrow(w, 0, s->order[g] * h, h);
    return ct_cat(s->gates, parts, 0);
}

/* The tensor of a weight input (a parameter or constant), or NULL with an error. */
static ct_tensor *weight(onnx_builder *b, const ct_graph_node *n, int i) {
    const ct_graph_value *v = ob_in_value(b, n, i);
    if (v && v->tensor) return v->tensor;
    ob_fail(b, n, "weight %d is computed in the graph; only parameters are supported", i);
    return NULL;
}

/* "lstm." of "lstm.weight_ih_l0": the layer's name, for the new initializers. */
static void prefix_of(const ct_graph_value *w_ih, char *buf, size_t size) {
    const char *p = w_ih->name ? strstr(w_ih->name, "weight_ih_l") : NULL;
    int len = p ? (int)(p - w_ih->name) : 0;
    snprintf(buf, size, "%.*s", len, p ? w_ih->name : "rnn.");
}

/* W, R and B of layer l, all directions, as initializers. */
static bool layer_weights(onnx_builder *b, const ct_graph_node *n, const rnn_spec *s, int first, int l,
                          const char **W, const char **R, const char **B) {
    int per = s->biases ? 4 : 2;
    char prefix[200], name[256];
    prefix_of(ob_in_value(b, n, first + l * s->dirs * per), prefix, sizeof prefix);
    bool ok = false;
    CT_SCOPE {
        ct_tensor *w[2], *r[2], *bias[2];
        bool have = true;
        for (int d = 0; have && d < s->dirs; d++) {
            int p = first + (l * s->dirs + d) * per;
            ct_tensor *w_ih = weight(b, n, p), *w_hh = weight(b, n, p + 1);
            if (!(have = w_ih && w_hh)) break;
            w[d] = reorder(s, w_ih), r[d] = reorder(s, w_hh);
            if (s->biases) {
                ct_tensor *b_ih = weight(b, n, p + 2), *b_hh = weight(b, n, p + 3);
                if (!(have = b_ih && b_hh)) break;
                bias[d] = ct_cat(2, (ct_tensor *[]){reorder(s, b_ih), reorder(s, b_hh)}, 0);
            }
        }
        ok = have;
        const char *suffix[] = {"W", "R", "B"};
        ct_tensor **src[] = {w, r, bias};
        const char **dst[] = {W, R, B};
        for (int k = 0; ok && k < (s->biases ? 3 : 2); k++) {
            snprintf(name, sizeof name, "%s%s_l%d", prefix, suffix[k], l);
            *dst[k] = ob_const_tensor(b, name, ct_stack(s->dirs, src[k], 0));
            ok = *dst[k] != NULL;
        }
        if (!s->biases) *B = "";
    }
    return ok;
}

/* Layer l's slice of an initial state [layers*dirs, B, H]; "" when there is none or
 * it is a constant of zeros. */
static const char *initial_state(onnx_builder *b, const ct_graph_node *n, int i, const rnn_spec *s, int l) {
    if (i < 0) return "";
    const ct_graph_value *v = ob_in_value(b, n, i);
    if (!v) return "";
    if (v->tensor) {
        bool zero = false;
        CT_SCOPE { zero = ct_item(ct_any(v->tensor)) == 0; }
        if (zero) return "";
    }
    int64_t start = (int64_t)l * s->dirs, end = start + s->dirs, axis = 0;
    return ob_op(b, "Slice", ob_in(b, n, i), ob_const_ints(b, &start, 1), ob_const_ints(b, &end, 1),
                 ob_const_ints(b, &axis, 1));
}

bool onnx_emit_rnn(onnx_builder *b, const ct_graph_node *n, const char *type) {
    rnn_spec s = {.lstm = !strcmp(type, "LSTM")};
    s.gates = s.lstm ? 4 : 3, s.order = s.lstm ? lstm_order : gru_order;
    s.layers = (int)ob_attr(n, "num_layers")->i;
    s.dirs = ob_attr(n, "bidirectional")->b ? 2 : 1;
    s.biases = ob_attr(n, "has_biases")->b;
    if (ob_attr(n, "train")->b && ob_attr(n, "dropout")->f > 0 && s.layers > 1)
        return ob_fail(b, n, "dropout between layers in training mode; export the module in eval mode");
    int n_params = s.layers * s.dirs * (s.biases ? 4 : 2), n_hx = n->n_inputs - 1 - n_params;
    if (n_hx < 0 || n_hx > (s.lstm ? 2 : 1))
        return ob_fail(b, n, "%d inputs for %d layers of weights (proj_size is not supported)", n->n_inputs, s.layers);
    int first = 1 + n_hx;
    int64_t hidden = ob_in_value(b, n, first + 1)->sizes[1];
    bool batch_first = ob_attr(n, "batch_first")->b;

    const char *x = ob_in(b, n, 0);
    if (batch_first) {
        const char *t = ob_tmp(b, "Transpose");
        if (!ob_attr_ints(b, ob_node(b, "Transpose", t, x), "perm", (int64_t[]){1, 0, 2}, 3)) return false;
        x = t;
    }
    const char **hs = ob_alloc(b, (s.layers + 1) * sizeof *hs), **cs = ob_alloc(b, (s.layers + 1) * sizeof *cs);
    if (!hs || !cs) return false;
    for (int l = 0; l < s.layers; l++) {
        const char *W, *R, *B;
        if (!layer_weights(b, n, &s, first, l, &W, &R, &B)) return false;
        const char *h0 = initial_state(b, n, n_hx >= 1 ? 1 : -1, &s, l);
        const char *c0 = s.lstm ? initial_state(b, n, n_hx >= 2 ? 2 : -1, &s, l) : NULL;
        const char *y = ob_tmp(b, type);
        hs[l] = ob_tmp(b, "Y_h"), cs[l] = s.lstm ? ob_tmp(b, "Y_c") : NULL;
        if (!h0 || (s.lstm && !c0)) return false;
        Onnx__NodeProto *node = s.lstm ? ob_node_n(b, type, 7, OB_NAMES(x, W, R, B, "", h0, c0), 3, OB_NAMES(y, hs[l], cs[l]))
                                       : ob_node_n(b, type, 6, OB_NAMES(x, W, R, B, "", h0), 2, OB_NAMES(y, hs[l]));
        if (!ob_attr_int(b, node, "hidden_size", hidden) ||
            (s.dirs == 2 && !ob_attr_str(b, node, "direction", "bidirectional")) ||
            (!s.lstm && !ob_attr_int(b, node, "linear_before_reset", 1)))
            return false;
        /* Y [T, dirs, B, H] -> [T, B, dirs*H] */
        if (s.dirs == 1) {
            x = ob_op(b, "Squeeze", y, ob_const_ints(b, (int64_t[]){1}, 1));
        } else {
            const char *t = ob_tmp(b, "Transpose");
            if (!ob_attr_ints(b, ob_node(b, "Transpose", t, y), "perm", (int64_t[]){0, 2, 1, 3}, 4)) return false;
            x = ob_op(b, "Reshape", t, ob_const_ints(b, (int64_t[]){0, 0, -1}, 3));
        }
        if (!x) return false;
    }
    if (batch_first) {
        const char *t = ob_tmp(b, "Transpose");
        if (!ob_attr_ints(b, ob_node(b, "Transpose", t, x), "perm", (int64_t[]){1, 0, 2}, 3)) return false;
        x = t;
    }
    if (!ob_assign(b, n, 0, x)) return false;
    for (int k = 1; k < n->n_outputs; k++) {
        const char **states = k == 1 ? hs : cs;
        if (s.layers == 1) {
            if (!ob_assign(b, n, k, states[0])) return false;
            continue;
        }
        const char *out = ob_out(b, n, k);
        if (!ob_attr_int(b, ob_node_n(b, "Concat", s.layers, states, 1, &out), "axis", 0)) return false;
    }
    return true;
}

/* ---- one time step (LSTMCell, GRUCell, and layers a trace unrolled) ---- */

/* The gates (+ their biases) in chunks of H: for an LSTM (hg NULL) of their sum into
 * ig, for a GRU of the input and hidden gates apart. */
static bool cell_chunks(onnx_builder *b, const ct_graph_node *n, int chunks, const char **ig, const char **hg) {
    const char *x = ob_in(b, n, 0), *h = ob_in(b, n, 1);
    if (n->n_inputs > 3 && n->inputs[3] >= 0) x = ob_op(b, "Add", x, ob_in(b, n, 3));
    if (n->n_inputs > 4 && n->inputs[4] >= 0) h = ob_op(b, "Add", h, ob_in(b, n, 4));
    int64_t hidden = ob_in_value(b, n, 2)->sizes[ob_in_value(b, n, 2)->ndim - 1], sizes[4];
    for (int g = 0; g < chunks; g++) sizes[g] = hidden;
    for (int k = 0; k < (hg ? 2 : 1); k++) {
        const char **out = k ? hg : ig, *src = !hg ? ob_op(b, "Add", x, h) : k ? h : x;
        for (int g = 0; g < chunks; g++) out[g] = ob_tmp(b, "Split");
        Onnx__NodeProto *node = ob_node_n(b, "Split", 2, OB_NAMES(src, ob_const_ints(b, sizes, chunks)), chunks, out);
        if (!ob_attr_int(b, node, "axis", -1)) return false;
    }
    return true;
}

/* _thnn_fused_lstm_cell: i, f, g, o = chunks of the summed gates;
 * cy = sigmoid(f) cx + sigmoid(i) tanh(g), hy = sigmoid(o) tanh(cy). */
bool onnx_emit_lstm_cell(onnx_builder *b, const ct_graph_node *n, const char *type) {
    (void)type;
    const char *g[4];
    if (n->n_outputs > 2 && b->uses[n->outputs[2]]) return ob_fail(b, n, "the workspace output is read");
    if (!cell_chunks(b, n, 4, g, NULL)) return false;
    const char *cy = ob_op(b, "Add", ob_op(b, "Mul", ob_op(b, "Sigmoid", g[1]), ob_in(b, n, 2)),
                           ob_op(b, "Mul", ob_op(b, "Sigmoid", g[0]), ob_op(b, "Tanh", g[2])));
    const char *hy = ob_op(b, "Mul", ob_op(b, "Sigmoid", g[3]), ob_op(b, "Tanh", cy));
    return ob_assign(b, n, 0, hy) && ob_assign(b, n, 1, cy);
}

/* _thnn_fused_gru_cell: r, z, n from the input and hidden gates apart;
 * r = sigmoid(i_r + h_r), z = sigmoid(i_z + h_z), n = tanh(i_n + r h_n),
 * hy = n + z (hx - n). */
bool onnx_emit_gru_cell(onnx_builder *b, const ct_graph_node *n, const char *type) {
    (void)type;
    const char *ig[3], *hg[3];
    if (n->n_outputs > 1 && b->uses[n->outputs[1]]) return ob_fail(b, n, "the workspace output is read");
    if (!cell_chunks(b, n, 3, ig, hg)) return false;
    const char *r = ob_op(b, "Sigmoid", ob_op(b, "Add", ig[0], hg[0]));
    const char *z = ob_op(b, "Sigmoid", ob_op(b, "Add", ig[1], hg[1]));
    const char *nn = ob_op(b, "Tanh", ob_op(b, "Add", ig[2], ob_op(b, "Mul", r, hg[2])));
    const char *hy = ob_op(b, "Add", nn, ob_op(b, "Mul", z, ob_op(b, "Sub", ob_in(b, n, 2), nn)));
    return ob_assign(b, n, 0, hy);
}
