/* Gradcheck cases of the indexing ops.  Index tensors and masks travel in ctx. */
#include "gc.h"

typedef struct {
    int64_t dim;
    ct_tensor *index; /* or mask */
    double v;
} ix;

/* the case's index (or mask), on the input's device */
#define IDX gc_like(x[0], c->index)
#define F(name, expr)                                                         \
    static ct_tensor *name(ct_tensor *const *x, void *c_) {                   \
        ix *c = c_;                                                           \
        (void)c;                                                              \
        return expr;                                                          \
    }
F(f_index_select, ct_index_select(x[0], c->dim, IDX))
F(f_index_add, ct_index_add(x[0], c->dim, IDX, x[1], c->v))
F(f_gather, ct_gather(x[0], c->dim, IDX))
F(f_scatter, ct_scatter(x[0], c->dim, IDX, x[1]))
F(f_scatter_value, ct_scatter_value(x[0], c->dim, IDX, c->v))
F(f_scatter_add, ct_scatter_add(x[0], c->dim, IDX, x[1]))
F(f_masked_fill, ct_masked_fill(x[0], IDX, c->v))
F(f_masked_fill_t, ct_masked_fill_tensor(x[0], IDX, x[1]))
F(f_masked_fill_, ct_masked_fill_(ct_mul_scalar(x[0], 2), IDX, c->v))
F(f_masked_fill_t_, ct_masked_fill_tensor_(ct_mul_scalar(x[0], 2), IDX, x[1]))
F(f_masked_select, ct_masked_select(x[0], IDX))
F(f_embedding, ct_embedding(IDX, x[0]))
F(f_index_put, ct_index_put_(ct_mul_scalar(x[0], 1), 1, (ct_tensor *[]){IDX}, x[1], false))
F(f_index_put_acc, ct_index_put_(ct_mul_scalar(x[0], 1), 1, (ct_tensor *[]){IDX}, x[1], true))
F(f_sort, ct_sort(x[0], c->dim).values)
F(f_sort_desc, ct_sort(x[0], c->dim, .descending = true).values)
F(f_topk, ct_topk(x[0], (int64_t)c->v, c->dim).values)
F(f_topk_small, ct_topk(x[0], (int64_t)c->v, c->dim, .smallest = true).values)

/* Several index tensors (CT_ALL: a whole dim) for ct_index / ct_index_put_. */
typedef struct {
    int n;
    ct_tensor *ix[3];
} ixs;
static ct_tensor *f_index(ct_tensor *const *x, void *c_) {
    ixs *c = c_;
    return ct_index(x[0], c->n, c->ix);
}
static ct_tensor *f_index_put_n(ct_tensor *const *x, void *c_) {
    ixs *c = c_;
    return ct_index_put_(ct_mul_scalar(x[0], 1), c->n, c->ix, x[1]);
}
static ct_tensor *f_index_put_n_acc(ct_tensor *const *x, void *c_) {
    ixs *c = c_;
    return ct_index_put_(ct_mul_scalar(x[0], 1), c->n, c->ix, x[1], .accumulate = true);
}

#define I64(...) ct_tensor_i64(((int64_t[]){__VA_ARGS__}), CT_SHAPE(sizeof((int64_t[]){__VA_ARGS__}) / 8))
#define BOOLS(shape, ...) ct_tensor_bool(((bool[]){__VA_ARGS__}), shape)

TEST(grad_index_select) {
    ix c = {.dim = 1, .index = I64(2, 0, 2, 1)};
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 3, 2))};
    GRADGRADCHECK("index_select", f_index_select, 1, x, &c);
    ix c0 = {.dim = 0, .index = ct_tensor_i64((int64_t[]){1}, CT_SHAPE())};
    ct_tensor *y[] = {gc_rand(CT_SHAPE(3))};
    GRADCHECK("index_select", f_index_select, 1, y, &c0);
    ix ce = {.dim = 0, .index = ct_empty(CT_SHAPE(0), .dtype = CT_I64)};
    ct_tensor *z[] = {gc_rand(CT_SHAPE(2, 0))};
    GRADCHECK("index_select", f_index_select, 1, z, &ce);
    GRADCHECK("index_select", f_index_select, 1, y, &ce);
}

TEST(grad_index_add) {
    ix c = {.dim = 1, .index = I64(2, 0, 2), .v = 1.5}; /* duplicates add up */
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 4)), gc_rand(CT_SHAPE(2, 3))};
    GRADGRADCHECK("index_add", f_index_add, 2, x, &c);
    ix c32 = {.dim = 0, .index = ct_tensor_i32(((int32_t[]){1, 0}), CT_SHAPE(2)), .v = -1};
    ct_tensor *y[] = {gc_rand(CT_SHAPE(3, 1)), gc_noncontig(CT_SHAPE(2, 1))};
    GRADCHECK("index_add", f_index_add, 2, y, &c32);
    ix cs = {.dim = 0, .index = ct_tensor_i64((int64_t[]){2}, CT_SHAPE()), .v = 1};
    ct_tensor *s[] = {gc_rand(CT_SHAPE(3)), gc_rand(CT_SHAPE())};
    GRADCHECK("index_add", f_index_add, 2, s, &cs);
}

TEST(grad_gather) {
    int64_t iv[] = {0, 2, 2, 1, 1, 0};
    ix c = {.dim = 1, .index = ct_tensor_i64(iv, CT_SHAPE(2, 3))};
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(3, 3))}; /* index smaller than self in dim 0 */
    GRADGRADCHECK("gather", f_gather, 1, x, &c);
    ix c0 = {.dim = 0, .index = ct_tensor_i64(((int64_t[]){1, 0, 1}), CT_SHAPE(3, 1))};
    ct_tensor *y[] = {gc_rand(CT_SHAPE(2, 2))};
    GRADCHECK("gather", f_gather, 1, y, &c0);
    ix ce = {.dim = 0, .index = ct_empty(CT_SHAPE(0, 2), .dtype = CT_I64)};
    GRADCHECK("gather", f_gather, 1, y, &ce);
    ix cs = {.dim = 0, .index = ct_tensor_i64((int64_t[]){0}, CT_SHAPE())};
    ct_tensor *s[] = {gc_rand(CT_SHAPE())};
    GRADCHECK("gather", f_gather, 1, s, &cs);
}

TEST(grad_scatter) {
    /* unique targets per column (duplicates make scatter's gradient ill-defined) */
    int64_t iv[] = {1, 0, 2, 0, 2, 1};
    ix c = {.dim = 0, .index = ct_tensor_i64(iv, CT_SHAPE(2, 3)), .v = 2.5};
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(3, 4)), gc_rand(CT_SHAPE(3, 3))}; /* src larger */
    GRADGRADCHECK("scatter", f_scatter, 2, x, &c);
    GRADGRADCHECK("scatter_value", f_scatter_value, 1, x, &c);
    ct_tensor *y[] = {gc_rand(CT_SHAPE(3, 3)), gc_noncontig(CT_SHAPE(2, 3))};
    GRADCHECK("scatter", f_scatter, 2, y, &c);
    ix c1 = {.dim = -1, .index = ct_tensor_i64(((int64_t[]){1, 0}), CT_SHAPE(1, 2))};
    ct_tensor *z[] = {gc_rand(CT_SHAPE(2, 2)), gc_rand(CT_SHAPE(1, 2))};
    GRADCHECK("scatter", f_scatter, 2, z, &c1);
    ix ce = {.dim = 0, .index = ct_empty(CT_SHAPE(0, 2), .dtype = CT_I64)};
    GRADCHECK("scatter_value", f_scatter_value, 1, z, &ce);
}

TEST(grad_scatter_add) {
    int64_t iv[] = {1, 1, 2, 0, 1, 1}; /* duplicates add up */
    ix c = {.dim = 0, .index = ct_tensor_i64(iv, CT_SHAPE(2, 3))};
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(3, 3)), gc_rand(CT_SHAPE(3, 4))};
    GRADGRADCHECK("scatter_add", f_scatter_add, 2, x, &c);
    ct_tensor *y[] = {gc_rand(CT_SHAPE(3, 3)), gc_noncontig(CT_SHAPE(2, 3))};
    GRADCHECK("scatter_add", f_scatter_add, 2, y, &c);
}

TEST(grad_masked_fill) {
    ix c = {.dim = 0, .index = BOOLS(CT_SHAPE(3), true, false, true), .v = 7};
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE())};
    GRADGRADCHECK("masked_fill", f_masked_fill, 1, x, &c);
    GRADGRADCHECK("masked_fill_tensor", f_masked_fill_t, 2, x, &c);
    GRADCHECK("masked_fill", f_masked_fill_, 1, x, &c);
    GRADCHECK("masked_fill_tensor", f_masked_fill_t_, 2, x, &c);
    /* the mask broadcasts self up: [2, 1] with [1, 2, 3] */
    ix cb = {.dim = 0, .index = BOOLS(CT_SHAPE(1, 2, 3), false, true, true, false, false, true), .v = -1};
    ct_tensor *y[] = {gc_rand(CT_SHAPE(2, 1)), gc_rand(CT_SHAPE())};
    GRADCHECK("masked_fill", f_masked_fill, 1, y, &cb);
    GRADCHECK("masked_fill_tensor", f_masked_fill_t, 2, y, &cb);
    ix ce = {.dim = 0, .index = ct_empty(CT_SHAPE(0, 3), .dtype = CT_BOOL), .v = 1};
    ct_tensor *z[] = {gc_rand(CT_SHAPE(3))};
    GRADCHECK("masked_fill", f_masked_fill, 1, z, &ce);
}

TEST(grad_masked_select) {
    ix c = {.dim = 0, .index = BOOLS(CT_SHAPE(2, 1), true, false)};
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 3))};
    GRADGRADCHECK("masked_select", f_masked_select, 1, x, &c);
    ix cb = {.dim = 0, .index = BOOLS(CT_SHAPE(2, 3), true, false, true, false, true, true)};
    ct_tensor *y[] = {gc_rand(CT_SHAPE(3))}; /* self broadcast up by the mask */
    GRADGRADCHECK("masked_select", f_masked_select, 1, y, &cb);
    ix cs = {.dim = 0, .index = ct_tensor_bool((bool[]){true}, CT_SHAPE())};
    ct_tensor *s[] = {gc_rand(CT_SHAPE())};
    GRADCHECK("masked_select", f_masked_select, 1, s, &cs);
}

TEST(grad_embedding) {
    int64_t iv[] = {1, 3, 1, 0, 3, 2};
    ix c = {.dim = 0, .index = ct_tensor_i64(iv, CT_SHAPE(2, 3))};
    ct_tensor *w[] = {gc_noncontig(CT_SHAPE(4, 3))};
    GRADGRADCHECK("embedding", f_embedding, 1, w, &c);
    /* padding_idx rows get no gradient on purpose (so no finite-difference check);
     * tests/test_index.c compares that gradient with PyTorch's. */
    ix ce = {.dim = 0, .index = ct_empty(CT_SHAPE(0), .dtype = CT_I64)};
    GRADCHECK("embedding", f_embedding, 1, w, &ce);
}

TEST(grad_index_put) {
    ix c = {.dim = 0, .index = I64(2, -4, 1)}; /* unique rows: duplicates keep only one value */
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(4, 2)), gc_rand(CT_SHAPE(3, 2))};
    GRADGRADCHECK("index_put", f_index_put, 2, x, &c);
    ix cd = {.dim = 0, .index = I64(1, 1, 3)}; /* duplicates accumulate */
    ct_tensor *y[] = {gc_rand(CT_SHAPE(4, 2)), gc_rand(CT_SHAPE(2))}; /* values broadcast */
    GRADGRADCHECK("index_put", f_index_put_acc, 2, y, &cd);
    ix cm = {.dim = 0, .index = BOOLS(CT_SHAPE(2, 2), true, false, true, true)};
    ct_tensor *z[] = {gc_noncontig(CT_SHAPE(2, 2, 3)), gc_rand(CT_SHAPE(3, 3))};
    GRADGRADCHECK("index_put", f_index_put, 2, z, &cm);
    GRADCHECK("index_put", f_index_put_acc, 2, z, &cm);
}

TEST(grad_index_several) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(3, 4, 5))};
    /* adjacent after a whole dim: [3, 2, 3]; duplicates add up in the gradient */
    ixs adj = {3, {CT_ALL, ct_view(I64(1, 3), CT_SHAPE(2, 1)), I64(0, 4, 0)}};
    GRADGRADCHECK("index", f_index, 1, x, &adj);
    /* apart (B first): [2, 4]; a mask and a negative index */
    ixs apart = {3, {BOOLS(CT_SHAPE(3), true, false, true), CT_ALL, I64(-1, 2)}};
    GRADGRADCHECK("index", f_index, 1, x, &apart);
    ixs mask = {2, {CT_ALL, BOOLS(CT_SHAPE(2, 2), false, true, true, true)}};
    ct_tensor *y[] = {gc_rand(CT_SHAPE(2, 2, 2))};
    GRADCHECK("index", f_index, 1, y, &mask);
    ixs none = {0, {NULL}};
    GRADCHECK("index", f_index, 1, y, &none);

    /* index_put_ with the same layouts; values broadcast */
    ixs put = {3, {I64(2, 0), CT_ALL, I64(1, 4)}}; /* unique positions */
    ct_tensor *p[] = {gc_noncontig(CT_SHAPE(3, 4, 5)), gc_rand(CT_SHAPE(4))};
    GRADGRADCHECK("index_put", f_index_put_n, 2, p, &put);
    ct_tensor *q[] = {gc_rand(CT_SHAPE(3, 4, 5)), gc_rand(CT_SHAPE(3, 1, 1))};
    GRADGRADCHECK("index_put", f_index_put_n_acc, 2, q, &adj);
    ct_tensor *r[] = {gc_rand(CT_SHAPE(2, 2, 2)), gc_rand(CT_SHAPE(2, 3))};
    GRADGRADCHECK("index_put", f_index_put_n, 2, r, &mask);
}

TEST(grad_sort_topk) {
    ix c = {.dim = 1, .v = 2};
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(3, 4))};
    GRADGRADCHECK("sort", f_sort, 1, x, &c);
    GRADCHECK("sort", f_sort_desc, 1, x, &c);
    GRADGRADCHECK("topk", f_topk, 1, x, &c);
    GRADCHECK("topk", f_topk_small, 1, x, &c);
    ix c0 = {.dim = 0, .v = 0};
    GRADCHECK("topk", f_topk, 1, x, &c0);
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 3))};
    GRADCHECK("sort", f_sort, 1, z, &c0);
    ct_tensor *s[] = {gc_rand(CT_SHAPE())};
    ix cs = {.dim = 0, .v = 1};
    GRADCHECK("sort", f_sort, 1, s, &cs);
    GRADCHECK("topk", f_topk, 1, s, &cs);
}
