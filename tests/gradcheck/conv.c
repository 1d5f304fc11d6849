/* Gradcheck cases of the convolutions and of im2col / col2im (first and second
 * order). */
#include "gc.h"

/* Inputs x, w (and bias when given): ctx is the options. */
static ct_tensor *f_conv2d(ct_tensor *const *x, void *c) {
    return ct_conv2d_with(x[0], x[1], x[2], *(ct_conv_options *)c);
}
static ct_tensor *f_conv2d_nobias(ct_tensor *const *x, void *c) {
    return ct_conv2d_with(x[0], x[1], NULL, *(ct_conv_options *)c);
}
static ct_tensor *f_conv1d(ct_tensor *const *x, void *c) {
    return ct_conv1d_with(x[0], x[1], x[2], *(ct_conv_options *)c);
}
static ct_tensor *f_convt(ct_tensor *const *x, void *c) {
    return ct_conv_transpose2d_with(x[0], x[1], x[2], *(ct_conv_options *)c);
}

TEST(grad_conv2d) {
    ct_conv_options o = {.stride = CT_DIMS(2, 1), .padding = CT_DIMS(1), .dilation = CT_DIMS(1, 2)};
    ct_tensor *a[] = {gc_noncontig(CT_SHAPE(2, 2, 5, 5)), gc_rand(CT_SHAPE(3, 2, 2, 2)),
                      gc_rand(CT_SHAPE(3))};
    GRADCHECK("convolution", f_conv2d, 3, a, &o);
    ct_tensor *a2[] = {gc_noncontig(CT_SHAPE(2, 1, 4, 3)), gc_rand(CT_SHAPE(2, 1, 2, 2)),
                       gc_rand(CT_SHAPE(2))};
    GRADGRADCHECK("convolution", f_conv2d, 3, a2, &o);
    ct_conv_options g = {.groups = 2, .padding_same = true};
    ct_tensor *b[] = {gc_rand(CT_SHAPE(1, 4, 4, 3)), gc_noncontig(CT_SHAPE(2, 2, 2, 3))};
    GRADCHECK("convolution", f_conv2d_nobias, 2, b, &g);
    ct_conv_options g2 = {.groups = 2, .padding = CT_DIMS(1, 0)};
    ct_tensor *b2[] = {gc_rand(CT_SHAPE(1, 4, 2, 3)), gc_noncontig(CT_SHAPE(2, 2, 2, 2))};
    GRADGRADCHECK("convolution", f_conv2d_nobias, 2, b2, &g2);
    ct_conv_options p = {0};
    ct_tensor *one[] = {gc_rand(CT_SHAPE(1, 1, 1, 1)), gc_rand(CT_SHAPE(1, 1, 1, 1)),
                        gc_rand(CT_SHAPE(1))};
    GRADCHECK("convolution", f_conv2d, 3, one, &p);
    ct_tensor *zero[] = {gc_rand(CT_SHAPE(0, 2, 3, 3)), gc_rand(CT_SHAPE(2, 2, 3, 3)),
                         gc_rand(CT_SHAPE(2))};
    GRADCHECK("convolution", f_conv2d, 3, zero, &p);
    ct_tensor *unb[] = {gc_rand(CT_SHAPE(2, 3, 3)), gc_rand(CT_SHAPE(2, 2, 2, 2))};
    GRADCHECK("convolution", f_conv2d_nobias, 2, unb, &p);
}

TEST(grad_conv1d_and_transpose) {
    ct_conv_options o = {.stride = CT_DIMS(2), .padding = CT_DIMS(1), .groups = 2};
    ct_tensor *a[] = {gc_rand(CT_SHAPE(2, 4, 7)), gc_noncontig(CT_SHAPE(2, 2, 3)), gc_rand(CT_SHAPE(2))};
    GRADCHECK("convolution", f_conv1d, 3, a, &o);
    ct_tensor *a2[] = {gc_rand(CT_SHAPE(1, 4, 5)), gc_noncontig(CT_SHAPE(2, 2, 2)), gc_rand(CT_SHAPE(2))};
    GRADGRADCHECK("convolution", f_conv1d, 3, a2, &o);
    ct_conv_options t = {.stride = CT_DIMS(2), .padding = CT_DIMS(1), .output_padding = CT_DIMS(1, 0),
                         .groups = 2, .dilation = CT_DIMS(1, 2)};
    ct_tensor *b[] = {gc_noncontig(CT_SHAPE(2, 4, 3, 3)), gc_rand(CT_SHAPE(4, 1, 3, 2)),
                      gc_rand(CT_SHAPE(2))};
    GRADCHECK("convolution", f_convt, 3, b, &t);
    ct_tensor *b2[] = {gc_noncontig(CT_SHAPE(1, 4, 2, 2)), gc_rand(CT_SHAPE(4, 1, 2, 2)),
                       gc_rand(CT_SHAPE(2))};
    GRADGRADCHECK("convolution", f_convt, 3, b2, &t);
    /* empty and one-element batches */
    ct_tensor *z1[] = {gc_rand(CT_SHAPE(0, 4, 7)), gc_rand(CT_SHAPE(2, 2, 3)), gc_rand(CT_SHAPE(2))};
    GRADCHECK("convolution", f_conv1d, 3, z1, &o);
    ct_conv_options p = {0};
    ct_tensor *u1[] = {gc_rand(CT_SHAPE(1, 1, 1)), gc_rand(CT_SHAPE(1, 1, 1)), gc_rand(CT_SHAPE(1))};
    GRADCHECK("convolution", f_conv1d, 3, u1, &p);
    ct_tensor *zt[] = {gc_rand(CT_SHAPE(0, 4, 3, 3)), gc_rand(CT_SHAPE(4, 1, 3, 2)), gc_rand(CT_SHAPE(2))};
    GRADCHECK("convolution", f_convt, 3, zt, &t);
    ct_conv_options s2 = {.stride = CT_DIMS(2)};
    ct_tensor *ut[] = {gc_rand(CT_SHAPE(1, 1, 1, 1)), gc_rand(CT_SHAPE(1, 2, 1, 1)), gc_rand(CT_SHAPE(2))};
    GRADCHECK("convolution", f_convt, 3, ut, &s2);
}

static ct_tensor *f_im2col(ct_tensor *const *x, void *c) {
    return ct_im2col_with(x[0], *(ct_fold_options *)c);
}
static ct_tensor *f_col2im(ct_tensor *const *x, void *c) {
    return ct_col2im_with(x[0], CT_DIMS(4, 5), *(ct_fold_options *)c);
}

TEST(grad_im2col_col2im) {
    ct_fold_options o = {.kernel_size = CT_DIMS(2, 3), .dilation = CT_DIMS(1, 2),
                         .padding = CT_DIMS(1), .stride = CT_DIMS(2, 1)};
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(1, 2, 4, 5))};
    GRADGRADCHECK("im2col", f_im2col, 1, x, &o);
    /* [2, 2 * 6, L]: L = 3 * 3 blocks for a 4x5 image */
    ct_tensor *c[] = {gc_rand(CT_SHAPE(1, 12, 9))};
    GRADGRADCHECK("col2im", f_col2im, 1, c, &o);
}
