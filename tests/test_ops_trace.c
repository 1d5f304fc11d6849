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

/* The model of examples/fashion_mnist.c. */
static ct_module *demo_cnn(void) {
    return ct_sequential(CT_MODULES(ct_nn_conv2d(1, 32, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)),
                                    ct_nn_conv2d(32, 64, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_flatten(),
                                    ct_nn_linear(3136, 128), ct_nn_relu(), ct_nn_linear(128, 10)));
}

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
    ct_module *m = demo_cnn();
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
    ct_release(m);
}

TEST(hooks_see_calls_with_their_attributes) {
    ct_tensor *a = ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3), .requires_grad = true);
    ct_tensor *b = ct_ones(CT_SHAPE(3));
    char *text = NULL;
    PRINTED(text, {
        ct_add_alpha(a, b, 2.5);
        ct_sum(a, .dims = CT_DIMS(0), .keepdim = true);
        ct_eq(a, b); /* not differentiable */
        ct_leaky_relu(a, 0.2);
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
