/* The record hook (ctorch/ops.h) sees autograd's own work too: AccumulateGrad,
 * CopySlices, custom functions, checkpoints, convolution's backward kernels, the fused
 * optimizer steps, reduce_mask and cumprod_grad, each with its schema's attributes. */
#include <stdlib.h>

#include "ct_test.h"

/* Every call seen, one line each: "name(attr=value, ...) [n_in/n_out] (backward)". */
typedef struct {
    char text[32768];
    int calls;
} calls;

static void record(const ct_op_call *c, void *ctx) {
    calls *r = ctx;
    size_t len = strlen(r->text);
    len += (size_t)snprintf(r->text + len, sizeof r->text - len, "%s(", c->schema->name);
    for (int i = 0; i < c->schema->n_attrs && len < sizeof r->text; i++) {
        char v[128];
        ct_value_format(&c->attrs[i], v, sizeof v);
        len += (size_t)snprintf(r->text + len, sizeof r->text - len, "%s%s=%s", i ? ", " : "",
                                c->schema->attrs[i].name, v);
    }
    if (len < sizeof r->text)
        snprintf(r->text + len, sizeof r->text - len, ") [%d/%d]%s\n", c->n_inputs, c->n_outputs,
                 c->in_backward ? " (backward)" : "");
    r->calls++;
}

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

#define SEEN(r, what)                                                                  \
    do {                                                                               \
        if (!strstr((r).text, what))                                                   \
            ct_test_fail(__FILE__, __LINE__, "no call \"%s\" among:\n%s", what, (r).text); \
    } while (0)

/* A demo CNN training step under a hook: the forward's ops, the backward's (with
 * convolution_backward and one accumulate_grad per parameter), then the optimizer's
 * step per parameter, with the group's hyperparameters. */
static void train_step(calls *r, ct_optim *(*make)(ct_tensor **, int)) {
    ct_module *m = ct_test_demo_cnn();
    ct_tensor *params[16];
    int n = ct_parameters(m, params, 16);
    CHECK_INT_EQ(n, 8);
    ct_optim *opt = make(params, n);
    CHECK(opt);
    ct_tensor *x = ct_rand(CT_SHAPE(2, 1, 28, 28));
    ct_tensor *y = ct_tensor_i64(((int64_t[]){3, 7}), CT_SHAPE(2));
    CHECK(ct_trace_push(record, r) == 0);
    ct_zero_grad(opt);
    CHECK(ct_backward(ct_cross_entropy(ct_forward(m, x), y)) == 0);
    CHECK(ct_step(opt) == 0);
    CHECK(ct_trace_pop() == 0);
    CHECK_INT_EQ(count(r->text, "accumulate_grad() [2/0] (backward)\n"), n);
    /* both convolutions' gradients by kernels; the first one's input needs none */
    CHECK_INT_EQ(count(r->text, "convolution_backward("), 2);
    SEEN(*r, "convolution_backward(bias_sizes=[32], stride=[1, 1], padding=[1, 1], "
             "dilation=[1, 1], transposed=False, output_padding=[0, 0], groups=1, "
             "output_mask=[False, True, True]) [3/3] (backward)\n");
    SEEN(*r, "convolution_backward(bias_sizes=[64], stride=[1, 1], padding=[1, 1], "
             "dilation=[1, 1], transposed=False, output_padding=[0, 0], groups=1, "
             "output_mask=[True, True, True]) [3/3] (backward)\n");
    /* the step's own ops (state buffers, the gradient's cast) are not reported */
    CHECK(!strstr(r->text, "fill("));
}

static ct_optim *make_sgd(ct_tensor **p, int n) {
    return ct_sgd(p, n, .lr = CT_SOME(0.1), .momentum = 0.9, .weight_decay = 0.01);
}
static ct_optim *make_adam(ct_tensor **p, int n) { return ct_adamw(p, n, .lr = 0.002); }
static ct_optim *make_rmsprop(ct_tensor **p, int n) {
    return ct_rmsprop(p, n, .centered = true);
}
static ct_optim *make_adagrad(ct_tensor **p, int n) { return ct_adagrad(p, n, .lr_decay = 0.5); }

TEST(training_step_reports_accumulate_grad_and_the_optimizer_steps) {
    static const struct {
        ct_optim *(*make)(ct_tensor **, int);
        const char *step; /* the line of each of the 8 parameters' updates */
    } kinds[] = {
        {make_sgd, "sgd_step(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.01, "
                   "nesterov=False, maximize=False) [3/0]\n"},
        {make_adam, "adam_step(lr=0.002, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.01, "
                    "amsgrad=False, maximize=False, decoupled_weight_decay=True, step=1) [5/0]\n"},
        {make_rmsprop, "rmsprop_step(lr=0.01, alpha=0.99, eps=1e-08, weight_decay=0.0, "
                       "momentum=0.0, centered=True, maximize=False) [5/0]\n"},
        {make_adagrad, "adagrad_step(lr=0.01, lr_decay=0.5, weight_decay=0.0, eps=1e-10, "
                       "maximize=False, step=1) [3/0]\n"},
    };
    static calls r;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        memset(&r, 0, sizeof r);
        train_step(&r, kinds[k].make);
        CHECK_INT_EQ(count(r.text, kinds[k].step), 8);
    }
}

TEST(accumulate_grad_is_seen_without_its_inner_ops) {
    ct_tensor *w = ct_tensor_f32(((float[]){1, 2}), CT_SHAPE(2), .requires_grad = true);
    calls r = {0};
    CHECK(ct_trace_push(record, &r) == 0);
    CHECK(ct_backward(ct_sum(ct_mul_scalar(w, 3))) == 0);
    CHECK(ct_backward(ct_sum(ct_mul_scalar(w, 3))) == 0); /* .grad += in place */
    CHECK(ct_trace_pop() == 0);
    CHECK_INT_EQ(count(r.text, "accumulate_grad() [2/0] (backward)\n"), 2);
    CHECK(!strstr(r.text, "add(")); /* the in-place add is accumulate_grad's own */
    CHECK(!strstr(r.text, "clone("));
}

TEST(copy_slices_reports_itself_and_the_ops_formula) {
    ct_tensor *leaf = ct_ones(CT_SHAPE(2, 3), .requires_grad = true);
    ct_tensor *base = ct_mul_scalar(leaf, 1);
    ct_tensor *row = ct_select(base, 0, 1);
    CHECK(ct_mul_scalar_(row, 5));
    calls r = {0};
    CHECK(ct_trace_push(record, &r) == 0);
    CHECK(ct_backward(ct_sum(base)) == 0);
    CHECK(ct_trace_pop() == 0);
    SEEN(r, "copy_slices() [2/1] (backward)\n");
    CHECK_INT_EQ(count(r.text, "copy_slices("), 1);
    CHECK(!strstr(r.text, "as_strided(")); /* copy_slices' own */
}

static ct_tensor *twice_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)ctx;
    (void)n;
    return ct_mul_scalar(in[0], 2);
}
static int twice_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    (void)ctx;
    return (gi[0] = ct_mul_scalar(g, 2)) ? 0 : -1;
}
static const ct_function Twice = {"Twice", twice_forward, twice_backward, NULL};

static ct_tensor *block(ct_tensor *const *in, void *ctx) {
    (void)ctx;
    return ct_tanh(ct_add(in[0], in[1]));
}

TEST(custom_functions_and_checkpoints_report_themselves) {
    ct_tensor *x = ct_tensor_f32(((float[]){0.5, -1}), CT_SHAPE(2), .requires_grad = true);
    ct_tensor *b = ct_ones(CT_SHAPE(2));
    calls r = {0};
    CHECK(ct_trace_push(record, &r) == 0);
    ct_tensor *y = ct_function_apply(&Twice, 1, &x);
    ct_tensor *yb[] = {y, b};
    ct_tensor *z = ct_checkpoint(block, NULL, 2, yb);
    CHECK(y && z);
    CHECK_STR_EQ(r.text, "custom_function(name='Twice') [1/1]\n"
                         "checkpoint(preserve_rng_state=False) [2/1]\n");
    CHECK(ct_backward(ct_sum(z)) == 0);
    /* without grad mode too */
    CT_NO_GRAD { CHECK(ct_function_apply(&Twice, 1, &x)); }
    CHECK(ct_trace_pop() == 0);
    /* backward: the checkpoint's recomputation and the function's formula */
    SEEN(r, "tanh() [1/1] (backward)\n");
    SEEN(r, "mul() [2/1] (backward)\n"); /* Twice's formula */
    CHECK_INT_EQ(count(r.text, "custom_function(name='Twice') [1/1]\n"), 2);
}

TEST(reduce_mask_and_cumprod_grad_are_seen_in_backward) {
    ct_tensor *x = ct_tensor_f32(((float[]){0.5, -2, 3}), CT_SHAPE(3), .requires_grad = true);
    calls r = {0};
    CHECK(ct_trace_push(record, &r) == 0);
    CHECK(ct_backward(ct_norm(x, .p = CT_SOME(1))) == 0);
    CHECK(ct_backward(ct_sum(ct_cumprod(x, 0))) == 0);
    CHECK(ct_trace_pop() == 0);
    SEEN(r, "reduce_mask(mode='sign') [2/1] (backward)\n");
    SEEN(r, "cumprod_grad(dim=0) [3/1] (backward)\n");
}

TEST(convolution_backward_under_create_graph_is_its_ops) {
    ct_tensor *x = ct_rand(CT_SHAPE(1, 2, 5, 5), .requires_grad = true);
    ct_tensor *w = ct_rand(CT_SHAPE(3, 2, 3, 3), .requires_grad = true);
    calls r = {0};
    ct_tensor *y = ct_sum(ct_conv2d(x, w, NULL));
    CHECK(ct_trace_push(record, &r) == 0);
    ct_tensor *g[2];
    ct_tensor *xw[] = {x, w};
    CHECK(ct_autograd_grad(1, &y, 2, xw, g, .create_graph = true) == 0);
    CHECK(ct_trace_pop() == 0);
    CHECK(!strstr(r.text, "convolution_backward("));
    SEEN(r, "im2col(");
    CHECK(!strstr(r.text, "accumulate_grad(")); /* autograd.grad leaves .grad alone */
}
