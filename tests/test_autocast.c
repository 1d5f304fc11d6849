/* Autocast (ctorch/amp.h) against PyTorch 1.13's CPU autocast (tests/fixtures/autocast.fx,
 * written by gen_autocast.py): the op table's AUTOCAST column against the policy
 * PyTorch shows, each listed op's output dtype and values with float32, bfloat16 and
 * mixed inputs, the demo CNN's forward, loss and gradients; nesting, .enabled = false,
 * the weight-cast cache (counted through the record hook), float16 regions. */
#include <math.h>
#include <string.h>

#include "ct_test.h"
#include "fixtures.h"
#include "ops/autocast.h"

/* bfloat16 results: PyTorch and ctorch both round each GEMM / conv result from a float32
 * accumulator, but may sum in another order, so outputs may differ by a couple of
 * bfloat16 ulps (2^-8 relative each). */
#define BF16_RTOL 1.6e-2
#define BF16_ATOL 1e-2

typedef ct_tensor *(*case_fn)(ct_tensor **in);

static ct_tensor *idx3(int64_t a, int64_t b, int64_t c) {
    return ct_tensor_i64(((int64_t[]){a, b, c}), CT_SHAPE(3));
}

static ct_tensor *f_mm(ct_tensor **x) { return ct_mm(x[0], x[1]); }
static ct_tensor *f_bmm(ct_tensor **x) { return ct_bmm(x[0], x[1]); }
static ct_tensor *f_addmm(ct_tensor **x) {
    return ct_addmm(x[0], x[1], x[2], .beta = CT_SOME(0.5), .alpha = CT_SOME(2.0));
}
static ct_tensor *f_baddbmm(ct_tensor **x) {
    return ct_baddbmm(x[0], x[1], x[2], .beta = CT_SOME(0.5), .alpha = CT_SOME(2.0));
}
static ct_tensor *f_mv(ct_tensor **x) { return ct_mv(x[0], x[1]); }
static ct_tensor *f_dot(ct_tensor **x) { return ct_dot(x[0], x[1]); }
static ct_tensor *f_matmul(ct_tensor **x) { return ct_matmul(x[0], x[1]); }
static ct_tensor *f_linear(ct_tensor **x) { return ct_linear(x[0], x[1], x[2]); }
static ct_tensor *f_conv(ct_tensor **x) {
    return ct_conv2d(x[0], x[1], x[2], .padding = CT_DIMS(1));
}
static ct_tensor *f_conv1d(ct_tensor **x) { return ct_conv1d(x[0], x[1], NULL); }
static ct_tensor *f_convt(ct_tensor **x) { return ct_conv_transpose2d(x[0], x[1], NULL); }
static ct_tensor *f_prod(ct_tensor **x) { return ct_prod(x[0], .dims = CT_DIMS(1)); }
static ct_tensor *f_reflect(ct_tensor **x) {
    return ct_pad(x[0], CT_DIMS(1, 2), .mode = CT_PAD_REFLECT);
}
static ct_tensor *f_replicate(ct_tensor **x) {
    return ct_pad(x[0], CT_DIMS(1, 2), .mode = CT_PAD_REPLICATE);
}
static ct_tensor *f_nll(ct_tensor **x) { return ct_nll_loss(x[0], idx3(0, 3, 1)); }
static ct_tensor *f_ce(ct_tensor **x) { return ct_cross_entropy(x[0], idx3(0, 3, 1)); }
static ct_tensor *f_bce(ct_tensor **x) { return ct_binary_cross_entropy(x[0], x[1]); }
static ct_tensor *f_bcel(ct_tensor **x) { return ct_binary_cross_entropy_with_logits(x[0], x[1]); }
static ct_tensor *f_mse(ct_tensor **x) { return ct_mse_loss(x[0], x[1]); }
static ct_tensor *f_sl1(ct_tensor **x) { return ct_smooth_l1_loss(x[0], x[1]); }
static ct_tensor *f_huber(ct_tensor **x) { return ct_huber_loss(x[0], x[1]); }
static ct_tensor *f_cat(ct_tensor **x) { return ct_cat(2, x, 1); }
static ct_tensor *f_stack(ct_tensor **x) { return ct_stack(2, x, 0); }
static ct_tensor *f_add(ct_tensor **x) { return ct_add(x[0], ct_mul_scalar(x[1], 2)); }
static ct_tensor *f_mul(ct_tensor **x) { return ct_mul(x[0], x[1]); }
static ct_tensor *f_pow(ct_tensor **x) { return ct_pow(x[0], x[1]); }
static ct_tensor *f_exp(ct_tensor **x) { return ct_exp(x[0]); }
static ct_tensor *f_log(ct_tensor **x) { return ct_log(x[0]); }
static ct_tensor *f_tanh(ct_tensor **x) { return ct_tanh(x[0]); }
static ct_tensor *f_relu(ct_tensor **x) { return ct_relu(x[0]); }
static ct_tensor *f_sum(ct_tensor **x) { return ct_sum(x[0], .dims = CT_DIMS(1)); }
static ct_tensor *f_mean(ct_tensor **x) { return ct_mean(x[0], .dims = CT_DIMS(1)); }
static ct_tensor *f_cumsum(ct_tensor **x) { return ct_cumsum(x[0], 1); }
static ct_tensor *f_softmax(ct_tensor **x) { return ct_softmax(x[0], 1); }
static ct_tensor *f_log_softmax(ct_tensor **x) { return ct_log_softmax(x[0], 1); }
static ct_tensor *f_layer_norm(ct_tensor **x) {
    return ct_layer_norm(x[0], CT_SHAPE(4), .weight = x[1], .bias = x[2]);
}
static ct_tensor *f_lstm_cell(ct_tensor **x) {
    return ct_thnn_fused_lstm_cell(ct_linear(x[0], x[3], NULL), ct_linear(x[1], x[4], NULL), x[2],
                                   NULL, NULL).cy;
}
static ct_tensor *f_gru_cell(ct_tensor **x) {
    return ct_thnn_fused_gru_cell(ct_linear(x[0], x[2], NULL), ct_linear(x[1], x[3], NULL), x[1],
                                  NULL, NULL).hy;
}
static ct_tensor *f_max_pool2d(ct_tensor **x) {
    return ct_max_pool2d(x[0], .kernel_size = CT_DIMS(2));
}

/* The cases of autocast.fx ctorch runs: name, inputs, the C call. */
static const struct {
    const char *name;
    int n_in;
    case_fn fn;
} CASES[] = {
    {"mm", 2, f_mm},
    {"bmm", 2, f_bmm},
    {"addmm", 3, f_addmm},
    {"baddbmm", 3, f_baddbmm},
    {"mv", 2, f_mv},
    {"dot", 2, f_dot},
    {"matmul", 2, f_matmul},
    {"linear", 3, f_linear},
    {"convolution", 3, f_conv},
    {"conv1d", 2, f_conv1d},
    {"prod", 1, f_prod},
    {"reflection_pad", 1, f_reflect},
    {"replication_pad", 1, f_replicate},
    {"nll_loss", 1, f_nll},
    {"cross_entropy", 1, f_ce},
    {"binary_cross_entropy", 2, f_bce},
    {"binary_cross_entropy_with_logits", 2, f_bcel},
    {"mse_loss", 2, f_mse},
    {"smooth_l1_loss", 2, f_sl1},
    {"huber_loss", 2, f_huber},
    {"cat", 2, f_cat},
    {"stack", 2, f_stack},
    {"add", 2, f_add},
    {"mul", 2, f_mul},
    {"pow", 2, f_pow},
    {"exp", 1, f_exp},
    {"log", 1, f_log},
    {"tanh", 1, f_tanh},
    {"relu", 1, f_relu},
    {"sum", 1, f_sum},
    {"mean", 1, f_mean},
    {"cumsum", 1, f_cumsum},
    {"softmax", 1, f_softmax},
    {"log_softmax", 1, f_log_softmax},
    {"layer_norm", 3, f_layer_norm},
    {"max_pool2d", 1, f_max_pool2d},
    {"lstm_cell", 5, f_lstm_cell},
    {"gru_cell", 4, f_gru_cell},
};

static ct_dtype dtype_of_code(int64_t c) { return c == 1 ? CT_BF16 : CT_F32; }

/* The AUTOCAST column, as the fixture codes PyTorch's policy (promote is not visible
 * in PyTorch's output dtypes: cat and stack promote without autocast too). */
static int column_code(ct_op_id op) {
    switch (ct_autocast_policy_of[op]) {
    case CT_AUTOCAST_LOWER: return 1;
    case CT_AUTOCAST_FP32: return 2;
    default: return 0;
    }
}

TEST(op_table_column_is_pytorchs_cpu_policy) {
    fx_file *f = fx_load("autocast");
    int checked = 0;
    for (int op = 0; op < ct_num_ops(); op++) {
        char key[96];
        snprintf(key, sizeof key, "%s.policy", ct_op_schema(op)->name);
        if (!fx_has(f, key)) continue;
        int want = (int)ct_item(fx_get(f, key)), got = column_code((ct_op_id)op);
        if (got != want)
            ct_test_fail(__FILE__, __LINE__, "%s: the AUTOCAST column says %d, PyTorch %d", key,
                         got, want);
        checked++;
    }
    CHECK(checked >= 90); /* every op the probe runs that is a row of the table */
    /* every LOWER and FP32 row is probed (and its CT_AUTOCAST_OP exercised below) */
    for (int op = 0; op < ct_num_ops(); op++) {
        if (!column_code((ct_op_id)op)) continue;
        char key[96];
        snprintf(key, sizeof key, "%s.f32.dtype", ct_op_schema(op)->name);
        if (!fx_has(f, key)) ct_test_fail(__FILE__, __LINE__, "no autocast case for %s", key);
    }
    fx_free(f);
}

/* Runs one case's variant v (f32, bf16, mix) under bf16 autocast; checks the dtype and
 * the values PyTorch gave. */
static void check_variant(fx_file *f, int c, const char *v) {
    const char *name = CASES[c].name;
    char key[128];
    snprintf(key, sizeof key, "%s.%s.dtype", name, v);
    if (!fx_has(f, key)) return; /* PyTorch refuses this mix */
    ct_dtype want = dtype_of_code((int64_t)ct_item(fx_get(f, key)));
    ct_tensor *in[5];
    for (int i = 0; i < CASES[c].n_in; i++) {
        snprintf(key, sizeof key, "%s.in%d", name, i);
        bool low = !strcmp(v, "bf16") || (!strcmp(v, "mix") && i > 0);
        in[i] = fx_get_as(f, key, low ? CT_BF16 : CT_F32, false);
    }
    ct_tensor *out = NULL;
    CT_AUTOCAST(.dtype = CT_BF16) { out = CASES[c].fn(in); }
    snprintf(key, sizeof key, "%s.%s.out", name, v);
    char what[128];
    snprintf(what, sizeof what, "%s (%s inputs)", name, v);
    if (!out) {
        ct_test_fail(__FILE__, __LINE__, "%s failed: %s", what, ct_last_error());
        return;
    }
    if (ct_dtype_of(out) != want)
        ct_test_fail(__FILE__, __LINE__, "%s: dtype %s, PyTorch's %s", what,
                     ct_dtype_name(ct_dtype_of(out)), ct_dtype_name(want));
    /* values: float32 results to float32 rounding, bfloat16 ones (or float32 results
     * computed from bfloat16 products) within BF16 tolerances */
    ct_tensor *want_v = fx_get(f, key);
    CHECK_TENSOR_CLOSE(what, ct_to(out, .dtype = CT_F64), want_v, .rtol = BF16_RTOL,
                       .atol = BF16_ATOL, .atol_of_max = true);
}

TEST(ops_match_pytorch_under_bf16_autocast) {
    fx_file *f = fx_load("autocast");
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) CT_SCOPE {
            check_variant(f, (int)c, "f32");
            check_variant(f, (int)c, "bf16");
            check_variant(f, (int)c, "mix");
        }
    fx_free(f);
}

/* Where ctorch departs from PyTorch 1.13's CPU policy: conv_transpose runs in the
 * autocast dtype (the lower-precision list, and PyTorch's CUDA policy), where
 * PyTorch 1.13's CPU autocast runs it in float32. */
TEST(conv_transpose_runs_in_the_autocast_dtype) {
    fx_file *f = fx_load("autocast");
    CHECK_INT_EQ(ct_item(fx_get(f, "conv_transpose2d.f32.dtype")), 0); /* PyTorch: float32 */
    ct_tensor *in[2] = {fx_get_as(f, "conv_transpose2d.in0", CT_F32, false),
                        fx_get_as(f, "conv_transpose2d.in1", CT_F32, false)};
    ct_tensor *out = NULL, *manual = ct_conv_transpose2d(ct_to(in[0], .dtype = CT_BF16),
                                                         ct_to(in[1], .dtype = CT_BF16), NULL);
    CT_AUTOCAST() { out = f_convt(in); }
    CHECK(ct_dtype_of(out) == CT_BF16);
    CHECK_TENSOR_CLOSE("conv_transpose2d", out, manual);
    /* its values still agree with PyTorch's float32 ones to bfloat16's precision */
    CHECK_TENSOR_CLOSE("conv_transpose2d vs PyTorch", ct_to(out, .dtype = CT_F64),
                       fx_get(f, "conv_transpose2d.f32.out"), .rtol = BF16_RTOL,
                       .atol = BF16_ATOL, .atol_of_max = true);
    fx_free(f);
}

/* The fixture's deterministic values (gen_autocast.py's det_values). */
static void det_values(float *v, int64_t n, int64_t seed, double scale) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t h = ((uint64_t)(i + seed) * 2654435761u) % 4294967296u;
        v[i] = (float)(2.0 * scale * ((double)h / 4294967296.0 - 0.5));
    }
}

static ct_tensor *det_tensor(ct_shape s, int64_t seed, double scale) {
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= s.d[i];
    float *v = malloc(sizeof(float) * (size_t)n);
    det_values(v, n, seed, scale);
    ct_tensor *t = ct_tensor_from(v, CT_F32, s);
    free(v);
    return t;
}

TEST(demo_cnn_forward_loss_and_grads_match_pytorch) {
    fx_file *f = fx_load("autocast");
    ct_module *m = ct_test_demo_cnn();
    ct_tensor *p[8];
    CHECK_INT_EQ(ct_parameters(m, p, 8), 8);
    CT_NO_GRAD {
        int64_t fan_in = 1;
        for (int k = 0; k < 8; k++) {
            if (ct_ndim(p[k]) > 1) fan_in = ct_numel(p[k]) / ct_size(p[k], 0);
            double scale = pow((double)fan_in, -0.5);
            ct_copy_(p[k], det_tensor(ct_shape_of(p[k]), 1000 * (k + 1), scale));
        }
    }
    ct_tensor *x = det_tensor(CT_SHAPE(4, 1, 28, 28), 7, 2.0), *logits = NULL, *loss = NULL;
    ct_tensor *y = ct_to(fx_get(f, "cnn.y"), .dtype = CT_I64);
    CT_AUTOCAST(.device = CT_CPU, .dtype = CT_BF16) {
        logits = ct_forward(m, x);
        loss = ct_cross_entropy(logits, y);
    }
    CHECK(ct_dtype_of(logits) == CT_BF16 && ct_item(fx_get(f, "cnn.logits.dtype")) == 1);
    CHECK(ct_dtype_of(loss) == CT_F32 && ct_item(fx_get(f, "cnn.loss.dtype")) == 0);
    CHECK_TENSOR_CLOSE("logits", ct_to(logits, .dtype = CT_F64), fx_get(f, "cnn.logits"),
                       .rtol = BF16_RTOL, .atol = BF16_ATOL, .atol_of_max = true);
    CHECK_CLOSE(ct_item(loss), ct_item(fx_get(f, "cnn.loss")), 1e-2);
    CHECK(ct_backward(loss) == 0);
    for (int k = 0; k < 8; k++) {
        ct_tensor *g = ct_grad(p[k]);
        CHECK(g && ct_dtype_of(g) == CT_F32 && ct_dtype_of(p[k]) == CT_F32);
        if (!g) continue;
        char key[64], what[64];
        snprintf(key, sizeof key, "cnn.p%d.grad_sample", k);
        snprintf(what, sizeof what, "gradient of parameter %d", k);
        ct_tensor *flat = ct_reshape(g, CT_SHAPE(-1));
        ct_tensor *sample = ct_slice(flat, 0, 0, ct_numel(flat), 97);
        /* gradients flow through bfloat16 products: a few bfloat16 ulps of the largest */
        CHECK_TENSOR_CLOSE(what, ct_to(sample, .dtype = CT_F64), fx_get(f, key), .rtol = 5e-2,
                           .atol = 3e-2, .atol_of_max = true);
        snprintf(key, sizeof key, "cnn.p%d.grad_sumsq", k);
        double want = ct_item(fx_get(f, key)), got = ct_item(ct_sum(ct_mul(flat, flat)));
        CHECK_CLOSE(got, want, 0.05 * want);
    }
    fx_free(f);
}

TEST(state_nests_and_disabled_regions_cast_nothing) {
    CHECK(!ct_is_autocast_enabled());
    CHECK(ct_get_autocast_dtype() == CT_BF16);
    ct_tensor *a = ct_ones(CT_SHAPE(2, 2)), *b = ct_ones(CT_SHAPE(2, 2));
    CHECK(ct_dtype_of(ct_mm(a, b)) == CT_F32);
    CT_AUTOCAST(.dtype = CT_BF16) {
        CHECK(ct_is_autocast_enabled());
        CHECK(ct_dtype_of(ct_mm(a, b)) == CT_BF16);
        CT_AUTOCAST(.enabled = false) {
            CHECK(!ct_is_autocast_enabled());
            CHECK(ct_dtype_of(ct_mm(a, b)) == CT_F32);
            CT_AUTOCAST(.dtype = CT_F16) {
                CHECK(ct_get_autocast_dtype() == CT_F16);
                CHECK(ct_dtype_of(ct_mm(a, b)) == CT_F16);
            }
            CHECK(!ct_is_autocast_enabled());
        }
        CHECK(ct_is_autocast_enabled());
        CHECK(ct_get_autocast_dtype() == CT_BF16);
        for (int i = 0; i < 3; i++) {
            if (i == 1) break; /* leaving by break restores too */
        }
    }
    CHECK(!ct_is_autocast_enabled());
    CHECK(ct_dtype_of(ct_mm(a, b)) == CT_F32);
    /* leaving by break */
    CT_AUTOCAST() { break; }
    CHECK(!ct_is_autocast_enabled());
    /* float64 and integer inputs are never cast */
    CT_AUTOCAST() {
        CHECK(ct_dtype_of(ct_mm(ct_to(a, .dtype = CT_F64), ct_to(b, .dtype = CT_F64))) == CT_F64);
        ct_tensor *h = ct_ones(CT_SHAPE(2, 3), .dtype = CT_BF16);
        CHECK(ct_dtype_of(ct_nll_loss(h, ct_zeros(CT_SHAPE(2), .dtype = CT_I64))) == CT_F32);
    }
}

TEST(an_unsupported_dtype_disables_autocast_with_an_error) {
    ct_clear_error();
    CT_AUTOCAST(.dtype = CT_F64) {
        CHECK(ct_last_error() && strstr(ct_last_error(), "target dtype is not supported"));
        CHECK(!ct_is_autocast_enabled());
    }
    ct_clear_error();
}

static void count_casts(const ct_op_call *call, void *ctx) {
    if (!strcmp(call->schema->name, "to_copy")) ++*(int *)ctx;
}

TEST(weight_casts_are_cached_for_the_region) {
    ct_tensor *w = ct_randn(CT_SHAPE(4, 3), .requires_grad = true);
    ct_tensor *x = ct_randn(CT_SHAPE(2, 3));
    int casts = 0;
    CHECK(ct_trace_push(count_casts, &casts) == 0);
    ct_tensor *y1 = NULL, *y2 = NULL;
    CT_AUTOCAST() {
        y1 = ct_linear(x, w, NULL); /* w and x cast */
        y2 = ct_linear(ct_mul_scalar(x, 2), w, NULL); /* the new x alone */
        CHECK_INT_EQ(casts, 3);
        CT_AUTOCAST() { ct_linear(x, w, NULL); } /* nested: the cache lives on; x again */
        CHECK_INT_EQ(casts, 4);
    }
    CT_AUTOCAST() { ct_linear(x, w, NULL); } /* a new region: w cast anew */
    CHECK_INT_EQ(casts, 6);
    CT_AUTOCAST(.cache_enabled = false) {
        ct_linear(x, w, NULL);
        ct_linear(x, w, NULL);
    }
    CHECK_INT_EQ(casts, 10);
    CHECK(ct_trace_pop() == 0);
    /* gradients of both uses reach the float32 weight */
    CHECK(ct_backward(ct_sum(ct_add(ct_to(y1, .dtype = CT_F32), ct_to(y2, .dtype = CT_F32)))) == 0);
    ct_tensor *g = ct_grad(w);
    CHECK(g && ct_dtype_of(g) == CT_F32);
    ct_tensor *want = ct_sum(ct_mul_scalar(ct_to(ct_to(x, .dtype = CT_BF16), .dtype = CT_F32), 3),
                             .dims = CT_DIMS(0));
    CHECK_TENSOR_CLOSE("weight grad", ct_select(g, 0, 1), want, .rtol = 2e-2, .atol = 2e-2);
}

TEST(float16_regions_agree_with_manual_casts) {
    ct_tensor *x = ct_randn(CT_SHAPE(2, 3, 6, 6)), *w = ct_randn(CT_SHAPE(4, 3, 3, 3));
    ct_tensor *b = ct_randn(CT_SHAPE(4)), *t = ct_tensor_i64(((int64_t[]){1, 3}), CT_SHAPE(2));
    ct_tensor *h16 = ct_to(x, .dtype = CT_F16), *w16 = ct_to(w, .dtype = CT_F16),
              *b16 = ct_to(b, .dtype = CT_F16);
    ct_tensor *conv = NULL, *loss = NULL, *cat = NULL;
    CT_AUTOCAST(.dtype = CT_F16) {
        conv = ct_conv2d(x, w, b);
        loss = ct_cross_entropy(ct_sum(conv, .dims = CT_DIMS(2, 3)), t);
        cat = ct_cat(2, ((ct_tensor *[]){conv, ct_to(conv, .dtype = CT_F32)}), 0);
    }
    ct_tensor *conv_m = ct_conv2d(h16, w16, b16);
    CHECK(ct_dtype_of(conv) == CT_F16);
    CHECK_TENSOR_CLOSE("f16 conv", conv, conv_m);
    CHECK(ct_dtype_of(loss) == CT_F32);
    ct_tensor *pooled_m = ct_sum(conv_m, .dims = CT_DIMS(2, 3));
    ct_tensor *loss_m = ct_cross_entropy(ct_to(pooled_m, .dtype = CT_F32), t);
    CHECK_TENSOR_CLOSE("f16 loss", loss, loss_m);
    CHECK(ct_dtype_of(cat) == CT_F32); /* promote: the widest */
    /* float16 with bfloat16 promotes to float32 */
    CT_AUTOCAST(.dtype = CT_F16) {
        CHECK(ct_dtype_of(ct_stack(2, ((ct_tensor *[]){ct_to(b, .dtype = CT_BF16), b16}), 0)) ==
              CT_F32);
    }
}

/* The recurrent layers: bfloat16 GEMMs, the cells promoted to their float32 state; the
 * outputs float32 as PyTorch 1.13's nn.LSTM / nn.GRU give them on the CPU. */
TEST(recurrent_layers_train_under_autocast) {
    ct_module *ms[] = {ct_lstm(8, 16, .num_layers = 2), ct_gru(8, 16), ct_lstm_cell(8, 16)};
    for (int i = 0; i < 3; i++) {
        ct_tensor *x = ct_randn(i < 2 ? CT_SHAPE(5, 4, 8) : CT_SHAPE(4, 8)), *out[3] = {0};
        CT_AUTOCAST() { CHECK(ct_forward_multi(ms[i], 1, &x, out, 3) >= 1); }
        CHECK(out[0] && ct_dtype_of(out[0]) == CT_F32);
        CHECK(ct_backward(ct_sum(out[0])) == 0);
        ct_tensor *p[16];
        int n = ct_parameters(ms[i], p, 16);
        CHECK(n >= 4);
        for (int k = 0; k < n && k < 16; k++)
            CHECK(ct_grad(p[k]) && ct_dtype_of(ct_grad(p[k])) == CT_F32);
        /* the same gradients as float32 gives, to bfloat16's precision */
        ct_tensor *g[16];
        for (int k = 0; k < n && k < 16; k++) g[k] = ct_clone(ct_grad(p[k]));
        ct_module_zero_grad(ms[i]);
        CHECK(ct_forward_multi(ms[i], 1, &x, out, 3) >= 1);
        CHECK(ct_backward(ct_sum(out[0])) == 0);
        for (int k = 0; k < n && k < 16; k++)
            CHECK_TENSOR_CLOSE("gradient", g[k], ct_grad(p[k]), .rtol = 5e-2, .atol = 5e-2);
    }
    /* the fused cell keeps its workspace (the activated gates) in the gates' dtype */
    ct_tensor *gi = ct_randn(CT_SHAPE(3, 32)), *hg = ct_randn(CT_SHAPE(3, 32)), *cx = ct_randn(CT_SHAPE(3, 8));
    CT_AUTOCAST() {
        ct_lstm_cell_result r = ct_thnn_fused_lstm_cell(ct_to(gi, .dtype = CT_BF16),
                                                        ct_to(hg, .dtype = CT_BF16), cx, NULL, NULL);
        CHECK(r.hy && ct_dtype_of(r.hy) == CT_F32 && ct_dtype_of(r.cy) == CT_F32);
        CHECK(r.workspace && ct_dtype_of(r.workspace) == CT_BF16);
    }
}

TEST(backward_inside_a_region_is_not_cast) {
    ct_tensor *w = ct_randn(CT_SHAPE(3, 3), .requires_grad = true);
    ct_tensor *x = ct_randn(CT_SHAPE(2, 3));
    CT_AUTOCAST() {
        ct_tensor *l = ct_mse_loss(ct_linear(x, w, NULL), ct_zeros(CT_SHAPE(2, 3)));
        CHECK(ct_dtype_of(l) == CT_F32);
        CHECK(ct_backward(l) == 0);
    }
    CHECK(ct_grad(w) && ct_dtype_of(ct_grad(w)) == CT_F32);
}

/* A linear layer's forward in bf16, written out by hand: the same ops autocast runs. */
static ct_tensor *manual_linear(ct_tensor *x, ct_tensor *w) {
    return ct_linear(ct_to(x, .dtype = CT_BF16), ct_to(w, .dtype = CT_BF16), NULL);
}

/* Backward gets the casts of weights and of the batch by casting them again: the
 * activations hold no reduced-precision copy of either; the gradients are bitwise those
 * of the casts written out by hand, and second order reaches the weight. */
TEST(casts_of_weights_and_inputs_are_not_kept_for_backward) {
    ct_tensor *w = ct_randn(CT_SHAPE(512, 512), .requires_grad = true);
    ct_tensor *x = ct_randn(CT_SHAPE(2, 512));
    int64_t before = ct_memory_allocated(CT_CPU);
    ct_tensor *y = NULL;
    CT_AUTOCAST() { y = ct_linear(x, w, NULL); }
    /* the output alone (4 KB), not the weight's 512 KB bfloat16 copy */
    CHECK(ct_memory_allocated(CT_CPU) - before < 64 * 1024);
    ct_tensor *g = NULL, *gm = NULL, *ym = manual_linear(x, w);
    ct_tensor *seed[1] = {ct_ones_like(y)};
    CHECK(ct_autograd_grad(1, &y, 1, &w, &g, .grad_outputs = seed) == 0);
    CHECK(ct_autograd_grad(1, &ym, 1, &w, &gm, .grad_outputs = seed) == 0);
    CHECK_TENSOR_CLOSE("weight grad", g, gm, .rtol = 0, .atol = 0);
    /* a gradient penalty: the second-order path reaches the weight through the recast */
    ct_tensor *w2 = ct_randn(CT_SHAPE(512, 512), .requires_grad = true), *g2 = NULL, *g2m = NULL;
    ct_tensor *x2 = ct_randn(CT_SHAPE(2, 512), .requires_grad = true);
    CT_AUTOCAST() { y = ct_sum(ct_mul(ct_linear(x2, w2, NULL), ct_linear(ct_neg(x2), w2, NULL))); }
    /* by hand: one cast of each leaf, as autocast's cache makes */
    ct_tensor *x2b = ct_to(x2, .dtype = CT_BF16), *w2b = ct_to(w2, .dtype = CT_BF16);
    ym = ct_sum(ct_mul(ct_linear(x2b, w2b, NULL), ct_linear(ct_neg(x2b), w2b, NULL)));
    CHECK(ct_autograd_grad(1, &y, 1, &x2, &g2, .create_graph = true) == 0);
    CHECK(ct_autograd_grad(1, &ym, 1, &x2, &g2m, .create_graph = true) == 0);
    CHECK(ct_backward(ct_sum(ct_mul(g2, g2))) == 0);
    ct_tensor *gw = ct_clone(ct_grad(w2));
    CHECK(ct_set_grad(w2, NULL) == 0);
    CHECK(ct_backward(ct_sum(ct_mul(g2m, g2m))) == 0);
    CHECK(gw && ct_grad(w2));
    /* each recast is a node of its own: the penalty's terms meet in float32 at the
     * weight, where the one cached cast adds them in bfloat16 first */
    CHECK_TENSOR_CLOSE("penalty's weight grad", gw, ct_grad(w2), .rtol = 1e-2, .atol = 1e-2);
}
