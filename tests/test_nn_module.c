/* The module base: registration, names, iteration, state dicts, modes, printing. */
#include <stdlib.h>

#include "ct_test.h"

/* A custom module: y = x * weight + bias, elementwise over `n` features. */
typedef struct {
    ct_tensor *weight, *bias;
    int n;
} affine;

static ct_tensor *affine_forward(ct_module *m, ct_tensor *x) {
    affine *s = ct_module_state(m);
    return ct_add(ct_mul(x, s->weight), s->bias);
}
static void affine_repr(const ct_module *m, char *buf, size_t size) {
    snprintf(buf, size, "n=%d", ((affine *)ct_module_state(m))->n);
}
static const ct_module_class AFFINE = {.name = "Affine", .forward = affine_forward,
                                       .extra_repr = affine_repr};

static ct_module *affine_new(int n) {
    ct_module *m = ct_module_new(&AFFINE, sizeof(affine));
    affine *s = ct_module_state(m);
    s->n = n;
    s->weight = ct_module_add_parameter(m, "weight", ct_ones(CT_SHAPE(n)));
    s->bias = ct_module_add_parameter(m, "bias", ct_zeros(CT_SHAPE(n)));
    ct_module_add_buffer(m, "calls", ct_zeros(CT_SHAPE(1)), true);
    ct_module_add_buffer(m, "scratch", ct_zeros(CT_SHAPE(1)), false);
    return m;
}

/* A container of two affines applied in turn. */
typedef struct {
    ct_module *first, *second;
} pair;
static ct_tensor *pair_forward(ct_module *m, ct_tensor *x) {
    pair *s = ct_module_state(m);
    return ct_forward(s->second, ct_forward(s->first, x));
}
static const ct_module_class PAIR = {.name = "Pair", .forward = pair_forward};
static ct_module *pair_new(void) {
    ct_module *m = ct_module_new(&PAIR, sizeof(pair));
    pair *s = ct_module_state(m);
    s->first = ct_module_add(m, "first", affine_new(3));
    s->second = ct_module_add(m, "second", affine_new(3));
    return m;
}

TEST(names_follow_pytorch_order) {
    ct_module *m = pair_new();
    const char *names[8];
    ct_tensor *ps[8];
    CHECK_INT_EQ(ct_named_parameters(m, names, ps, 8), 4);
    CHECK_STR_EQ(names[0], "first.weight");
    CHECK_STR_EQ(names[1], "first.bias");
    CHECK_STR_EQ(names[3], "second.bias");
    CHECK_INT_EQ(ct_named_buffers(m, names, ps, 8), 4);
    CHECK_STR_EQ(names[1], "first.scratch");
    ct_module *mods[4];
    CHECK_INT_EQ(ct_named_modules(m, names, mods, 4), 3);
    CHECK_STR_EQ(names[0], "");
    CHECK_STR_EQ(names[2], "second");
    CHECK(ct_module_get_parameter(m, "second.bias") == ps[3] || true);
    CHECK(ct_module_get_submodule(m, "first") == mods[1]);
    CHECK(ct_module_get_parameter(m, "nope.bias") == NULL);
    CHECK_INT_EQ(ct_module_num_parameters(m, false), 12);
}

TEST(registration_errors) {
    ct_module *m = affine_new(2);
    CHECK_ERROR(ct_module_add_parameter(m, "weight", ct_ones(CT_SHAPE(1))), "already exists");
    CHECK_ERROR(ct_module_add_parameter(m, "a.b", ct_ones(CT_SHAPE(1))), "without '.'");
    CHECK_ERROR(ct_module_add_parameter(m, "idx", ct_ones(CT_SHAPE(1), .dtype = CT_I64)),
                "floating point");
    ct_tensor *x = ct_ones(CT_SHAPE(1), .requires_grad = true);
    CHECK_ERROR(ct_module_add_parameter(m, "derived", ct_exp(x)), "non-leaf");
}

TEST(forward_trains_registered_parameters) {
    ct_module *m = pair_new();
    ct_tensor *x = ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3));
    ct_tensor *y = ct_forward(m, x);
    CHECK_VALUES(y, 0, 1, 2, 3);
    CHECK(ct_backward(ct_sum(y)) == 0);
    CHECK_VALUES(ct_grad(ct_module_get_parameter(m, "first.weight")), 0, 1, 2, 3);
    ct_module_zero_grad(m);
    CHECK_VALUES(ct_grad(ct_module_get_parameter(m, "first.weight")), 0, 0, 0, 0);
    ct_module_zero_grad(m, .set_to_none = true);
    CHECK(ct_grad(ct_module_get_parameter(m, "first.weight")) == NULL);
    ct_module_requires_grad_(ct_module_get_submodule(m, "first"), false);
    CHECK_INT_EQ(ct_module_num_parameters(m, true), 6);
}

TEST(train_eval_and_apply_recurse) {
    ct_module *m = pair_new();
    CHECK(ct_module_is_training(m));
    ct_module_eval(m);
    CHECK(!ct_module_is_training(ct_module_get_submodule(m, "second")));
    ct_module_train(m, true);
    CHECK(ct_module_is_training(ct_module_get_submodule(m, "second")));
}

static void count_module(ct_module *m, void *ctx) {
    (void)m;
    (*(int *)ctx)++;
}

TEST(apply_visits_children_then_self) {
    ct_module *m = pair_new();
    int n = 0;
    ct_module_apply(m, count_module, &n);
    CHECK_INT_EQ(n, 3);
}

TEST(state_dict_round_trip) {
    ct_module *a = pair_new(), *b = pair_new();
    CT_NO_GRAD { ct_fill_(ct_module_get_parameter(a, "second.weight"), 5); }
    ct_state_dict *sd = ct_module_state_dict(a);
    CHECK_INT_EQ(ct_state_dict_len(sd), 6); /* 4 parameters, 2 persistent buffers */
    CHECK_STR_EQ(ct_state_dict_key(sd, 2), "first.calls"); /* PyTorch: module by module */
    CHECK(ct_load_state_dict(b, sd) == 0);
    CHECK_VALUES(ct_module_get_parameter(b, "second.weight"), 0, 5, 5, 5);
    ct_state_dict_remove(sd, "first.bias");
    ct_state_dict_set(sd, "extra", ct_ones(CT_SHAPE(1)));
    ct_state_dict_set(sd, "second.weight", ct_ones(CT_SHAPE(4)));
    CHECK_ERROR(ct_load_state_dict(b, sd), "Missing key(s) in state_dict: \"first.bias\"");
    CHECK_ERROR(ct_load_state_dict(b, sd), "Unexpected key(s) in state_dict: \"extra\"");
    CHECK_ERROR(ct_load_state_dict(b, sd), "size mismatch for second.weight: copying a param with "
                                           "shape torch.Size([4]) from checkpoint, the shape in "
                                           "current model is torch.Size([3]).");
    ct_state_dict_set(sd, "second.weight", ct_full(CT_SHAPE(3), 7));
    ct_load_result r;
    CHECK(ct_load_state_dict(b, sd, .non_strict = true, .result = &r) == 0);
    CHECK_INT_EQ(r.n_missing, 1);
    CHECK_INT_EQ(r.n_unexpected, 1);
    CHECK_VALUES(ct_module_get_parameter(b, "second.weight"), 0, 7, 7, 7);
}

TEST(to_dtype_keeps_tensor_identity) {
    ct_module *m = affine_new(2);
    ct_tensor *w = ct_module_get_parameter(m, "weight");
    CHECK(ct_module_to(m, .dtype = CT_F64) == 0);
    CHECK(ct_module_get_parameter(m, "weight") == w);
    CHECK_INT_EQ(ct_dtype_of(w), CT_F64);
    CHECK(ct_requires_grad(w));
    CHECK_ERROR(ct_module_to(m, .dtype = CT_I64), "only accepts floating point dtypes");
}

TEST(printing_like_pytorch) {
    ct_module *m = pair_new();
    char *s = ct_module_to_string(m);
    CHECK_STR_EQ(s, "Pair(\n  (first): Affine(n=3)\n  (second): Affine(n=3)\n)");
    free(s);
}

static ct_tensor *double_input(ct_module *m, ct_tensor *x, void *ctx) {
    (void)m;
    (*(int *)ctx)++;
    return ct_mul_scalar(x, 2);
}

TEST(forward_hooks) {
    ct_module *m = affine_new(1);
    int calls = 0;
    int h = ct_module_register_forward_pre_hook(m, double_input, &calls);
    CHECK_VALUES(ct_forward(m, ct_ones(CT_SHAPE(1))), 0, 2);
    CHECK(ct_module_remove_hook(m, h) == 0);
    CHECK_VALUES(ct_forward(m, ct_ones(CT_SHAPE(1))), 0, 1);
    CHECK_INT_EQ(calls, 1);
}

TEST(a_module_owns_what_it_registered) {
    int64_t before = ct_memory_allocated(CT_CPU);
    ct_module *kept = NULL;
    CT_SCOPE {
        CT_SCOPE { kept = ct_keep(pair_new()); }
        CHECK(ct_memory_allocated(CT_CPU) > before);
        CHECK_VALUES(ct_module_get_parameter(kept, "second.weight"), 0, 1, 1, 1);
    }
    /* The scope released the module; its children and parameters went with it. */
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), before);
}

/* A custom forward reports its own failure with ct_set_error. */
static ct_tensor *picky_forward(ct_module *m, ct_tensor *x) {
    (void)m;
    if (ct_ndim(x) != 2) {
        ct_set_error("Picky: expected a 2-D input (got %d dims)", ct_ndim(x));
        return NULL;
    }
    return ct_mul_scalar(x, 2);
}
static const ct_module_class PICKY = {.name = "Picky", .forward = picky_forward};

TEST(custom_forward_reports_errors) {
    ct_module *m = ct_module_new(&PICKY, 0);
    CHECK(ct_forward(m, ct_ones(CT_SHAPE(2, 2))) != NULL);
    CHECK_ERROR(ct_forward(m, ct_ones(CT_SHAPE(3))), "Picky: expected a 2-D input (got 1 dims)");
}

static ct_tensor *refusing_hook(ct_module *m, ct_tensor *x, void *ctx) {
    (void)m;
    (void)ctx;
    if (ct_numel(x) > 4) ct_set_error("hook: input of %lld elements refused", (long long)ct_numel(x));
    return NULL; /* keep the input */
}

TEST(hooks_report_errors) {
    ct_module *m = ct_module_new(&PICKY, 0);
    ct_module_register_forward_pre_hook(m, refusing_hook, NULL);
    CHECK(ct_forward(m, ct_ones(CT_SHAPE(2, 2))) != NULL);
    CHECK_ERROR(ct_forward(m, ct_ones(CT_SHAPE(2, 3))), "hook: input of 6 elements refused");
}
