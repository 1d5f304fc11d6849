/* Engine details: ct_autograd_grad runs only the nodes it needs; a backward run
 * from inside a backward formula (checkpoint) leaves the outer run intact. */
#include "ct_test.h"

static int backward_calls;

static ct_tensor *counted_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)ctx;
    (void)n;
    return ct_mul_scalar(in[0], 2);
}
static int counted_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    (void)ctx;
    backward_calls++;
    return (gi[0] = ct_mul_scalar(g, 2)) ? 0 : -1;
}
static const ct_function Counted = {"Counted", counted_forward, counted_backward, NULL};

TEST(autograd_grad_skips_branches_not_leading_to_inputs) {
    ct_tensor *x = ct_ones(CT_SHAPE(3), .requires_grad = true);
    ct_tensor *a = ct_ones(CT_SHAPE(3), .requires_grad = true);
    ct_tensor *z = ct_sum(ct_add(ct_mul(x, x), ct_function_apply(&Counted, 1, &a)));
    ct_tensor *g = NULL;
    backward_calls = 0;
    CHECK(ct_autograd_grad(1, &z, 1, &x, &g, .retain_graph = true) == 0);
    CHECK_VALUES(g, 0, 2, 2, 2);
    CHECK_INT_EQ(backward_calls, 0);
    CHECK(ct_autograd_grad(1, &z, 1, &a, &g, .retain_graph = true) == 0);
    CHECK_VALUES(g, 0, 2, 2, 2);
    CHECK_INT_EQ(backward_calls, 1);
    CHECK(ct_backward(z) == 0); /* backward runs everything */
    CHECK_INT_EQ(backward_calls, 2);
    CHECK_VALUES(ct_grad(x), 0, 2, 2, 2);
}

TEST(autograd_grad_with_respect_to_a_non_leaf) {
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *h = ct_function_apply(&Counted, 1, &x); /* 2x */
    ct_tensor *z = ct_sum(ct_mul(h, h));
    ct_tensor *g = NULL;
    backward_calls = 0;
    CHECK(ct_autograd_grad(1, &z, 1, &h, &g) == 0); /* h's own node need not run */
    CHECK_VALUES(g, 0, 4, 4);
    CHECK_INT_EQ(backward_calls, 0);
}

/* The checkpointed block uses w through ctx; w is also used outside it, and the
 * outer graph's w*x*3 runs first (newer), so w's AccumulateGrad already holds a
 * pending gradient when the checkpoint's nested backward reaches it. */
static ct_tensor *times_w(ct_tensor *const *in, void *ctx) { return ct_mul(in[0], ctx); }

TEST(nested_backward_shares_a_leaf_with_the_outer_one) {
    ct_tensor *x = ct_tensor_f64(((double[]){1, 2}), CT_SHAPE(2), .requires_grad = true);
    ct_tensor *w = ct_tensor_f64(((double[]){5, 7}), CT_SHAPE(2), .requires_grad = true);
    ct_tensor *inner = ct_checkpoint(times_w, w, 1, &x);
    ct_tensor *outer = ct_mul_scalar(ct_mul(w, x), 3);
    CHECK(ct_backward(ct_sum(ct_add(inner, outer))) == 0);
    CHECK_VALUES(ct_grad(w), 0, 4, 8);   /* x + 3x */
    CHECK_VALUES(ct_grad(x), 0, 20, 28); /* w + 3w */
}
