/* The record hook (ctorch/ops.h): every op call reaches the hooks on the thread's
 * stack with its inputs, outputs and typed attributes; the printer writes the demo
 * CNN's forward as a graph, one line per op. */
#include <stdlib.h>

#include "ct_test.h"

/* Collects the op names of the calls seen, one per line, "(backward)" marked. */
typedef struct {
    char text[8192];
    int calls;
} names;

static void collect(const ct_op_call *c, void *ctx) {
    names *n = ctx;
    size_t len = strlen(n->text);
    snprintf(n->text + len, sizeof n->text - len, "%s%s\n", c->schema->name,
             c->in_backward ? " (backward)" : "");
    n->calls++;
}

/* What the printer writes while body runs. */
#define PRINTED(buf, body)                                                         \
    do {                                                                           \
        size_t size_ = 0;                                                          \
        FILE *f_ = open_memstream(&buf, &size_);                                   \
        ct_trace_printer *p_ = ct_trace_print_begin(f_);                           \
        CHECK(p_);                                                                 \
        body;                                                                      \
        CHECK(ct_trace_print_end(p_) == 0);                                        \
        fclose(f_);                                                                \
    } while (0)


static const char DEMO_CNN_GRAPH[] =
    "%0: float32[2, 1, 28, 28] = input\n"
    "%1: float32[32, 1, 3, 3] = input\n"
    "%2: float32[32] = input\n"
    "%3: float32[2, 32, 28, 28] = convolution(%0, %1, %2, stride=[1, 1], padding=[1, 1], "
    "dilation=[1, 1], transposed=False, output_padding=[0, 0], groups=1)\n"
    "%4: float32[2, 32, 28, 28] = relu(%3)\n"
    "%5: float32[2, 32, 14, 14], %6: int64[2, 32, 14, 14] = max_pool2d(%4, kernel_size=[2, 2], "
    "stride=[2, 2], padding=[0, 0], dilation=[1, 1], ceil_mode=False)\n"
    "%7: float32[64, 32, 3, 3] = input\n"
    "%8: float32[64] = input\n"
    "%9: float32[2, 64, 14, 14] = convolution(%5, %7, %8, stride=[1, 1], padding=[1, 1], "
    "dilation=[1, 1], transposed=False, output_padding=[0, 0], groups=1)\n"
    "%10: float32[2, 64, 14, 14] = relu(%9)\n"
    "%11: float32[2, 64, 7, 7], %12: int64[2, 64, 7, 7] = max_pool2d(%10, kernel_size=[2, 2], "
    "stride=[2, 2], padding=[0, 0], dilation=[1, 1], ceil_mode=False)\n"
    "%13: float32[2, 3136] = view(%11, size=[2, 3136])\n"
    "%14: float32[128, 3136] = input\n"
    "%15: float32[3136, 128] = transpose(%14, dim0=0, dim1=1)\n"
    "%16: float32[128] = input\n"
    "%17: float32[2, 128] = addmm(%16, %13, %15, beta=1, alpha=1)\n"
    "%18: float32[2, 128] = relu(%17)\n"
    "%19: float32[10, 128] = input\n"
    "%20: float32[128, 10] = transpose(%19, dim0=0, dim1=1)\n"
    "%21: float32[10] = input\n"
    "%22: float32[2, 10] = addmm(%21, %18, %20, beta=1, alpha=1)\n";

TEST(demo_cnn_forward_prints_as_a_graph) {
    ct_module *m = ct_test_demo_cnn();
    ct_tensor *x = ct_zeros(CT_SHAPE(2, 1, 28, 28));
    char *text = NULL;
    PRINTED(text, CHECK(ct_forward(m, x)));
    CHECK_STR_EQ(text, DEMO_CNN_GRAPH);
    free(text);
    /* The same graph without grad mode (nothing recorded for autograd). */
    text = NULL;
    CT_NO_GRAD { PRINTED(text, CHECK(ct_forward(m, x))); }
    CHECK_STR_EQ(text, DEMO_CNN_GRAPH);
    free(text);
}

TEST(hooks_see_calls_with_their_attributes) {
    ct_tensor *a = ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3), .requires_grad = true);
    ct_tensor *b = ct_ones(CT_SHAPE(3));
    char *text = NULL;
    PRINTED(text, {
        ct_add_alpha(a, b, 2.5);
        ct_sum(a, .dims = CT_DIMS(0), .keepdim = true);
        ct_eq(a, b); /* not differentiable */
        ct_leaky_relu(a, .negative_slope = CT_SOME(0.2));
        ct_div_mode(a, b, CT_ROUND_FLOOR);
    });
    CHECK_STR_EQ(text,
                 "%0: float32[3] = input\n"
                 "%1: float32[3] = input\n"
                 "%2: float32[3] = add(%0, %1, alpha=2.5)\n"
                 "%3: float32[1] = sum(%0, dim=[0], keepdim=True, dtype=None)\n"
                 "%4: bool[3] = eq(%0, %1)\n"
                 "%5: float32[3] = leaky_relu(%0, negative_slope=0.2)\n"
                 "%6: float32[3] = div(%0, %1, rounding_mode='floor')\n");
    free(text);
}

TEST(backward_ops_are_marked) {
    ct_tensor *x = ct_tensor_f32(((float[]){-1, 2}), CT_SHAPE(2), .requires_grad = true);
    ct_tensor *y = ct_sum(ct_relu(x));
    names seen = {0};
    CHECK(ct_trace_push(collect, &seen) == 0);
    CHECK(ct_backward(y) == 0);
    CHECK(ct_trace_pop() == 0);
    /* sum's backward expands the gradient; relu's is threshold_backward */
    CHECK(strstr(seen.text, "expand (backward)\n"));
    CHECK(strstr(seen.text, "threshold_backward (backward)\n"));
    CHECK(!strstr(seen.text, "relu\n"));
}

TEST(hooks_stack_and_their_own_ops_are_not_reported) {
    names outer = {0}, inner = {0};
    ct_tensor *x = ct_ones(CT_SHAPE(2));
    CHECK(ct_trace_push(collect, &outer) == 0);
    ct_exp(x);
    CHECK(ct_trace_push(collect, &inner) == 0);
    ct_neg(x); /* both see it */
    CHECK(ct_trace_pop() == 0);
    ct_sqrt(x);
    CHECK(ct_trace_pop() == 0);
    ct_tanh(x); /* no hook: not seen */
    CHECK_STR_EQ(outer.text, "exp\nneg\nsqrt\n");
    CHECK_STR_EQ(inner.text, "neg\n");
    CHECK_ERROR(ct_trace_pop(), "ct_trace_pop: this thread has no hook to pop");
    CHECK_ERROR(ct_trace_push(NULL, NULL), "ct_trace_push: fn is NULL");
    for (int i = 0; i < 8; i++) CHECK(ct_trace_push(collect, &outer) == 0);
    CHECK_ERROR(ct_trace_push(collect, &outer), "already has 8 hooks");
    for (int i = 0; i < 8; i++) CHECK(ct_trace_pop() == 0);
}

TEST(printer_must_be_innermost_to_end) {
    FILE *f = fopen("/dev/null", "w");
    ct_trace_printer *p = ct_trace_print_begin(f);
    names other = {0};
    CHECK(ct_trace_push(collect, &other) == 0);
    CHECK_ERROR(ct_trace_print_end(p), "not the innermost hook");
    CHECK(ct_trace_pop() == 0);
    CHECK(ct_trace_print_end(p) == 0);
    CHECK_ERROR(ct_trace_print_begin(NULL), "ct_trace_print_begin: f is NULL");
    fclose(f);
}

/* The op a call reported last, with its attribute count checked against its schema
 * (ct_trace_emit already refuses a mismatch). */
typedef struct {
    const char *last;
    int calls;
} last_call;

static void remember(const ct_op_call *c, void *ctx) {
    last_call *l = ctx;
    l->last = c->schema->name;
    l->calls++;
}

#define REPORTS(op, expr)                                                          \
    do {                                                                           \
        seen.last = NULL;                                                          \
        CHECK(expr);                                                               \
        if (!seen.last || strcmp(seen.last, op))                                   \
            ct_test_fail(__FILE__, __LINE__, "%s reported %s, expected %s", #expr, \
                         seen.last ? seen.last : "nothing", op);                   \
    } while (0)

TEST(ops_report_themselves_with_their_schemas) {
    ct_tensor *x = ct_tensor_f32(((float[]){0.5, -1, 2, 0.25, 3, -2}), CT_SHAPE(2, 3),
                                 .requires_grad = true);
    ct_tensor *y = ct_ones(CT_SHAPE(2, 3));
    ct_tensor *idx = ct_tensor_i64(((int64_t[]){1, 0}), CT_SHAPE(2));
    ct_tensor *idx2 = ct_tensor_i64(((int64_t[]){0, 2, 1, 0, 1, 2}), CT_SHAPE(2, 3));
    ct_tensor *mask = ct_gt_scalar(y, 0);
    ct_tensor *img = ct_ones(CT_SHAPE(1, 2, 4, 4));
    last_call seen = {0};
    CHECK(ct_trace_push(remember, &seen) == 0);
    REPORTS("sub", ct_sub(x, y));
    REPORTS("mul", ct_mul_scalar(x, 2));
    REPORTS("div", ct_div(x, y));
    REPORTS("pow", ct_pow(y, x));
    REPORTS("pow_scalar", ct_pow_scalar(x, 2));
    REPORTS("rpow_scalar", ct_rpow_scalar(x, 2));
    REPORTS("maximum", ct_maximum(x, y));
    REPORTS("where", ct_where(mask, x, y));
    REPORTS("lerp", ct_lerp(x, y, 0.5));
    REPORTS("lerp_tensor", ct_lerp_tensor(x, y, y));
    REPORTS("clamp", ct_clamp(x, .min = CT_SOME(0)));
    REPORTS("clamp_tensor", ct_clamp_tensor(x, y, NULL));
    REPORTS("lt", ct_lt(x, y));
    REPORTS("logical_not", ct_logical_not(mask));
    REPORTS("isnan", ct_isnan(x));
    REPORTS("exp", ct_exp(x));
    REPORTS("gelu", ct_gelu(x, .approximate = CT_GELU_TANH));
    REPORTS("elu", ct_elu(x, .alpha = CT_SOME(1)));
    REPORTS("softplus", ct_softplus(x, .beta = CT_SOME(1), .threshold = CT_SOME(20)));
    REPORTS("hardtanh", ct_hardtanh(x, .min_val = CT_SOME(-1), .max_val = CT_SOME(1)));
    REPORTS("nan_to_num", ct_nan_to_num(x));
    REPORTS("mean", ct_mean(x));
    REPORTS("prod", ct_prod(x, .dims = CT_DIMS(1)));
    REPORTS("amax", ct_amax(x, .dims = CT_DIMS(0)));
    REPORTS("max", ct_max(x));
    REPORTS("max_dim", ct_max_dim(x, 1, false).values);
    REPORTS("argmax", ct_argmax(x));
    REPORTS("all", ct_all(mask));
    REPORTS("var", ct_var(x, .dims = CT_DIMS(1)));
    REPORTS("norm", ct_norm(x));
    REPORTS("logsumexp", ct_logsumexp(x, .dims = CT_DIMS(1)));
    REPORTS("cumsum", ct_cumsum(x, 1));
    REPORTS("softmax", ct_softmax(x, 1));
    REPORTS("log_softmax", ct_log_softmax(x, 1));
    REPORTS("view", ct_view(x, CT_SHAPE(3, 2)));
    REPORTS("expand", ct_expand(ct_ones(CT_SHAPE(1, 3)), CT_SHAPE(2, 3)));
    REPORTS("permute", ct_permute(x, CT_DIMS(1, 0)));
    REPORTS("slice", ct_slice(x, 1, 0, 2, 1));
    REPORTS("select", ct_select(x, 0, 1));
    REPORTS("squeeze", ct_squeeze(x));
    REPORTS("unsqueeze", ct_unsqueeze(x, 0));
    REPORTS("as_strided", ct_as_strided(x, CT_SHAPE(3), CT_SHAPE(1), 0));
    REPORTS("mm", ct_mm(x, ct_t(y)));
    REPORTS("mv", ct_mv(x, ct_ones(CT_SHAPE(3))));
    REPORTS("cat", ct_cat(CT_TENSORS(x, y), 0));
    REPORTS("stack", ct_stack(CT_TENSORS(x, y), 0));
    ct_tensor *parts[3];
    seen.last = NULL;
    CHECK(ct_split(x, 1, 1, parts, 3) == 3 && seen.last && !strcmp(seen.last, "split"));
    CHECK(ct_unbind(x, 0, parts, 3) == 2 && !strcmp(seen.last, "unbind"));
    REPORTS("repeat", ct_repeat(x, CT_SHAPE(2, 1)));
    REPORTS("flip", ct_flip(x, CT_DIMS(0)));
    REPORTS("roll", ct_roll(x, CT_DIMS(1), CT_DIMS(1)));
    REPORTS("tril", ct_tril(x, 0));
    REPORTS("constant_pad_nd", ct_pad(x, CT_DIMS(1, 1)));
    REPORTS("reflection_pad", ct_pad(img, CT_DIMS(1, 1, 1, 1), .mode = CT_PAD_REFLECT));
    REPORTS("index_select", ct_index_select(x, 0, idx));
    REPORTS("gather", ct_gather(x, 1, idx2));
    REPORTS("scatter_add", ct_scatter_add(x, 1, idx2, y));
    REPORTS("masked_fill", ct_masked_fill(x, mask, 0));
    REPORTS("masked_select", ct_masked_select(x, mask));
    REPORTS("topk", ct_topk(x, 2, 1).values);
    REPORTS("sort", ct_sort(x, 1).values);
    REPORTS("clone", ct_clone(x));
    REPORTS("to_copy", ct_to(x, .dtype = CT_F64));
    REPORTS("mse_loss", ct_mse_loss(x, y));
    REPORTS("huber_loss", ct_huber_loss(x, y));
    REPORTS("binary_cross_entropy_with_logits", ct_binary_cross_entropy_with_logits(x, y));
    REPORTS("nll_loss", ct_nll_loss(ct_log_softmax(x, 1), idx));
    REPORTS("layer_norm", ct_layer_norm(x, CT_SHAPE(3)));
    REPORTS("avg_pool2d", ct_avg_pool2d(img, .kernel_size = CT_DIMS(2)));
    REPORTS("adaptive_avg_pool2d", ct_adaptive_avg_pool2d(img, CT_DIMS(1)));
    REPORTS("dropout", ct_dropout(x, 0.5, true));
    REPORTS("normal", ct_normal_(ct_zeros(CT_SHAPE(3)), 0, 1));
    REPORTS("fill", ct_fill_(ct_zeros(CT_SHAPE(3)), 2));
    REPORTS("copy", ct_copy_(ct_zeros(CT_SHAPE(2, 3)), x));
    REPORTS("index", ct_index(x, 1, (ct_tensor *[]){idx}));
    REPORTS("index_put", ct_index_put_(ct_zeros(CT_SHAPE(2, 3)), 1, (ct_tensor *[]){idx}, y));
    REPORTS("im2col", ct_im2col(img, .kernel_size = CT_DIMS(2)));
    REPORTS("upsample_bilinear2d", ct_interpolate(img, .size = CT_DIMS(8, 8),
                                                  .mode = CT_INTERP_BILINEAR));
    REPORTS("upsample_nearest2d", ct_interpolate(img, .scale_factor = {2}));
    REPORTS("thnn_fused_gru_cell", ct_thnn_fused_gru_cell(ct_ones(CT_SHAPE(2, 6)),
                                                          ct_ones(CT_SHAPE(2, 6)),
                                                          ct_ones(CT_SHAPE(2, 2)), NULL, NULL).hy);
    REPORTS("nonzero", ct_nonzero(mask));
    REPORTS("one_hot", ct_one_hot(idx, 3));
    REPORTS("arange", ct_arange(5));
    REPORTS("linspace", ct_linspace(0, 1, 5));
    REPORTS("randint", ct_randint(0, 3, CT_SHAPE(4)));
    REPORTS("randperm", ct_randperm(4));
    REPORTS("multinomial", ct_multinomial(ct_ones(CT_SHAPE(3)), 2));
    CHECK(ct_trace_pop() == 0);
}

/* Backward formulas that run fused ops report them, marked as backward. */
TEST(fused_backward_ops_report_themselves) {
    ct_tensor *x = ct_tensor_f32(((float[]){0.2f, 0.7f, 0.4f, 0.9f}), CT_SHAPE(1, 1, 2, 2),
                                 .requires_grad = true);
    ct_tensor *y = ct_ones(CT_SHAPE(1, 1, 2, 2));
    names seen = {0};
    CHECK(ct_trace_push(collect, &seen) == 0);
    CHECK(ct_backward(ct_mse_loss(x, y)) == 0);
    CHECK(ct_backward(ct_binary_cross_entropy(x, ct_zeros(CT_SHAPE(1, 1, 2, 2)))) == 0);
    CHECK(ct_backward(ct_sum(ct_interpolate(x, .scale_factor = {2}))) == 0);
    CHECK(ct_trace_pop() == 0);
    CHECK(strstr(seen.text, "mse_loss_backward (backward)\n"));
    CHECK(strstr(seen.text, "binary_cross_entropy_backward (backward)\n"));
    CHECK(strstr(seen.text, "upsample_nearest2d_backward (backward)\n"));
}

/* Ops that report their attribute struct show the attributes they showed when they
 * listed the values one by one. */
TEST(trace_shows_the_attributes_from_the_structs) {
    ct_tensor *x = ct_tensor_f32(((float[]){-1, 2, 3, -4, 5, 6}), CT_SHAPE(2, 3),
                                 .requires_grad = true);
    ct_tensor *img = ct_ones(CT_SHAPE(1, 1, 4, 4));
    char *text = NULL;
    PRINTED(text, {
        ct_sub_alpha(x, x, 2);
        ct_gelu(x, .approximate = CT_GELU_TANH);
        ct_softplus(x, .beta = CT_SOME(2), .threshold = CT_SOME(5));
        ct_hardtanh(x);
        ct_clamp(x, .min = CT_SOME(0));
        ct_pow_scalar(x, 3);
        ct_lerp(x, x, 0.25);
        ct_transpose(x, -1, 0);
        ct_permute(x, CT_DIMS(1, 0));
        ct_flip(x, CT_DIMS(-1));
        ct_repeat(x, CT_SHAPE(2, 1));
        ct_tril(x, 1);
        ct_roll(x, CT_DIMS(1), CT_DIMS(1));
        ct_avg_pool2d(img, .kernel_size = CT_DIMS(2));
        ct_max_pool2d(img, .kernel_size = CT_DIMS(2), .stride = CT_DIMS(1));
        ct_im2col(img, .kernel_size = CT_DIMS(2, 2));
    });
    CHECK_STR_EQ(text,
                 "%0: float32[2, 3] = input\n"
                 "%1: float32[2, 3] = sub(%0, %0, alpha=2)\n"
                 "%2: float32[2, 3] = gelu(%0, approximate='tanh')\n"
                 "%3: float32[2, 3] = softplus(%0, beta=2, threshold=5)\n"
                 "%4: float32[2, 3] = hardtanh(%0, min_val=-1, max_val=1)\n"
                 "%5: float32[2, 3] = clamp(%0, min=0, max=None)\n"
                 "%6: float32[2, 3] = pow_scalar(%0, exponent=3)\n"
                 "%7: float32[2, 3] = lerp(%0, %0, weight=0.25)\n"
                 "%8: float32[3, 2] = transpose(%0, dim0=-1, dim1=0)\n"
                 "%9: float32[3, 2] = permute(%0, dims=[1, 0])\n"
                 "%10: float32[2, 3] = flip(%0, dims=[-1])\n"
                 "%11: float32[4, 3] = repeat(%0, repeats=[2, 1])\n"
                 "%12: float32[2, 3] = tril(%0, diagonal=1)\n"
                 "%13: float32[2, 3] = roll(%0, shifts=[1], dims=[1])\n"
                 "%14: float32[1, 1, 4, 4] = input\n"
                 "%15: float32[1, 1, 2, 2] = avg_pool2d(%14, kernel_size=[2, 2], stride=[2, 2], "
                 "padding=[0, 0], ceil_mode=False, count_include_pad=True, divisor_override=None)\n"
                 "%16: float32[1, 1, 3, 3], %17: int64[1, 1, 3, 3] = max_pool2d(%14, "
                 "kernel_size=[2, 2], stride=[1, 1], padding=[0, 0], dilation=[1, 1], "
                 "ceil_mode=False)\n"
                 "%18: float32[1, 4, 9] = im2col(%14, kernel_size=[2, 2], dilation=[1, 1], "
                 "padding=[0, 0], stride=[1, 1])\n");
    free(text);
}
