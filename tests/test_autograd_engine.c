/* The autograd engine: graphs, accumulation, errors, modes, hooks, grad(). */
#include "ct_test.h"

TEST(design_example) {
    ct_tensor *x = ct_tensor_f32((float[]){3}, CT_SHAPE(1), .requires_grad = true);
    ct_tensor *w = ct_tensor_f32((float[]){2}, CT_SHAPE(1), .requires_grad = true);
    ct_tensor *b = ct_tensor_f32((float[]){1}, CT_SHAPE(1));
    ct_tensor *y = ct_add(ct_mul(w, x), b);
    ct_tensor *z = ct_sum(ct_mul(y, y));
    CHECK(ct_backward(z) == 0);
    CHECK_VALUES(ct_grad(x), 0, 28);
    CHECK_VALUES(ct_grad(w), 0, 42);
    CHECK(ct_grad(b) == NULL);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "AddBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(z)), "SumBackward0"); /* sum() over all dims */
}

TEST(grads_accumulate_across_backward_calls) {
    ct_tensor *x = ct_tensor_f64((double[]){2}, CT_SHAPE(1), .requires_grad = true);
    for (int i = 0; i < 3; i++) CHECK(ct_backward(ct_sum(ct_mul(x, x))) == 0);
    CHECK_VALUES(ct_grad(x), 0, 12);
    CHECK(ct_set_grad(x, NULL) == 0);
    CHECK(ct_grad(x) == NULL);
}

TEST(non_scalar_backward_needs_gradient) {
    ct_tensor *x = ct_ones(CT_SHAPE(3), .requires_grad = true);
    ct_tensor *y = ct_mul_scalar(x, 2);
    CHECK_ERROR(ct_backward(y), "grad can be implicitly created only for scalar outputs");
    ct_tensor *g = ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3));
    CHECK(ct_backward(y, .gradient = g) == 0);
    CHECK_VALUES(ct_grad(x), 0, 2, 4, 6);
}

TEST(backward_twice_fails_without_retain_graph) {
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *loss = ct_sum(ct_exp(x));
    CHECK(ct_backward(loss, .retain_graph = true) == 0);
    CHECK(ct_backward(loss) == 0);
    CHECK_ERROR(ct_backward(loss), "Trying to backward through the graph a second time");
}

TEST(backward_of_tensor_without_grad) {
    ct_tensor *x = ct_ones(CT_SHAPE(2));
    CHECK_ERROR(ct_backward(ct_sum(x)), "does not require grad and does not have a grad_fn");
}

TEST(non_leaf_grad_only_with_retain_grad) {
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *y = ct_mul_scalar(x, 3);
    ct_tensor *y2 = ct_mul_scalar(x, 3);
    CHECK(ct_retain_grad(y2) == 0);
    CHECK(ct_backward(ct_sum(ct_add(ct_mul(y, y), y2))) == 0);
    CHECK(ct_grad(y) == NULL);
    CHECK_VALUES(ct_grad(y2), 0, 1, 1);
    CHECK_VALUES(ct_grad(x), 1e-6, 21, 21);
    CHECK(!ct_is_leaf(y) && ct_is_leaf(x));
}

TEST(no_grad_records_nothing) {
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *y = NULL;
    CT_NO_GRAD {
        y = ct_mul(x, x);
        CT_ENABLE_GRAD { CHECK(ct_requires_grad(ct_mul(x, x))); }
        CHECK(!ct_is_grad_enabled());
    }
    CHECK(ct_is_grad_enabled());
    CHECK(!ct_requires_grad(y) && ct_grad_fn(y) == NULL);
}

TEST(inplace_on_leaf_requiring_grad_fails) {
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    CHECK_ERROR(ct_add_(x, ct_ones(CT_SHAPE(2))),
                "a leaf Variable that requires grad is being used in an in-place operation");
    CT_NO_GRAD { CHECK(ct_add_(x, ct_ones(CT_SHAPE(2))) != NULL); }
    CHECK_VALUES(x, 0, 2, 2);
}

TEST(modified_saved_tensor_is_detected) {
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *y = ct_exp(x);
    ct_tensor *z = ct_sum(ct_mul(y, y));
    ct_mul_scalar_(y, 2);
    CHECK_ERROR(ct_backward(z), "one of the variables needed for gradient computation has been "
                                "modified by an inplace operation");
}

TEST(inplace_on_non_leaf_is_differentiated) {
    ct_tensor *x = ct_tensor_f64(((double[]){1, 2}), CT_SHAPE(2), .requires_grad = true);
    ct_tensor *y = ct_mul_scalar(x, 2);
    ct_add_(y, x); /* y = 3x */
    ct_mul_scalar_(y, 2);
    CHECK(ct_backward(ct_sum(y)) == 0);
    CHECK_VALUES(ct_grad(x), 0, 6, 6);
}

TEST(broadcast_gradients_are_reduced) {
    ct_tensor *a = ct_ones(CT_SHAPE(2, 3), .requires_grad = true);
    ct_tensor *b = ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3), .requires_grad = true);
    ct_tensor *c = ct_ones(CT_SHAPE(2, 1), .requires_grad = true);
    CHECK(ct_backward(ct_sum(ct_mul(ct_mul(a, b), c))) == 0);
    CHECK_VALUES(ct_grad(b), 0, 2, 2, 2);
    CHECK_VALUES(ct_grad(c), 0, 6, 6);
    CHECK_VALUES(ct_grad(a), 0, 1, 2, 3, 1, 2, 3);
}

static ct_tensor *double_hook(ct_tensor *g, void *ctx) {
    (*(int *)ctx)++;
    return ct_mul_scalar(g, 2);
}

TEST(tensor_hooks_see_and_replace_gradients) {
    int calls = 0;
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *y = ct_mul_scalar(x, 3);
    CHECK(ct_register_hook(y, double_hook, &calls) >= 0);
    int h = ct_register_hook(x, double_hook, &calls);
    CHECK(ct_backward(ct_sum(y)) == 0);
    CHECK_INT_EQ(calls, 2);
    CHECK_VALUES(ct_grad(x), 0, 12, 12);
    CHECK(ct_remove_hook(x, h) == 0);
}

TEST(autograd_grad_leaves_dot_grad_alone) {
    ct_tensor *x = ct_tensor_f64((double[]){3}, CT_SHAPE(1), .requires_grad = true);
    ct_tensor *y = ct_sum(ct_mul(ct_mul(x, x), x)); /* x^3 */
    ct_tensor *g = NULL;
    CHECK(ct_autograd_grad(1, &y, 1, &x, &g, .create_graph = true) == 0);
    CHECK_VALUES(g, 1e-12, 27);
    CHECK(ct_grad(x) == NULL);
    ct_tensor *gg = NULL;
    CHECK(ct_autograd_grad(1, &g, 1, &x, &gg) == 0); /* 6x */
    CHECK_VALUES(gg, 1e-12, 18);
    ct_tensor *unused = ct_ones(CT_SHAPE(1), .requires_grad = true), *r = NULL;
    ct_tensor *y2 = ct_sum(ct_mul(x, x));
    CHECK_ERROR(ct_autograd_grad(1, &y2, 1, &unused, &r, .retain_graph = true),
                "appears to not have been used in the graph");
    CHECK(ct_autograd_grad(1, &y2, 1, &unused, &r, .allow_unused = true) == 0 && r == NULL);
}

TEST(scopes_free_temporaries) {
    ct_tensor *w = ct_ones(CT_SHAPE(64, 64), .requires_grad = true);
    int64_t base = 0;
    for (int step = 0; step < 20; step++) {
        CT_SCOPE {
            ct_tensor *loss = ct_sum(ct_mul(ct_exp(w), w));
            ct_backward(loss);
            CT_NO_GRAD { ct_add_alpha_(w, ct_grad(w), -1e-3); }
            ct_set_grad(w, NULL);
        }
        if (step == 1) base = ct_memory_allocated(CT_CPU);
        if (step > 1) CHECK_INT_EQ(ct_memory_allocated(CT_CPU), base);
    }
}

TEST(keep_hands_objects_to_the_enclosing_scope) {
    ct_tensor *kept = NULL;
    int64_t before = ct_memory_allocated(CT_CPU);
    CT_SCOPE {
        CT_SCOPE { kept = ct_keep(ct_ones(CT_SHAPE(100))); }
        CHECK(ct_memory_allocated(CT_CPU) > before);
        CHECK_VALUES(ct_sum(kept), 0, 100);
    }
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), before);
}

TEST(null_inputs_keep_the_first_error) {
    ct_tensor *a = ct_ones(CT_SHAPE(2, 3)), *b = ct_ones(CT_SHAPE(4));
    ct_clear_error();
    ct_tensor *r = ct_exp(ct_mul(ct_add(a, b), a));
    CHECK(r == NULL);
    CHECK(strstr(ct_last_error(), "ct_add: The size of tensor a (3) must match the size of "
                                  "tensor b (4) at non-singleton dimension 1") != NULL);
    ct_clear_error();
}

static int handler_calls;
static void count_handler(const char *m, const char *file, int line) {
    (void)m;
    (void)line;
    if (file && strstr(file, "test_autograd_engine.c")) handler_calls++;
}

TEST(error_handler_sees_the_call_site) {
    ct_error_handler old = ct_set_error_handler(count_handler);
    CHECK(ct_view(ct_ones(CT_SHAPE(6)), CT_SHAPE(4)) == NULL);
    ct_set_error_handler(old);
    CHECK_INT_EQ(handler_calls, 1);
    ct_clear_error();
}

TEST(requires_grad_flag_rules) {
    ct_tensor *i = ct_ones(CT_SHAPE(2), .dtype = CT_I64);
    CHECK_ERROR(ct_set_requires_grad(i, true), "floating point");
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *y = ct_exp(x);
    CHECK_ERROR(ct_set_requires_grad(y, false), "only change requires_grad flags of leaf");
    ct_tensor *d = ct_detach(y);
    CHECK(!ct_requires_grad(d) && ct_is_leaf(d));
    CHECK(ct_set_requires_grad(x, false) == 0);
    CHECK(!ct_requires_grad(ct_exp(x)));
}
