/* Convolutions: values and gradients against PyTorch, errors, thread independence. */
#include "ct_test.h"
#include "fx_case.h"

typedef enum { C2, C1, CT } conv_kind;
typedef struct {
    const char *name;
    conv_kind kind;
    int n_in; /* 3: with bias */
    ct_conv_options o;
} conv_case;

/* Must match tests/fixtures/gen_conv.py. */
static const conv_case cases[] = {
    {"c2_basic", C2, 3, {.padding = CT_DIMS(1)}},
    {"c2_strided", C2, 2, {.stride = CT_DIMS(2, 1), .padding = CT_DIMS(1, 2), .dilation = CT_DIMS(2, 1)}},
    {"c2_groups", C2, 3, {.stride = CT_DIMS(2), .groups = 2}},
    {"c2_same", C2, 2, {.padding_same = true, .dilation = CT_DIMS(1, 2)}},
    {"c2_pointwise", C2, 3, {.groups = 1}},
    {"c2_unbatched", C2, 2, {.padding = CT_DIMS(1)}},
    {"c1_basic", C1, 3, {.stride = CT_DIMS(2), .padding = CT_DIMS(1), .dilation = CT_DIMS(2)}},
    {"c1_groups", C1, 2, {.groups = 3}},
    {"ct_basic", CT, 3, {.stride = CT_DIMS(2), .padding = CT_DIMS(1), .output_padding = CT_DIMS(1)}},
    {"ct_groups", CT, 2, {.stride = CT_DIMS(1, 2), .groups = 2, .dilation = CT_DIMS(2)}},
    {"c2_stride_h", C2, 2, {.stride = CT_DIMS(2, 1), .padding = CT_DIMS(1)}},
    {"c2_direct_wide", C2, 3, {.padding = CT_DIMS(1)}},
    {"c2_direct_groups", C2, 3, {.padding = CT_DIMS(2, 1), .dilation = CT_DIMS(2, 1), .groups = 2}},
    {"c2_direct_bigpad", C2, 2, {.padding = CT_DIMS(3)}},
    {"c2_direct_o19", C2, 2, {.padding = CT_DIMS(1, 0)}},
    {"c2_direct_o64", C2, 2, {.padding = CT_DIMS(1)}},
    {"ct_direct", CT, 3, {.padding = CT_DIMS(1)}},
};

static ct_tensor *run(const conv_case *c, ct_tensor **in) {
    ct_tensor *b = c->n_in == 3 ? in[2] : NULL;
    switch (c->kind) {
    case C2: return ct_conv2d_with(in[0], in[1], b, c->o);
    case C1: return ct_conv1d_with(in[0], in[1], b, c->o);
    case CT: return ct_conv_transpose2d_with(in[0], in[1], b, c->o);
    }
    return NULL;
}

static void check_case(fx_file *f, const conv_case *c, ct_dtype dt, double tol) {
    ct_tensor *in[3];
    fx_case_inputs(f, c->name, c->n_in, dt, in);
    fx_case_check(f, c->name, c->n_in, in, run(c, in), dt, tol);
}

TEST(conv_matches_pytorch) {
    fx_file *f = fx_load("conv");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_case(f, &cases[i], CT_F64, 1e-12);
        check_case(f, &cases[i], CT_F32, 1e-4);
    }
    fx_free(f);
}

TEST(im2col_col2im_match_pytorch) {
    fx_file *f = fx_load("conv");
    ct_fold_options o = {.kernel_size = CT_DIMS(2, 3), .dilation = CT_DIMS(1, 2),
                         .padding = CT_DIMS(1), .stride = CT_DIMS(2, 1)};
    ct_dtype dts[] = {CT_F64, CT_F32};
    for (int t = 0; t < 2; t++) {
        ct_tensor *x;
        fx_case_inputs(f, "unfold", 1, dts[t], &x);
        ct_tensor *u = ct_im2col_with(x, o);
        CHECK_STR_EQ(ct_node_name(ct_grad_fn(u)), "Im2ColBackward0");
        fx_case_check(f, "unfold", 1, &x, u, dts[t], 1e-6);
        fx_case_inputs(f, "fold", 1, dts[t], &x);
        fx_case_check(f, "fold", 1, &x, ct_col2im_with(x, CT_DIMS(4, 5), o), dts[t], 1e-6);
    }
    fx_free(f);
    CHECK_ERROR(ct_col2im(ct_zeros(CT_SHAPE(1, 7, 9)), CT_DIMS(4, 4), .kernel_size = CT_DIMS(2)),
                "Expected size of input's dimension 1 to be divisible by the product of kernel_size");
    CHECK_ERROR(ct_col2im(ct_zeros(CT_SHAPE(1, 8, 8)), CT_DIMS(4, 4), .kernel_size = CT_DIMS(2)),
                "expected size of input's dimension 2 to match the calculated number of sliding "
                "blocks 3 * 3 = 9, but got input.size(2)=8");
}

TEST(conv_grad_fn_and_shapes) {
    ct_tensor *x = ct_ones(CT_SHAPE(1, 4, 5, 5), .requires_grad = true);
    ct_tensor *y = ct_conv2d(x, ct_ones(CT_SHAPE(6, 4, 3, 3)), NULL);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "ConvolutionBackward0");
    CHECK_INT_EQ(ct_size(y, 2), 3);
    ct_tensor *t = ct_conv_transpose2d(x, ct_ones(CT_SHAPE(4, 2, 3, 3)), NULL, .stride = CT_DIMS(2));
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(t)), "ConvolutionBackward0");
    CHECK_INT_EQ(ct_size(t, 1), 2);
    CHECK_INT_EQ(ct_size(t, 3), 11);
    /* A batch of 0 and float16 through float32. */
    ct_tensor *e = ct_conv2d(ct_zeros(CT_SHAPE(0, 4, 5, 5)), ct_ones(CT_SHAPE(6, 4, 3, 3)), NULL);
    CHECK(e && ct_numel(e) == 0 && ct_size(e, 1) == 6);
    ct_tensor *h = ct_conv2d(ct_ones(CT_SHAPE(1, 1, 3, 3), .dtype = CT_F16),
                             ct_ones(CT_SHAPE(1, 1, 3, 3), .dtype = CT_F16), NULL);
    CHECK(ct_dtype_of(h) == CT_F16);
    CHECK_VALUES(h, 0, 9);
}

TEST(conv_errors) {
    ct_tensor *x = ct_zeros(CT_SHAPE(1, 1, 28, 28));
    CHECK_ERROR(ct_conv2d(x, ct_zeros(CT_SHAPE(64, 3, 3, 3)), NULL),
                "ct_conv2d: Given groups=1, weight of size [64, 3, 3, 3], expected input[1, 1, 28, 28] "
                "to have 3 channels, but got 1 channels instead");
    CHECK_ERROR(ct_conv2d(ct_zeros(CT_SHAPE(1, 1, 2, 2)), ct_zeros(CT_SHAPE(64, 1, 3, 3)), NULL),
                "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel "
                "size can't be greater than actual input size");
    ct_tensor *x4 = ct_zeros(CT_SHAPE(1, 4, 5, 5));
    CHECK_ERROR(ct_conv2d(x4, ct_zeros(CT_SHAPE(6, 2, 3, 3)), NULL, .groups = 4),
                "Given groups=4, expected weight to be divisible by 4 at dimension 0");
    CHECK_ERROR(ct_conv2d(x4, ct_zeros(CT_SHAPE(6, 4, 3, 3)), ct_zeros(CT_SHAPE(5))),
                "Given weight of size [6, 4, 3, 3], expected bias to be 1-dimensional with 6 "
                "elements, but got bias of size [5] instead");
    CHECK_ERROR(ct_conv2d(x4, ct_zeros(CT_SHAPE(6, 4, 3, 3)), NULL, .stride = CT_DIMS(0)),
                "non-positive stride is not supported");
    CHECK_ERROR(ct_conv2d(x4, ct_zeros(CT_SHAPE(6, 4, 3, 3)), NULL, .padding = CT_DIMS(-1)),
                "negative padding is not supported");
    CHECK_ERROR(ct_conv2d(x4, ct_zeros(CT_SHAPE(6, 4, 3, 3)), NULL, .padding_same = true,
                          .stride = CT_DIMS(2)),
                "padding='same' is not supported for strided convolutions");
    CHECK_ERROR(ct_conv1d(ct_zeros(CT_SHAPE(1, 4, 5)), ct_zeros(CT_SHAPE(6, 4, 3)), NULL,
                          .stride = CT_DIMS(1, 1)),
                "expected stride to be a single integer value or a list of 1 values to match the "
                "convolution dimensions, but got stride=[1, 1]");
    CHECK_ERROR(ct_conv_transpose2d(x4, ct_zeros(CT_SHAPE(3, 4, 3, 3)), NULL),
                "Given transposed=1, weight of size [3, 4, 3, 3], expected input[1, 4, 5, 5] to "
                "have 3 channels, but got 4 channels instead");
    CHECK_ERROR(ct_conv_transpose2d(x4, ct_zeros(CT_SHAPE(4, 4, 3, 3)), NULL, .stride = CT_DIMS(2),
                                    .output_padding = CT_DIMS(2)),
                "output padding must be smaller than either stride or dilation");
    CHECK_ERROR(ct_conv2d(x4, ct_zeros(CT_SHAPE(6, 4, 3, 3), .dtype = CT_F64), NULL),
                "expected input, weight and bias to have the same dtype");
    CHECK_ERROR(ct_conv2d(ct_zeros(CT_SHAPE(28, 28)), ct_zeros(CT_SHAPE(6, 4, 3, 3)), NULL),
                "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [28, 28]");
    CHECK_ERROR(ct_conv2d(x4, ct_zeros(CT_SHAPE(6, 4, 3)), NULL), "Expected 4D weight");
    CHECK(ct_conv2d(NULL, x4, NULL) == NULL);
}

TEST(conv_double_backward) {
    /* d/dx sum(conv(x, w)^2)... through create_graph: the gradient is differentiable */
    ct_tensor *x = ct_ones(CT_SHAPE(1, 1, 3, 3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *w = ct_ones(CT_SHAPE(1, 1, 2, 2), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *y = ct_sum(ct_conv2d(x, w, NULL));
    ct_tensor *g = NULL;
    CHECK(ct_autograd_grad(1, &y, 1, &x, &g, .create_graph = true) == 0);
    CHECK_VALUES(g, 0, 1, 2, 1, 2, 4, 2, 1, 2, 1);
    CHECK(ct_backward(ct_sum(ct_mul(g, g))) == 0); /* d/dw sum(g^2) */
    CHECK_VALUES(ct_grad(w), 0, 18, 18, 18, 18); /* 2 * (1 + 2 + 2 + 4) each */
    /* asymmetric 'same' padding has no transposed-conv form: a clear error */
    ct_tensor *y2 = ct_sum(ct_conv2d(x, w, NULL, .padding_same = true));
    CHECK_ERROR(ct_autograd_grad(1, &y2, 1, &x, &g, .create_graph = true),
                "ConvolutionBackward0: double backward is not implemented for this geometry");
}

TEST(conv_results_do_not_depend_on_threads) {
    int saved = ct_get_num_threads();
    ct_tensor *x = ct_empty(CT_SHAPE(11, 8, 9, 10)), *w = ct_empty(CT_SHAPE(6, 8, 3, 3));
    float *px = ct_data_ptr(x), *pw = ct_data_ptr(w);
    for (int64_t i = 0; i < ct_numel(x); i++) px[i] = (float)((i * 7919 % 1000) / 1000.0 - 0.5);
    for (int64_t i = 0; i < ct_numel(w); i++) pw[i] = (float)((i * 104729 % 1000) / 1000.0 - 0.5);
    ct_set_requires_grad(x, true);
    ct_set_requires_grad(w, true);
    /* [1, 64, 40, 40] (*) [4, 64, 3, 3]: 8 blocks of output rows */
    ct_tensor *x1 = ct_empty(CT_SHAPE(1, 64, 40, 40)), *w1 = ct_empty(CT_SHAPE(4, 64, 3, 3));
    float *p1 = ct_data_ptr(x1), *q1 = ct_data_ptr(w1);
    for (int64_t i = 0; i < ct_numel(x1); i++) p1[i] = (float)((i * 31 % 100) / 100.0 - 0.5);
    for (int64_t i = 0; i < ct_numel(w1); i++) q1[i] = (float)((i * 17 % 100) / 100.0 - 0.5);
    ct_tensor *ref[4] = {0};
    for (int nt = 1; nt <= 3; nt++) {
        ct_set_num_threads(nt);
        ct_set_grad(x, NULL);
        ct_set_grad(w, NULL);
        ct_tensor *y = ct_conv2d(x, w, NULL, .padding = CT_DIMS(1));
        CHECK(ct_backward(ct_sum(ct_mul(y, y))) == 0);
        /* a batch of one runs its forward in parallel over row blocks */
        ct_tensor *big = ct_conv2d(x1, w1, NULL);
        ct_tensor *r[4] = {y, ct_clone(ct_grad(x)), ct_clone(ct_grad(w)), big};
        for (int i = 0; i < 4; i++) {
            if (nt == 1) ref[i] = r[i];
            else if (ct_test_max_diff(r[i], ref[i]) != 0)
                ct_test_fail(__FILE__, __LINE__, "result %d differs with %d threads", i, nt);
        }
    }
    ct_set_num_threads(saved);
}
