/* The fused recurrent cells, PyTorch's _thnn_fused_lstm_cell and _thnn_fused_gru_cell:
 * one op per time step instead of a dozen, saving only the activated gates (the
 * workspace, an output of the node) and the cell state, not every intermediate.
 *
 * Backward: the fused kernel when no graph is being built; under create_graph the
 * same formulas in ops, written with the saved workspace, which carries this node
 * again when unpacked, so double backward differentiates through it (and the
 * formulas take the workspace's own gradient, which only a second order pass sends). */
#include <string.h>

#include "autograd/node.h"
#include "kernels/rnn_cell.h"
#include "ops/internal.h"
#include "ops/reduce_plan.h"
#include "ops/trace.h"
#include "ops/autocast.h"

/* Saved tensors: the previous state (LSTM: cx, GRU: hx), then the outputs after hy
 * (LSTM: cy and the workspace; GRU: the workspace). */
enum { SV_PREV_STATE };
enum { SV_LSTM_CY = 1, SV_LSTM_WORKSPACE };
enum { SV_GRU_WORKSPACE = 1 };

typedef struct {
    ct_op_id op;
    const char *name;
    int G;             /* gates per hidden unit: 4 (LSTM) or 3 (GRU) */
    const char *state; /* PyTorch's name of the state argument */
} cell_kind;

static const cell_kind LSTM = {CT_OP_thnn_fused_lstm_cell, "ct_thnn_fused_lstm_cell", 4, "cx"};
static const cell_kind GRU = {CT_OP_thnn_fused_gru_cell, "ct_thnn_fused_gru_cell", 3, "hx"};
static const char *const ARG_NAMES[5] = {"input_gates", "hidden_gates", NULL, "input_bias",
                                         "hidden_bias"};

static bool check_size(const cell_kind *k, int arg, ct_tensor *t, int ndim, const int64_t *want) {
    if (t->ndim == ndim && !memcmp(t->sizes, want, sizeof(int64_t) * (size_t)ndim)) return true;
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    ct_error("%s: Expected argument #%d '%s' of size %s, but got %s", k->name, arg + 1,
             arg == 2 ? k->state : ARG_NAMES[arg], ct_shape_str(ndim, want, a),
             ct_shape_str(t->ndim, t->sizes, b));
    return false;
}

/* in: igates, hgates, state, b_ih, b_hh (biases may be NULL).  Sets *H. */
static bool check(const cell_kind *k, ct_tensor *const *in, int64_t *H) {
    if (!in[0] || !in[1] || !in[2]) return false;
    ct_tensor *ig = in[0];
    if (ig->ndim != 2) {
        ct_error("%s: Expected 2-dimensional tensor, but got %d-dimensional tensor for argument "
                 "#1 'input_gates'", k->name, ig->ndim);
        return false;
    }
    if (ig->sizes[1] % k->G) {
        ct_error("%s: input_gates.size(1) must be a multiple of %d (got %lld)", k->name, k->G,
                 (long long)ig->sizes[1]);
        return false;
    }
    *H = ig->sizes[1] / k->G;
    int64_t state[2] = {ig->sizes[0], *H};
    for (int i = 1; i < 5; i++) {
        ct_tensor *t = in[i];
        if (!t) continue;
        bool ok = i == 1 ? check_size(k, i, t, 2, ig->sizes)
                  : i == 2 ? check_size(k, i, t, 2, state)
                           : check_size(k, i, t, 1, ig->sizes + 1);
        if (!ok || !ct_check_same_device(k->name, ig, t)) return false;
        if (t->dtype != ig->dtype) {
            ct_error("%s: expected scalar type %s but found %s", k->name,
                     ct_dtype_torch_name(ig->dtype), ct_dtype_torch_name(t->dtype));
            return false;
        }
    }
    if (!ct_dtype_is_floating(ig->dtype)) {
        ct_error("%s: \"%s\" not implemented for '%s'", k->name, k->name + 3,
                 ct_dtype_torch_name(ig->dtype));
        return false;
    }
    return true;
}

/* t as a contiguous tensor of dtype kd (NULL stays NULL), unregistered. */
static ct_tensor *as(const char *op, ct_tensor *t, ct_dtype kd) {
    return t ? ct_contiguous_as(op, t, kd) : NULL;
}

/* The data of an optional tensor. */
static char *data(ct_tensor *t) { return t ? ct_tensor_data(t) : NULL; }

/* Runs k's kernel over a: the tensors of `use` converted to the compute dtype (and
 * their data put into a), the outputs `make` allocated in it; each output converted
 * back to dt.  use/make list the args' slots in order; false on failure. */
typedef struct {
    ct_tensor *t;
    const char **src; /* where the kernel reads it */
} use_slot;
typedef struct {
    int64_t cols;
    char **dst;
    ct_tensor **out;
    ct_dtype dt; /* the output's dtype; UNSET: the op's */
} make_slot;

static bool run(const cell_kind *k, bool backward, ct_rnn_cell_args *a, ct_dtype dt,
                ct_device dev, int n_use, const use_slot *use, int n_make, const make_slot *make) {
    ct_rnn_cell_fn fn = ct_compute_rnn_cell_kernel(k->op, dev, dt);
    if (!fn) return false;
    ct_dtype kd = ct_compute_dtype_for(k->op, dev, dt);
    ct_tensor *conv[8] = {0};
    bool ok = true;
    for (int i = 0; i < n_use; i++) {
        conv[i] = as(k->name, use[i].t, kd);
        ok = ok && (conv[i] || !use[i].t);
        *use[i].src = data(conv[i]);
    }
    for (int i = 0; i < n_make; i++) {
        *make[i].out = ok ? ct_tensor_new(k->name, CT_SHAPE(a->B, make[i].cols), kd, dev) : NULL;
        ok = ok && *make[i].out;
        *make[i].dst = data(*make[i].out);
    }
    if (ok) fn(backward, a);
    for (int i = 0; i < n_use; i++) ct_release(conv[i]);
    for (int i = 0; i < n_make; i++) {
        ct_dtype odt = make[i].dt != CT_DTYPE_UNSET ? make[i].dt : dt;
        *make[i].out =
            ok ? ct_cast_result(k->name, *make[i].out, odt) : (ct_release(*make[i].out), NULL);
        ok = ok && *make[i].out;
    }
    return ok;
}

/* The forward of either cell: outputs hy[, cy], workspace (n_out of them). */
static bool forward(const cell_kind *k, ct_tensor *const *in, ct_tensor **out, int n_out) {
    int64_t H;
    if (!check(k, in, &H)) return false;
    ct_tensor *ig = in[0];
    ct_rnn_cell_args a = {.B = ig->sizes[0], .H = H};
    use_slot use[5] = {{in[0], &a.ig}, {in[1], &a.hg}, {in[2], &a.x}, {in[3], &a.bi}, {in[4], &a.bh}};
    /* Under autocast the cell runs promoted to its float32 state; its workspace (the
     * activated gates, what backward reads) is kept in the gates' reduced dtype, as
     * PyTorch's composed cell keeps its gates' activations. */
    ct_dtype ws = ct_autocast_narrowest_input();
    make_slot lstm[3] = {{H, &a.hy, &out[0], 0}, {H, &a.cy, &out[1], 0}, {4 * H, &a.ws, &out[2], ws}};
    make_slot gru[2] = {{H, &a.hy, &out[0], 0}, {4 * H, &a.ws, &out[1], ws}};
    if (!run(k, false, &a, ig->dtype, ig->storage->device, 5, use, n_out, n_out == 3 ? lstm : gru))
        return false;
    ct_node *n = ct_node_record(k->op, 5, in, n_out);
    if (n) {
        for (int i = 0; i < n_out; i++) ct_node_set_output(n, out[i], i);
        ct_node_save(n, SV_PREV_STATE, in[2], false); /* an earlier step's output, saved anyway */
        for (int i = 1; i < n_out; i++) ct_node_save(n, i, out[i], true); /* [cy,] workspace */
        ct_release(n);
    }
    CT_TRACE(k->op, 5, in, n_out, out);
    for (int i = 0; i < n_out; i++) ct_ret(out[i]);
    return true;
}

ct_lstm_cell_result (ct_thnn_fused_lstm_cell)(ct_tensor *ig, ct_tensor *hg, ct_tensor *cx,
                                              ct_tensor *b_ih, ct_tensor *b_hh) {
    if (!ct_alive("ct_thnn_fused_lstm_cell", 1, ig) ||
        !ct_alive("ct_thnn_fused_lstm_cell", 2, hg) ||
        !ct_alive("ct_thnn_fused_lstm_cell", 3, cx) ||
        !ct_alive("ct_thnn_fused_lstm_cell", 4, b_ih) ||
        !ct_alive("ct_thnn_fused_lstm_cell", 5, b_hh))
        return (ct_lstm_cell_result){0};
    CT_AUTOCAST_OP(CT_OP_thnn_fused_lstm_cell, ct_thnn_fused_lstm_cell(ig, hg, cx, b_ih, b_hh), ig,
                   hg, cx, b_ih, b_hh);
    ct_tensor *in[5] = {ig, hg, cx, b_ih, b_hh}, *out[3] = {0};
    if (!forward(&LSTM, in, out, 3)) return (ct_lstm_cell_result){0};
    return (ct_lstm_cell_result){out[0], out[1], out[2]};
}

ct_gru_cell_result (ct_thnn_fused_gru_cell)(ct_tensor *ig, ct_tensor *hg, ct_tensor *hx,
                                            ct_tensor *b_ih, ct_tensor *b_hh) {
    if (!ct_alive("ct_thnn_fused_gru_cell", 1, ig) || !ct_alive("ct_thnn_fused_gru_cell", 2, hg) ||
        !ct_alive("ct_thnn_fused_gru_cell", 3, hx) ||
        !ct_alive("ct_thnn_fused_gru_cell", 4, b_ih) ||
        !ct_alive("ct_thnn_fused_gru_cell", 5, b_hh))
        return (ct_gru_cell_result){0};
    CT_AUTOCAST_OP(CT_OP_thnn_fused_gru_cell, ct_thnn_fused_gru_cell(ig, hg, hx, b_ih, b_hh), ig,
                   hg, hx, b_ih, b_hh);
    ct_tensor *in[5] = {ig, hg, hx, b_ih, b_hh}, *out[2] = {0};
    if (!forward(&GRU, in, out, 2)) return (ct_gru_cell_result){0};
    return (ct_gru_cell_result){out[0], out[1]};
}

/* ---- backward ---------------------------------------------------------------------- */

/* Hands the gate gradients out: igates and hgates, the state's, and the biases' (the
 * gates' gradient summed over the batch). */
static bool assign(ct_node *n, ct_tensor **gi, ct_tensor *gig, ct_tensor *ghg, ct_tensor *gx) {
    ct_reduce_options batch = {.dims = {.n = 1, .d = {0}}};
    ct_tensor *g[5] = {gig, ghg, gx, NULL, NULL};
    if (n->needs_grad[3]) g[3] = ct_sum_with(gig, batch);
    if (n->needs_grad[4]) g[4] = ghg == gig && g[3] ? g[3] : ct_sum_with(ghg, batch);
    for (int i = 0; i < 5; i++) {
        if (!n->needs_grad[i]) continue;
        if (!g[i]) return false;
        gi[i] = g[i];
    }
    return true;
}

/* The fused kernel's backward (no graph): gig [, ghg], gx registered with the scope. */
static bool fused_backward(const cell_kind *k, ct_node *n, ct_tensor **gi, ct_tensor *ws,
                           ct_tensor *x, ct_tensor *cy, ct_tensor *ghy, ct_tensor *gcy) {
    bool lstm = k->G == 4;
    ct_tensor *zero = !ghy || (lstm && !gcy) ? ct_zeros_like(x) : NULL;
    ct_rnn_cell_args a = {.B = x->sizes[0], .H = x->sizes[1]};
    use_slot use[5] = {{ws, &a.ws_in}, {x, &a.x}, {ghy ? ghy : zero, &a.ghy}, {cy, &a.cy_in},
                       {gcy ? gcy : zero, &a.gcy}};
    ct_tensor *gig = NULL, *ghg = NULL, *gx = NULL;
    make_slot make[3] = {{k->G * a.H, &a.gig, &gig, 0}, {a.H, &a.gx, &gx, 0}, {k->G * a.H, &a.ghg, &ghg, 0}};
    if ((!ghy || (lstm && !gcy)) && !zero) return false;
    if (!run(k, true, &a, x->dtype, x->storage->device, lstm ? 5 : 3, use, lstm ? 2 : 3, make))
        return false;
    bool have_ghg = ghg != NULL; /* a registration that fails releases its tensor */
    gig = ct_ret(gig);
    gx = ct_ret(gx);
    if (have_ghg && !(ghg = ct_ret(ghg))) return false;
    if (!gig || !gx) return false;
    return assign(n, gi, gig, lstm ? gig : ghg, gx);
}

/* d (1 - s) s: through a sigmoid s;  d (1 - t^2): through a tanh t. */
static ct_tensor *through_sigmoid(ct_tensor *d, ct_tensor *s) {
    return ct_mul(d, ct_mul(s, ct_rsub_scalar(s, 1)));
}
static ct_tensor *through_tanh(ct_tensor *d, ct_tensor *t) {
    return ct_mul(d, ct_rsub_scalar(ct_mul(t, t), 1));
}

/* a + b, or a when b is NULL (a gradient nobody sent). */
static ct_tensor *plus(ct_tensor *a, ct_tensor *b) { return b ? ct_add(a, b) : a; }

/* The workspace's gradient in 4 chunks (all NULL when it has none: first order). */
static bool ws_grad(ct_tensor *gws, ct_tensor **c) {
    return !gws || ct_chunk(gws, 4, 1, c, 4) == 4;
}

bool thnn_fused_lstm_cell_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *cx = ct_node_saved(n, SV_PREV_STATE), *cy = ct_node_saved(n, SV_LSTM_CY),
              *ws = ct_node_saved(n, SV_LSTM_WORKSPACE);
    if (!cx || !cy || !ws) return false;
    if (!ct_is_grad_enabled() && !go[2]) return fused_backward(&LSTM, n, gi, ws, cx, cy, go[0], go[1]);
    ct_tensor *w[4]; /* i, f, g, o */
    if (ct_chunk(ws, 4, 1, w, 4) != 4) return false;
    ct_tensor *ghy = go[0] ? go[0] : ct_zeros_like(cy), *tc = ct_tanh(cy);
    ct_tensor *dc = through_tanh(ct_mul(ghy, w[3]), tc);
    if (go[1]) dc = ct_add(dc, go[1]);
    ct_tensor *c[4] = {0}; /* the gradient of the activated gates, then of their inputs */
    if (!ws_grad(go[2], c)) return false;
    ct_tensor *p[4] = {through_sigmoid(plus(ct_mul(dc, w[2]), c[0]), w[0]),
                       through_sigmoid(plus(ct_mul(dc, cx), c[1]), w[1]),
                       through_tanh(plus(ct_mul(dc, w[0]), c[2]), w[2]),
                       through_sigmoid(plus(ct_mul(ghy, tc), c[3]), w[3])};
    ct_tensor *gates = ct_cat(4, p, 1);
    return assign(n, gi, gates, gates, n->needs_grad[2] ? ct_mul(dc, w[1]) : NULL);
}

bool thnn_fused_gru_cell_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *hx = ct_node_saved(n, SV_PREV_STATE), *ws = ct_node_saved(n, SV_GRU_WORKSPACE);
    if (!hx || !ws) return false;
    if (!ct_is_grad_enabled() && !go[1]) return fused_backward(&GRU, n, gi, ws, hx, NULL, go[0], NULL);
    ct_tensor *w[4]; /* r, z, n, hn */
    if (ct_chunk(ws, 4, 1, w, 4) != 4) return false;
    ct_tensor *ghy = go[0] ? go[0] : ct_zeros_like(hx);
    ct_tensor *c[4] = {0};
    if (!ws_grad(go[1], c)) return false;
    /* hy = n + z (hx - n);  n = tanh(i_n + r hn) */
    ct_tensor *pz = through_sigmoid(plus(ct_mul(ghy, ct_sub(hx, w[2])), c[1]), w[1]);
    ct_tensor *pn = through_tanh(plus(ct_mul(ghy, ct_rsub_scalar(w[1], 1)), c[2]), w[2]);
    ct_tensor *pr = through_sigmoid(plus(ct_mul(pn, w[3]), c[0]), w[0]);
    ct_tensor *dhn = plus(ct_mul(pn, w[0]), c[3]);
    ct_tensor *gig = ct_cat(3, ((ct_tensor *[]){pr, pz, pn}), 1);
    ct_tensor *ghg = ct_cat(3, ((ct_tensor *[]){pr, pz, dhn}), 1);
    return assign(n, gi, gig, ghg, n->needs_grad[2] ? ct_mul(ghy, w[1]) : NULL);
}
