/* Gradcheck cases of the random family.  Each function reseeds its generator (the
 * ctx) before drawing, so every evaluation gradcheck makes sees the same mask or
 * samples: dropout is then a fixed linear map, and the samplers are constants of
 * their inputs (gradient zero, as in PyTorch). */
#include "gc.h"

#define SEED 1234

static ct_tensor *f_dropout(ct_tensor *const *x, void *g) {
    ct_generator_manual_seed(g, SEED);
    return ct_dropout(x[0], 0.4, true, .generator = g);
}
static ct_tensor *f_dropout_inplace(ct_tensor *const *x, void *g) {
    ct_generator_manual_seed(g, SEED);
    return ct_dropout_(ct_mul_scalar(x[0], 1.5), 0.25, true, .generator = g);
}
/* x + sampler(clone(x)): the sampler's zero gradient must not hide x's. */
static ct_tensor *f_normal(ct_tensor *const *x, void *g) {
    ct_generator_manual_seed(g, SEED);
    return ct_add(x[0], ct_normal_(ct_clone(x[0]), 1, 2, .generator = g));
}
static ct_tensor *f_uniform(ct_tensor *const *x, void *g) {
    ct_generator_manual_seed(g, SEED);
    return ct_add(x[0], ct_uniform_(ct_clone(x[0]), -1, 1, .generator = g));
}
static ct_tensor *f_bernoulli_scalar(ct_tensor *const *x, void *g) {
    ct_generator_manual_seed(g, SEED);
    return ct_add(x[0], ct_bernoulli_(ct_clone(x[0]), 0.5, .generator = g));
}
static ct_tensor *f_bernoulli(ct_tensor *const *x, void *g) {
    ct_generator_manual_seed(g, SEED);
    return ct_mul(x[0], ct_bernoulli(x[0], .generator = g));
}

TEST(grad_dropout) {
    ct_generator *g = ct_generator_new(0);
    ct_tensor *a[] = {gc_rand(CT_SHAPE(3, 4))};
    ct_tensor *b[] = {gc_noncontig(CT_SHAPE(2, 3, 2))};
    ct_tensor *c[] = {gc_rand(CT_SHAPE(1, 5))};
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 3))};
    GRADGRADCHECK("dropout", f_dropout, 1, a, g);
    GRADGRADCHECK("dropout", f_dropout, 1, b, g);
    GRADCHECK("dropout", f_dropout, 1, c, g);
    GRADCHECK("dropout", f_dropout, 1, z, g);
    GRADGRADCHECK("dropout", f_dropout_inplace, 1, a, g);
    GRADCHECK("dropout", f_dropout_inplace, 1, b, g);
}

TEST(grad_random_samplers_are_zero) {
    ct_generator *g = ct_generator_new(0);
    ct_tensor *a[] = {gc_rand(CT_SHAPE(2, 3))};
    ct_tensor *b[] = {gc_noncontig(CT_SHAPE(3, 1))};
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0))};
    /* probabilities well inside (0, 1): a 1e-6 step cannot flip a sample */
    ct_tensor *p[] = {gc_rand_range(CT_SHAPE(2, 4), 0.2, 0.8)};
    ct_tensor *pn[] = {gc_noncontig_range(CT_SHAPE(3, 1), 0.2, 0.8)};
    ct_tensor *(*fs[])(ct_tensor *const *, void *) = {f_normal, f_uniform, f_bernoulli_scalar};
    const char *names[] = {"normal", "uniform", "bernoulli_scalar"};
    for (int i = 0; i < 3; i++) {
        GRADGRADCHECK(names[i], fs[i], 1, a, g);
        GRADCHECK(names[i], fs[i], 1, b, g);
        GRADCHECK(names[i], fs[i], 1, z, g);
    }
    GRADGRADCHECK("bernoulli", f_bernoulli, 1, p, g);
    GRADCHECK("bernoulli", f_bernoulli, 1, pn, g);
}
