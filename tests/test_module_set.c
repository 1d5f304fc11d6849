/* ct_module_set: replacing a registered child (model.fc = nn.Linear(...)), by name and
 * by dotted path, in custom modules, built-in composites and containers. */
#include <stdlib.h>

#include "ct_test.h"

/* A custom module keeping its children in its state, as nn.h recommends. */
typedef struct {
    ct_module *features, *fc;
    int calls;
} net;

static ct_tensor *net_forward(ct_module *m, ct_tensor *x) {
    net *s = ct_module_state(m);
    s->calls++;
    return ct_forward(s->fc, ct_relu(ct_forward(s->features, x)));
}
static const ct_module_class NET = {.name = "Net", .forward = net_forward};

static ct_module *net_new(void) {
    ct_module *m = ct_module_new(&NET, sizeof(net));
    net *s = ct_module_state(m);
    s->features = ct_module_add(m, "features", ct_sequential(CT_MODULES(
        ct_nn_linear(4, 8), ct_nn_relu(), ct_nn_linear(8, 8), ct_nn_batch_norm1d(8))));
    s->fc = ct_module_add(m, "fc", ct_nn_linear(8, 3));
    return m;
}

static int param_names(ct_module *m, const char **names) {
    return ct_named_parameters(m, names, NULL, 16);
}

TEST(replacing_fc_keeps_its_position_and_releases_the_old_child) {
    ct_module *m = net_new();
    net *s = ct_module_state(m);
    ct_module *old = s->fc;
    ct_module *head = ct_nn_linear(8, 5, .bias = false);
    int64_t before = ct_memory_allocated(CT_CPU);
    CHECK(ct_module_set(m, "fc", head) == head);
    /* The old Linear(8, 3): 24 + 3 floats, freed. */
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), before - 27 * 4);
    CHECK(s->fc == head && s->fc != old);
    CHECK(ct_module_get_submodule(m, "fc") == head);
    const char *names[16];
    CHECK_INT_EQ(param_names(m, names), 7);
    CHECK_STR_EQ(names[5], "features.3.bias");
    CHECK_STR_EQ(names[6], "fc.weight");
    ct_module *children[4];
    CHECK_INT_EQ(ct_named_children(m, names, children, 4), 2);
    CHECK_STR_EQ(names[1], "fc");
    CHECK(children[1] == head);
    /* The forward (through the state's field) runs the new head. */
    ct_tensor *y = ct_forward(m, ct_randn(CT_SHAPE(2, 4)));
    CHECK(y && ct_size(y, 1) == 5);
    CHECK_INT_EQ(s->calls, 1);
}

TEST(set_by_dotted_path_inside_a_sequential) {
    ct_module *m = net_new();
    CHECK(ct_module_set(m, "features.2", ct_nn_linear(8, 8, .bias = false)) != NULL);
    const char *names[16];
    int n = param_names(m, names);
    CHECK_INT_EQ(n, 7);
    CHECK_STR_EQ(names[1], "features.0.bias");
    CHECK_STR_EQ(names[2], "features.2.weight");
    CHECK_STR_EQ(names[3], "features.3.weight");
    ct_state_dict *sd = ct_module_state_dict(m);
    bool has_bias = false, has_weight = false;
    for (int i = 0; i < ct_state_dict_len(sd); i++) {
        has_bias = has_bias || !strcmp(ct_state_dict_key(sd, i), "features.2.bias");
        has_weight = has_weight || !strcmp(ct_state_dict_key(sd, i), "features.2.weight");
    }
    CHECK(has_weight && !has_bias);
    char *repr = ct_module_to_string(m);
    CHECK(repr && strstr(repr, "(2): Linear(in_features=8, out_features=8, bias=False)\n"
                               "    (3): BatchNorm1d"));
    free(repr);
    CHECK(ct_forward(m, ct_randn(CT_SHAPE(2, 4))) != NULL);
}

TEST(train_eval_and_to_reach_the_new_child) {
    ct_module *m = net_new();
    ct_module *head = ct_module_set(m, "fc", ct_nn_linear(8, 2));
    CHECK(ct_module_is_training(head));
    ct_module_eval(m);
    CHECK(!ct_module_is_training(head));
    CHECK_INT_EQ(ct_module_to(m, .dtype = CT_F64), 0);
    CHECK(ct_dtype_of(ct_module_get_parameter(m, "fc.weight")) == CT_F64);
    ct_tensor *ps[16];
    int n = ct_parameters(m, ps, 16);
    CHECK(ps[n - 2] == ct_module_get_parameter(head, "weight"));
    CHECK_INT_EQ(ct_module_num_parameters(m, false), 40 + 72 + 16 + 18);
}

TEST(containers_module_list_and_dict) {
    ct_module *list = ct_module_list(CT_MODULES(ct_nn_linear(2, 2), ct_nn_linear(2, 3), ct_nn_relu()));
    ct_module *lin = ct_nn_linear(2, 7);
    CHECK(ct_module_set(list, "1", lin) == lin);
    CHECK(ct_module_list_get(list, 1) == lin);
    CHECK_INT_EQ(ct_module_list_len(list), 3);
    CHECK_ERROR(ct_module_set(list, "3", ct_nn_relu()), "ModuleList has no child module '3'");
    /* A ModuleDict in a module: by path; ct_module_dict_set shares the replacement. */
    ct_module *outer = ct_sequential(CT_MODULES(ct_module_dict()));
    ct_module *d = ct_sequential_get(outer, 0);
    ct_module_dict_set(d, "a", ct_nn_linear(1, 1));
    ct_module_dict_set(d, "b", ct_nn_linear(1, 1));
    ct_module *tanh = ct_nn_tanh();
    CHECK(ct_module_set(outer, "0.a", tanh) == tanh);
    CHECK(ct_module_dict_get(d, "a") == tanh);
    CHECK_STR_EQ(ct_module_dict_key(d, 0), "a");
    ct_module *same = ct_module_dict_get(d, "b");
    CHECK(ct_module_dict_set(d, "b", same) == same); /* d[k] = d[k] changes nothing */
    CHECK(ct_module_set(outer, "0.b", same) == same);
    CHECK(ct_forward(ct_module_dict_get(d, "b"), ct_ones(CT_SHAPE(1, 1))) != NULL);
}

/* A built-in composite keeps its children in its state: replacing one re-points it. */
static ct_tensor *count_calls(ct_module *m, ct_tensor *in, ct_tensor *out, void *ctx) {
    (void)m, (void)in, (void)out;
    ++*(int *)ctx;
    return NULL;
}

TEST(builtin_composites_run_the_replacement) {
    ct_module *enc = ct_nn_transformer_encoder_layer(8, 2, .dim_feedforward = 16, .dropout = CT_SOME(0));
    ct_module *lin = ct_nn_linear(8, 16);
    int calls = 0;
    ct_module_register_forward_hook(lin, count_calls, &calls);
    CHECK(ct_module_set(enc, "linear1", lin) == lin);
    CHECK(ct_forward(enc, ct_randn(CT_SHAPE(3, 2, 8))) != NULL);
    CHECK_INT_EQ(calls, 1);
    /* The same for a tensor the class keeps in its state (MHA's in_proj_weight). */
    ct_module *mha = ct_module_get_submodule(enc, "self_attn");
    ct_tensor *w = ct_zeros(CT_SHAPE(24, 8));
    CHECK_INT_EQ(ct_module_set_tensor(enc, "self_attn.in_proj_weight", w), 0);
    ct_tensor *q = ct_randn(CT_SHAPE(3, 2, 8));
    ct_attention_result r = ct_attention(mha, q, q, q);
    /* Zero projections: every query scores every key alike, uniform weights. */
    CHECK(r.weights != NULL);
    CHECK_CLOSE(ct_item(ct_max(r.weights)), 1.0 / 3, 1e-6);
    CHECK_CLOSE(ct_item(ct_min(r.weights)), 1.0 / 3, 1e-6);
}

TEST(set_errors_name_the_problem_and_change_nothing) {
    ct_module *m = net_new();
    const char *names[16];
    CHECK_ERROR(ct_module_set(m, "head", ct_nn_linear(8, 2)),
                "Net has no child module 'head' (in 'head'; ct_module_add registers a new one)");
    CHECK_ERROR(ct_module_set(m, "features.7.weight", ct_nn_linear(8, 2)),
                "Sequential has no submodule '7' (in 'features.7.weight')");
    CHECK_ERROR(ct_module_set(m, "fc.weight", ct_nn_linear(8, 2)),
                "'fc.weight' is a parameter of Linear, not a module");
    CHECK_ERROR(ct_module_set(m, "features.3.running_mean", ct_nn_linear(8, 2)),
                "'features.3.running_mean' is a buffer of BatchNorm1d, not a module");
    CHECK_ERROR(ct_module_set(m, "fc.weight.x", ct_nn_linear(8, 2)),
                "'weight' in 'fc.weight.x' is a parameter of Linear, not a module");
    CHECK_ERROR(ct_module_set(m, "", ct_nn_linear(8, 2)), "Net has no child module ''");
    CHECK_ERROR(ct_module_set(m, "fc.", ct_nn_linear(8, 2)), "Linear has no child module ''");
    CHECK_ERROR(ct_module_set(NULL, "fc", ct_nn_linear(8, 2)), "ct_module_set: the module is NULL");
    CHECK_ERROR(ct_module_set(m, NULL, ct_nn_linear(8, 2)), "ct_module_set: the path is NULL");
    CHECK_ERROR(ct_module_set(m, "fc", NULL), "ct_module_set: the child is NULL");
    /* A child that failed to build keeps its own message. */
    ct_clear_error();
    CHECK(ct_module_set(m, "fc", ct_nn_linear(8, 2, .dtype = CT_I64)) == NULL);
    CHECK(ct_last_error() && !strstr(ct_last_error(), "ct_module_set"));
    ct_clear_error();
    /* Cycles: a module inside itself. */
    CHECK_ERROR(ct_module_set(m, "features.1", m), "cannot put Net 'features.1' inside itself");
    ct_module *features = ct_module_get_submodule(m, "features");
    CHECK_ERROR(ct_module_add(features, "again", features), "cannot register Sequential 'again' inside itself");
    CHECK_INT_EQ(param_names(m, names), 8);
    CHECK_STR_EQ(names[6], "fc.weight");
    CHECK(ct_forward(m, ct_randn(CT_SHAPE(2, 4))) != NULL);
    /* Registering where a child exists points at the replacement call. */
    CHECK_ERROR(ct_module_add(m, "fc", ct_nn_linear(8, 2)), "ct_module_set replaces a child");
}

/* Freeze a model, replace its head, train only the head. */
TEST(transfer_learning_trains_only_the_new_head) {
    ct_manual_seed(3);
    ct_module *m = net_new();
    ct_module_requires_grad_(m, false);
    ct_module_set(m, "fc", ct_nn_linear(8, 2));
    CHECK_INT_EQ(ct_module_num_parameters(m, true), 18);
    ct_tensor *all[16], *trainable[16], *before[16];
    int n = ct_parameters(m, all, 16), nt = 0;
    for (int i = 0; i < n; i++) {
        if (ct_requires_grad(all[i])) trainable[nt++] = all[i];
        before[i] = ct_clone(all[i]);
    }
    CHECK_INT_EQ(nt, 2);
    CHECK(trainable[0] == ct_module_get_parameter(m, "fc.weight"));
    ct_optim *opt = ct_sgd(trainable, nt, .lr = CT_SOME(0.5));
    int64_t labels[] = {0, 1, 1, 0};
    ct_tensor *x = ct_randn(CT_SHAPE(4, 4)), *y = ct_tensor_i64(labels, CT_SHAPE(4));
    ct_zero_grad(opt);
    CHECK_INT_EQ(ct_backward(ct_cross_entropy(ct_forward(m, x), y)), 0);
    ct_tensor *gw = ct_clone(ct_grad(trainable[0]));
    CHECK_INT_EQ(ct_step(opt), 0);
    for (int i = 0; i < n - 2; i++) {
        CHECK(ct_grad(all[i]) == NULL);
        CHECK_CLOSE(ct_test_max_diff(all[i], before[i]), 0, 0);
    }
    /* The head moved by exactly -lr * grad. */
    CHECK_CLOSE(ct_test_max_diff(all[n - 2], ct_sub(before[n - 2], ct_mul_scalar(gw, 0.5))), 0, 1e-7);
    CHECK(ct_test_max_diff(all[n - 2], before[n - 2]) > 0);
    CHECK(ct_test_max_diff(all[n - 1], before[n - 1]) > 0);
}
