/* Custom autograd functions (ctorch/function.h). */
#include "ct_test.h"

static int forward_grad_enabled = -1;

static ct_tensor *myexp_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)n;
    forward_grad_enabled = ct_is_grad_enabled();
    ct_tensor *y = ct_exp(in[0]);
    ct_ctx_save_for_backward(ctx, 1, &y);
    return y;
}
static int myexp_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    return (gi[0] = ct_mul(g, ct_ctx_saved(ctx, 0))) ? 0 : -1;
}
static const ct_function MyExp = {"MyExp", myexp_forward, myexp_backward, NULL};

TEST(custom_exp_values_gradients_and_name) {
    ct_tensor *x = ct_tensor_f64(((double[]){0, 1, -2}), CT_SHAPE(3), .requires_grad = true);
    ct_tensor *y = ct_function_apply(&MyExp, 1, &x);
    CHECK_INT_EQ(forward_grad_enabled, 0);
    CHECK(ct_is_grad_enabled());
    CHECK_VALUES(y, 1e-12, 1, exp(1), exp(-2));
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "MyExpBackward");
    CHECK_INT_EQ(ct_node_num_next(ct_grad_fn(y)), 1);
    CHECK_STR_EQ(ct_node_name(ct_node_next(ct_grad_fn(y), 0, NULL)), "AccumulateGrad");
    CHECK(ct_backward(ct_sum(ct_mul_scalar(y, 2)), .retain_graph = true) == 0);
    CHECK_VALUES(ct_grad(x), 1e-12, 2, 2 * exp(1), 2 * exp(-2));
    /* Saving the output did not turn it into an alias: it can be modified in place,
     * which the saved-tensor check then reports. */
    ct_set_grad(x, NULL);
    CHECK(ct_mul_scalar_(y, 1) != NULL);
    CHECK_ERROR(ct_backward(ct_sum(y)), "which is output 0 of MyExpBackward");
    y = ct_function_apply(&MyExp, 1, &x);
    CHECK(ct_backward(ct_sum(ct_mul_scalar(y, 2))) == 0);
    CHECK_VALUES(ct_grad(x), 1e-12, 2, 2 * exp(1), 2 * exp(-2));
}

TEST(custom_function_double_backward) {
    ct_tensor *x = ct_tensor_f64((double[]){0.5}, CT_SHAPE(1), .requires_grad = true);
    ct_tensor *y = ct_sum(ct_function_apply(&MyExp, 1, &x));
    ct_tensor *g = NULL, *gg = NULL;
    CHECK(ct_autograd_grad(1, &y, 1, &x, &g, .create_graph = true) == 0);
    CHECK(ct_autograd_grad(1, &g, 1, &x, &gg) == 0);
    CHECK_VALUES(gg, 1e-12, exp(0.5));
}

TEST(custom_function_not_recorded_without_grad) {
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *c = ct_ones(CT_SHAPE(2));
    CHECK(ct_grad_fn(ct_function_apply(&MyExp, 1, &c)) == NULL);
    CT_NO_GRAD {
        ct_tensor *y = ct_function_apply(&MyExp, 1, &x);
        CHECK(y && !ct_requires_grad(y));
    }
}

/* a * b with needs_input_grad recorded in forward and in backward. */
static bool seen_needs[2][2];
static ct_tensor *mul_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)n;
    for (int i = 0; i < 2; i++) seen_needs[0][i] = ct_ctx_needs_input_grad(ctx, i);
    ct_ctx_save_for_backward(ctx, 2, in);
    return ct_mul(in[0], in[1]);
}
static int mul_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    for (int i = 0; i < 2; i++) seen_needs[1][i] = ct_ctx_needs_input_grad(ctx, i);
    if (ct_ctx_needs_input_grad(ctx, 0)) gi[0] = ct_mul(g, ct_ctx_saved(ctx, 1));
    if (ct_ctx_needs_input_grad(ctx, 1)) gi[1] = ct_mul(g, ct_ctx_saved(ctx, 0));
    return 0;
}
static const ct_function MyMul = {"MyMul", mul_forward, mul_backward, NULL};

TEST(needs_input_grad_and_broadcast_gradients) {
    ct_tensor *a = ct_tensor_f32(((float[]){1, 2, 3, 4, 5, 6}), CT_SHAPE(2, 3), .requires_grad = true);
    ct_tensor *b = ct_tensor_f32(((float[]){10, 20, 30}), CT_SHAPE(3));
    ct_tensor *in[] = {a, b};
    ct_tensor *y = ct_function_apply(&MyMul, 2, in);
    CHECK(seen_needs[0][0] && !seen_needs[0][1]);
    CHECK(ct_backward(ct_sum(y)) == 0);
    CHECK(seen_needs[1][0] && !seen_needs[1][1]);
    CHECK_VALUES(ct_grad(a), 0, 10, 20, 30, 10, 20, 30);
    /* b requires grad now: its gradient [1, 3]-broadcast is summed by the engine. */
    ct_set_requires_grad(b, true);
    CHECK(ct_backward(ct_sum(ct_function_apply(&MyMul, 2, in))) == 0);
    CHECK_VALUES(ct_grad(b), 0, 5, 7, 9);
}

TEST(saved_tensors_are_version_checked_and_freed) {
    ct_tensor *a = ct_ones(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *h = ct_mul_scalar(a, 2);
    ct_tensor *in[] = {h, h};
    ct_tensor *y = ct_sum(ct_function_apply(&MyMul, 2, in));
    ct_mul_scalar_(h, 3);
    CHECK_ERROR(ct_backward(y), "modified by an inplace operation: [float32 [2]], which is an "
                                "input of MyMulBackward, is at version 1; expected version 0");

    ct_tensor *z = ct_sum(ct_function_apply(&MyExp, 1, &a));
    CHECK(ct_backward(z) == 0);
    CHECK_ERROR(ct_backward(z), "Trying to backward through the graph a second time");
}

/* Identity: returns its input; the output must be a new tensor carrying the node. */
static ct_tensor *id_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)ctx;
    (void)n;
    return in[0];
}
static int id_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    (void)ctx;
    gi[0] = g;
    return 0;
}
static const ct_function Identity = {"Identity", id_forward, id_backward, NULL};

TEST(returning_an_input_gives_an_alias) {
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *y = ct_function_apply(&Identity, 1, &x);
    CHECK(y != x && ct_is_leaf(x) && ct_data_ptr(y) == ct_data_ptr(x));
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "IdentityBackward");
    CHECK(ct_backward(ct_sum(ct_mul_scalar(y, 3))) == 0);
    CHECK_VALUES(ct_grad(x), 0, 3, 3);
}

/* Straight-through clamp to [lo, hi] (ctx data): gradients pass unchanged. */
typedef struct { double lo, hi; } bounds;
static ct_tensor *clamp_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)n;
    const bounds *b = ct_ctx_data(ctx);
    ct_tensor *y = ct_contiguous(ct_to(in[0], .dtype = CT_F64, .copy = true));
    double *p = ct_data_ptr(y);
    for (int64_t i = 0; i < ct_numel(y); i++) p[i] = p[i] < b->lo ? b->lo : p[i] > b->hi ? b->hi : p[i];
    return y;
}
static int clamp_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    (void)ctx;
    gi[0] = g;
    return 0;
}

TEST(straight_through_clamp_uses_ctx_data) {
    bounds b = {-1, 1};
    const ct_function Clamp = {"StraightThroughClamp", clamp_forward, clamp_backward, &b};
    ct_tensor *x = ct_tensor_f64(((double[]){-3, 0.5, 2}), CT_SHAPE(3), .requires_grad = true);
    ct_tensor *y = ct_function_apply(&Clamp, 1, &x);
    CHECK_VALUES(y, 0, -1, 0.5, 1);
    CHECK(ct_backward(ct_sum(y)) == 0);
    CHECK_VALUES(ct_grad(x), 0, 1, 1, 1);
}

static int freed;
static void count_free(void *p) {
    (void)p;
    freed++;
}
static ct_tensor *data_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)n;
    ct_ctx_set_data(ctx, &freed, count_free);
    return ct_mul_scalar(in[0], 2);
}
static int bad_shape_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    (void)ctx;
    gi[0] = ct_sum(g, .dims = CT_DIMS(0), .keepdim = true); /* [1, 3] for a [2, 3] input: fine */
    gi[0] = ct_ones(CT_SHAPE(4));                           /* not broadcastable: an error */
    return 0;
}
static int failing_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    (void)ctx;
    (void)g;
    (void)gi;
    return -1;
}

TEST(backward_errors_and_user_data_lifetime) {
    ct_tensor *x = ct_ones(CT_SHAPE(2, 3), .requires_grad = true);
    const ct_function Bad = {"BadShape", data_forward, bad_shape_backward, NULL};
    const ct_function Fail = {"Fails", data_forward, failing_backward, NULL};
    const ct_function NoBackward = {"NoBackward", data_forward, NULL, NULL};
    freed = 0;
    CT_SCOPE {
        CHECK_ERROR(ct_backward(ct_sum(ct_function_apply(&Bad, 1, &x))),
                    "Function BadShapeBackward returned an invalid gradient at index 0 - got [4] "
                    "but expected shape compatible with [2, 3]");
        CHECK_ERROR(ct_backward(ct_sum(ct_function_apply(&Fail, 1, &x))),
                    "FailsBackward: backward returned an error");
        CHECK_ERROR(ct_backward(ct_sum(ct_function_apply(&NoBackward, 1, &x))),
                    "NoBackwardBackward: backward is not implemented");
    }
    CHECK_INT_EQ(freed, 3);
    CT_NO_GRAD { ct_function_apply(&Bad, 1, &x); } /* no node: the data dies at once */
    CHECK_INT_EQ(freed, 4);
}

static ct_tensor *null_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)ctx;
    (void)n;
    (void)in;
    return NULL;
}

TEST(apply_argument_errors) {
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    const ct_function Null = {"Null", null_forward, NULL, NULL};
    CHECK_ERROR(ct_function_apply(&Null, 1, &x), "Null's forward returned NULL");
    CHECK_ERROR(ct_function_apply(NULL, 1, &x), "ct_function_apply: fn with a forward");
    ct_tensor *in[] = {x, NULL};
    ct_clear_error();
    CHECK(ct_function_apply(&MyMul, 2, in) == NULL && ct_last_error() == NULL);
    ct_tensor *seven[7] = {x, x, x, x, x, x, x};
    CHECK(ct_ctx_save_for_backward(NULL, 7, seven) == -1);
    ct_clear_error();
}
