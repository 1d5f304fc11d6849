/* Gradcheck cases of reductions, scans and softmax: several shapes, dim lists with
 * negative dims, keepdim, non-contiguous inputs, size-0 and size-1 dims.  The ctx of
 * each function is its options struct, so one function serves a table of cases. */
#include "gc.h"

#define FR(name, call)                                                          \
    static ct_tensor *name(ct_tensor *const *x, void *c) {                      \
        const ct_reduce_options *o = c;                                         \
        return call;                                                            \
    }
FR(f_mean, ct_mean_with(x[0], *o))
FR(f_sum, ct_sum_with(x[0], *o))
FR(f_prod, ct_prod_with(x[0], *o))
FR(f_amax, ct_amax_with(x[0], *o))
FR(f_amin, ct_amin_with(x[0], *o))
FR(f_logsumexp, ct_logsumexp_with(x[0], *o))

static ct_tensor *f_var(ct_tensor *const *x, void *c) { return ct_var_with(x[0], *(ct_var_options *)c); }
static ct_tensor *f_std(ct_tensor *const *x, void *c) { return ct_std_with(x[0], *(ct_var_options *)c); }
static ct_tensor *f_norm(ct_tensor *const *x, void *c) { return ct_norm_with(x[0], *(ct_norm_options *)c); }

/* dim-style ops take the dim (and keepdim) as an int64 pair. */
static ct_tensor *f_max(ct_tensor *const *x, void *c) { (void)c; return ct_max(x[0]); }
static ct_tensor *f_min(ct_tensor *const *x, void *c) { (void)c; return ct_min(x[0]); }
static ct_tensor *f_max_dim(ct_tensor *const *x, void *c) {
    const int64_t *a = c;
    return ct_max_dim(x[0], a[0], a[1]).values;
}
static ct_tensor *f_min_dim(ct_tensor *const *x, void *c) {
    const int64_t *a = c;
    return ct_min_dim(x[0], a[0], a[1]).values;
}
static ct_tensor *f_cumsum(ct_tensor *const *x, void *c) { return ct_cumsum(x[0], *(int64_t *)c); }
static ct_tensor *f_cumprod(ct_tensor *const *x, void *c) { return ct_cumprod(x[0], *(int64_t *)c); }
static ct_tensor *f_softmax(ct_tensor *const *x, void *c) { return ct_softmax(x[0], *(int64_t *)c); }
static ct_tensor *f_log_softmax(ct_tensor *const *x, void *c) {
    return ct_log_softmax(x[0], *(int64_t *)c);
}

/* The input gradient of (log_)softmax for grad_output x[1], built with create_graph:
 * a tensor made by the *_backward_data op, checked as a function of x[0] and x[1]. */
static ct_tensor *softmax_grad(ct_tensor *const *x, bool log) {
    ct_tensor *r[1] = {NULL};
    CT_ENABLE_GRAD { /* the numerical Jacobian evaluates f without grad mode */
        ct_tensor *y = log ? ct_log_softmax(x[0], 1) : ct_softmax(x[0], 1);
        ct_tensor *gos[1] = {x[1]};
        ct_tensor *outs[1] = {y};
        if (ct_autograd_grad(1, outs, 1, x, r, .grad_outputs = gos, .create_graph = true) != 0)
            r[0] = NULL;
    }
    return r[0];
}
static ct_tensor *f_softmax_bwd(ct_tensor *const *x, void *c) { (void)c; return softmax_grad(x, false); }
static ct_tensor *f_log_softmax_bwd(ct_tensor *const *x, void *c) { (void)c; return softmax_grad(x, true); }

/* Shapes every reduction is checked on: contiguous, non-contiguous, size-1 dims. */
static ct_tensor *inputs3(int i) {
    switch (i) {
    case 0: return gc_rand(CT_SHAPE(2, 3, 4));
    case 1: return gc_noncontig(CT_SHAPE(3, 1, 4));
    default: return gc_rand(CT_SHAPE(4));
    }
}

static const ct_reduce_options RED_CASES[] = {
    {0},
    {.dims = CT_DIMS(0)},
    {.dims = CT_DIMS(-1), .keepdim = true},
    {.dims = CT_DIMS(0, -1)},
};

TEST(grad_sum_mean_logsumexp) {
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 4; k++) {
            if (s == 2 && k == 3) continue; /* 1-D: dims (0, -1) repeat */
            ct_tensor *x[] = {inputs3(s)};
            ct_reduce_options o = RED_CASES[k];
            GRADGRADCHECK("sum", f_sum, 1, x, &o);
            GRADGRADCHECK("mean", f_mean, 1, x, &o);
            GRADGRADCHECK("logsumexp", f_logsumexp, 1, x, &o);
        }
    ct_tensor *z[] = {gc_rand(CT_SHAPE(2, 0, 3))};
    ct_reduce_options o = {.dims = CT_DIMS(1)};
    GRADCHECK("sum", f_sum, 1, z, &o);
    GRADCHECK("mean", f_mean, 1, z, &o);
    GRADCHECK("logsumexp", f_logsumexp, 1, z, &o);
    o = (ct_reduce_options){.dims = CT_DIMS(-1)};
    GRADCHECK("mean", f_mean, 1, z, &o);
}

TEST(grad_prod_with_and_without_zeros) {
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 4; k++) {
            if (s == 2 && k == 3) continue;
            ct_tensor *x[] = {inputs3(s)};
            ct_reduce_options o = RED_CASES[k];
            GRADGRADCHECK("prod", f_prod, 1, x, &o);
        }
    /* One zero and two zeros in a row: the gradient is the product of the others. */
    double v[] = {0.5, 0, -1.5, 2, 0, 0, 0.7, 1.2, -0.3, 0, 2, 1};
    ct_tensor *z[] = {ct_tensor_f64(v, CT_SHAPE(3, 4), .requires_grad = true)};
    for (int k = 0; k < 4; k++) {
        ct_reduce_options o = RED_CASES[k];
        GRADGRADCHECK("prod", f_prod, 1, z, &o);
    }
    ct_tensor *e[] = {gc_rand(CT_SHAPE(0, 3))};
    ct_reduce_options o = {.dims = CT_DIMS(0)};
    GRADCHECK("prod", f_prod, 1, e, &o);
}

TEST(grad_amax_amin_max_min) {
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 4; k++) {
            if (s == 2 && k == 3) continue;
            ct_tensor *x[] = {inputs3(s)};
            ct_reduce_options o = RED_CASES[k];
            GRADGRADCHECK("amax", f_amax, 1, x, &o);
            GRADGRADCHECK("amin", f_amin, 1, x, &o);
        }
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(3, 4))};
    GRADGRADCHECK("max", f_max, 1, x, NULL);
    GRADGRADCHECK("min", f_min, 1, x, NULL);
    int64_t dk[][2] = {{0, 0}, {-1, 1}, {1, 0}};
    for (int i = 0; i < 3; i++) {
        GRADGRADCHECK("max_dim", f_max_dim, 1, x, dk[i]);
        GRADGRADCHECK("min_dim", f_min_dim, 1, x, dk[i]);
    }
    ct_tensor *one[] = {gc_rand(CT_SHAPE(1, 3))};
    GRADCHECK("max_dim", f_max_dim, 1, one, dk[0]);
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 3))};
    GRADCHECK("max_dim", f_max_dim, 1, z, dk[2]);
    ct_reduce_options o = {.dims = CT_DIMS(1)};
    GRADCHECK("amax", f_amax, 1, z, &o);
}

TEST(grad_var_std_norm) {
    ct_var_options vo[] = {
        {0},
        {.dims = CT_DIMS(-1), .keepdim = true},
        {.dims = CT_DIMS(0, 2), .correction = CT_SOME(0)},
        {.dims = CT_DIMS(1), .correction = CT_SOME(2)},
    };
    ct_norm_options no[] = {
        {0},
        {.p = CT_SOME(1), .dims = CT_DIMS(-1)},
        {.p = CT_SOME(INFINITY), .dims = CT_DIMS(0, 2), .keepdim = true},
        {.p = CT_SOME(-INFINITY)},
        {.p = CT_SOME(0), .dims = CT_DIMS(1)},
        {.p = CT_SOME(2), .dims = CT_DIMS(0)},
    };
    for (int s = 0; s < 2; s++) {
        ct_tensor *x[] = {inputs3(s)};
        for (int k = 0; k < 4; k++) {
            if (s == 1 && k == 3) continue; /* dim 1 has size 1: N - 2 < 0 */
            GRADGRADCHECK("var", f_var, 1, x, &vo[k]);
            GRADGRADCHECK("std", f_std, 1, x, &vo[k]);
        }
        for (int k = 0; k < 6; k++) GRADGRADCHECK("norm", f_norm, 1, x, &no[k]);
    }
    ct_tensor *z[] = {gc_rand(CT_SHAPE(2, 0))};
    ct_norm_options o = {.dims = CT_DIMS(1)};
    GRADCHECK("norm", f_norm, 1, z, &o);
}

TEST(grad_cumsum_cumprod) {
    int64_t dims[] = {0, 1, -1};
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 3; k++) {
            if (s == 2 && k == 1) continue;
            ct_tensor *x[] = {inputs3(s)};
            GRADGRADCHECK("cumsum", f_cumsum, 1, x, &dims[k]);
            GRADGRADCHECK("cumprod", f_cumprod, 1, x, &dims[k]);
        }
    double v[] = {0.5, 0, -1.5, 2, 0, 0, 0.7, 1.2, -0.3, 0, 2, 1};
    ct_tensor *z[] = {ct_tensor_f64(v, CT_SHAPE(3, 4), .requires_grad = true)};
    for (int k = 0; k < 3; k++) GRADCHECK("cumprod", f_cumprod, 1, z, &dims[k]);
    ct_tensor *e[] = {gc_rand(CT_SHAPE(0, 3))};
    GRADCHECK("cumsum", f_cumsum, 1, e, &dims[1]);
    GRADCHECK("cumprod", f_cumprod, 1, e, &dims[0]);
}

TEST(grad_softmax) {
    int64_t dims[] = {0, 1, -1};
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 3; k++) {
            if (s == 2 && k == 1) continue;
            ct_tensor *x[] = {inputs3(s)};
            GRADGRADCHECK("softmax", f_softmax, 1, x, &dims[k]);
            GRADGRADCHECK("log_softmax", f_log_softmax, 1, x, &dims[k]);
        }
    ct_tensor *e[] = {gc_rand(CT_SHAPE(0, 3))};
    GRADCHECK("softmax", f_softmax, 1, e, &dims[1]);
    GRADCHECK("log_softmax", f_log_softmax, 1, e, &dims[0]);
    ct_tensor *xg[] = {gc_rand(CT_SHAPE(2, 3)), gc_noncontig(CT_SHAPE(2, 3))};
    GRADGRADCHECK("softmax_backward_data", f_softmax_bwd, 2, xg, NULL);
    GRADGRADCHECK("log_softmax_backward_data", f_log_softmax_bwd, 2, xg, NULL);
}
