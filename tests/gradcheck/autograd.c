/* Gradcheck cases of the autograd features: custom functions, a checkpoint.  (The
 * saved-output case, a custom exp, is in tests/test_autograd_function.c.) */
#include "gc.h"

/* MyCube: x^3 with its own backward (3 x^2 grad from the saved input). */
static ct_tensor *cube_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)n;
    ct_ctx_save_for_backward(ctx, 1, in);
    return ct_mul(ct_mul(in[0], in[0]), in[0]);
}
static int cube_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    ct_tensor *x = ct_ctx_saved(ctx, 0);
    return (gi[0] = ct_mul(ct_mul_scalar(ct_mul(x, x), 3), g)) ? 0 : -1;
}
static const ct_function MyCube = {"MyCube", cube_forward, cube_backward, NULL};

/* MulAdd: a * b + c with broadcasting; backward leaves reduction to the engine. */
static ct_tensor *muladd_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)n;
    ct_ctx_save_for_backward(ctx, 2, in);
    return ct_add(ct_mul(in[0], in[1]), in[2]);
}
static int muladd_backward(ct_function_ctx *ctx, ct_tensor *g, ct_tensor **gi) {
    if (ct_ctx_needs_input_grad(ctx, 0) && !(gi[0] = ct_mul(g, ct_ctx_saved(ctx, 1)))) return -1;
    if (ct_ctx_needs_input_grad(ctx, 1) && !(gi[1] = ct_mul(g, ct_ctx_saved(ctx, 0)))) return -1;
    if (ct_ctx_needs_input_grad(ctx, 2)) gi[2] = g;
    return 0;
}
static const ct_function MulAdd = {"MulAdd", muladd_forward, muladd_backward, NULL};

static ct_tensor *f_mycube(ct_tensor *const *x, void *c) {
    (void)c;
    return ct_function_apply(&MyCube, 1, x);
}
static ct_tensor *f_muladd(ct_tensor *const *x, void *c) {
    (void)c;
    return ct_function_apply(&MulAdd, 3, x);
}

TEST(grad_custom_function) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(3, 2))};
    GRADGRADCHECK("custom_function", f_mycube, 1, x, NULL);
    ct_tensor *e[] = {gc_rand(CT_SHAPE(0, 2))};
    GRADCHECK("custom_function", f_mycube, 1, e, NULL);
    ct_tensor *m[] = {gc_rand(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(3)), gc_rand(CT_SHAPE(2, 1))};
    GRADGRADCHECK("custom_function", f_muladd, 3, m, NULL);
}

/* A block of elementwise layers, checkpointed. */
static ct_tensor *block(ct_tensor *const *in, void *c) {
    (void)c;
    ct_tensor *h = ct_mul(in[0], in[1]);
    return ct_mul(ct_exp(ct_neg(ct_mul(h, h))), in[0]);
}
static ct_tensor *f_checkpoint(ct_tensor *const *x, void *c) {
    return ct_checkpoint(block, c, 2, x);
}

TEST(grad_checkpoint) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(3, 2)), gc_rand(CT_SHAPE(2))};
    GRADCHECK("checkpoint", f_checkpoint, 2, x, NULL);
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 2)), gc_rand(CT_SHAPE(1))};
    GRADCHECK("checkpoint", f_checkpoint, 2, z, NULL);
}
