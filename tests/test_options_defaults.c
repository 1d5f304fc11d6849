/* The options convention (ctorch/base.h): a zeroed `_with` struct is the macro given
 * nothing, and both are PyTorch's defaults.  Expected values are PyTorch 1.13's
 * (torch.optim's param_groups, the schedulers' lr sequences, the losses' values and
 * the modules' reprs), written down here. */
#include <math.h>
#include <stdlib.h>

#include "ct_test.h"

static ct_tensor *param(void) { return ct_zeros(CT_SHAPE(1), .requires_grad = true); }

TEST(zeroed_optimizer_options_are_pytorch_defaults) {
    ct_tensor *p = param();
    /* optim.Adam([p]).param_groups[0]: lr 0.001, betas (0.9, 0.999), eps 1e-08, weight_decay 0 */
    ct_param_group_info g = ct_optim_param_group(ct_adam_with(&p, 1, (ct_adam_options){0}), 0);
    CHECK(g.lr == 1e-3 && g.beta1 == 0.9 && g.beta2 == 0.999 && g.eps == 1e-8);
    CHECK(g.weight_decay == 0 && !g.amsgrad && !g.maximize);
    ct_param_group_info m = ct_optim_param_group(ct_adam(&p, 1), 0);
    CHECK(m.lr == g.lr && m.beta1 == g.beta1 && m.beta2 == g.beta2 && m.eps == g.eps);
    /* optim.AdamW: weight_decay 0.01 */
    g = ct_optim_param_group(ct_adamw_with(&p, 1, (ct_adam_options){0}), 0);
    CHECK(g.lr == 1e-3 && g.beta1 == 0.9 && g.beta2 == 0.999 && g.eps == 1e-8 &&
          g.weight_decay == 0.01);
    /* AdamW without weight decay, Adam with betas (0, 0.99): zeros given with CT_SOME */
    g = ct_optim_param_group(ct_adamw(&p, 1, .weight_decay = CT_SOME(0)), 0);
    CHECK(g.weight_decay == 0);
    g = ct_optim_param_group(ct_adam(&p, 1, .beta1 = CT_SOME(0), .beta2 = CT_SOME(0.99)), 0);
    CHECK(g.beta1 == 0 && g.beta2 == 0.99);
    /* optim.RMSprop: lr 0.01, alpha 0.99, eps 1e-08, momentum 0, weight_decay 0 */
    g = ct_optim_param_group(ct_rmsprop_with(&p, 1, (ct_rmsprop_options){0}), 0);
    CHECK(g.lr == 0.01 && g.alpha == 0.99 && g.eps == 1e-8 && g.momentum == 0 &&
          g.weight_decay == 0 && !g.centered);
    g = ct_optim_param_group(ct_rmsprop(&p, 1, .alpha = CT_SOME(0)), 0);
    CHECK(g.alpha == 0);
    /* optim.Adagrad: lr 0.01, lr_decay 0, eps 1e-10, initial_accumulator_value 0 */
    g = ct_optim_param_group(ct_adagrad_with(&p, 1, (ct_adagrad_options){0}), 0);
    CHECK(g.lr == 0.01 && g.lr_decay == 0 && g.eps == 1e-10 && g.weight_decay == 0 &&
          g.initial_accumulator_value == 0);
}

TEST(zeroed_clip_options_take_the_two_norm) {
    ct_tensor *w = param();
    ct_set_grad(w, ct_tensor_f32(((float[]){3}), CT_SHAPE(1)));
    ct_tensor *v = param();
    ct_set_grad(v, ct_tensor_f32(((float[]){-4}), CT_SHAPE(1)));
    ct_tensor *ps[] = {w, v};
    /* nn.utils.clip_grad_norm_(..., 100.0) of the gradients (3, -4): 5 */
    CHECK_CLOSE(ct_clip_grad_norm_with(ps, 2, 100, (ct_clip_options){0}), 5, 1e-6);
    CHECK_CLOSE(ct_clip_grad_norm_(ps, 2, 100), 5, 1e-6);
}

TEST(zeroed_one_cycle_options_follow_pytorch) {
    ct_tensor *p = param();
    ct_optim *opt = ct_sgd(&p, 1, .lr = CT_SOME(0.1), .momentum = 0.9);
    /* OneCycleLR(opt, max_lr=0.1, total_steps=10): lr and momentum after each step */
    static const double lr[] = {0.0040000000000000036, 0.052000000000000005, 0.1,
                                0.09504846320134738,   0.0811745653949763,   0.06112620219362893,
                                0.03887419780637107,   0.0188258346050237,   0.004951936798652629,
                                4e-07};
    static const double mom[] = {0.95, 0.8999999999999999, 0.85, 0.854951556604879,
                                 0.8688255099070633, 0.8888739533021842, 0.9111260466978157,
                                 0.9311744900929366, 0.945048443395121, 0.95};
    ct_scheduler *s = ct_one_cycle_lr_with(opt, (ct_one_cycle_options){.max_lr = 0.1,
                                                                      .total_steps = 10});
    CHECK(s);
    for (int i = 0; i < 10; i++) {
        if (i) CHECK(ct_sched_step(s) == 0);
        CHECK_CLOSE(ct_optim_get_lr(opt, 0), lr[i], 1e-15);
        CHECK_CLOSE(ct_optim_get(opt, 0, "momentum"), mom[i], 1e-15);
    }
}

TEST(zeroed_plateau_options_follow_pytorch) {
    ct_tensor *p = param();
    ct_optim *opt = ct_sgd(&p, 1, .lr = CT_SOME(1));
    /* ReduceLROnPlateau(opt) stepped with a constant metric: patience 10, factor 0.1 */
    ct_scheduler *s = ct_reduce_lr_on_plateau_with(opt, (ct_plateau_options){0});
    for (int i = 0; i < 25; i++) {
        CHECK(ct_sched_step_metric(s, 1.0) == 0);
        double want = i < 11 ? 1.0 : i < 22 ? 0.1 : 0.010000000000000002;
        CHECK_CLOSE(ct_optim_get_lr(opt, 0), want, 1e-15);
    }
    /* patience=0 is a value: every bad epoch reduces */
    ct_optim *o2 = ct_sgd(&p, 1, .lr = CT_SOME(1));
    ct_scheduler *s2 = ct_reduce_lr_on_plateau(o2, .patience = CT_SOME(0), .factor = CT_SOME(0.5));
    for (int i = 0; i < 3; i++) CHECK(ct_sched_step_metric(s2, 1.0) == 0);
    CHECK_CLOSE(ct_optim_get_lr(o2, 0), 0.25, 1e-15);
    CHECK_ERROR(ct_reduce_lr_on_plateau(o2, .patience = CT_SOME(1.5)), "patience must be an integer");
}

TEST(zeroed_loss_options_are_pytorch_defaults) {
    ct_tensor *x = ct_tensor_f64(((double[]){0.5, -1, 2, 0.25, 3, -2, 1, 0, -1}), CT_SHAPE(3, 3));
    ct_tensor *y = ct_tensor_i64(((int64_t[]){2, -100, 0}), CT_SHAPE(3));
    /* F.cross_entropy(x, y), F.nll_loss(x, y): the target -100 is ignored */
    CHECK_VALUES(ct_cross_entropy_with(x, y, (ct_cross_entropy_options){0}), 1e-15,
                 0.32445863055076873);
    CHECK_VALUES(ct_cross_entropy(x, y), 1e-15, 0.32445863055076873);
    CHECK_VALUES(ct_nll_loss_with(x, y, (ct_nll_loss_options){0}), 1e-15, -1.5);
    CHECK_VALUES(ct_loss(ct_nn_nll_loss_with((ct_nll_loss_options){0}), x, y), 1e-15, -1.5);
    /* ignore_index=0 is a value */
    ct_tensor *y0 = ct_tensor_i64(((int64_t[]){2, 0, 0}), CT_SHAPE(3));
    CHECK_VALUES(ct_nll_loss(x, y0, .ignore_index = CT_SOME(0)), 1e-15, -2);
    ct_tensor *a = ct_tensor_f64(((double[]){0.2, -1.5, 3, 0.9}), CT_SHAPE(4));
    ct_tensor *b = ct_tensor_f64(((double[]){0, 0.5, 1, 0.1}), CT_SHAPE(4));
    /* F.smooth_l1_loss(a, b) (beta 1), F.huber_loss(a, b) (delta 1), beta=0 is l1 */
    CHECK_VALUES(ct_smooth_l1_loss_with(a, b, (ct_smooth_l1_options){0}), 1e-15, 0.835);
    CHECK_VALUES(ct_huber_loss_with(a, b, (ct_huber_options){0}), 1e-15, 0.835);
    CHECK_VALUES(ct_loss(ct_nn_smooth_l1_loss(), a, b), 1e-15, 0.835);
    CHECK_VALUES(ct_smooth_l1_loss(a, b, .beta = CT_SOME(0)), 1e-15, 1.25);
}

TEST(zeroed_layer_options_are_pytorch_defaults) {
    /* nn.Flatten(): start_dim 1, end_dim -1 */
    ct_module *f = ct_nn_flatten_with((ct_flatten_options){0});
    char *s = ct_module_to_string(f);
    CHECK_STR_EQ(s, "Flatten(start_dim=1, end_dim=-1)");
    free(s);
    ct_tensor *x = ct_zeros(CT_SHAPE(2, 3, 4));
    ct_shape fs = ct_shape_of(ct_forward(f, x));
    CHECK(fs.ndim == 2 && fs.d[0] == 2 && fs.d[1] == 12);
    fs = ct_shape_of(ct_forward(ct_nn_flatten(.start_dim = CT_SOME(0)), x));
    CHECK(fs.ndim == 1 && fs.d[0] == 24);
    CHECK_ERROR(ct_nn_flatten(.end_dim = CT_SOME(0.5)), "end_dim must be an integer");
    /* print(nn.TransformerEncoderLayer(8, 2)) */
    static const char ENCODER[] =
        "TransformerEncoderLayer(\n"
        "  (self_attn): MultiheadAttention(\n"
        "    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
        "  )\n"
        "  (linear1): Linear(in_features=8, out_features=2048, bias=True)\n"
        "  (dropout): Dropout(p=0.1, inplace=False)\n"
        "  (linear2): Linear(in_features=2048, out_features=8, bias=True)\n"
        "  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        "  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        "  (dropout1): Dropout(p=0.1, inplace=False)\n"
        "  (dropout2): Dropout(p=0.1, inplace=False)\n"
        ")";
    s = ct_module_to_string(ct_nn_transformer_encoder_layer(8, 2));
    CHECK_STR_EQ(s, ENCODER);
    free(s);
    ct_encoder_layer_options eo = {0};
    eo.activation = CT_ACT_RELU;
    s = ct_module_to_string(ct_nn_transformer_encoder_layer_with(8, 2, eo));
    CHECK_STR_EQ(s, ENCODER);
    free(s);
    s = ct_module_to_string(ct_nn_transformer_encoder_layer(8, 2, .dropout = CT_SOME(0)));
    CHECK(strstr(s, "(dropout): Dropout(p=0.0, inplace=False)"));
    free(s);
}

TEST(leaky_relu_slope_zero_is_relu) {
    ct_tensor *x = ct_tensor_f64(((double[]){-2, -0.5, 0, 1.5}), CT_SHAPE(4));
    CHECK_VALUES(ct_leaky_relu(x), 1e-15, -0.02, -0.005, 0, 1.5);
    CHECK_VALUES(ct_leaky_relu(x, .negative_slope = CT_SOME(0)), 0, 0, 0, 0, 1.5);
    CHECK_VALUES(ct_forward(ct_nn_leaky_relu(.negative_slope = CT_SOME(0)), x), 0, 0, 0, 0, 1.5);
    /* F.elu(x, alpha=0) is relu too; F.softplus(x, beta=1, threshold=0): x where x > 0 */
    CHECK_VALUES(ct_elu(x, .alpha = CT_SOME(0)), 0, 0, 0, 0, 1.5);
    CHECK_VALUES(ct_softplus(x, .threshold = CT_SOME(0)), 1e-15, 0.1269280110429725,
                 0.4740769841801067, 0.6931471805599453, 1.5);
}

TEST(pooling_options_one_struct_per_layer) {
    ct_manual_seed(3);
    ct_tensor *x = ct_randn(CT_SHAPE(1, 2, 5, 5));
    ct_max_pool2d_options mo = {.kernel_size = CT_DIMS(3), .stride = CT_DIMS(2),
                                .padding = CT_DIMS(1), .dilation = CT_DIMS(1)};
    CHECK(ct_test_max_diff(ct_forward(ct_nn_max_pool2d_with(mo), x), ct_max_pool2d_with(x, mo)) == 0);
    ct_avg_pool2d_options ao = {.kernel_size = CT_DIMS(3), .stride = CT_DIMS(2),
                                .padding = CT_DIMS(1), .count_include_pad = true};
    CHECK(ct_test_max_diff(ct_forward(ct_nn_avg_pool2d_with(ao), x), ct_avg_pool2d_with(x, ao)) == 0);
    /* the macros' count_include_pad is PyTorch's True */
    CHECK(ct_test_max_diff(ct_avg_pool2d(x, .kernel_size = CT_DIMS(3), .stride = CT_DIMS(2),
                                         .padding = CT_DIMS(1)),
                           ct_avg_pool2d_with(x, ao)) == 0);
    ao.count_include_pad = false;
    CHECK(ct_test_max_diff(ct_avg_pool2d(x, .kernel_size = CT_DIMS(3), .stride = CT_DIMS(2),
                                         .padding = CT_DIMS(1), .count_include_pad = false),
                           ct_avg_pool2d_with(x, ao)) == 0);
    CHECK_ERROR(ct_max_pool2d(x, .kernel_size = CT_DIMS(2), .return_indices = true),
                "ct_max_pool2d: return_indices=True gives two results");
}
