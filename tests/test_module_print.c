/* ct_module_print: the module's repr then its parameter count, on stdout; and
 * nn.Identity, which passes values and gradients through unchanged. */
#include <stdlib.h>
#include <unistd.h>

#include "ct_test.h"

/* What ct_module_print(m) writes to stdout (malloc'd). */
static char *printed(ct_module *m) {
    fflush(stdout);
    int saved = dup(1);
    FILE *tmp = tmpfile();
    dup2(fileno(tmp), 1);
    ct_module_print(m);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    long n = ftell(tmp);
    char *s = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
    rewind(tmp);
    if (n > 0 && fread(s, 1, (size_t)n, tmp) != (size_t)n) s[0] = 0;
    fclose(tmp);
    return s;
}

TEST(module_print_shows_repr_and_parameter_count) {
    ct_module *net = ct_sequential(CT_MODULES(ct_nn_linear(4, 3), ct_nn_relu(), ct_nn_identity(),
                                              ct_nn_linear(3, 2, .bias = false)));
    char *s = printed(net);
    CHECK_STR_EQ(s, "Sequential(\n"
                    "  (0): Linear(in_features=4, out_features=3, bias=True)\n"
                    "  (1): ReLU()\n"
                    "  (2): Identity()\n"
                    "  (3): Linear(in_features=3, out_features=2, bias=False)\n"
                    ")\n"
                    "Parameters: 21 (trainable: 21)\n");
    free(s);
    /* Frozen parameters count in the total, not among the trainable ones. */
    ct_module_requires_grad_(ct_sequential_get(net, 0), false);
    s = printed(net);
    CHECK(s && strstr(s, "\nParameters: 21 (trainable: 6)\n"));
    free(s);
}

TEST(module_print_nests_children) {
    ct_module *inner = ct_sequential(CT_MODULES(ct_nn_conv2d(1, 2, CT_DIMS(3)), ct_nn_batch_norm2d(2)));
    ct_module *net = ct_sequential(CT_MODULES(inner, ct_nn_flatten(), ct_nn_dropout(0.25)));
    char *s = printed(net);
    CHECK_STR_EQ(s, "Sequential(\n"
                    "  (0): Sequential(\n"
                    "    (0): Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1))\n"
                    "    (1): BatchNorm2d(2, eps=1e-05, momentum=0.1, affine=True, "
                    "track_running_stats=True)\n"
                    "  )\n"
                    "  (1): Flatten(start_dim=1, end_dim=-1)\n"
                    "  (2): Dropout(p=0.25, inplace=False)\n"
                    ")\n"
                    /* conv 2*1*3*3 + 2, batch norm 2 + 2; buffers are not parameters */
                    "Parameters: 24 (trainable: 24)\n");
    free(s);
    /* A module without parameters, and NULL (prints nothing). */
    s = printed(ct_nn_identity());
    CHECK_STR_EQ(s, "Identity()\nParameters: 0 (trainable: 0)\n");
    free(s);
    s = printed(NULL);
    CHECK_STR_EQ(s, "");
    free(s);
}

TEST(identity_passes_values_and_gradients) {
    ct_module *id = ct_nn_identity();
    CHECK_INT_EQ(ct_module_num_parameters(id, false), 0);
    ct_tensor *x = ct_randn(CT_SHAPE(3, 4), .requires_grad = true);
    ct_tensor *y = ct_forward(id, x);
    CHECK(y != NULL);
    CHECK_CLOSE(ct_test_max_diff(y, x), 0, 0);
    /* d sum(w * id(x)) / dx = w */
    ct_tensor *w = ct_randn(CT_SHAPE(3, 4));
    CHECK(ct_backward(ct_sum(ct_mul(ct_forward(id, x), w))) == 0);
    CHECK(ct_grad(x) != NULL);
    CHECK_CLOSE(ct_test_max_diff(ct_grad(x), w), 0, 0);
    /* Inside a network: the gradient reaches the layer before it. */
    ct_module *net = ct_sequential(CT_MODULES(ct_nn_linear(4, 2), ct_nn_identity()));
    ct_tensor *fc_w = ct_module_get_parameter(net, "0.weight");
    CHECK(ct_backward(ct_sum(ct_forward(net, ct_ones(CT_SHAPE(5, 4))))) == 0);
    CHECK(ct_grad(fc_w) != NULL);
    CHECK_VALUES(ct_grad(fc_w), 1e-6, 5, 5, 5, 5, 5, 5, 5, 5);
    /* Any input shape and dtype passes. */
    ct_tensor *i = ct_arange(6);
    CHECK_VALUES(ct_forward(id, i), 0, 0, 1, 2, 3, 4, 5);
    CHECK_INT_EQ(ct_dtype_of(ct_forward(id, i)), CT_I64);
}
