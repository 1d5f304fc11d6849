/* Anomaly mode: a nan gradient (an inf one when asked) names the node, the forward op
 * and its call site; inf passes by default, as in PyTorch. */
#include <stdio.h>

#include "ct_test.h"

static int log_line, mul_line;

/* A user's model function: log of x, then something of it. */
static ct_tensor *model(ct_tensor *x) {
    ct_tensor *y = ct_log(x); log_line = __LINE__;
    return ct_sum(ct_mul_scalar(y, 2));
}

/* 0 * inf: the gradient of x in x * inf, times a zero upstream gradient. */
static ct_tensor *zero_times_inf(ct_tensor *x) {
    ct_tensor *y = ct_mul_scalar(x, INFINITY); mul_line = __LINE__;
    return ct_sum(ct_mul_scalar(y, 0));
}

static void check_fragments(const char *msg, const char *node, const char *op, int line) {
    char site[64];
    snprintf(site, sizeof site, "test_autograd_anomaly.c:%d", line);
    CHECK(msg != NULL);
    if (!msg) return;
    if (!strstr(msg, node) || !strstr(msg, op) || !strstr(msg, site))
        ct_test_fail(__FILE__, __LINE__, "anomaly message \"%s\" lacks \"%s\", \"%s\" or \"%s\"",
                     msg, node, op, site);
}

TEST(inf_gradients_pass_as_in_pytorch) {
    /* log(0)'s gradient is inf: PyTorch's anomaly mode checks for nan only. */
    ct_tensor *x = ct_tensor_f64(((double[]){1, 0}), CT_SHAPE(2), .requires_grad = true);
    CHECK(!ct_is_anomaly_enabled());
    CT_DETECT_ANOMALY {
        CHECK(ct_is_anomaly_enabled());
        CHECK(ct_backward(model(x)) == 0);
    }
    CHECK(!ct_is_anomaly_enabled());
    CHECK_VALUES(ct_grad(x), 0, 2, INFINITY);
}

TEST(check_inf_names_log_backward_and_the_call_site) {
    ct_tensor *x = ct_tensor_f64(((double[]){1, 0}), CT_SHAPE(2), .requires_grad = true);
    CHECK(ct_set_anomaly_check_inf(true) == false);
    CT_DETECT_ANOMALY {
        ct_clear_error();
        CHECK(ct_backward(model(x)) == -1);
        check_fragments(ct_last_error(), "Function 'LogBackward0' returned inf values in its 0th "
                                         "output", "The forward op was ct_log", log_line);
        ct_clear_error();
    }
    /* Without anomaly mode the flag checks nothing: the inf reaches .grad. */
    CHECK(ct_backward(model(x)) == 0);
    CHECK_VALUES(ct_grad(x), 0, 2, INFINITY);
    CHECK(ct_set_anomaly_check_inf(false) == true);
}

TEST(nan_gradient_fails_with_pytorchs_message) {
    /* The norm of a zero vector: SqrtBackward0 gives inf (passes), then MulBackward0
     * (x * x) gives inf * 0 = nan. */
    ct_tensor *x = ct_zeros(CT_SHAPE(2), .requires_grad = true);
    CT_DETECT_ANOMALY {
        ct_tensor *sq = ct_mul(x, x); int line = __LINE__;
        ct_clear_error();
        CHECK(ct_backward(ct_sqrt(ct_sum(sq))) == -1);
        const char *msg = ct_last_error();
        const char *pytorch = "Function 'MulBackward0' returned nan values in its 0th output.";
        CHECK(msg && !strncmp(msg, pytorch, strlen(pytorch)));
        check_fragments(msg, pytorch, "The forward op was ct_mul", line);
        ct_clear_error();
    }
    CHECK(ct_grad(x) == NULL);
}

TEST(zero_times_inf_names_mul_backward) {
    ct_tensor *x = ct_tensor_f32(((float[]){0, 1}), CT_SHAPE(2), .requires_grad = true);
    bool prev = ct_set_detect_anomaly(true);
    ct_clear_error();
    CHECK(ct_backward(zero_times_inf(x)) == -1);
    check_fragments(ct_last_error(), "Function 'MulBackward0' returned nan values", "ct_mul",
                    mul_line);
    ct_clear_error();
    CHECK(ct_set_detect_anomaly(prev) == true);
    CHECK(ct_grad(x) == NULL);
}

TEST(log_of_negative_gives_nan_upstream) {
    /* log(-1) is nan in forward; its square's backward (2 * y * g) is nan. */
    ct_tensor *x = ct_tensor_f64(((double[]){-1}), CT_SHAPE(1), .requires_grad = true);
    CT_DETECT_ANOMALY {
        ct_tensor *y = ct_log(x);
        int line = __LINE__; ct_tensor *z = ct_sum(ct_mul(y, y));
        CHECK(ct_backward(z) == -1);
        check_fragments(ct_last_error(), "Function 'MulBackward0' returned nan values", "ct_mul",
                        line);
        ct_clear_error();
    }
}

/* A custom function's node is named after it, and so is its forward. */
static ct_tensor *bad_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)ctx;
    (void)n;
    return ct_mul_scalar(in[0], 1);
}
static int bad_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    (void)ctx;
    gi[0] = ct_mul_scalar(g, NAN);
    return 0;
}

TEST(custom_function_anomaly_names_the_function) {
    const ct_function Bad = {"MyBad", bad_forward, bad_backward, NULL};
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    CT_DETECT_ANOMALY {
        ct_tensor *y = ct_function_apply(&Bad, 1, &x); int line = __LINE__;
        CHECK(ct_backward(ct_sum(y)) == -1);
        check_fragments(ct_last_error(), "Function 'MyBadBackward' returned nan values",
                        "The forward op was MyBad,", line);
        ct_clear_error();
    }
}
