/* Gradcheck cases of pooling and interpolation.  A gradgradcheck of a forward op
 * differentiates its backward op (<op>_backward), so it covers that op too. */
#include "gc.h"

static ct_tensor *f_max(ct_tensor *const *x, void *c) { return ct_max_pool2d_with(x[0], *(ct_max_pool2d_options *)c); }
static ct_tensor *f_avg(ct_tensor *const *x, void *c) { return ct_avg_pool2d_with(x[0], *(ct_avg_pool2d_options *)c); }
static ct_tensor *f_aavg(ct_tensor *const *x, void *c) { return ct_adaptive_avg_pool2d(x[0], *(ct_dims *)c); }
static ct_tensor *f_amax(ct_tensor *const *x, void *c) { return ct_adaptive_max_pool2d(x[0], *(ct_dims *)c); }
static ct_tensor *f_interp(ct_tensor *const *x, void *c) {
    return ct_interpolate_with(x[0], *(ct_interpolate_options *)c);
}

TEST(grad_pools) {
    ct_max_pool2d_options m = {.kernel_size = CT_DIMS(2, 3), .stride = CT_DIMS(1, 2), .padding = CT_DIMS(1),
                         .dilation = CT_DIMS(1, 2), .ceil_mode = true};
    ct_tensor *a[] = {gc_noncontig(CT_SHAPE(2, 2, 5, 6))};
    GRADCHECK("max_pool2d", f_max, 1, a, &m);
    ct_avg_pool2d_options v = {.kernel_size = CT_DIMS(3), .stride = CT_DIMS(2),
                               .padding = CT_DIMS(1), .ceil_mode = true};
    GRADCHECK("avg_pool2d", f_avg, 1, a, &v);
    ct_avg_pool2d_options one = {.kernel_size = CT_DIMS(1), .count_include_pad = true};
    ct_max_pool2d_options one_max = {.kernel_size = CT_DIMS(1)};
    ct_tensor *u[] = {gc_rand(CT_SHAPE(1, 1, 1))};
    GRADCHECK("avg_pool2d", f_avg, 1, u, &one);
    GRADCHECK("max_pool2d", f_max, 1, u, &one_max);
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 2, 3, 3))};
    GRADCHECK("max_pool2d", f_max, 1, z, &one_max);
    ct_dims os = CT_DIMS(3, 2);
    GRADCHECK("adaptive_avg_pool2d", f_aavg, 1, a, &os);
    GRADCHECK("adaptive_max_pool2d", f_amax, 1, a, &os);
    GRADCHECK("adaptive_avg_pool2d", f_aavg, 1, z, &os);
    GRADCHECK("adaptive_max_pool2d", f_amax, 1, z, &os);
    ct_tensor *s[] = {gc_noncontig(CT_SHAPE(1, 2, 4, 5))};
    GRADGRADCHECK("max_pool2d", f_max, 1, s, &m);
    gc_cover("max_pool2d_backward");
    GRADGRADCHECK("avg_pool2d", f_avg, 1, s, &v);
    gc_cover("avg_pool2d_backward");
    GRADGRADCHECK("adaptive_avg_pool2d", f_aavg, 1, s, &os);
    gc_cover("adaptive_avg_pool2d_backward");
    GRADGRADCHECK("adaptive_max_pool2d", f_amax, 1, s, &os);
    gc_cover("adaptive_max_pool2d_backward");
}

TEST(grad_interpolate) {
    ct_tensor *a[] = {gc_noncontig(CT_SHAPE(1, 2, 3, 4))};
    ct_interpolate_options n = {.scale_factor = {1.5, 2}};
    GRADCHECK("upsample_nearest2d", f_interp, 1, a, &n);
    ct_interpolate_options b = {.size = CT_DIMS(5, 3), .mode = CT_INTERP_BILINEAR};
    GRADCHECK("upsample_bilinear2d", f_interp, 1, a, &b);
    ct_interpolate_options c = {.size = CT_DIMS(4, 7), .mode = CT_INTERP_BILINEAR, .align_corners = true};
    GRADCHECK("upsample_bilinear2d", f_interp, 1, a, &c);
    ct_tensor *s[] = {gc_noncontig(CT_SHAPE(1, 1, 2, 3))};
    GRADGRADCHECK("upsample_nearest2d", f_interp, 1, s, &n);
    gc_cover("upsample_nearest2d_backward");
    GRADGRADCHECK("upsample_bilinear2d", f_interp, 1, s, &c);
    gc_cover("upsample_bilinear2d_backward");
    /* an empty batch, and a one-pixel image (align_corners with a single input row) */
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 2, 3, 4))};
    GRADCHECK("upsample_nearest2d", f_interp, 1, z, &n);
    GRADCHECK("upsample_bilinear2d", f_interp, 1, z, &b);
    ct_tensor *u[] = {gc_rand(CT_SHAPE(1, 1, 1, 1))};
    ct_interpolate_options un = {.size = CT_DIMS(2, 3)};
    GRADCHECK("upsample_nearest2d", f_interp, 1, u, &un);
    GRADCHECK("upsample_bilinear2d", f_interp, 1, u, &b);
    GRADCHECK("upsample_bilinear2d", f_interp, 1, u, &c);
}
