/* Losses: values and gradients against PyTorch for every loss and reduction (float64
 * and float32), errors with PyTorch's messages, modules, stability, memory. */
#include <stdlib.h>

#include "ct_test.h"
#include "opcase.h"

/* Values and gradients against PyTorch: the OPCASE rows of file loss in
 * tests/opinfo.def (the generator reads the same rows), every reduction. */
static opcase_tol tolerances(ct_dtype dt) {
    return dt == CT_F64 ? (opcase_tol){1e-12, 1e-12} : (opcase_tol){2e-5, 2e-5};
}

TEST(losses_match_pytorch) { CHECK(opcase_check("loss", tolerances) > 200); }

TEST(cross_entropy_is_stable_and_fused) {
    float v[] = {1e4, -1e4, 0, -1e4, -1e4, 1e4};
    ct_tensor *x = ct_tensor_f32(v, CT_SHAPE(2, 3), .requires_grad = true);
    ct_tensor *t = ct_tensor_i64(((int64_t[]){1, 2}), CT_SHAPE(2));
    ct_tensor *l = ct_cross_entropy(x, t);
    CHECK_VALUES(l, 1e-3, 1e4);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(l)), "NllLossBackward0");
    CHECK(ct_backward(l) == 0);
    CHECK_VALUES(ct_grad(x), 1e-6, 0.5, -0.5, 0, 0, 0, 0);
    /* Everything ignored: the mean is 0 / 0 (NaN) and the gradient zero, as PyTorch. */
    ct_tensor *x2 = ct_zeros(CT_SHAPE(2, 3), .requires_grad = true);
    ct_tensor *all = ct_full(CT_SHAPE(2), -100, .dtype = CT_I64);
    ct_tensor *l2 = ct_cross_entropy(x2, all);
    CHECK(isnan(ct_item(l2)));
    CHECK(ct_backward(l2) == 0);
    CHECK_VALUES(ct_grad(x2), 0, 0, 0, 0, 0, 0, 0);
    CHECK_VALUES(ct_cross_entropy(x2, all, .reduction = CT_REDUCTION_SUM), 0, 0);
    /* An empty batch: mean NaN, sum 0. */
    ct_tensor *e = ct_zeros(CT_SHAPE(0, 3));
    CHECK(isnan(ct_item(ct_cross_entropy(e, ct_zeros(CT_SHAPE(0), .dtype = CT_I64)))));
    CHECK_VALUES(ct_nll_loss(e, ct_zeros(CT_SHAPE(0), .dtype = CT_I64), .reduction = CT_REDUCTION_SUM), 0, 0);
    /* float16 computes through float32. */
    ct_tensor *h = ct_to(ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(1, 3)), .dtype = CT_F16);
    ct_tensor *lh = ct_cross_entropy(h, ct_tensor_i64((int64_t[]){2}, CT_SHAPE(1)));
    CHECK_INT_EQ(ct_dtype_of(lh), CT_F16);
    CHECK_VALUES(lh, 1e-3, 0.40760596);
}

TEST(double_backward_through_cross_entropy) {
    ct_tensor *x = ct_tensor_f64(((double[]){0.1, -0.2, 0.3, 0.5, 0.0, -1.0}), CT_SHAPE(2, 3),
                                 .requires_grad = true);
    ct_tensor *t = ct_tensor_i64(((int64_t[]){2, 0}), CT_SHAPE(2));
    ct_tensor *l = ct_cross_entropy(x, t);
    ct_tensor *g[1];
    CHECK(ct_autograd_grad(1, &l, 1, &x, g, .create_graph = true) == 0);
    /* d/dx of sum(grad^2) exists (through LogSoftmaxBackwardData). */
    ct_tensor *s = ct_sum(ct_mul(g[0], g[0]));
    CHECK(ct_backward(s) == 0);
    CHECK(ct_grad(x) != NULL);
}

TEST(loss_errors_match_pytorch) {
    ct_tensor *x = ct_zeros(CT_SHAPE(3, 4));
    ct_tensor *tf = ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3));
    ct_tensor *t2 = ct_tensor_i64(((int64_t[]){1, 2}), CT_SHAPE(2));
    ct_tensor *t5 = ct_tensor_i64(((int64_t[]){1, 2, 5}), CT_SHAPE(3));
    ct_tensor *t3 = ct_tensor_i64(((int64_t[]){1, 2, 3}), CT_SHAPE(3));
    CHECK_ERROR(ct_cross_entropy(x, tf), "expected scalar type Long but found Float");
    CHECK_ERROR(ct_nll_loss(x, ct_to(t3, .dtype = CT_I32)), "expected scalar type Long but found Int");
    CHECK_ERROR(ct_cross_entropy(x, t2), "Expected input batch_size (3) to match target batch_size (2).");
    CHECK_ERROR(ct_cross_entropy(x, t5), "Target 5 is out of bounds.");
    CHECK_ERROR(ct_nll_loss(x, t3, .ignore_index = CT_SOME(0), .weight = ct_ones(CT_SHAPE(3))),
                "weight tensor should be defined either for all 4 classes or no classes but got "
                "weight tensor of shape: [3]");
    CHECK_ERROR(ct_nll_loss(x, t3, .weight = ct_ones(CT_SHAPE(4), .dtype = CT_F64)),
                "expected scalar type Float but found Double");
    CHECK_ERROR(ct_cross_entropy(x, t3, .label_smoothing = 1.5),
                "label_smoothing must be between 0.0 and 1.0. Got: 1.5");
    CHECK_ERROR(ct_cross_entropy(x, t3, .reduction = CT_REDUCTION_BATCHMEAN),
                "batchmean is not a valid value for reduction");
    CHECK_ERROR(ct_cross_entropy(x, ct_zeros(CT_SHAPE(3, 4)), .ignore_index = CT_SOME(1)),
                "ignore_index is not supported for floating point target");
    CHECK_ERROR(ct_cross_entropy(x, ct_zeros(CT_SHAPE(3, 4), .dtype = CT_I64)),
                "Expected floating point type for target with class probabilities, got Long");
    CHECK_ERROR(ct_cross_entropy(x, ct_zeros(CT_SHAPE(3, 5))),
                "0D or 1D target tensor expected, multi-target not supported");
    CHECK_ERROR(ct_cross_entropy(ct_zeros(CT_SHAPE(4)), ct_zeros(CT_SHAPE(1), .dtype = CT_I64)),
                "size mismatch (got input: [4], target: [1])");
    ct_tensor *k = ct_zeros(CT_SHAPE(2, 3, 4));
    CHECK_ERROR(ct_cross_entropy(k, ct_zeros(CT_SHAPE(2, 3), .dtype = CT_I64)),
                "Expected target size [2, 4], got [2, 3]");
    CHECK_ERROR(ct_nll_loss(ct_zeros(CT_SHAPE(2, 3, 4, 5)), ct_zeros(CT_SHAPE(2, 4, 6), .dtype = CT_I64)),
                "size mismatch (got input: [2, 3, 4, 5] , target: [2, 4, 6]");
    CHECK_ERROR(ct_nll_loss(ct_zeros(CT_SHAPE(2, 3), .dtype = CT_I64), t2),
                "\"nll_loss_out_frame\" not implemented for 'Long'");
    CHECK_ERROR(ct_nll_loss(ct_zeros(CT_SHAPE()), t2), "Expected 1 or more dimensions (got 0)");
    /* binary cross entropy */
    ct_tensor *p = ct_full(CT_SHAPE(2, 3), 0.5);
    CHECK_ERROR(ct_binary_cross_entropy(ct_add_scalar(p, 1), p),
                "all elements of input should be between 0 and 1");
    CHECK_ERROR(ct_binary_cross_entropy(ct_full(CT_SHAPE(1), NAN), ct_zeros(CT_SHAPE(1))),
                "all elements of input should be between 0 and 1");
    CHECK_ERROR(ct_binary_cross_entropy(p, ct_full(CT_SHAPE(3), 0.5)),
                "Using a target size (torch.Size([3])) that is different to the input size "
                "(torch.Size([2, 3])) is deprecated");
    CHECK_ERROR(ct_binary_cross_entropy(p, ct_to(p, .dtype = CT_F64)),
                "Found dtype Double but expected Float");
    CHECK_ERROR(ct_binary_cross_entropy_with_logits(p, ct_full(CT_SHAPE(3), 0.5)),
                "Target size (torch.Size([3])) must be the same as input size (torch.Size([2, 3]))");
    /* regression: broadcasting allowed, mismatches refused by the broadcast */
    CHECK(ct_mse_loss(p, ct_zeros(CT_SHAPE(3))) != NULL);
    CHECK_ERROR(ct_mse_loss(p, ct_zeros(CT_SHAPE(4))), "must match");
    CHECK_ERROR(ct_smooth_l1_loss(p, p, .beta = CT_SOME(-1)),
                "smooth_l1_loss does not support negative values for beta.");
    CHECK_ERROR(ct_huber_loss(p, p, .delta = -1),
                "huber_loss does not support non-positive values for delta.");
    CHECK_ERROR(ct_mse_loss(p, p, .reduction = CT_REDUCTION_BATCHMEAN),
                "batchmean is not a valid value for reduction");
    /* pairs */
    CHECK_ERROR(ct_cosine_embedding_loss(p, p, ct_ones(CT_SHAPE(2, 1))),
                "0D or 1D target tensor expected, multi-target not supported");
    CHECK_ERROR(ct_cosine_embedding_loss(ct_ones(CT_SHAPE(3)), p, ct_ones(CT_SHAPE(2))),
                "1D target tensor expects 2D input tensors, but found inputs with sizes [3] and [2, 3].");
    CHECK_ERROR(ct_margin_ranking_loss(ct_ones(CT_SHAPE(3)), ct_ones(CT_SHAPE(3)), ct_ones(CT_SHAPE(2, 1))),
                "All input tensors should have same dimension but got sizes: input1: torch.Size([3])");
    /* NULL in, NULL out, first error kept */
    CHECK(ct_cross_entropy(NULL, t3) == NULL);
}

TEST(loss_modules) {
    ct_tensor *w = ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3));
    ct_module *m = ct_nn_cross_entropy_loss(.weight = w, .label_smoothing = 0.1);
    CHECK_STR_EQ(ct_module_type(m), "CrossEntropyLoss");
    char *s = ct_module_to_string(m);
    CHECK_STR_EQ(s, "CrossEntropyLoss()");
    free(s);
    ct_state_dict *sd = ct_module_state_dict(m);
    CHECK_INT_EQ(ct_state_dict_len(sd), 1);
    CHECK_STR_EQ(ct_state_dict_key(sd, 0), "weight");
    CHECK_INT_EQ(ct_module_num_parameters(m, false), 0);
    ct_tensor *x = ct_tensor_f32(((float[]){0.1f, 0.2f, 0.3f, -1, 0, 1}), CT_SHAPE(2, 3));
    ct_tensor *t = ct_tensor_i64(((int64_t[]){0, 2}), CT_SHAPE(2));
    ct_tensor *want = ct_cross_entropy(x, t, .weight = w, .label_smoothing = 0.1);
    CHECK_CLOSE(ct_item(ct_loss(m, x, t)), ct_item(want), 1e-7);
    ct_tensor *in[2] = {x, t}, *out[1] = {NULL};
    CHECK_INT_EQ(ct_forward_multi(m, 2, in, out, 1), 1);
    CHECK_CLOSE(ct_item(out[0]), ct_item(want), 1e-7);
    CHECK_ERROR(ct_forward(m, x), "CrossEntropyLoss takes 2 inputs");
    /* The buffer shares the caller's memory and converts with the module. */
    CHECK(ct_module_to(m, .dtype = CT_F64) == 0);
    CHECK_INT_EQ(ct_dtype_of(ct_module_get_buffer(m, "weight")), CT_F64);
    CHECK_INT_EQ(ct_dtype_of(w), CT_F32);
    CHECK_CLOSE(ct_item(ct_loss(m, ct_to(x, .dtype = CT_F64), t)), ct_item(want), 1e-6);
    ct_module_state_dict(m);

    ct_module *b = ct_nn_bce_with_logits_loss(.pos_weight = ct_ones(CT_SHAPE(3)));
    const char *names[4];
    ct_tensor *bufs[4];
    CHECK_INT_EQ(ct_named_buffers(b, names, bufs, 4), 1);
    CHECK_STR_EQ(names[0], "pos_weight");
    ct_module *r = ct_nn_margin_ranking_loss(.margin = 0.5);
    ct_tensor *a1 = ct_tensor_f32(((float[]){1, 2}), CT_SHAPE(2));
    ct_tensor *a2 = ct_tensor_f32(((float[]){2, 1}), CT_SHAPE(2));
    ct_tensor *y = ct_tensor_f32(((float[]){1, 1}), CT_SHAPE(2));
    CHECK_VALUES(ct_loss3(r, a1, a2, y), 1e-6, 0.75);
    CHECK_ERROR(ct_loss(r, a1, a2), "MarginRankingLoss takes 3 inputs");
    CHECK_VALUES(ct_loss(ct_nn_mse_loss(.reduction = CT_REDUCTION_SUM), a1, a2), 1e-6, 2);
    CHECK_VALUES(ct_loss(ct_nn_huber_loss(.delta = 0.5), a1, a2), 1e-6, 0.375);
    CHECK_VALUES(ct_loss(ct_nn_smooth_l1_loss(), a1, a2), 1e-6, 0.5);
    CHECK_VALUES(ct_loss(ct_nn_l1_loss(.reduction = CT_REDUCTION_NONE), a1, a2), 1e-6, 1, 1);
    CHECK_STR_EQ(ct_module_type(ct_nn_nll_loss()), "NLLLoss");
    CHECK_STR_EQ(ct_module_type(ct_nn_bce_loss()), "BCELoss");
    CHECK_STR_EQ(ct_module_type(ct_nn_kl_div_loss(.log_target = true)), "KLDivLoss");
    CHECK_STR_EQ(ct_module_type(ct_nn_cosine_embedding_loss()), "CosineEmbeddingLoss");
}

TEST(losses_leak_nothing_outside_scopes) {
    int64_t before = ct_memory_allocated(CT_CPU);
    CT_SCOPE {
        ct_tensor *x = ct_ones(CT_SHAPE(4, 3), .requires_grad = true);
        ct_tensor *t = ct_zeros(CT_SHAPE(4), .dtype = CT_I64);
        ct_module *m = ct_nn_cross_entropy_loss(.weight = ct_ones(CT_SHAPE(3)));
        CHECK(ct_backward(ct_loss(m, x, t)) == 0);
        CHECK(ct_backward(ct_cross_entropy(x, t, .label_smoothing = 0.2)) == 0);
        ct_tensor *p = ct_full(CT_SHAPE(4, 3), 0.3, .requires_grad = true);
        CHECK(ct_backward(ct_binary_cross_entropy(p, ct_zeros(CT_SHAPE(4, 3)))) == 0);
    }
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), before);
}

TEST(nll_loss_is_thread_independent) {
    ct_tensor *x = ct_log_softmax(ct_randn(CT_SHAPE(300, 7, 40)), 1);
    ct_tensor *t = ct_randint(0, 7, CT_SHAPE(300, 40));
    double v[3];
    for (int n = 1; n <= 3; n++) {
        ct_set_num_threads(n);
        v[n - 1] = ct_item(ct_nll_loss(x, t));
    }
    ct_set_num_threads(2);
    CHECK(v[0] == v[1] && v[1] == v[2]);
}

TEST(loss_grad_fns_and_weight_loading) {
    ct_tensor *p = ct_full(CT_SHAPE(2), 0.25, .requires_grad = true);
    ct_tensor *l = ct_binary_cross_entropy(p, ct_zeros(CT_SHAPE(2)), .reduction = CT_REDUCTION_NONE);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(l)), "BinaryCrossEntropyBackward0");
    /* A checkpoint's weight loads into the module's buffer, whose memory is the
     * caller's tensor's (PyTorch registers the tensor itself). */
    ct_tensor *w = ct_ones(CT_SHAPE(3));
    ct_module *m = ct_nn_nll_loss(.weight = w);
    ct_state_dict *sd = ct_state_dict_new();
    ct_state_dict_set(sd, "weight", ct_tensor_f32(((float[]){0, 1, 0}), CT_SHAPE(3)));
    CHECK(ct_load_state_dict(m, sd) == 0);
    ct_tensor *x = ct_tensor_f32(((float[]){-1, -2, -3, -4, -5, -6}), CT_SHAPE(2, 3));
    ct_tensor *t = ct_tensor_i64(((int64_t[]){1, 0}), CT_SHAPE(2));
    CHECK_VALUES(ct_loss(m, x, t), 1e-6, 2); /* only the class-1 target counts */
    CHECK_VALUES(w, 0, 0, 1, 0);
}

/* The grad_fn of every loss for each reduction is PyTorch 1.13's (printed by
 * torch: type(loss.grad_fn).__name__): a node of its own where PyTorch has a native
 * op (MseLossBackward0, NllLoss2DBackward0, ...), the last op of PyTorch's
 * composition where PyTorch composes (l1, kl_div, cosine embedding, ...). */
static const char *grad_fn_of(ct_tensor *t) {
    ct_node *n = t ? ct_grad_fn(t) : NULL;
    return n ? ct_node_name(n) : t ? "None" : "NULL";
}

TEST(loss_grad_fn_names_match_pytorch) {
    ct_tensor *x = ct_randn(CT_SHAPE(4, 3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *y = ct_randn(CT_SHAPE(4, 3), .dtype = CT_F64);
    ct_tensor *p = ct_rand(CT_SHAPE(4, 3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *t = ct_rand(CT_SHAPE(4, 3), .dtype = CT_F64);
    ct_tensor *ci = ct_tensor_i64(((int64_t[]){0, 2, 1, 1}), CT_SHAPE(4));
    ct_tensor *x4 = ct_randn(CT_SHAPE(2, 3, 4, 5), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *c4 = ct_zeros(CT_SHAPE(2, 4, 5), .dtype = CT_I64);
    ct_tensor *x3 = ct_randn(CT_SHAPE(2, 3, 4), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *c3 = ct_zeros(CT_SHAPE(2, 4), .dtype = CT_I64);
    ct_tensor *x5 = ct_randn(CT_SHAPE(2, 3, 2, 2, 2), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *c5 = ct_zeros(CT_SHAPE(2, 2, 2, 2), .dtype = CT_I64);
    ct_tensor *x1 = ct_randn(CT_SHAPE(3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *c0 = ct_zeros(CT_SHAPE(), .dtype = CT_I64);
    ct_tensor *pm = ct_tensor_f64(((double[]){1, -1, 1, -1}), CT_SHAPE(4));
    ct_tensor *a = ct_randn(CT_SHAPE(4), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *b = ct_randn(CT_SHAPE(4), .dtype = CT_F64, .requires_grad = true);
    /* Columns: reduction mean, sum, none. */
    static const char *want[][3] = {
        {"MseLossBackward0", "MseLossBackward0", "MseLossBackward0"},
        {"MseLossBackward0", "MseLossBackward0", "MseLossBackward0"}, /* broadcast target */
        {"MeanBackward0", "SumBackward0", "AbsBackward0"},
        {"SmoothL1LossBackward0", "SmoothL1LossBackward0", "SmoothL1LossBackward0"},
        {"SmoothL1LossBackward0", "SmoothL1LossBackward0", "SmoothL1LossBackward0"}, /* beta 0 */
        {"HuberLossBackward0", "HuberLossBackward0", "HuberLossBackward0"},
        {"BinaryCrossEntropyBackward0", "BinaryCrossEntropyBackward0", "BinaryCrossEntropyBackward0"},
        {"BinaryCrossEntropyBackward0", "BinaryCrossEntropyBackward0", "BinaryCrossEntropyBackward0"},
        {"BinaryCrossEntropyWithLogitsBackward0", "BinaryCrossEntropyWithLogitsBackward0",
         "BinaryCrossEntropyWithLogitsBackward0"},
        {"BinaryCrossEntropyWithLogitsBackward0", "BinaryCrossEntropyWithLogitsBackward0",
         "BinaryCrossEntropyWithLogitsBackward0"},
        {"NllLossBackward0", "NllLossBackward0", "NllLossBackward0"},
        {"NllLoss2DBackward0", "NllLoss2DBackward0", "NllLoss2DBackward0"},
        {"NllLoss2DBackward0", "NllLoss2DBackward0", "ViewBackward0"},
        {"NllLoss2DBackward0", "NllLoss2DBackward0", "ViewBackward0"},
        {"NllLossBackward0", "NllLossBackward0", "NllLossBackward0"},
        {"NllLossBackward0", "NllLossBackward0", "NllLossBackward0"},
        {"NllLoss2DBackward0", "NllLoss2DBackward0", "NllLoss2DBackward0"},
        {"AddBackward0", "AddBackward0", "AddBackward0"},
        {"DivBackward1", "NegBackward0", "NegBackward0"},
        {"MeanBackward0", "SumBackward0", "SubBackward0"},
        {"MeanBackward0", "SumBackward0", "MulBackward0"},
        {"MeanBackward0", "SumBackward0", "AddBackward0"},
        {"MeanBackward0", "SumBackward0", "ClampMinBackward0"},
    };
    for (int r = 0; r < 3; r++) {
        CT_SCOPE {
            ct_reduction red = (ct_reduction)r;
            ct_tensor *got[] = {
                ct_mse_loss(x, y, .reduction = red),
                ct_mse_loss(x, ct_select(y, 0, 0), .reduction = red),
                ct_l1_loss(x, y, .reduction = red),
                ct_smooth_l1_loss(x, y, .reduction = red),
                ct_smooth_l1_loss(x, y, .reduction = red, .beta = CT_SOME(0)),
                ct_huber_loss(x, y, .reduction = red),
                ct_binary_cross_entropy(p, t, .reduction = red),
                ct_binary_cross_entropy(p, t, .reduction = red, .weight = t),
                ct_binary_cross_entropy_with_logits(x, t, .reduction = red),
                ct_binary_cross_entropy_with_logits(x, t, .reduction = red, .weight = t,
                                                    .pos_weight = ct_select(t, 0, 0)),
                ct_nll_loss(x, ci, .reduction = red),
                ct_nll_loss(x4, c4, .reduction = red),
                ct_nll_loss(x3, c3, .reduction = red),
                ct_nll_loss(x5, c5, .reduction = red),
                ct_nll_loss(x1, c0, .reduction = red),
                ct_cross_entropy(x, ci, .reduction = red),
                ct_cross_entropy(x4, c4, .reduction = red),
                ct_cross_entropy(x, ci, .reduction = red, .label_smoothing = 0.1),
                ct_cross_entropy(x, t, .reduction = red),
                ct_kl_div(x, t, .reduction = red),
                ct_kl_div(x, t, .reduction = red, .log_target = true),
                ct_cosine_embedding_loss(x, p, pm, .reduction = red),
                ct_margin_ranking_loss(a, b, pm, .reduction = red),
            };
            for (size_t i = 0; i < sizeof got / sizeof *got; i++) {
                if (strcmp(grad_fn_of(got[i]), want[i][r]))
                    ct_test_fail(__FILE__, __LINE__, "loss %zu, reduction %d: grad_fn %s, want %s",
                                 i, r, grad_fn_of(got[i]), want[i][r]);
            }
        }
    }
    CHECK_STR_EQ(grad_fn_of(ct_kl_div(x, t, .reduction = CT_REDUCTION_BATCHMEAN)), "DivBackward0");
    /* The gradient of a viewed nll (Note [nll2d]) has its own double backward. */
    ct_tensor *l = ct_nll_loss(x3, c3, .reduction = CT_REDUCTION_NONE);
    ct_tensor *g[1], *go = ct_ones(CT_SHAPE(2, 4), .dtype = CT_F64, .requires_grad = true);
    CHECK(ct_autograd_grad(1, &l, 1, &x3, g, .create_graph = true, .grad_outputs = &go) == 0);
    CHECK_STR_EQ(grad_fn_of(g[0]), "NllLoss2DBackwardBackward0");
    CHECK(ct_backward(ct_sum(ct_mul(g[0], g[0]))) == 0);
    CHECK_INT_EQ(ct_numel(ct_grad(go)), 8);
}

/* Under create_graph the gradients of the elementwise losses are made by their fused
 * backward ops, named as PyTorch 1.13's (the target's of a regression loss too: the
 * same op with input and target swapped); binary_cross_entropy_with_logits' backward,
 * which PyTorch composes, is ctorch's own op.  Their own backward runs.  Values at the
 * kinks (sum reduction) are PyTorch's: smooth_l1 with beta 0 gives -1 at input ==
 * target for the target's gradient as for the input's. */
TEST(loss_backward_ops_and_kinks_match_pytorch) {
    ct_tensor *x = ct_tensor_f64(((double[]){0, 1, 2, 0.5}), CT_SHAPE(4), .requires_grad = true);
    ct_tensor *y = ct_tensor_f64(((double[]){0, 1.5, 1, 0.5}), CT_SHAPE(4), .requires_grad = true);
    ct_tensor *p = ct_tensor_f64(((double[]){0.2, 0.5, 0.7, 0.9}), CT_SHAPE(4), .requires_grad = true);
    ct_tensor *in[2] = {x, y}, *pin[2] = {p, y};
    ct_reduction sum = CT_REDUCTION_SUM;
    struct {
        ct_tensor *loss, **in;
        const char *name[2];
        double g[2][4];
    } cases[] = {
        {ct_mse_loss(x, y, .reduction = sum), in, {"MseLossBackwardBackward0", "MseLossBackwardBackward0"},
         {{0, -1, 2, 0}, {0, 1, -2, 0}}},
        {ct_smooth_l1_loss(x, y, .reduction = sum, .beta = CT_SOME(0)), in,
         {"SmoothL1LossBackwardBackward0", "SmoothL1LossBackwardBackward0"},
         {{-1, -1, 1, -1}, {-1, 1, -1, -1}}},
        {ct_smooth_l1_loss(x, y, .reduction = sum, .beta = CT_SOME(0.5)), in,
         {"SmoothL1LossBackwardBackward0", "SmoothL1LossBackwardBackward0"},
         {{0, -1, 1, 0}, {0, 1, -1, 0}}},
        {ct_huber_loss(x, y, .reduction = sum, .delta = 0.5), in,
         {"HuberLossBackwardBackward0", "HuberLossBackwardBackward0"},
         {{0, -0.5, 0.5, 0}, {0, 0.5, -0.5, 0}}},
        {ct_binary_cross_entropy(p, y, .reduction = sum), pin,
         {"BinaryCrossEntropyBackwardBackward0", "MulBackward0"}, {{NAN}}},
        {ct_binary_cross_entropy_with_logits(x, y, .reduction = sum), in,
         {"BinaryCrossEntropyWithLogitsBackwardBackward0", "MulBackward0"}, {{NAN}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ct_tensor *g[2] = {NULL, NULL};
        CHECK(ct_autograd_grad(1, &cases[i].loss, 2, cases[i].in, g, .create_graph = true) == 0);
        for (int k = 0; k < 2; k++) {
            if (strcmp(grad_fn_of(g[k]), cases[i].name[k]))
                ct_test_fail(__FILE__, __LINE__, "loss %zu, gradient %d: grad_fn %s, want %s", i,
                             k, grad_fn_of(g[k]), cases[i].name[k]);
            if (isnan(cases[i].g[0][0])) continue;
            double *v = ct_test_values(g[k]);
            for (int j = 0; v && j < 4; j++)
                if (v[j] != cases[i].g[k][j])
                    ct_test_fail(__FILE__, __LINE__, "loss %zu, gradient %d [%d]: %g, want %g", i,
                                 k, j, v[j], cases[i].g[k][j]);
            free(v);
        }
        CHECK(ct_backward(ct_sum(ct_add(ct_mul(g[0], g[0]), g[1]))) == 0);
    }
}

/* The elementwise loss kernels and the fused loss backwards split their elements over
 * the threads: every thread count gives the same bits (float32, sizes over the
 * iterator's grain, a weight, a broadcast pos_weight, a broadcast target; the
 * elementwise losses, and the gradients of their mean). */
TEST(loss_gradients_are_thread_independent) {
    ct_tensor *x = ct_randn(CT_SHAPE(7, 10001), .requires_grad = true);
    ct_tensor *y = ct_randn(CT_SHAPE(7, 10001), .requires_grad = true);
    ct_tensor *yb = ct_randn(CT_SHAPE(10001), .requires_grad = true);
    ct_tensor *p = ct_rand(CT_SHAPE(7, 10001), .requires_grad = true);
    ct_tensor *t = ct_rand(CT_SHAPE(7, 10001), .requires_grad = true);
    ct_tensor *w = ct_rand(CT_SHAPE(7, 10001)), *pw = ct_rand(CT_SHAPE(10001));
    int threads = ct_get_num_threads();
    ct_tensor *first[6][3] = {{NULL}};
    for (int n = 1; n <= 3; n++) {
        ct_set_num_threads(n);
        ct_tensor *xy[2] = {x, y}, *xyb[2] = {x, yb}, *pt[2] = {p, t}, *xt[2] = {x, t};
        for (int i = 0; i < 6; i++) {
            ct_tensor *g[3] = {NULL, NULL, NULL}, **in = i == 0 ? xyb : i < 3 ? xy : i == 3 ? pt : xt;
            for (int r = 0; r < 2; r++) {
                ct_reduction red = r ? CT_REDUCTION_MEAN : CT_REDUCTION_NONE;
                ct_tensor *l = i == 0   ? ct_mse_loss(x, yb, .reduction = red)
                               : i == 1 ? ct_smooth_l1_loss(x, y, .beta = CT_SOME(0.5), .reduction = red)
                               : i == 2 ? ct_huber_loss(x, y, .reduction = red)
                               : i == 3 ? ct_binary_cross_entropy(p, t, .weight = w, .reduction = red)
                               : i == 4 ? ct_binary_cross_entropy_with_logits(x, t, .pos_weight = pw,
                                                                              .reduction = red)
                                        : ct_binary_cross_entropy_with_logits(x, t, .weight = w,
                                                                              .reduction = red);
                if (!r) g[2] = l;
                else CHECK(ct_autograd_grad(1, &l, 2, in, g) == 0);
            }
            for (int k = 0; k < 3; k++) {
                if (n == 1) {
                    first[i][k] = g[k];
                    continue;
                }
                if (!g[k] || !first[i][k] ||
                    memcmp(ct_data_ptr(g[k]), ct_data_ptr(first[i][k]),
                           (size_t)ct_numel(g[k]) * sizeof(float)))
                    ct_test_fail(__FILE__, __LINE__, "loss %d, %s %d: %d threads differ from 1",
                                 i, k < 2 ? "gradient" : "output", k, n);
            }
        }
    }
    ct_set_num_threads(threads);
}
