/* Inference: a model with BatchNorm and Dropout, switched to eval mode and run
 * under no_grad, records no graph, holds less memory than a training forward and
 * gives the same output every call. */
#include "ct_test.h"

enum { BATCH = 64, IN = 128, HIDDEN = 256, OUT = 4 };

static ct_module *model_new(void) {
    return ct_sequential(CT_MODULES(ct_nn_linear(IN, HIDDEN), ct_nn_batch_norm1d(HIDDEN), ct_nn_relu(),
                                    ct_nn_dropout(0.5), ct_nn_linear(HIDDEN, OUT)));
}

typedef struct {
    int64_t kept; /* bytes still allocated while only the output is held */
    int64_t peak; /* peak bytes above the start during the forward */
} forward_memory;

/* Runs model(x) with grad mode `grad`; *out gets the output (owned by the caller). */
static forward_memory measured_forward(ct_module *model, ct_tensor *x, bool grad, ct_tensor **out) {
    int64_t base = ct_memory_allocated(CT_CPU);
    ct_reset_peak_memory_stats(CT_CPU);
    bool prev = ct_set_grad_enabled(grad);
    CT_SCOPE { *out = ct_retain(ct_forward(model, x)); } /* temporaries die here */
    ct_set_grad_enabled(prev);
    return (forward_memory){ct_memory_allocated(CT_CPU) - base, ct_max_memory_allocated(CT_CPU) - base};
}

TEST(eval_no_grad_records_no_graph_and_holds_less) {
    ct_manual_seed(5);
    ct_module *model = model_new();
    ct_tensor *x = ct_randn(CT_SHAPE(BATCH, IN));
    const int64_t out_bytes = (int64_t)BATCH * OUT * 4;

    /* Training forward: the graph keeps the activations backward needs. */
    ct_tensor *y_train = NULL;
    forward_memory train = measured_forward(model, x, true, &y_train);
    CHECK(y_train != NULL);
    CHECK(ct_grad_fn(y_train) != NULL);
    CHECK(ct_requires_grad(y_train));
    CHECK(train.kept > 10 * out_bytes);
    ct_release(y_train); /* frees the graph */

    ct_module_eval(model);
    CHECK(!ct_module_is_training(model));
    CHECK(!ct_module_is_training(ct_sequential_get(model, 1)));
    ct_tensor *y1 = NULL, *y2 = NULL;
    forward_memory eval = measured_forward(model, x, false, &y1);
    CHECK(y1 != NULL);
    CHECK(ct_grad_fn(y1) == NULL);
    CHECK(!ct_requires_grad(y1));
    CHECK(ct_is_leaf(y1));
    /* Only the output survives the forward; the peak is lower too. */
    CHECK_INT_EQ(eval.kept, out_bytes);
    CHECK(eval.peak < train.peak);
    CHECK(eval.kept < train.kept);
    printf("bytes kept after the forward: %lld training, %lld eval/no_grad; peaks %lld, %lld\n",
           (long long)train.kept, (long long)eval.kept, (long long)train.peak, (long long)eval.peak);

    /* Deterministic: no dropout, running statistics, nothing updated. */
    ct_tensor *rm = ct_clone(ct_module_get_buffer(model, "1.running_mean"));
    measured_forward(model, x, false, &y2);
    CHECK(y2 != NULL);
    CHECK_CLOSE(ct_test_max_diff(y1, y2), 0, 0);
    CHECK_CLOSE(ct_test_max_diff(rm, ct_module_get_buffer(model, "1.running_mean")), 0, 0);
    ct_release(y1);
    ct_release(y2);
}

TEST(eval_mode_differs_from_train_mode) {
    ct_manual_seed(6);
    ct_module *model = model_new();
    ct_tensor *x = ct_randn(CT_SHAPE(BATCH, IN));
    /* In training mode two calls differ: fresh dropout masks. */
    ct_tensor *a = ct_forward(model, x), *b = ct_forward(model, x);
    CHECK(ct_test_max_diff(a, b) > 1e-3);
    /* Eval mode is the module's mode, not grad mode: under no_grad a training model
     * still drops, and in eval mode with grad on the output is still deterministic
     * (and records a graph for the parameters). */
    CT_NO_GRAD {
        ct_tensor *c = ct_forward(model, x), *d = ct_forward(model, x);
        CHECK(ct_test_max_diff(c, d) > 1e-3);
        CHECK(ct_grad_fn(c) == NULL);
    }
    ct_module_eval(model);
    ct_tensor *e = ct_forward(model, x), *f = NULL;
    CHECK(ct_grad_fn(e) != NULL);
    CT_NO_GRAD { f = ct_forward(model, x); }
    CHECK(f != NULL && ct_grad_fn(f) == NULL);
    CHECK_CLOSE(ct_test_max_diff(e, f), 0, 0);
    /* Back to training: dropout is on again. */
    ct_module_train(model, true);
    CHECK(ct_module_is_training(ct_sequential_get(model, 3)));
    CHECK(ct_test_max_diff(ct_forward(model, x), ct_forward(model, x)) > 1e-3);
}
