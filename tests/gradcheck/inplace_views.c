/* Gradcheck cases of CopySlices: in-place ops on views of a tensor built from the
 * inputs (b = x * 1, so that b is not a leaf), first and second order. */
#include <stdlib.h>

#include "gc.h"

#define F(name, ...) \
    static ct_tensor *name(ct_tensor *const *x, void *c) { (void)c; __VA_ARGS__ }

/* b[1:3] *= y (y broadcast over the rows) */
F(f_mul_slice, ct_tensor *b = ct_mul_scalar(x[0], 1);
  ct_mul_(ct_slice(b, 0, 1, 3, 1), x[1]); return b;)
/* b[:, 0] /= y: div_ saves its output, the view itself */
F(f_div_select, ct_tensor *b = ct_mul_scalar(x[0], 1);
  ct_div_(ct_select(b, 1, 0), x[1]); return ct_mul(b, b);)
/* b.t()[0:2].copy_(y), then used twice */
F(f_copy_transposed, ct_tensor *b = ct_mul_scalar(x[0], 1);
  ct_copy_(ct_slice(ct_t(b), 0, 0, 2, 1), x[1]); return ct_mul(b, x[0]);)
/* relu_, clamp_ and an add on three views; relu_ last (it saves its output) */
F(f_three_views, ct_tensor *b = ct_mul(x[0], x[0]);
  ct_clamp_(ct_select(b, 0, 0), .min = CT_SOME(0.1), .max = CT_SOME(0.7));
  ct_add_(ct_select(b, 0, 1), ct_select(x[0], 0, 2));
  ct_relu_(ct_select(b, 1, 2)); return b;)
/* masked_fill_ and index_put_ (values from y) on views */
F(f_masked_index_put, ct_tensor *b = ct_mul_scalar(x[0], 2);
  bool m[4] = {1, 0, 0, 1};
  ct_masked_fill_(ct_select(b, 0, 2), ct_tensor_bool(m, CT_SHAPE(4)), 0.25);
  int64_t i[2] = {1, 0};
  ct_tensor *idx = ct_tensor_i64(i, CT_SHAPE(2));
  ct_index_put_(ct_slice(b, 1, 0, 2, 1), 1, &idx, ct_slice(x[1], 0, 0, 2, 1), false);
  return ct_mul(b, x[0]);)
/* the base modified after a view was taken; the view read */
F(f_base_after_view, ct_tensor *b = ct_mul_scalar(x[0], 1); ct_tensor *v = ct_slice(b, 0, 0, 2, 1);
  ct_mul_(b, x[0]); ct_mul_(v, ct_slice(x[0], 0, 1, 3, 1)); return ct_cat(CT_TENSORS(v, b), 0);)
/* a base that needs no grad and is not contiguous (a transposed buffer of its own) */
static void free_buf(void *data, void *ctx) {
    (void)ctx;
    free(data);
}
F(f_noncontig_base, double *buf = calloc(12, sizeof(double)); int64_t st[2] = {1, 3};
  ct_tensor *z = gc_like(x[0], ct_from_blob(buf, CT_F64, CT_SHAPE(3, 4), st, free_buf, NULL));
  ct_add_(ct_slice(z, 1, 1, 3, 1), x[0]);
  ct_tensor *zc = ct_clone(z); return ct_mul(zc, zc);)

TEST(grad_copy_slices) {
    ct_tensor *a[] = {gc_rand(CT_SHAPE(4, 4)), gc_rand(CT_SHAPE(4))};
    GRADGRADCHECK("copy_slices", f_mul_slice, 2, a, NULL);
    ct_tensor *b[] = {gc_noncontig(CT_SHAPE(3, 4)), gc_rand_range(CT_SHAPE(3), 0.5, 1.5)};
    GRADGRADCHECK("copy_slices", f_div_select, 2, b, NULL);
    ct_tensor *c[] = {gc_rand(CT_SHAPE(3, 4)), gc_rand(CT_SHAPE(1, 3))};
    GRADGRADCHECK("copy_slices", f_copy_transposed, 2, c, NULL);
    ct_tensor *d[] = {gc_rand_range(CT_SHAPE(3, 3), 0.2, 1)};
    GRADCHECK("copy_slices", f_three_views, 1, d, NULL);
    ct_tensor *e[] = {gc_rand(CT_SHAPE(4, 3)), gc_rand(CT_SHAPE(3))};
    GRADGRADCHECK("copy_slices", f_masked_index_put, 2, e, NULL);
    ct_tensor *f[] = {gc_rand(CT_SHAPE(3, 2))};
    GRADGRADCHECK("copy_slices", f_base_after_view, 1, f, NULL);
    /* size-0 and size-1 views */
    ct_tensor *g[] = {gc_rand(CT_SHAPE(1, 4)), gc_rand(CT_SHAPE(4))};
    GRADCHECK("copy_slices", f_mul_slice, 2, g, NULL);
    ct_tensor *h[] = {gc_rand(CT_SHAPE(3, 2))};
    GRADGRADCHECK("copy_slices", f_noncontig_base, 1, h, NULL);
}
