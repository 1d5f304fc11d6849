/* Post-accumulate-grad hooks (ct_register_post_accumulate_grad_hook) and callbacks
 * queued to the end of a backward (ct_autograd_queue_callback): when they run, what
 * they see, their errors. */
#include "ct_test.h"

typedef struct {
    int calls;
    double seen;     /* ct_grad(leaf)'s first element at the last call */
    const char *log; /* appended to order[] */
    char *order;
} post_record;

static void record_post(ct_tensor *leaf, void *ctx) {
    post_record *r = ctx;
    r->calls++;
    r->seen = ct_grad(leaf) ? ct_item(ct_grad(leaf)) : NAN;
    if (r->order) strcat(r->order, r->log);
}

TEST(post_hook_sees_the_accumulated_grad) {
    ct_tensor *x = ct_scalar_tensor(2.0, .requires_grad = true);
    post_record r = {0};
    CHECK(ct_register_post_accumulate_grad_hook(x, record_post, &r) >= 0);
    CHECK(ct_backward(ct_mul_scalar(x, 3)) == 0);
    CHECK_INT_EQ(r.calls, 1);
    CHECK_CLOSE(r.seen, 3, 0);
    CHECK(ct_backward(ct_mul(x, x)) == 0); /* .grad += 2x */
    CHECK_INT_EQ(r.calls, 2);
    CHECK_CLOSE(r.seen, 7, 0);
}

static ct_tensor *double_grad(ct_tensor *grad, void *ctx) {
    (void)ctx;
    return ct_mul_scalar(grad, 2);
}

/* Tensor hooks change the gradient before it is accumulated; post hooks run after. */
TEST(post_hook_runs_after_tensor_hooks_in_registration_order) {
    ct_tensor *x = ct_scalar_tensor(1.0, .requires_grad = true);
    char order[8] = "";
    post_record a = {.log = "a", .order = order}, b = {.log = "b", .order = order};
    CHECK(ct_register_post_accumulate_grad_hook(x, record_post, &a) >= 0);
    CHECK(ct_register_hook(x, double_grad, NULL) >= 0);
    CHECK(ct_register_post_accumulate_grad_hook(x, record_post, &b) >= 0);
    CHECK(ct_backward(ct_mul_scalar(x, 5)) == 0);
    CHECK_STR_EQ(order, "ab");
    CHECK_CLOSE(a.seen, 10, 0);
    CHECK_CLOSE(b.seen, 10, 0);
}

static void count_post(ct_tensor *leaf, void *ctx) {
    (void)leaf;
    ++*(int *)ctx;
}

/* Each leaf's hook runs once per backward, however many paths lead to it. */
TEST(post_hook_once_per_leaf_per_backward) {
    float xv[] = {1, 2}, wv[] = {3, 4};
    ct_tensor *x = ct_tensor_f32(xv, CT_SHAPE(2), .requires_grad = true);
    ct_tensor *w = ct_tensor_f32(wv, CT_SHAPE(2), .requires_grad = true);
    int rx = 0, rw = 0;
    CHECK(ct_register_post_accumulate_grad_hook(x, count_post, &rx) >= 0);
    CHECK(ct_register_post_accumulate_grad_hook(w, count_post, &rw) >= 0);
    CT_SCOPE {
        ct_tensor *y = ct_add(ct_mul(x, w), ct_mul(x, x));
        CHECK(ct_backward(ct_sum(y)) == 0);
    }
    CHECK_INT_EQ(rx, 1);
    CHECK_INT_EQ(rw, 1);
    CHECK_VALUES(ct_grad(x), 0, 5, 8); /* w + 2x */
    CHECK_VALUES(ct_grad(w), 0, 1, 2);
}

TEST(post_hook_not_run_by_autograd_grad) {
    ct_tensor *x = ct_scalar_tensor(2.0, .requires_grad = true);
    post_record r = {0};
    CHECK(ct_register_post_accumulate_grad_hook(x, record_post, &r) >= 0);
    ct_tensor *g[1];
    CHECK(ct_autograd_grad(1, (ct_tensor *[]){ct_mul(x, x)}, 1, &x, g) == 0);
    CHECK_CLOSE(ct_item(g[0]), 4, 0);
    CHECK_INT_EQ(r.calls, 0);
    CHECK(ct_grad(x) == NULL);
}

TEST(post_hook_removed_by_its_handle) {
    ct_tensor *x = ct_scalar_tensor(2.0, .requires_grad = true);
    post_record r = {0};
    int h_tensor = ct_register_hook(x, double_grad, NULL);
    int h_post = ct_register_post_accumulate_grad_hook(x, record_post, &r);
    CHECK(h_tensor >= 0 && h_post >= 0 && h_tensor != h_post);
    CHECK(ct_remove_hook(x, h_post) == 0);
    CHECK(ct_backward(ct_mul_scalar(x, 3)) == 0);
    CHECK_INT_EQ(r.calls, 0);
    CHECK_CLOSE(ct_item(ct_grad(x)), 6, 0); /* the tensor hook is still there */
    CHECK_ERROR(ct_remove_hook(x, h_post), "no hook with handle");
    CHECK(ct_remove_hook(x, h_tensor) == 0);
}

static void nop_post(ct_tensor *leaf, void *ctx) {
    (void)leaf;
    (void)ctx;
}

TEST(post_hook_registration_errors) {
    ct_tensor *x = ct_scalar_tensor(2.0, .requires_grad = true);
    ct_tensor *c = ct_scalar_tensor(2.0);
    CHECK_ERROR(ct_register_post_accumulate_grad_hook(ct_mul_scalar(x, 2), nop_post, NULL),
                "post accumulate grad hooks cannot be registered on non-leaf tensors");
    CHECK_ERROR(ct_register_post_accumulate_grad_hook(c, nop_post, NULL),
                "cannot register a hook on a tensor that doesn't require gradient");
    CHECK_ERROR(ct_register_post_accumulate_grad_hook(x, NULL, NULL), "hook function is NULL");
}

static void failing_post(ct_tensor *leaf, void *ctx) {
    (void)leaf;
    (void)ctx;
    ct_set_error("my_hook: bucket is full");
}

static void count_callback(void *ctx) { ++*(int *)ctx; }

/* A hook's error fails the backward; the callbacks queued before it do not run. */
static void queue_then_fail(ct_tensor *leaf, void *ctx) {
    ct_autograd_queue_callback(count_callback, ctx);
    failing_post(leaf, NULL);
}

TEST(post_hook_error_fails_the_backward) {
    ct_tensor *x = ct_scalar_tensor(2.0, .requires_grad = true);
    int callbacks = 0;
    int h = ct_register_post_accumulate_grad_hook(x, queue_then_fail, &callbacks);
    CHECK_ERROR(ct_backward(ct_mul_scalar(x, 3)), "my_hook: bucket is full");
    CHECK_INT_EQ(callbacks, 0);
    CHECK(ct_remove_hook(x, h) == 0);
    CHECK(ct_backward(ct_mul_scalar(x, 3)) == 0); /* nothing left queued */
    CHECK_INT_EQ(callbacks, 0);
}

TEST(queue_callback_outside_backward_fails) {
    int n = 0;
    CHECK_ERROR(ct_autograd_queue_callback(count_callback, &n),
                "Final callbacks can only be installed during backward pass.");
    CHECK_INT_EQ(n, 0);
}

/* The callback sees the whole graph done: every leaf's gradient is in place. */
typedef struct {
    ct_tensor *a, *b;
    int queued, ran;
    double a_grad, b_grad;
} end_state;

static void at_end(void *ctx) {
    end_state *s = ctx;
    s->ran++;
    s->a_grad = ct_grad(s->a) ? ct_item(ct_grad(s->a)) : NAN;
    s->b_grad = ct_grad(s->b) ? ct_item(ct_grad(s->b)) : NAN;
}

static void queue_once(ct_tensor *leaf, void *ctx) {
    (void)leaf;
    end_state *s = ctx;
    if (s->queued++ == 0) CHECK(ct_autograd_queue_callback(at_end, s) == 0);
}

TEST(callback_runs_once_after_the_graph) {
    ct_tensor *a = ct_scalar_tensor(2.0, .requires_grad = true);
    ct_tensor *b = ct_scalar_tensor(5.0, .requires_grad = true);
    end_state s = {.a = a, .b = b};
    CHECK(ct_register_post_accumulate_grad_hook(a, queue_once, &s) >= 0);
    CHECK(ct_register_post_accumulate_grad_hook(b, queue_once, &s) >= 0);
    CT_SCOPE CHECK(ct_backward(ct_mul(ct_mul_scalar(b, 3), a)) == 0);
    CHECK_INT_EQ(s.queued, 2);
    CHECK_INT_EQ(s.ran, 1);
    CHECK_CLOSE(s.a_grad, 15, 0);
    CHECK_CLOSE(s.b_grad, 6, 0);
}

/* A callback may queue another; both run before ct_backward returns, in order. */
static char chain_log[8];
static void second(void *ctx) {
    (void)ctx;
    strcat(chain_log, "2");
}
static void first(void *ctx) {
    (void)ctx;
    strcat(chain_log, "1");
    CHECK(ct_autograd_queue_callback(second, NULL) == 0);
}
static void queue_first(ct_tensor *leaf, void *ctx) {
    (void)leaf;
    (void)ctx;
    CHECK(ct_autograd_queue_callback(first, NULL) == 0);
}

TEST(callback_may_queue_a_callback) {
    ct_tensor *x = ct_scalar_tensor(2.0, .requires_grad = true);
    chain_log[0] = 0;
    CHECK(ct_register_post_accumulate_grad_hook(x, queue_first, NULL) >= 0);
    CHECK(ct_backward(ct_mul_scalar(x, 3)) == 0);
    CHECK_STR_EQ(chain_log, "12");
}

static void failing_callback(void *ctx) {
    ++*(int *)ctx;
    ct_set_error("my_callback: the all-reduce failed");
}
static void queue_failing(ct_tensor *leaf, void *ctx) {
    (void)leaf;
    CHECK(ct_autograd_queue_callback(failing_callback, ctx) == 0);
    CHECK(ct_autograd_queue_callback(count_callback, ctx) == 0); /* not run after the failure */
}

TEST(callback_error_fails_the_backward) {
    ct_tensor *x = ct_scalar_tensor(2.0, .requires_grad = true);
    int n = 0;
    CHECK(ct_register_post_accumulate_grad_hook(x, queue_failing, &n) >= 0);
    CHECK_ERROR(ct_backward(ct_mul_scalar(x, 3)), "my_callback: the all-reduce failed");
    CHECK_INT_EQ(n, 1);
    CHECK_CLOSE(ct_item(ct_grad(x)), 3, 0); /* the graph itself had run */
}

/* A backward run inside a backward (as a checkpoint's) has its own callbacks: they
 * run when the inner run ends, the outer's when the outer ends. */
typedef struct {
    ct_tensor *inner_leaf;
    char log[8];
} nest_state;

static void log_inner(void *ctx) { strcat(((nest_state *)ctx)->log, "i"); }
static void log_outer(void *ctx) { strcat(((nest_state *)ctx)->log, "o"); }
static void inner_post(ct_tensor *leaf, void *ctx) {
    (void)leaf;
    CHECK(ct_autograd_queue_callback(log_inner, ctx) == 0);
}
static void outer_post(ct_tensor *leaf, void *ctx) {
    (void)leaf;
    nest_state *s = ctx;
    CHECK(ct_autograd_queue_callback(log_outer, s) == 0);
    CT_ENABLE_GRAD CT_SCOPE CHECK(ct_backward(ct_mul_scalar(s->inner_leaf, 2)) == 0);
    strcat(s->log, "r"); /* the inner backward returned */
}

TEST(nested_backward_has_its_own_callbacks) {
    ct_tensor *x = ct_scalar_tensor(2.0, .requires_grad = true);
    nest_state s = {.inner_leaf = ct_scalar_tensor(1.0, .requires_grad = true)};
    CHECK(ct_register_post_accumulate_grad_hook(x, outer_post, &s) >= 0);
    CHECK(ct_register_post_accumulate_grad_hook(s.inner_leaf, inner_post, &s) >= 0);
    CHECK(ct_backward(ct_mul_scalar(x, 3)) == 0);
    CHECK_STR_EQ(s.log, "iro");
    CHECK_CLOSE(ct_item(ct_grad(s.inner_leaf)), 2, 0);
}
