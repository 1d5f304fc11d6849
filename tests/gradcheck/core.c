/* Gradcheck cases of the core ops: arithmetic, exp/log, sum, views, copies. */
#include "gc.h"

#define F1(name, expr)                                                        \
    static ct_tensor *name(ct_tensor *const *x, void *c) {                    \
        (void)c;                                                              \
        return expr;                                                          \
    }
F1(f_add, ct_add_alpha(x[0], x[1], 1.5))
F1(f_sub, ct_sub_alpha(x[0], x[1], 0.5))
F1(f_mul, ct_mul(x[0], x[1]))
F1(f_div, ct_div(x[0], x[1]))
F1(f_neg, ct_neg(x[0]))
F1(f_exp, ct_exp(x[0]))
F1(f_log, ct_log(x[0]))
F1(f_sum_all, ct_sum(x[0]))
F1(f_sum_dims, ct_sum(x[0], .dims = CT_DIMS(0, -1), .keepdim = true))
F1(f_sum_dim, ct_sum(x[0], .dims = CT_DIMS(1)))
F1(f_view, ct_view(ct_contiguous(x[0]), CT_SHAPE(-1)))
F1(f_reshape, ct_reshape(x[0], CT_SHAPE(3, -1)))
F1(f_expand, ct_expand(x[0], CT_SHAPE(4, 2, 3, 3)))
F1(f_transpose, ct_transpose(x[0], 0, 1))
F1(f_permute, ct_permute(x[0], CT_DIMS(2, 0, 1)))
F1(f_clone, ct_clone(x[0]))
F1(f_to, ct_to(x[0], .copy = true))
F1(f_copy, ct_copy_(ct_mul_scalar(x[0], 2), x[1]))
F1(f_fill, ct_add(ct_fill_(ct_mul_scalar(x[0], 1), 3), x[0]))

TEST(grad_binary_broadcast_and_noncontig) {
    ct_tensor *a[] = {gc_rand(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(3))};
    ct_tensor *b[] = {gc_noncontig(CT_SHAPE(2, 1)), gc_rand(CT_SHAPE(1, 4))};
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 3)), gc_rand(CT_SHAPE(3))};
    ct_tensor *d[] = {gc_rand(CT_SHAPE(2, 3)), gc_rand_range(CT_SHAPE(3), 0.5, 2)};
    ct_tensor *(*fs[])(ct_tensor *const *, void *) = {f_add, f_sub, f_mul};
    const char *names[] = {"add", "sub", "mul"};
    for (int i = 0; i < 3; i++) {
        GRADGRADCHECK(names[i], fs[i], 2, a, NULL);
        GRADCHECK(names[i], fs[i], 2, b, NULL);
        GRADCHECK(names[i], fs[i], 2, z, NULL);
    }
    GRADGRADCHECK("div", f_div, 2, d, NULL);
    ct_tensor *dn[] = {gc_noncontig(CT_SHAPE(2, 3)), gc_noncontig_range(CT_SHAPE(2, 1), 0.5, 2)};
    GRADCHECK("div", f_div, 2, dn, NULL);
    ct_tensor *dz[] = {gc_rand(CT_SHAPE(0, 3)), gc_rand_range(CT_SHAPE(3), 0.5, 2)};
    GRADCHECK("div", f_div, 2, dz, NULL);
    ct_tensor *dz2[] = {gc_rand(CT_SHAPE(1, 3)), gc_rand_range(CT_SHAPE(0, 1), 0.5, 2)};
    GRADCHECK("div", f_div, 2, dz2, NULL);
}

TEST(grad_unary) {
    ct_tensor *x[] = {gc_noncontig_range(CT_SHAPE(3, 2), 0.2, 2)};
    GRADGRADCHECK("neg", f_neg, 1, x, NULL);
    GRADGRADCHECK("exp", f_exp, 1, x, NULL);
    GRADGRADCHECK("log", f_log, 1, x, NULL);
    ct_tensor *e[] = {gc_rand(CT_SHAPE(0))};
    GRADCHECK("exp", f_exp, 1, e, NULL);
}

TEST(grad_sum) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 3, 4))};
    GRADGRADCHECK("sum", f_sum_all, 1, x, NULL);
    GRADGRADCHECK("sum", f_sum_dims, 1, x, NULL);
    GRADCHECK("sum", f_sum_dim, 1, x, NULL);
    ct_tensor *z[] = {gc_rand(CT_SHAPE(2, 0, 3))};
    GRADCHECK("sum", f_sum_dim, 1, z, NULL);
}

TEST(grad_views) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 3, 1))};
    GRADGRADCHECK("view", f_view, 1, x, NULL);
    GRADCHECK("view", f_reshape, 1, x, NULL);
    GRADGRADCHECK("expand", f_expand, 1, x, NULL);
    GRADGRADCHECK("transpose", f_transpose, 1, x, NULL);
    GRADGRADCHECK("permute", f_permute, 1, x, NULL);
    GRADGRADCHECK("clone", f_clone, 1, x, NULL);
}

TEST(grad_copies) {
    ct_tensor *x[] = {gc_rand(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(3))};
    GRADCHECK("to_copy", f_to, 1, x, NULL);
    GRADCHECK("copy", f_copy, 2, x, NULL);
    GRADCHECK("fill", f_fill, 1, x, NULL);
}
