/* Gradcheck cases of batch_norm, layer_norm and group_norm: first order through the
 * fused backward kernels, second order through the backward built from ops (the path
 * create_graph takes).  Inputs: x, then weight and bias when the case has them. */
#include "gc.h"

typedef struct {
    ct_tensor *rm, *rv; /* batch_norm's running statistics (eval, or updated) */
    bool training;
    ct_shape ns;        /* layer_norm's normalized shape */
    int64_t groups;     /* group_norm */
} norm_case;

static ct_tensor *f_bn(ct_tensor *const *x, void *c) {
    const norm_case *k = c;
    return ct_batch_norm(x[0], gc_like(x[0], k->rm), gc_like(x[0], k->rv), .weight = x[1],
                         .bias = x[2], .training = k->training);
}
static ct_tensor *f_bn_plain(ct_tensor *const *x, void *c) {
    const norm_case *k = c;
    return ct_batch_norm(x[0], gc_like(x[0], k->rm), gc_like(x[0], k->rv), .training = k->training);
}
static ct_tensor *f_ln(ct_tensor *const *x, void *c) {
    return ct_layer_norm(x[0], ((const norm_case *)c)->ns, .weight = x[1], .bias = x[2]);
}
static ct_tensor *f_ln_plain(ct_tensor *const *x, void *c) {
    return ct_layer_norm(x[0], ((const norm_case *)c)->ns);
}
static ct_tensor *f_gn(ct_tensor *const *x, void *c) {
    return ct_group_norm(x[0], ((const norm_case *)c)->groups, .weight = x[1], .bias = x[2]);
}
static ct_tensor *f_gn_plain(ct_tensor *const *x, void *c) {
    return ct_group_norm(x[0], ((const norm_case *)c)->groups);
}

TEST(grad_batch_norm) {
    norm_case train = {.training = true};
    ct_tensor *a[] = {gc_rand(CT_SHAPE(4, 3)), gc_rand(CT_SHAPE(3)), gc_rand(CT_SHAPE(3))};
    GRADGRADCHECK("batch_norm", f_bn, 3, a, &train);
    ct_tensor *b[] = {gc_noncontig(CT_SHAPE(3, 2, 4)), gc_rand(CT_SHAPE(2)), gc_rand(CT_SHAPE(2))};
    GRADGRADCHECK("batch_norm", f_bn, 3, b, &train);
    ct_tensor *c[] = {gc_rand(CT_SHAPE(2, 3, 2, 3)), gc_noncontig(CT_SHAPE(3)), gc_rand(CT_SHAPE(3))};
    GRADGRADCHECK("batch_norm", f_bn, 3, c, &train);
    /* running statistics updated as a side effect; affine off */
    norm_case upd = {.rm = ct_zeros(CT_SHAPE(2), .dtype = CT_F64),
                     .rv = ct_ones(CT_SHAPE(2), .dtype = CT_F64), .training = true};
    ct_tensor *d[] = {gc_rand(CT_SHAPE(2, 2, 1, 3))};
    GRADGRADCHECK("batch_norm", f_bn_plain, 1, d, &upd);
    /* eval: the running statistics are constants */
    norm_case ev = {.rm = ct_tensor_f64(((double[]){0.3, -0.2, 0.1}), CT_SHAPE(3)),
                    .rv = ct_tensor_f64(((double[]){0.5, 1.5, 0.9}), CT_SHAPE(3))};
    ct_tensor *e[] = {gc_noncontig(CT_SHAPE(2, 3, 3)), gc_rand(CT_SHAPE(3)), gc_rand(CT_SHAPE(3))};
    GRADGRADCHECK("batch_norm", f_bn, 3, e, &ev);
    ct_tensor *e0[] = {gc_rand(CT_SHAPE(0, 3, 2)), gc_rand(CT_SHAPE(3)), gc_rand(CT_SHAPE(3))};
    GRADCHECK("batch_norm", f_bn, 3, e0, &ev);
    ct_tensor *e1[] = {gc_rand(CT_SHAPE(1, 3))};
    GRADGRADCHECK("batch_norm", f_bn_plain, 1, e1, &ev);
    /* one value per channel but two samples: [2, 1] */
    ct_tensor *f[] = {gc_rand(CT_SHAPE(2, 1)), gc_rand(CT_SHAPE(1)), gc_rand(CT_SHAPE(1))};
    GRADCHECK("batch_norm", f_bn, 3, f, &train);
}

TEST(grad_layer_norm) {
    norm_case one = {.ns = CT_SHAPE(4)}, two = {.ns = CT_SHAPE(3, 2)};
    ct_tensor *a[] = {gc_rand(CT_SHAPE(3, 4)), gc_rand(CT_SHAPE(4)), gc_rand(CT_SHAPE(4))};
    GRADGRADCHECK("layer_norm", f_ln, 3, a, &one);
    ct_tensor *b[] = {gc_noncontig(CT_SHAPE(2, 2, 3, 2)), gc_noncontig(CT_SHAPE(3, 2)),
                      gc_rand(CT_SHAPE(3, 2))};
    GRADGRADCHECK("layer_norm", f_ln, 3, b, &two);
    ct_tensor *c[] = {gc_rand(CT_SHAPE(3, 2))}; /* the whole input normalized */
    GRADGRADCHECK("layer_norm", f_ln_plain, 1, c, &two);
    ct_tensor *d[] = {gc_rand(CT_SHAPE(2, 1, 4))};
    GRADGRADCHECK("layer_norm", f_ln_plain, 1, d, &one);
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 4)), gc_rand(CT_SHAPE(4)), gc_rand(CT_SHAPE(4))};
    GRADCHECK("layer_norm", f_ln, 3, z, &one);
    norm_case unit = {.ns = CT_SHAPE(1)}; /* one element per row: zero gradient */
    ct_tensor *u[] = {gc_rand(CT_SHAPE(3, 1)), gc_rand(CT_SHAPE(1)), gc_rand(CT_SHAPE(1))};
    GRADCHECK("layer_norm", f_ln, 3, u, &unit);
}

TEST(grad_group_norm) {
    norm_case g2 = {.groups = 2}, g1 = {.groups = 1}, g3 = {.groups = 3};
    ct_tensor *a[] = {gc_rand(CT_SHAPE(2, 4, 3)), gc_rand(CT_SHAPE(4)), gc_rand(CT_SHAPE(4))};
    GRADGRADCHECK("group_norm", f_gn, 3, a, &g2);
    ct_tensor *b[] = {gc_noncontig(CT_SHAPE(2, 6, 2, 2)), gc_rand(CT_SHAPE(6)),
                      gc_noncontig(CT_SHAPE(6))};
    GRADGRADCHECK("group_norm", f_gn, 3, b, &g3);
    ct_tensor *c[] = {gc_rand(CT_SHAPE(3, 4))};
    GRADGRADCHECK("group_norm", f_gn_plain, 1, c, &g2);
    ct_tensor *d[] = {gc_rand(CT_SHAPE(1, 2, 1, 3))};
    GRADGRADCHECK("group_norm", f_gn_plain, 1, d, &g1);
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 4, 2)), gc_rand(CT_SHAPE(4)), gc_rand(CT_SHAPE(4))};
    GRADCHECK("group_norm", f_gn, 3, z, &g2);
}
