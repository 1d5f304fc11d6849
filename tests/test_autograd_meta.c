/* The autograd interface core releases a tensor's autograd meta through
 * (core/autograd_meta.h): registered at start-up, refused twice, metas made only by
 * hooks and retain_grad, and freed (hooks detached from their node) as tensors die. */
#include "ct_test.h"
#include "autograd/hooks.h"
#include "autograd/node.h"
#include "core/tensor_impl.h"

static void no_release(ct_tensor *t) { (void)t; }

TEST(interface_registered_at_start_up) {
    const ct_autograd_interface *iface = ct_autograd_interface_get();
    CHECK(iface != NULL);
    if (iface) CHECK_STR_EQ(iface->name, "autograd");
    static const ct_autograd_interface other = {"other", no_release};
    CHECK(!ct_autograd_register(&other));
    CHECK(ct_last_error() && strstr(ct_last_error(), "interface autograd is registered already"));
    ct_clear_error();
    static const ct_autograd_interface incomplete = {"incomplete", NULL};
    CHECK(!ct_autograd_register(&incomplete));
    CHECK(ct_last_error() && strstr(ct_last_error(), "incomplete lacks a required member"));
    ct_clear_error();
    CHECK(ct_autograd_interface_get() == iface);
}

static ct_tensor *count_hook(ct_tensor *grad, void *ctx) {
    (void)grad;
    ++*(int *)ctx;
    return NULL;
}

TEST(meta_only_for_hooks_and_retain_grad) {
    ct_tensor *x = ct_scalar_tensor(1.5, .requires_grad = true);
    ct_tensor *y = ct_mul_scalar(x, 2);
    CHECK(x->autograd_meta == NULL && y->autograd_meta == NULL); /* recording makes none */
    CHECK(ct_retain_grad(x) == 0);
    CHECK(x->autograd_meta == NULL); /* a leaf keeps its grad anyway */
    CHECK(ct_retain_grad(y) == 0);
    CHECK(y->autograd_meta != NULL && y->autograd_meta->retains_grad);
    int calls = 0;
    CHECK(ct_register_hook(x, count_hook, &calls) >= 0);
    CHECK(x->autograd_meta != NULL && x->autograd_meta->n_hooks == 1);
    CHECK(ct_backward(ct_mul_scalar(y, 3)) == 0);
    CHECK_INT_EQ(calls, 1);
    CHECK_CLOSE(ct_item(ct_grad(y)), 3, 0);
    CHECK_CLOSE(ct_item(ct_grad(x)), 6, 0);
}

/* A non-leaf with hooks dies while its grad_fn lives on in the graph: the node must
 * forget it (a dangling pre-hook would be read by the backward). */
TEST(dying_tensor_leaves_its_node) {
    ct_tensor *x = ct_scalar_tensor(1.5, .requires_grad = true);
    ct_tensor *z = NULL;
    ct_node *fn = NULL;
    int calls = 0;
    CT_SCOPE {
        ct_tensor *y = ct_mul_scalar(x, 2);
        CHECK(ct_register_hook(y, count_hook, &calls) >= 0);
        CHECK(ct_retain_grad(y) == 0);
        fn = ct_grad_fn(y);
        CHECK(fn->pre_hooks != NULL && fn->pre_hooks->tensor == y &&
              y->autograd_meta->attached_to == fn);
        z = ct_keep(ct_mul_scalar(y, 3));
    }
    CHECK(fn->pre_hooks == NULL); /* y is gone; z's graph still holds fn */
    CHECK(ct_backward(z) == 0);
    CHECK_INT_EQ(calls, 0);
    CHECK_CLOSE(ct_item(ct_grad(x)), 6, 0);
}

/* After an in-place op the tensor's hooks stay with its old grad_fn (as PyTorch's);
 * when the tensor dies, that node (alive in z's graph) must forget it, not the new one. */
TEST(dying_tensor_leaves_its_old_node) {
    ct_tensor *x = ct_scalar_tensor(1.5, .requires_grad = true);
    ct_tensor *z = NULL;
    ct_node *old = NULL;
    CT_SCOPE {
        ct_tensor *y = ct_mul_scalar(x, 2);
        CHECK(ct_retain_grad(y) == 0);
        old = ct_grad_fn(y);
        CHECK(ct_mul_scalar_(y, 5) != NULL);
        CHECK(ct_grad_fn(y) != old && y->autograd_meta->attached_to == old);
        z = ct_keep(ct_mul_scalar(y, 3));
    }
    CHECK(old->pre_hooks == NULL);
    CHECK(ct_backward(z) == 0);
    CHECK_CLOSE(ct_item(ct_grad(x)), 30, 0);
}
