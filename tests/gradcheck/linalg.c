/* Gradcheck cases of the matrix products (first and second order). */
#include "gc.h"

#define F1(name, expr)                                                        \
    static ct_tensor *name(ct_tensor *const *x, void *c) {                    \
        (void)c;                                                              \
        return expr;                                                          \
    }
F1(f_mm, ct_mm(x[0], x[1]))
F1(f_bmm, ct_bmm(x[0], x[1]))
F1(f_addmm, ct_addmm(x[0], x[1], x[2], .beta = CT_SOME(0.5), .alpha = CT_SOME(-2)))
F1(f_baddbmm, ct_baddbmm(x[0], x[1], x[2], .beta = CT_SOME(1.5), .alpha = CT_SOME(0.75)))
F1(f_mv, ct_mv(x[0], x[1]))
F1(f_dot, ct_dot(x[0], x[1]))
F1(f_matmul, ct_matmul(x[0], x[1]))
F1(f_outer, ct_outer(x[0], x[1]))

TEST(grad_mm) {
    ct_tensor *a[] = {gc_rand(CT_SHAPE(2, 3)), gc_noncontig(CT_SHAPE(3, 4))};
    GRADGRADCHECK("mm", f_mm, 2, a, NULL);
    ct_tensor *t[] = {ct_t(gc_rand(CT_SHAPE(3, 2))), gc_rand(CT_SHAPE(3, 1))};
    GRADGRADCHECK("mm", f_mm, 2, t, NULL);
    ct_tensor *z[] = {gc_rand(CT_SHAPE(2, 0)), gc_rand(CT_SHAPE(0, 3))};
    GRADCHECK("mm", f_mm, 2, z, NULL);
    ct_tensor *z2[] = {gc_rand(CT_SHAPE(0, 2)), gc_rand(CT_SHAPE(2, 3))};
    GRADCHECK("mm", f_mm, 2, z2, NULL);
}

TEST(grad_bmm) {
    ct_tensor *a[] = {gc_noncontig(CT_SHAPE(3, 2, 3)), gc_rand(CT_SHAPE(3, 3, 2))};
    GRADGRADCHECK("bmm", f_bmm, 2, a, NULL);
    ct_tensor *one[] = {gc_rand(CT_SHAPE(1, 1, 2)), gc_rand(CT_SHAPE(1, 2, 1))};
    GRADGRADCHECK("bmm", f_bmm, 2, one, NULL);
}

TEST(grad_addmm_baddbmm) {
    ct_tensor *a[] = {gc_rand(CT_SHAPE(4)), gc_rand(CT_SHAPE(2, 3)), gc_noncontig(CT_SHAPE(3, 4))};
    GRADGRADCHECK("addmm", f_addmm, 3, a, NULL);
    ct_tensor *b[] = {gc_rand(CT_SHAPE(2, 1)), gc_rand(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(3, 4))};
    GRADCHECK("addmm", f_addmm, 3, b, NULL);
    ct_tensor *c[] = {gc_rand(CT_SHAPE(2, 4)), gc_noncontig(CT_SHAPE(3, 2, 3)), gc_rand(CT_SHAPE(3, 3, 4))};
    GRADGRADCHECK("baddbmm", f_baddbmm, 3, c, NULL);
}

TEST(grad_mv_dot_outer) {
    ct_tensor *a[] = {gc_noncontig(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(3))};
    GRADGRADCHECK("mv", f_mv, 2, a, NULL);
    ct_tensor *d[] = {gc_noncontig(CT_SHAPE(4)), gc_rand(CT_SHAPE(4))};
    GRADGRADCHECK("dot", f_dot, 2, d, NULL);
    GRADGRADCHECK("mul", f_outer, 2, d, NULL);
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0)), gc_rand(CT_SHAPE(0))};
    GRADCHECK("dot", f_dot, 2, z, NULL);
}

TEST(grad_matmul_broadcast) {
    ct_shape cases[][2] = {
        {CT_SHAPE(3), CT_SHAPE(3, 2)},       {CT_SHAPE(2, 2, 3), CT_SHAPE(3, 2)},
        {CT_SHAPE(2, 2, 3), CT_SHAPE(3)},    {CT_SHAPE(2, 3), CT_SHAPE(2, 3, 2)},
        {CT_SHAPE(3), CT_SHAPE(2, 3, 1)},    {CT_SHAPE(2, 1, 1, 3), CT_SHAPE(2, 3, 2)},
    };
    for (int i = 0; i < 6; i++) {
        ct_tensor *x[] = {gc_noncontig(cases[i][0]), gc_rand(cases[i][1])};
        GRADGRADCHECK("bmm", f_matmul, 2, x, NULL);
    }
}
