/* Memory: what the graph keeps alive, and what a training loop holds. */
#include "ct_test.h"

enum { N = 256, DEPTH = 20 };

/* A deep elementwise chain that keeps only what the graph keeps: each layer's
 * temporaries die with its scope, as Python frees them.  Returns the output (owned). */
static ct_tensor *deep_forward(ct_tensor *x, ct_tensor *w) {
    ct_tensor *h = ct_retain(x);
    for (int i = 0; i < DEPTH; i++) {
        ct_tensor *next = NULL;
        CT_SCOPE { next = ct_retain(ct_mul(ct_exp(ct_neg(h)), w)); }
        ct_release(h);
        h = next;
    }
    return h;
}

static int64_t forward_peak(ct_tensor *x, ct_tensor *w, bool grad) {
    int64_t base = ct_memory_allocated(CT_CPU);
    ct_reset_peak_memory_stats(CT_CPU);
    bool prev = ct_set_grad_enabled(grad);
    ct_tensor *out = deep_forward(x, w);
    ct_set_grad_enabled(prev);
    CHECK(ct_requires_grad(out) == grad);
    ct_release(out); /* frees the graph too */
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), base);
    return ct_max_memory_allocated(CT_CPU) - base;
}

TEST(no_grad_forward_keeps_no_activations) {
    ct_tensor *x = ct_ones(CT_SHAPE(N, N));
    ct_tensor *w = ct_full(CT_SHAPE(N, N), 0.5, .requires_grad = true);
    int64_t with_graph = forward_peak(x, w, true);
    int64_t without = forward_peak(x, w, false);
    int64_t one = (int64_t)N * N * 4;
    printf("peak of a %d-layer forward on [%d, %d]: %lld bytes recording, %lld in no_grad\n",
           DEPTH, N, N, (long long)with_graph, (long long)without);
    CHECK(with_graph >= DEPTH * one); /* at least one saved activation per layer */
    CHECK(without <= 4 * one);        /* a layer: its input, two temporaries, its output */
}

/* A step: a custom function, a checkpoint and plain ops, backward, SGD in place. */
static ct_tensor *scale_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)n;
    ct_ctx_save_for_backward(ctx, 1, in);
    return ct_mul_scalar(in[0], 0.5);
}
static int scale_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    (void)ctx;
    return (gi[0] = ct_mul_scalar(g, 0.5)) ? 0 : -1;
}
static const ct_function Scale = {"Scale", scale_forward, scale_backward, NULL};
static ct_tensor *block(ct_tensor *const *in, void *c) {
    (void)c;
    return ct_exp(ct_neg(ct_mul(in[0], in[1])));
}

TEST(training_loop_in_scopes_holds_constant_memory) {
    ct_tensor *x = ct_full(CT_SHAPE(32, 64), 0.25);
    ct_tensor *w1 = ct_full(CT_SHAPE(64), 0.1, .requires_grad = true);
    ct_tensor *w2 = ct_full(CT_SHAPE(32, 64), 0.2, .requires_grad = true);
    int64_t steady = 0;
    int depth = ct_scope_depth();
    double first = 0, last = 0;
    for (int step = 0; step < 100; step++) {
        CT_SCOPE {
            ct_tensor *h = ct_function_apply(&Scale, 1, &w2);
            ct_tensor *in[] = {ct_add(x, h), w1};
            ct_tensor *loss = ct_sum(ct_checkpoint(block, NULL, 2, in));
            CHECK(ct_backward(loss) == 0);
            CT_NO_GRAD {
                ct_add_alpha_(w1, ct_grad(w1), -0.01);
                ct_add_alpha_(w2, ct_grad(w2), -0.01);
                ct_zero_(ct_grad(w1));
                ct_zero_(ct_grad(w2));
            }
            if (step == 0) first = ct_item(loss);
            last = ct_item(loss);
        }
        if (step == 2) steady = ct_memory_allocated(CT_CPU);
        if (step > 2 && ct_memory_allocated(CT_CPU) != steady) {
            ct_test_fail(__FILE__, __LINE__, "step %d: %lld bytes allocated, %lld at step 2", step,
                         (long long)ct_memory_allocated(CT_CPU), (long long)steady);
            break;
        }
    }
    CHECK_INT_EQ(ct_scope_depth(), depth);
    CHECK(last < first); /* it trained */
}

TEST(graph_dies_with_its_output_without_backward) {
    ct_tensor *w = ct_ones(CT_SHAPE(128, 128), .requires_grad = true);
    int64_t base = ct_memory_allocated(CT_CPU);
    ct_tensor *out = deep_forward(w, w);
    CHECK(ct_memory_allocated(CT_CPU) > base + DEPTH * 128 * 128 * 4);
    ct_release(out);
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), base);
}

/* Per-op allocation: a small op's only tensor memory is its output, with and without
 * graph recording (nodes save inputs by reference, never copies); a number operand
 * adds its one-element wrapped tensor. */
static int64_t op_peak(int which, ct_tensor *a, ct_tensor *b) {
    int64_t base = ct_memory_allocated(CT_CPU), peak = -1;
    ct_reset_peak_memory_stats(CT_CPU);
    CT_SCOPE {
        ct_tensor *r = NULL;
        switch (which) {
        case 0: r = ct_add(a, b); break;
        case 1: r = ct_mul(a, b); break;
        case 2: r = ct_exp(b); break;
        case 3: r = ct_relu(b); break;
        case 4: r = ct_sigmoid(b); break;
        case 5: r = ct_softmax(b, 0); break;
        case 6: r = ct_sum(b); break;
        case 7: r = ct_matmul(a, b); break;
        case 8: r = ct_view(b, CT_SHAPE(2, 2)); break;
        case 9: r = ct_mul_scalar(b, 2); break;
        }
        CHECK(r != NULL);
        peak = ct_max_memory_allocated(CT_CPU) - base;
    }
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), base);
    return peak;
}

/* float16 / bfloat16 ops with kernels of their own allocate only their output (no
 * float32 copies of the operands or the result), small (one kernel call) and large
 * (the iterator, split across threads) alike: add, exp, sum, mean. */
TEST(reduced_precision_ops_allocate_only_their_output) {
    const ct_dtype dts[] = {CT_BF16, CT_F16};
    const int64_t sizes[] = {4, 100003};
    for (int k = 0; k < 2; k++) {
        for (int s = 0; s < 2; s++) {
            int64_t n = sizes[s], bytes = n * 2;
            ct_tensor *a = ct_full(CT_SHAPE(n), 2.0, .dtype = dts[k]);
            ct_tensor *b = ct_full(CT_SHAPE(n), 0.5, .dtype = dts[k]);
            const int ops[] = {0, 2, 6};
            const int64_t expect[] = {bytes, bytes, 2};
            for (int i = 0; i < 3; i++) {
                int64_t got = op_peak(ops[i], a, b);
                if (got != expect[i])
                    ct_test_fail(__FILE__, __LINE__, "%s op %d, %lld elements: peak %lld bytes, "
                                 "expected %lld", ct_dtype_name(dts[k]), ops[i], (long long)n,
                                 (long long)got, (long long)expect[i]);
            }
            int64_t base = ct_memory_allocated(CT_CPU);
            ct_reset_peak_memory_stats(CT_CPU);
            CT_SCOPE { CHECK(ct_mean(b) != NULL); }
            CHECK_INT_EQ(ct_max_memory_allocated(CT_CPU) - base, 2);
        }
    }
}

TEST(small_ops_allocate_only_their_output) {
    ct_tensor *a = ct_full(CT_SHAPE(4), 2.0), *b = ct_full(CT_SHAPE(4), 3.0, .requires_grad = true);
    const int64_t expect[] = {16, 16, 16, 16, 16, 16, 4, 4, 0, 20};
    for (int grad = 0; grad <= 1; grad++) {
        bool prev = ct_set_grad_enabled(grad);
        for (int op = 0; op < 10; op++) {
            int64_t got = op_peak(op, a, b);
            if (got != expect[op])
                ct_test_fail(__FILE__, __LINE__, "op %d (grad %d): peak %lld bytes, expected %lld",
                             op, grad, (long long)got, (long long)expect[op]);
        }
        ct_set_grad_enabled(prev);
    }
}
