/* The debug lifetime mode (src/core/lifetime.h): run with CT_DEBUG_LIFETIME=1 (ctest
 * does), every ct_ call refuses an object that was already released. */
#include <math.h>

#include "ct_test.h"
#include "core/lifetime.h"

#define RELEASED(fn, k) fn ": argument " #k " was released (use after free)"
/* Without the mode a released object may be reused or freed: these tests would then
 * be use-after-free themselves, so each stops at once. */
#define NEEDS_THE_MODE()                                                            \
    do {                                                                            \
        CHECK(ct_lifetime_debug);                                                   \
        if (!ct_lifetime_debug) return;                                             \
    } while (0)

/* The classic mistake: the result is registered with the scope, so returning from
 * inside it returns a tensor the scope has just freed (ct_keep hands it out). */
static ct_tensor *sum_of_squares_wrong(ct_tensor *t) {
    CT_SCOPE { return ct_sum(ct_mul(t, t)); }
    return NULL;
}
static ct_tensor *sum_of_squares(ct_tensor *t) {
    CT_SCOPE { return ct_keep(ct_sum(ct_mul(t, t))); }
    return NULL;
}

/* A tensor that has just been freed: a pointer the caller must not use any more. */
static ct_tensor *released_tensor(void) {
    ct_tensor *t = NULL;
    CT_SCOPE { t = ct_full(CT_SHAPE(2, 3), 1.5); }
    return t;
}

TEST(returning_from_inside_a_scope_is_reported) {
    NEEDS_THE_MODE();
    ct_tensor *t = ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3));
    ct_tensor *r = sum_of_squares_wrong(t);
    CHECK(isnan(ct_item(r)));
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_item", 1));
    CHECK(ct_sum(r) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_sum", 1));
    CHECK(ct_add(t, r) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_add", 2));
    ct_clear_error();
    CHECK_CLOSE(ct_item(sum_of_squares(t)), 14, 0);
    CHECK(ct_last_error() == NULL);
}

TEST(accessors_refuse_a_released_tensor) {
    NEEDS_THE_MODE();
    ct_tensor *t = released_tensor();
    CHECK_INT_EQ(ct_numel(t), -1);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_numel", 1));
    CHECK_INT_EQ(ct_ndim(t), -1);
    CHECK_INT_EQ(ct_size(t, 0), -1);
    CHECK_INT_EQ(ct_shape_of(t).ndim, 0);
    CHECK(ct_dtype_of(t) == CT_DTYPE_UNSET);
    CHECK(ct_data_ptr(t) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_data_ptr", 1));
    CHECK(ct_item_int(t) == 0);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_item_int", 1));
}

TEST(releasing_twice_is_reported_and_ignored) {
    NEEDS_THE_MODE();
    ct_tensor *t = ct_retain(ct_zeros(CT_SHAPE(4))); /* the scope's reference and ours */
    ct_release(t);
    ct_release(t); /* gone now: the scope's release at the end is reported again */
    ct_release(t);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_release", 1));
    CHECK(ct_retain(t) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_retain", 1));
}

TEST(options_and_later_arguments_are_named_by_position) {
    NEEDS_THE_MODE();
    ct_tensor *x = ct_randn(CT_SHAPE(4, 3)), *dead = released_tensor();
    CHECK(ct_sum(dead, .dims = CT_DIMS(1)) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_sum", 1));
    CHECK(ct_where(ct_gt_scalar(x, 0), x, dead) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_where", 3));
    ct_tensor *list[] = {x, dead};
    CHECK(ct_cat(2, list, 0) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_cat", 2));
    CHECK(ct_add_(x, dead) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_add_", 2));
    CHECK(ct_backward(dead) == -1);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_backward", 1));
}

TEST(modules_and_optimizers_are_checked_too) {
    NEEDS_THE_MODE();
    ct_module *fc = ct_nn_linear(3, 2), *dead_fc = NULL;
    ct_tensor *params[2];
    int n = ct_parameters(fc, params, 2);
    ct_optim *opt = NULL;
    CT_SCOPE {
        opt = ct_sgd(params, n, .lr = CT_SOME(0.1));
        dead_fc = ct_nn_linear(3, 2);
    }
    ct_tensor *x = ct_randn(CT_SHAPE(4, 3));
    CHECK(ct_forward(fc, x) != NULL);
    CHECK_INT_EQ(ct_step(opt), -1);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_step", 1));
    CHECK(ct_forward(dead_fc, x) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_forward", 1));
}

TEST(released_blocks_are_not_reused_at_once) {
    NEEDS_THE_MODE();
    /* the pools would hand the same block to the next tensor */
    ct_tensor *a = ct_zeros(CT_SHAPE(2));
    const void *was = a;
    ct_release(a);
    for (int i = 0; i < 100; i++) CHECK((const void *)ct_zeros(CT_SHAPE(2)) != was);
}

#define RELEASED_OPTION(fn, name) fn ": option ." name " was released (use after free)"

/* Objects given inside options structs are checked as arguments are: tensors (norm
 * weights, attention masks), generators, samplers, a training state's module. */
TEST(objects_in_options_are_checked_too) {
    NEEDS_THE_MODE();
    ct_tensor *x = ct_randn(CT_SHAPE(2, 4, 3)), *dead = released_tensor();
    ct_generator *dead_gen = NULL;
    ct_sampler *dead_sampler = NULL;
    ct_module *dead_net = NULL;
    CT_SCOPE {
        dead_gen = ct_generator_new(5);
        dead_sampler = ct_sequential_sampler(4);
        dead_net = ct_nn_linear(3, 2);
    }
    CHECK(ct_layer_norm(x, CT_SHAPE(3), .weight = dead) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_layer_norm", "weight"));
    CHECK(ct_group_norm(x, 2, .bias = dead) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_group_norm", "bias"));
    CHECK(ct_batch_norm(x, NULL, NULL, .weight = dead, .training = true) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_batch_norm", "weight"));

    CHECK(ct_randn(CT_SHAPE(3), .generator = dead_gen) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_randn", "generator"));
    CHECK(ct_randperm(5, .generator = dead_gen) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_randperm", "generator"));
    CHECK(ct_normal_(x, 0, 1, .generator = dead_gen) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_normal_", "generator"));
    CHECK(ct_bernoulli(ct_full(CT_SHAPE(3), 0.5), .generator = dead_gen) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_bernoulli", "generator"));
    CHECK(ct_multinomial(ct_ones(CT_SHAPE(4)), 2, .generator = dead_gen) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_multinomial", "generator"));
    CHECK(ct_dropout(x, 0.5, true, .generator = dead_gen) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_dropout", "generator"));
    CHECK(ct_nn_dropout(0.5, .generator = dead_gen) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_nn_dropout", "generator"));
    CHECK(ct_init_kaiming_uniform_(ct_empty(CT_SHAPE(2, 3)), .generator = dead_gen) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_init_kaiming_uniform_", "generator"));
    CHECK(ct_random_sampler(4, .generator = dead_gen) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_random_sampler", "generator"));

    ct_tensor *w_in = ct_randn(CT_SHAPE(12, 4)), *w_out = ct_randn(CT_SHAPE(4, 4));
    ct_tensor *q = ct_randn(CT_SHAPE(5, 2, 4));
    ct_attention_result r = ct_multi_head_attention_forward(q, q, q, 4, 2, w_in, NULL, w_out, NULL,
                                                            .attn_mask = dead);
    CHECK(r.output == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_multi_head_attention_forward", "attn_mask"));
    ct_module *mha = ct_nn_multihead_attention(4, 2);
    r = ct_attention(mha, q, q, q, .key_padding_mask = dead);
    CHECK(r.output == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_attention", "key_padding_mask"));

    ct_tensor *data[1] = {x};
    ct_dataset *ds = ct_tensor_dataset(1, data);
    CHECK(ct_dataloader(ds, .batch_size = 1, .sampler = dead_sampler) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_dataloader", "sampler"));
    CHECK_INT_EQ(ct_checkpoint_save("/nonexistent/ckpt.safetensors",
                                    &(ct_training_state){.model = dead_net}), -1);
    CHECK_STR_EQ(ct_last_error(), RELEASED_OPTION("ct_checkpoint_save", "model"));
    ct_clear_error();
}

TEST(released_schedulers_in_an_array_are_named) {
    NEEDS_THE_MODE();
    ct_module *fc = ct_nn_linear(3, 2);
    ct_tensor *params[2];
    int n = ct_parameters(fc, params, 2);
    ct_optim *opt = ct_sgd(params, n, .lr = CT_SOME(0.1));
    ct_scheduler *live = ct_step_lr(opt, 1, 0.5), *dead = NULL;
    CT_SCOPE { dead = ct_step_lr(opt, 1, 0.5); }
    ct_scheduler *scheds[] = {live, dead};
    CHECK(ct_sequential_lr(opt, scheds, 2, ((int64_t[]){2})) == NULL);
    CHECK_STR_EQ(ct_last_error(), RELEASED("ct_sequential_lr", 2));
    ct_clear_error();
}
