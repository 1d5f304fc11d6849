/* Containers (Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict), the
 * printing of layers and of a CNN, and a CNN's state-dict keys, against PyTorch 1.13
 * (strings printed by tests/fixtures/gen_layers.py). */
#include <stdlib.h>

#include "ct_test.h"

static void check_repr(ct_module *m, const char *want) {
    char *s = ct_module_to_string(m);
    CHECK_STR_EQ(s, want);
    free(s);
}

TEST(sequential_api) {
    ct_module *seq = ct_sequential(CT_MODULES(ct_nn_linear(4, 3), ct_nn_relu()));
    CHECK_INT_EQ(ct_sequential_len(seq), 2);
    CHECK(ct_sequential_append(seq, ct_nn_linear(3, 2)) == seq);
    CHECK_INT_EQ(ct_sequential_len(seq), 3);
    CHECK_STR_EQ(ct_module_type(ct_sequential_get(seq, -1)), "Linear");
    CHECK_STR_EQ(ct_module_type(ct_sequential_get(seq, 1)), "ReLU");
    CHECK(ct_sequential_get(seq, -3) == ct_sequential_get(seq, 0));
    CHECK_ERROR(ct_sequential_get(seq, 3), "index 3 is out of range");
    CHECK_ERROR(ct_sequential_get(seq, -4), "out of range");
    const char *names[8];
    ct_tensor *ps[8];
    CHECK_INT_EQ(ct_named_parameters(seq, names, ps, 8), 4);
    CHECK_STR_EQ(names[0], "0.weight");
    CHECK_STR_EQ(names[3], "2.bias");
    ct_tensor *y = ct_forward(seq, ct_ones(CT_SHAPE(5, 4)));
    CHECK(y && ct_size(y, 0) == 5 && ct_size(y, 1) == 2);
    ct_module *empty = ct_sequential(0, NULL);
    check_repr(empty, "Sequential()");
    ct_tensor *x = ct_ones(CT_SHAPE(2));
    CHECK(ct_forward(empty, x) == x); /* an empty Sequential returns its input */
    CHECK_ERROR(ct_sequential_len(ct_nn_relu()), "expected a Sequential");
}

TEST(module_list_and_dict) {
    ct_module *list = ct_module_list(CT_MODULES(ct_nn_relu(), ct_nn_tanh()));
    ct_module_list_append(list, ct_nn_linear(2, 2));
    CHECK_INT_EQ(ct_module_list_len(list), 3);
    CHECK_STR_EQ(ct_module_type(ct_module_list_get(list, -1)), "Linear");
    CHECK_ERROR(ct_forward(list, ct_ones(CT_SHAPE(1))), "has no forward");
    check_repr(ct_module_list(CT_MODULES(ct_nn_relu())), "ModuleList(\n  (0): ReLU()\n)");

    ct_module *d = ct_module_dict();
    ct_module_dict_set(d, "x", ct_nn_relu());
    ct_module_dict_set(d, "y", ct_nn_linear(2, 3, .bias = false));
    check_repr(d, "ModuleDict(\n  (x): ReLU()\n  (y): Linear(in_features=2, out_features=3, bias=False)\n)");
    ct_module_dict_set(d, "x", ct_nn_sigmoid()); /* replaced in place: order kept */
    CHECK_INT_EQ(ct_module_dict_len(d), 2);
    CHECK_STR_EQ(ct_module_dict_key(d, 0), "x");
    CHECK_STR_EQ(ct_module_type(ct_module_dict_get(d, "x")), "Sigmoid");
    CHECK(ct_module_dict_get(d, "z") == NULL);
    const char *names[4];
    ct_tensor *ps[4];
    CHECK_INT_EQ(ct_named_parameters(d, names, ps, 4), 1);
    CHECK_STR_EQ(names[0], "y.weight");
}

TEST(parameter_list_and_dict) {
    ct_tensor *init[] = {ct_zeros(CT_SHAPE(3, 4)), ct_zeros(CT_SHAPE(2), .dtype = CT_F64)};
    ct_module *pl = ct_parameter_list(2, init);
    CHECK_INT_EQ(ct_parameter_list_len(pl), 2);
    CHECK(ct_requires_grad(ct_parameter_list_get(pl, -1)));
    check_repr(pl, "ParameterList(\n"
                   "    (0): Parameter containing: [torch.float32 of size 3x4]\n"
                   "    (1): Parameter containing: [torch.float64 of size 2]\n)");
    ct_module *pd = ct_parameter_dict();
    ct_parameter_dict_set(pd, "a", ct_zeros(CT_SHAPE(3, 4)));
    ct_parameter_dict_set(pd, "b", ct_zeros(CT_SHAPE()));
    check_repr(pd, "ParameterDict(\n"
                   "    (a): Parameter containing: [torch.FloatTensor of size 3x4]\n"
                   "    (b): Parameter containing: [torch.FloatTensor of size ]\n)");
    ct_tensor *b2 = ct_ones(CT_SHAPE(5));
    CHECK(ct_parameter_dict_set(pd, "b", b2) == b2);
    CHECK(ct_parameter_dict_get(pd, "b") == b2);
    CHECK_STR_EQ(ct_parameter_dict_key(pd, 1), "b");
    CHECK_INT_EQ(ct_module_num_parameters(pd, false), 17);
    ct_state_dict *sd = ct_module_state_dict(pl);
    CHECK_STR_EQ(ct_state_dict_key(sd, 1), "1");
}

static ct_module *small_cnn(void) {
    return ct_sequential(CT_MODULES(
        ct_nn_conv2d(1, 8, CT_DIMS(3), .padding = CT_DIMS(1)), ct_nn_batch_norm2d(8), ct_nn_relu(),
        ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_conv2d(8, 16, CT_DIMS(3), .stride = CT_DIMS(2), .bias = false),
        ct_nn_group_norm(4, 16), ct_nn_gelu(), ct_nn_adaptive_avg_pool2d(CT_DIMS(1)), ct_nn_flatten(),
        ct_nn_dropout(0.25), ct_nn_linear(16, 10), ct_nn_log_softmax(1)));
}

TEST(cnn_repr_and_state_dict_keys_match_pytorch) {
    ct_module *cnn = small_cnn();
    check_repr(cnn,
               "Sequential(\n"
               "  (0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
               "  (1): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
               "  (2): ReLU()\n"
               "  (3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
               "  (4): Conv2d(8, 16, kernel_size=(3, 3), stride=(2, 2), bias=False)\n"
               "  (5): GroupNorm(4, 16, eps=1e-05, affine=True)\n"
               "  (6): GELU(approximate='none')\n"
               "  (7): AdaptiveAvgPool2d(output_size=1)\n"
               "  (8): Flatten(start_dim=1, end_dim=-1)\n"
               "  (9): Dropout(p=0.25, inplace=False)\n"
               "  (10): Linear(in_features=16, out_features=10, bias=True)\n"
               "  (11): LogSoftmax(dim=1)\n"
               ")");
    static const char *keys[] = {"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                 "1.running_var", "1.num_batches_tracked", "4.weight", "5.weight",
                                 "5.bias", "10.weight", "10.bias"};
    ct_state_dict *sd = ct_module_state_dict(cnn);
    CHECK_INT_EQ(ct_state_dict_len(sd), 12);
    for (int i = 0; i < 12 && i < ct_state_dict_len(sd); i++) CHECK_STR_EQ(ct_state_dict_key(sd, i), keys[i]);
    CHECK(ct_dtype_of(ct_state_dict_get(sd, "1.num_batches_tracked")) == CT_I64);
    ct_tensor *y = ct_forward(cnn, ct_randn(CT_SHAPE(2, 1, 12, 12)));
    CHECK(y && ct_size(y, 0) == 2 && ct_size(y, 1) == 10);
    CHECK(ct_backward(ct_sum(y)) == 0);
    CHECK(ct_grad(ct_module_get_parameter(cnn, "0.weight")) != NULL);
}

/* Strings printed by PyTorch 1.13. */
TEST(layer_reprs_match_pytorch) {
    struct {
        ct_module *m;
        const char *want;
    } cases[] = {
        {ct_nn_identity(), "Identity()"},
        {ct_nn_linear(3, 4), "Linear(in_features=3, out_features=4, bias=True)"},
        {ct_nn_bilinear(2, 3, 4), "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)"},
        {ct_nn_unflatten(1, CT_SHAPE(2, 3)), "Unflatten(dim=1, unflattened_size=(2, 3))"},
        {ct_nn_conv1d(2, 4, CT_DIMS(3)), "Conv1d(2, 4, kernel_size=(3,), stride=(1,))"},
        {ct_nn_conv2d(3, 8, CT_DIMS(3), .stride = CT_DIMS(2), .padding = CT_DIMS(1), .bias = false),
         "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)"},
        {ct_nn_conv2d(4, 8, CT_DIMS(3, 5), .dilation = CT_DIMS(2), .groups = 2, .padding_same = true),
         "Conv2d(4, 8, kernel_size=(3, 5), stride=(1, 1), padding=same, dilation=(2, 2), groups=2)"},
        {ct_nn_conv2d(1, 2, CT_DIMS(3), .padding = CT_DIMS(1, 2)),
         "Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1), padding=(1, 2))"},
        {ct_nn_conv_transpose2d(3, 6, CT_DIMS(3), .stride = CT_DIMS(2), .output_padding = CT_DIMS(1)),
         "ConvTranspose2d(3, 6, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"},
        {ct_nn_conv2d(2, 3, CT_DIMS(3), .padding = CT_DIMS(1, 2), .padding_mode = CT_PADDING_REFLECT,
                      .bias = false),
         "Conv2d(2, 3, kernel_size=(3, 3), stride=(1, 1), padding=(1, 2), bias=False, padding_mode=reflect)"},
        {ct_nn_conv1d(2, 2, CT_DIMS(3), .padding = CT_DIMS(2), .padding_mode = CT_PADDING_CIRCULAR),
         "Conv1d(2, 2, kernel_size=(3,), stride=(1,), padding=(2,), padding_mode=circular)"},
        {ct_nn_max_pool2d(CT_DIMS(3), .stride = CT_DIMS(2), .padding = CT_DIMS(1), .ceil_mode = true),
         "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)"},
        {ct_nn_avg_pool2d(CT_DIMS(2)), "AvgPool2d(kernel_size=2, stride=2, padding=0)"},
        {ct_nn_adaptive_avg_pool2d(CT_DIMS(1, 1)), "AdaptiveAvgPool2d(output_size=(1, 1))"},
        {ct_nn_batch_norm1d(4), "BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"},
        {ct_nn_batch_norm2d(4, .momentum = CT_NONE, .affine = false, .track_running_stats = false),
         "BatchNorm2d(4, eps=1e-05, momentum=None, affine=False, track_running_stats=False)"},
        {ct_nn_layer_norm(CT_SHAPE(5)), "LayerNorm((5,), eps=1e-05, elementwise_affine=True)"},
        {ct_nn_layer_norm(CT_SHAPE(4, 5), .elementwise_affine = false),
         "LayerNorm((4, 5), eps=1e-05, elementwise_affine=False)"},
        {ct_nn_dropout(0.5), "Dropout(p=0.5, inplace=False)"},
        {ct_nn_dropout2d(0.3), "Dropout2d(p=0.3, inplace=False)"},
        {ct_nn_embedding(10, 3), "Embedding(10, 3)"},
        {ct_nn_embedding(10, 3, .padding_idx = CT_SOME(0), .max_norm = 1.0),
         "Embedding(10, 3, padding_idx=0, max_norm=1.0)"},
        {ct_nn_embedding(10, 3, .padding_idx = CT_SOME(1), .max_norm = 1, .norm_type = 1,
                         .scale_grad_by_freq = true),
         "Embedding(10, 3, padding_idx=1, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True)"},
        {ct_nn_leaky_relu(), "LeakyReLU(negative_slope=0.01)"},
        {ct_nn_leaky_relu(.negative_slope = CT_SOME(0.2)), "LeakyReLU(negative_slope=0.2)"},
        {ct_nn_gelu(.approximate = CT_GELU_TANH), "GELU(approximate='tanh')"},
        {ct_nn_relu(.inplace = true), "ReLU(inplace=True)"},
        {ct_nn_adaptive_max_pool2d(CT_DIMS(3)), "AdaptiveMaxPool2d(output_size=3)"},
        {ct_nn_elu(), "ELU(alpha=1.0)"},
        {ct_nn_softplus(), "Softplus(beta=1, threshold=20)"},
        {ct_nn_softplus(.beta = CT_SOME(2), .threshold = CT_SOME(10)), "Softplus(beta=2, threshold=10)"},
        {ct_nn_hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"},
        {ct_nn_silu(), "SiLU()"},
        {ct_nn_tanh(), "Tanh()"},
        {ct_nn_sigmoid(), "Sigmoid()"},
        {ct_nn_softmax(1), "Softmax(dim=1)"},
        {ct_nn_log_softmax(-1), "LogSoftmax(dim=-1)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_repr(cases[i].m, cases[i].want);
}
