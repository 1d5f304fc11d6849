/* The ops a graph can run (io/graph_ops.h): one row per op, each a call of the op's
 * public function with the node's inputs and attributes.  Attributes are read by
 * their schema position (src/ops/schema.def); an op whose public function derives an
 * attribute from its inputs (group_norm's N, C and HxW) ignores the recorded one, so
 * it follows the run's shapes. */
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "ctorch.h"
#include "io/graph_ops.h"

#define ARGS ct_tensor *const *in, int n_in, const ct_value *a, ct_tensor **out, int n_out
#define UNUSED (void)in, (void)n_in, (void)a, (void)out, (void)n_out

static int one(ct_tensor **out, ct_tensor *t) {
    out[0] = t;
    return t ? 0 : -1;
}
static ct_dims dims_of(const ct_value *v) {
    ct_dims d = {0};
    if (v->none) return d;
    int n = v->ints.n < CT_MAX_DIMS ? v->ints.n : CT_MAX_DIMS;
    d.n = n;
    memcpy(d.d, v->ints.v, sizeof(int64_t) * (size_t)n);
    return d;
}
static ct_shape shape_of(const ct_value *v) {
    ct_dims d = dims_of(v);
    ct_shape s = {.ndim = d.n};
    memcpy(s.d, d.d, sizeof s.d);
    return s;
}
static ct_opt_f64 opt_of(const ct_value *v) { return v->none ? (ct_opt_f64){0} : CT_SOME(v->f); }
static ct_dtype dtype_of(const ct_value *v) { return v->none ? CT_DTYPE_UNSET : v->dtype; }

/* ---- pointwise ---- */
#define UNARY(name)                                                                    \
    static int run_##name(ARGS) {                                                      \
        UNUSED;                                                                        \
        return one(out, ct_##name(in[0]));                                             \
    }
#define BINARY(name)                                                                   \
    static int run_##name(ARGS) {                                                      \
        UNUSED;                                                                        \
        return one(out, ct_##name(in[0], in[1]));                                      \
    }
UNARY(neg) UNARY(exp) UNARY(log) UNARY(reciprocal) UNARY(expm1) UNARY(log1p) UNARY(log2)
UNARY(sqrt) UNARY(rsqrt) UNARY(abs) UNARY(sign) UNARY(sin) UNARY(cos) UNARY(tanh)
UNARY(sigmoid) UNARY(erf) UNARY(relu) UNARY(silu) UNARY(isnan) UNARY(isinf) UNARY(isfinite)
UNARY(logical_not) UNARY(clone) UNARY(max) UNARY(min) UNARY(squeeze)
BINARY(mul) BINARY(maximum) BINARY(minimum) BINARY(eq) BINARY(ne) BINARY(lt) BINARY(le)
BINARY(gt) BINARY(ge) BINARY(logical_and) BINARY(logical_or) BINARY(logical_xor) BINARY(pow)
BINARY(mm) BINARY(bmm) BINARY(mv) BINARY(dot)

static int run_add(ARGS) { UNUSED; return one(out, ct_add_alpha(in[0], in[1], a[0].f)); }
static int run_sub(ARGS) { UNUSED; return one(out, ct_sub_alpha(in[0], in[1], a[0].f)); }
static int run_div(ARGS) {
    UNUSED;
    const char *m = a[0].none ? NULL : a[0].s;
    ct_rounding_mode r = !m ? CT_ROUND_NONE : !strcmp(m, "trunc") ? CT_ROUND_TRUNC : CT_ROUND_FLOOR;
    if (m && strcmp(m, "trunc") && strcmp(m, "floor")) {
        ct_error("div: rounding_mode must be None, 'trunc' or 'floor' (got '%s')", m);
        return -1;
    }
    return one(out, ct_div_mode(in[0], in[1], r));
}
static int run_where(ARGS) { UNUSED; return one(out, ct_where(in[0], in[1], in[2])); }
static int run_pow_scalar(ARGS) { UNUSED; return one(out, ct_pow_scalar(in[0], a[0].f)); }
static int run_rpow_scalar(ARGS) { UNUSED; return one(out, ct_rpow_scalar(in[0], a[0].f)); }
static int run_clamp(ARGS) {
    UNUSED;
    return one(out, ct_clamp_with(in[0], (ct_clamp_options){opt_of(&a[0]), opt_of(&a[1])}));
}
static int run_leaky_relu(ARGS) {
    UNUSED;
    return one(out, ct_leaky_relu_with(in[0], (ct_leaky_relu_options){.negative_slope = CT_SOME(a[0].f)}));
}
static int run_elu(ARGS) {
    UNUSED;
    if (a[1].f != 1 || a[2].f != 1) {
        ct_error("elu: scale and input_scale other than 1 cannot run from a graph");
        return -1;
    }
    return one(out, ct_elu_with(in[0], (ct_elu_options){.alpha = CT_SOME(a[0].f)}));
}
static int run_gelu(ARGS) {
    UNUSED;
    bool tanh_ = !strcmp(a[0].s, "tanh");
    if (!tanh_ && strcmp(a[0].s, "none")) {
        ct_error("gelu: approximate must be 'none' or 'tanh' (got '%s')", a[0].s);
        return -1;
    }
    return one(out, ct_gelu_with(in[0], (ct_gelu_options){tanh_ ? CT_GELU_TANH : CT_GELU_NONE}));
}
static int run_softplus(ARGS) {
    UNUSED;
    return one(out, ct_softplus_with(in[0], (ct_softplus_options){.beta = CT_SOME(a[0].f),
                                                                  .threshold = CT_SOME(a[1].f)}));
}
static int run_hardtanh(ARGS) {
    UNUSED;
    return one(out, ct_hardtanh_with(in[0], (ct_hardtanh_options){.min_val = CT_SOME(a[0].f),
                                                                  .max_val = CT_SOME(a[1].f)}));
}

/* ---- reductions ---- */
/* dim (a list or None), keepdim, dtype: sum, mean. */
static ct_reduce_options reduce_opts(const ct_value *a, bool with_dtype) {
    return (ct_reduce_options){dims_of(&a[0]), a[1].b, with_dtype ? dtype_of(&a[2]) : CT_DTYPE_UNSET};
}
static int run_sum(ARGS) { UNUSED; return one(out, ct_sum_with(in[0], reduce_opts(a, true))); }
static int run_mean(ARGS) { UNUSED; return one(out, ct_mean_with(in[0], reduce_opts(a, true))); }
static int run_amax(ARGS) { UNUSED; return one(out, ct_amax_with(in[0], reduce_opts(a, false))); }
static int run_amin(ARGS) { UNUSED; return one(out, ct_amin_with(in[0], reduce_opts(a, false))); }
static int run_logsumexp(ARGS) { UNUSED; return one(out, ct_logsumexp_with(in[0], reduce_opts(a, false))); }
static int run_argmax(ARGS) {
    UNUSED;
    ct_reduce_options o = {.keepdim = a[1].b};
    if (!a[0].none) o.dims = (ct_dims){1, {a[0].i}};
    return one(out, ct_argmax_with(in[0], o));
}
static int run_argmin(ARGS) {
    UNUSED;
    ct_reduce_options o = {.keepdim = a[1].b};
    if (!a[0].none) o.dims = (ct_dims){1, {a[0].i}};
    return one(out, ct_argmin_with(in[0], o));
}
static int run_var(ARGS) {
    UNUSED;
    return one(out, ct_var_with(in[0], (ct_var_options){dims_of(&a[0]), a[2].b, opt_of(&a[1])}));
}
static int run_std(ARGS) {
    UNUSED;
    return one(out, ct_std_with(in[0], (ct_var_options){dims_of(&a[0]), a[2].b, opt_of(&a[1])}));
}
static int values_indices(ct_tensor **out, int n_out, ct_values_indices r) {
    out[0] = r.values;
    if (n_out > 1) out[1] = r.indices;
    return r.values ? 0 : -1;
}
static int run_max_dim(ARGS) { UNUSED; return values_indices(out, n_out, ct_max_dim(in[0], a[0].i, a[1].b)); }
static int run_min_dim(ARGS) { UNUSED; return values_indices(out, n_out, ct_min_dim(in[0], a[0].i, a[1].b)); }
/* softmax(self, dim, dtype): with a dtype, the input is cast first, as PyTorch does. */
static ct_tensor *cast(ct_tensor *t, const ct_value *dtype) {
    return dtype->none ? t : ct_to_with(t, (ct_to_options){.dtype = dtype->dtype});
}
static int run_softmax(ARGS) { UNUSED; return one(out, ct_softmax(cast(in[0], &a[1]), a[0].i)); }
static int run_log_softmax(ARGS) { UNUSED; return one(out, ct_log_softmax(cast(in[0], &a[1]), a[0].i)); }

/* ---- views and shaping ---- */
static int run_view(ARGS) { UNUSED; return one(out, ct_view(in[0], shape_of(&a[0]))); }
static int run_expand(ARGS) { UNUSED; return one(out, ct_expand(in[0], shape_of(&a[0]))); }
static int run_transpose(ARGS) { UNUSED; return one(out, ct_transpose(in[0], a[0].i, a[1].i)); }
static int run_permute(ARGS) { UNUSED; return one(out, ct_permute(in[0], dims_of(&a[0]))); }
static int run_slice(ARGS) {
    UNUSED;
    return one(out, ct_slice(in[0], a[0].i, a[1].none ? 0 : a[1].i, a[2].none ? CT_END : a[2].i, a[3].i));
}
static int run_select(ARGS) { UNUSED; return one(out, ct_select(in[0], a[0].i, a[1].i)); }
static int run_squeeze_dim(ARGS) { UNUSED; return one(out, ct_squeeze_dim(in[0], a[0].i)); }
static int run_unsqueeze(ARGS) { UNUSED; return one(out, ct_unsqueeze(in[0], a[0].i)); }
static int run_cat(ARGS) { UNUSED; return one(out, ct_cat(n_in, in, a[0].i)); }
static int run_stack(ARGS) { UNUSED; return one(out, ct_stack(n_in, in, a[0].i)); }
static int pieces(int n_out, int n) {
    if (n < 0) return -1;
    if (n != n_out) {
        ct_error("split: the run gives %d pieces, the trace had %d (a dim the graph splits changed size)",
                 n, n_out);
        return -1;
    }
    return 0;
}
static int run_split(ARGS) { UNUSED; return pieces(n_out, ct_split(in[0], a[0].i, a[1].i, out, n_out)); }
static int run_unbind(ARGS) { UNUSED; return pieces(n_out, ct_unbind(in[0], a[0].i, out, n_out)); }
static int run_index_select(ARGS) { UNUSED; return one(out, ct_index_select(in[0], a[0].i, in[1])); }
static int run_gather(ARGS) { UNUSED; return one(out, ct_gather(in[0], a[0].i, in[1])); }
static int run_masked_fill(ARGS) { UNUSED; return one(out, ct_masked_fill(in[0], in[1], a[0].f)); }
static int run_embedding(ARGS) {
    UNUSED;
    ct_embedding_options o = {.scale_grad_by_freq = a[1].b};
    if (a[0].i != -1) o.padding_idx = CT_SOME(a[0].i);
    return one(out, ct_embedding_with(in[1], in[0], o));
}
static int run_to_copy(ARGS) {
    UNUSED;
    ct_to_options o = {.dtype = dtype_of(&a[0]), .copy = true};
    if (!a[1].none) o.device = a[1].device;
    return one(out, ct_to_with(in[0], o));
}

/* ---- linear algebra ---- */
static ct_addmm_options addmm_opts(const ct_value *a) {
    return (ct_addmm_options){CT_SOME(a[0].f), CT_SOME(a[1].f)};
}
static int run_addmm(ARGS) { UNUSED; return one(out, ct_addmm_with(in[0], in[1], in[2], addmm_opts(a))); }
static int run_baddbmm(ARGS) { UNUSED; return one(out, ct_baddbmm_with(in[0], in[1], in[2], addmm_opts(a))); }

/* ---- convolution, pooling, normalization, dropout ---- */
/* convolution(input, weight, bias; stride, padding, dilation, transposed, output_padding, groups) */
static int run_convolution(ARGS) {
    UNUSED;
    ct_conv_options o = {dims_of(&a[0]), dims_of(&a[1]), dims_of(&a[2]), dims_of(&a[4]), a[5].i, false};
    int nd = ct_ndim(in[0]);
    if (a[3].b && nd == 4) return one(out, ct_conv_transpose2d_with(in[0], in[1], in[2], o));
    if (!a[3].b && nd == 4) return one(out, ct_conv2d_with(in[0], in[1], in[2], o));
    if (!a[3].b && nd == 3) return one(out, ct_conv1d_with(in[0], in[1], in[2], o));
    ct_error("convolution: a %s convolution of a %d-d input cannot run from a graph",
             a[3].b ? "transposed" : "plain", nd);
    return -1;
}
static int run_dropout(ARGS) {
    UNUSED;
    return one(out, ct_dropout_with(in[0], a[0].f, a[1].b, (ct_dropout_options){0}));
}
/* max_pool2d(self; kernel_size, stride, padding, dilation, ceil_mode) -> (out, indices) */
static int run_max_pool2d(ARGS) {
    UNUSED;
    ct_max_pool2d_options o = {dims_of(&a[0]), dims_of(&a[1]), dims_of(&a[2]), dims_of(&a[3]), a[4].b, false};
    return one(out, ct_max_pool2d_with(in[0], o));
}
/* avg_pool2d(self; kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override) */
static int run_avg_pool2d(ARGS) {
    UNUSED;
    ct_avg_pool2d_options o = {dims_of(&a[0]), dims_of(&a[1]), dims_of(&a[2]), a[3].b, a[4].b,
                               a[5].none ? 0 : a[5].i};
    return one(out, ct_avg_pool2d_with(in[0], o));
}
static int run_adaptive_avg_pool2d(ARGS) { UNUSED; return one(out, ct_adaptive_avg_pool2d(in[0], dims_of(&a[0]))); }
static int run_adaptive_max_pool2d(ARGS) { UNUSED; return one(out, ct_adaptive_max_pool2d(in[0], dims_of(&a[0]))); }
/* batch_norm(input, weight, bias, running_mean, running_var; training, momentum, eps) */
static int run_batch_norm(ARGS) {
    UNUSED;
    ct_batch_norm_options o = {in[1], in[2], a[0].b, CT_SOME(a[1].f), a[2].f};
    return one(out, ct_batch_norm_with(in[0], in[3], in[4], o));
}
/* layer_norm(input, weight, bias; normalized_shape, eps) */
static int run_layer_norm(ARGS) {
    UNUSED;
    return one(out, ct_layer_norm_with(in[0], shape_of(&a[0]), (ct_norm_options_f){in[1], in[2], a[1].f}));
}
/* group_norm(input, weight, bias; N, C, HxW, group, eps) */
static int run_group_norm(ARGS) {
    UNUSED;
    return one(out, ct_group_norm_with(in[0], a[3].i, (ct_norm_options_f){in[1], in[2], a[4].f}));
}

/* ---- recurrent cells ---- */
static int run_thnn_fused_lstm_cell(ARGS) {
    UNUSED;
    ct_lstm_cell_result r = ct_thnn_fused_lstm_cell(in[0], in[1], in[2], in[3], in[4]);
    out[0] = r.hy;
    out[1] = r.cy;
    out[2] = r.workspace;
    return r.hy ? 0 : -1;
}
static int run_thnn_fused_gru_cell(ARGS) {
    UNUSED;
    ct_gru_cell_result r = ct_thnn_fused_gru_cell(in[0], in[1], in[2], in[3], in[4]);
    out[0] = r.hy;
    out[1] = r.workspace;
    return r.hy ? 0 : -1;
}

/* lstm / gru (input, hx..., params...; has_biases, num_layers, dropout, train,
 * bidirectional, batch_first): hx are what is left after the parameters the
 * attributes count. */
static int run_rnn_stack(ARGS, bool lstm) {
    ct_rnn_stack_options o = {.has_biases = a[0].b, .num_layers = a[1].i, .dropout = a[2].f, .train = a[3].b,
                              .bidirectional = a[4].b, .batch_first = a[5].b};
    int64_t per = o.has_biases ? 4 : 2, n_params = (o.bidirectional ? 2 : 1) * o.num_layers * per;
    if (o.num_layers < 1 || o.num_layers > CT_RNN_MAX_LAYERS || n_params > n_in - 1) {
        ct_error("%s: %d inputs do not hold the parameters of %lld layers", lstm ? "lstm" : "gru", n_in,
                 (long long)o.num_layers);
        return -1;
    }
    int n_hx = n_in - 1 - (int)n_params;
    ct_rnn_stack_result r = lstm ? ct_lstm_stack_with(in[0], n_hx, in + 1, (int)n_params, in + 1 + n_hx, o)
                                 : ct_gru_stack_with(in[0], n_hx, in + 1, (int)n_params, in + 1 + n_hx, o);
    out[0] = r.output;
    out[1] = r.h_n;
    if (n_out > 2) out[2] = r.c_n;
    return r.output ? 0 : -1;
}
static int run_lstm(ARGS) { return run_rnn_stack(in, n_in, a, out, n_out, true); }
static int run_gru(ARGS) { return run_rnn_stack(in, n_in, a, out, n_out, false); }

/* The table: op name -> runner. */
static const struct {
    const char *op;
    graph_op_fn run;
} RUNNERS[] = {
#define ROW(name) {#name, run_##name},
    ROW(neg) ROW(exp) ROW(log) ROW(reciprocal) ROW(expm1) ROW(log1p) ROW(log2) ROW(sqrt)
    ROW(rsqrt) ROW(abs) ROW(sign) ROW(sin) ROW(cos) ROW(tanh) ROW(sigmoid) ROW(erf) ROW(relu)
    ROW(silu) ROW(isnan) ROW(isinf) ROW(isfinite) ROW(logical_not) ROW(clone) ROW(max) ROW(min)
    ROW(squeeze) ROW(mul) ROW(maximum) ROW(minimum) ROW(eq) ROW(ne) ROW(lt) ROW(le) ROW(gt)
    ROW(ge) ROW(logical_and) ROW(logical_or) ROW(logical_xor) ROW(pow) ROW(mm) ROW(bmm) ROW(mv)
    ROW(dot) ROW(add) ROW(sub) ROW(div) ROW(where) ROW(pow_scalar) ROW(rpow_scalar) ROW(clamp)
    ROW(leaky_relu) ROW(elu) ROW(gelu) ROW(softplus) ROW(hardtanh)
    ROW(sum) ROW(mean) ROW(amax) ROW(amin) ROW(logsumexp) ROW(argmax) ROW(argmin) ROW(var)
    ROW(std) ROW(max_dim) ROW(min_dim) ROW(softmax) ROW(log_softmax)
    ROW(view) ROW(expand) ROW(transpose) ROW(permute) ROW(slice) ROW(select) ROW(squeeze_dim)
    ROW(unsqueeze) ROW(cat) ROW(stack) ROW(split) ROW(unbind) ROW(index_select) ROW(gather)
    ROW(masked_fill) ROW(embedding) ROW(to_copy)
    ROW(addmm) ROW(baddbmm)
    ROW(convolution) ROW(dropout) ROW(max_pool2d) ROW(avg_pool2d) ROW(adaptive_avg_pool2d)
    ROW(adaptive_max_pool2d) ROW(batch_norm) ROW(layer_norm) ROW(group_norm)
    ROW(thnn_fused_lstm_cell) ROW(thnn_fused_gru_cell) ROW(lstm) ROW(gru)
#undef ROW
};

graph_op_fn graph_op_runner(const ct_schema *s) {
    for (size_t i = 0; i < sizeof RUNNERS / sizeof RUNNERS[0]; i++)
        if (!strcmp(RUNNERS[i].op, s->name)) return RUNNERS[i].run;
    return NULL;
}
