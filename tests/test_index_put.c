/* Advanced indexing: ct_index (t[i, j]) and ct_index_put_ / ct_index_put with several
 * index tensors, CT_ALL (whole) dims, broadcasting, masks and accumulate, against
 * PyTorch (fixtures/index_put.fx, written by fixtures/gen_index_put.py); errors;
 * behaviour PyTorch leaves to the implementation (determinism, views, dtypes).
 *
 * Tolerances: float64 exact for moves, 1e-12 where gradients or accumulate add;
 * float32 runs against the float64 fixtures 1e-5. */
#include <string.h>

#include "ct_test.h"
#include "fx_case.h"

/* t has the shape given (t may be NULL: then a failure). */
#define CHECK_SHAPE(t, ...)                                                                \
    do {                                                                                   \
        ct_shape want_ = CT_SHAPE(__VA_ARGS__), got_ = {0};                                \
        const ct_tensor *t_ = (t);                                                         \
        if (t_) got_ = ct_shape_of(t_);                                                    \
        CHECK(t_ && got_.ndim == want_.ndim &&                                             \
              !memcmp(got_.d, want_.d, sizeof(int64_t) * (size_t)want_.ndim));            \
    } while (0)

/* The table of tests/fixtures/gen_index_put.py. */
static const char *const cases[] = {
    "ix_2d", "ix_2d_bcast", "ix_3d_front_none", "ix_3d_mid_none", "ix_3d_last",
    "ix_3d_two_then_whole", "ix_mask", "ix_mask_apart", "ix_neg_dup", "ix_0d",
    "put_2d", "put_2d_bcast", "put_3d_front_none", "put_3d_mid_none",
    "put_3d_mid_none_bcast", "put_mask", "put_mask_apart", "put_acc_dup",
    "put_acc_dup_none", "put_acc_mask", "put_acc_neg",
};

/* Case `name`'s index list into ix (CT_ALL for None); returns how many. */
static int load_indices(fx_file *f, const char *name, ct_tensor **ix) {
    char key[96];
    snprintf(key, sizeof key, "%s_kinds", name);
    ct_tensor *kinds = fx_get(f, key);
    int n = kinds ? (int)ct_numel(kinds) : 0;
    for (int k = 0; k < n; k++) {
        int64_t kind = (int64_t)ct_item(ct_select(kinds, 0, k));
        snprintf(key, sizeof key, "%s_ix%d", name, k);
        ix[k] = kind == 0 ? CT_ALL : fx_get_as(f, key, kind == 2 ? CT_BOOL : CT_I64, false);
    }
    return n;
}

static int64_t fx_int(fx_file *f, const char *name, const char *what) {
    char key[96];
    snprintf(key, sizeof key, "%s_%s", name, what);
    return (int64_t)ct_item(fx_get(f, key));
}

TEST(advanced_indexing_matches_pytorch) {
    fx_file *f = fx_load("index_put");
    ct_dtype dts[] = {CT_F64, CT_F32};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int t = 0; t < 2; t++) {
            CT_SCOPE {
                const char *name = cases[c];
                ct_dtype dt = dts[t];
                double tol = dt == CT_F64 ? 1e-12 : 1e-5;
                ct_tensor *ix[4], *in[2];
                int n = load_indices(f, name, ix);
                bool put = fx_int(f, name, "op") == 1;
                bool acc = fx_int(f, name, "acc") != 0;
                fx_case_inputs(f, name, put ? 2 : 1, dt, in);
                ct_tensor *y = put ? ct_index_put(in[0], n, ix, in[1], .accumulate = acc)
                                   : ct_index(in[0], n, ix);
                if (!y) ct_test_fail(__FILE__, __LINE__, "%s: %s", name, ct_last_error());
                else CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)),
                                  put ? "IndexPutBackward0" : "IndexBackward0");
                fx_case_check(f, name, put ? 2 : 1, in, y, dt, tol);
                if (put) { /* in place on a copy gives the same values */
                    ct_tensor *z = ct_index_put_(ct_clone(in[0]), n, ix, in[1], acc);
                    CHECK(ct_test_max_diff(z, y) == 0);
                }
            }
        }
    }
    fx_free(f);
}

/* ---- errors --------------------------------------------------------------- */

TEST(advanced_indexing_errors_use_pytorch_wording) {
    ct_tensor *x = ct_zeros(CT_SHAPE(3, 4));
    ct_tensor *i = ct_tensor_i64(((int64_t[]){0, 2}), CT_SHAPE(2));
    ct_tensor *bad = ct_tensor_i64(((int64_t[]){0, 5}), CT_SHAPE(2));
    ct_tensor *neg = ct_tensor_i64(((int64_t[]){-5, 1}), CT_SHAPE(2));
    ct_tensor *v = ct_ones(CT_SHAPE(1));
    /* out of range: the index, the dim it indexes (CT_ALL in front) and that dim's size */
    ct_tensor *l1[] = {CT_ALL, bad};
    CHECK_ERROR(ct_index_put_(x, 2, l1, v), "index 5 is out of bounds for dimension 1 with size 4");
    CHECK_ERROR(ct_index(x, 2, l1), "ct_index: index 5 is out of bounds for dimension 1 with size 4");
    ct_tensor *l2[] = {neg, i};
    CHECK_ERROR(ct_index_put_(x, 2, l2, v, .accumulate = true),
                "index -5 is out of bounds for dimension 0 with size 3");
    /* index dtypes */
    ct_tensor *l3[] = {i, ct_to(i, .dtype = CT_F32)};
    CHECK_ERROR(ct_index_put_(x, 2, l3, v), "tensors used as indices must be long, byte or bool tensors");
    ct_tensor *l4[] = {ct_to(i, .dtype = CT_I32)};
    CHECK_ERROR(ct_index(x, 1, l4), "tensors used as indices must be long, byte or bool tensors");
    /* values that do not broadcast to the indexed shape ([3, 2] for x[:, i]) */
    ct_tensor *l5[] = {CT_ALL, i};
    CHECK_ERROR(ct_index_put_(x, 2, l5, ct_ones(CT_SHAPE(4))),
                "shape mismatch: value tensor of shape [4] cannot be broadcast to indexing result "
                "of shape [3, 2]");
    CHECK_ERROR(ct_index_put_(x, 2, l5, ct_ones(CT_SHAPE(2), .dtype = CT_F64)),
                "Index put requires the source and destination dtypes match");
    /* index tensors that do not broadcast together, too many, masks that do not fit */
    ct_tensor *l6[] = {i, ct_tensor_i64(((int64_t[]){0, 1, 2}), CT_SHAPE(3))};
    CHECK_ERROR(ct_index(x, 2, l6), "shape mismatch: indexing tensors could not be broadcast "
                                    "together with shapes [2], [3]");
    ct_tensor *l7[] = {i, CT_ALL, i};
    CHECK_ERROR(ct_index_put_(x, 3, l7, v), "too many indices for tensor of dimension 2 (got 3)");
    ct_tensor *l8[] = {ct_ones(CT_SHAPE(3, 3), .dtype = CT_BOOL)};
    CHECK_ERROR(ct_index(x, 1, l8), "The shape of the mask [3, 3] at index 1 does not match the "
                                    "shape of the indexed tensor [3, 4] at index 1");
    ct_tensor *l9[] = {CT_ALL, ct_ones(CT_SHAPE(3), .dtype = CT_BOOL)};
    CHECK_ERROR(ct_index(x, 2, l9), "The shape of the mask [3] at index 0 does not match the "
                                    "shape of the indexed tensor [3, 4] at index 1");
    ct_tensor *l10[] = {ct_ones(CT_SHAPE(3, 4), .dtype = CT_BOOL), i};
    CHECK_ERROR(ct_index(x, 2, l10), "too many indices for tensor of dimension 2 (got 3)");
    /* a NULL entry is an input that failed: its error is kept, not read as `:` */
    ct_clear_error();
    ct_tensor *l11[] = {NULL, i};
    CHECK_ERROR(ct_index(x, 2, l11), "ct_index: index 0 is NULL (use CT_ALL for a whole dim)");
    ct_clear_error();
    ct_tensor *l12[] = {ct_reshape(i, CT_SHAPE(3)), i};
    CHECK(ct_index_put_(x, 2, l12, v) == NULL);
    CHECK(ct_last_error() && strstr(ct_last_error(), "shape '[3]' is invalid for input of size 2"));
    CHECK_ERROR(ct_index(x, 1, NULL), "ct_index: the list of 1 indices is NULL");
    CHECK_ERROR(ct_index_put_(x, 2, NULL, v), "ct_index_put_: the list of 2 indices is NULL");
    /* CT_ALL outlives any number of releases */
    ct_release(CT_ALL);
    ct_release(CT_ALL);
    CHECK_INT_EQ(ct_numel(CT_ALL), 0);
    /* nothing was written by the failing calls */
    CHECK_INT_EQ(ct_item(ct_sum(x)), 0);
}

/* ---- behaviour -------------------------------------------------------------- */

TEST(the_one_index_form_is_the_general_one) {
    /* x[i] = v with one index, positional accumulate, as before */
    ct_tensor *y = ct_zeros(CT_SHAPE(3));
    ct_tensor *i[] = {ct_tensor_i64(((int64_t[]){-1, 0, -1}), CT_SHAPE(3))};
    ct_tensor *v = ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3));
    ct_index_put_(y, 1, i, v, true);
    CHECK_VALUES(y, 0, 2, 0, 4);
    ct_index_put_(y, 1, i, v, .accumulate = false);
    CHECK_VALUES(y, 0, 2, 0, 3); /* the last write wins */
    ct_index_put_(y, 1, i, ct_zeros(CT_SHAPE()));
    CHECK_VALUES(y, 0, 0, 0, 0);
    /* ct_index(t, 1, &i) is index_select along dim 0, negative indices allowed */
    ct_tensor *m = ct_view(ct_arange(6, .dtype = CT_F32), CT_SHAPE(3, 2));
    CHECK_VALUES(ct_index(m, 1, i), 0, 4, 5, 0, 1, 4, 5);
    CHECK_VALUES(ct_index(m, CT_TENSORS(CT_ALL, ct_tensor_i64(((int64_t[]){1}), CT_SHAPE()))), 0, 1,
                 3, 5);
    /* no index at all: a copy (ct_index) / the whole tensor (ct_index_put_) */
    ct_tensor *all = ct_index(m, 0, NULL);
    CHECK_SHAPE(all, 3, 2);
    ct_index_put_(m, 0, NULL, ct_ones(CT_SHAPE(2)), true);
    CHECK_VALUES(m, 0, 1, 2, 3, 4, 5, 6);
    CHECK_VALUES(all, 0, 0, 1, 2, 3, 4, 5);
}

TEST(index_put_writes_through_views_and_keeps_out_of_place_apart) {
    /* t[:, j] = v on a transposed view writes through to the base */
    ct_tensor *b = ct_zeros(CT_SHAPE(2, 3));
    ct_tensor *bt = ct_transpose(b, 0, 1); /* [3, 2] */
    ct_tensor *col[] = {CT_ALL, ct_tensor_i64(((int64_t[]){1}), CT_SHAPE(1))};
    ct_index_put_(bt, 2, col, ct_tensor_f32(((float[]){5, 6, 7}), CT_SHAPE(3, 1)));
    CHECK_VALUES(b, 0, 0, 0, 0, 5, 6, 7);
    /* torch.index_put (b[:, 1] = 0 on a copy) leaves its input alone */
    ct_tensor *c = ct_index_put(b, 2, col, ct_zeros(CT_SHAPE()));
    CHECK_VALUES(c, 0, 0, 0, 0, 5, 0, 7);
    CHECK_VALUES(b, 0, 0, 0, 0, 5, 6, 7);
    /* integer data and a uint8 mask */
    ct_tensor *n = ct_zeros(CT_SHAPE(2, 2), .dtype = CT_I64);
    ct_tensor *mk[] = {ct_to(ct_eye(2), .dtype = CT_U8)};
    ct_index_put_(n, 1, mk, ct_tensor_i64(((int64_t[]){7, 9}), CT_SHAPE(2)));
    CHECK_VALUES(n, 0, 7, 0, 0, 9);
    CHECK_VALUES(ct_index(n, 1, mk), 0, 7, 9);
}

TEST(accumulate_is_deterministic_and_counts_duplicates) {
    /* many duplicate positions over two index tensors: a histogram, the same for any
     * thread count */
    int64_t n = 200000;
    ct_tensor *ij[] = {ct_randint(0, 8, CT_SHAPE(n)), ct_randint(0, 8, CT_SHAPE(n))};
    ct_tensor *r = ct_add(ct_mul_scalar(ij[0], 8), ij[1]); /* the row of x.view(64, ...) */
    ct_tensor *vals = ct_rand(CT_SHAPE(n), .dtype = CT_F64);
    ct_tensor *h1 = ct_index_put_(ct_zeros(CT_SHAPE(8, 8), .dtype = CT_F64), 2, ij, vals, true);
    int threads = ct_get_num_threads();
    ct_set_num_threads(1);
    ct_tensor *h2 = ct_index_put_(ct_zeros(CT_SHAPE(8, 8), .dtype = CT_F64), 2, ij, vals, true);
    ct_set_num_threads(threads);
    CHECK(ct_test_max_diff(h1, h2) == 0);
    CHECK_CLOSE(ct_item(ct_sum(h1)), ct_item(ct_sum(vals)), 1e-8);
    ct_tensor *cnt = ct_index_put_(ct_zeros(CT_SHAPE(8, 8), .dtype = CT_I64), 2, ij,
                                   ct_ones(CT_SHAPE(), .dtype = CT_I64), true);
    CHECK_INT_EQ(ct_item(ct_sum(cnt)), n);
    /* a large read spread over threads equals the gather of the same positions */
    ct_tensor *big = ct_rand(CT_SHAPE(8, 8, 16), .dtype = CT_F32);
    ct_tensor *rows = ct_index(big, 2, ij);
    ct_tensor *flat = ct_index_select(ct_view(big, CT_SHAPE(64, 16)), 0, r);
    CHECK_SHAPE(rows, n, 16);
    CHECK(ct_test_max_diff(rows, flat) == 0);
}

TEST(gradients_through_several_indices) {
    /* y = x[:, j] (j repeats) then written back scaled: x[:, j] = 2 * y */
    ct_tensor *x = ct_tensor_f64(((double[]){1, 2, 3, 4, 5, 6}), CT_SHAPE(2, 3),
                                 .requires_grad = true);
    ct_tensor *l[] = {CT_ALL, ct_tensor_i64(((int64_t[]){2, 0, 2}), CT_SHAPE(3))};
    ct_tensor *y = ct_index(x, 2, l);
    CHECK_SHAPE(y, 2, 3);
    CHECK_VALUES(y, 0, 3, 1, 3, 6, 4, 6);
    ct_backward(ct_sum(y));
    CHECK_VALUES(ct_grad(x), 0, 1, 0, 2, 1, 0, 2);
    /* self's gradient is zero where written (no accumulate), one elsewhere */
    ct_tensor *w = ct_mul_scalar(x, 1);
    ct_tensor *u[] = {CT_ALL, ct_tensor_i64(((int64_t[]){1}), CT_SHAPE(1))};
    ct_tensor *val = ct_tensor_f64(((double[]){7}), CT_SHAPE(1), .requires_grad = true);
    ct_index_put_(w, 2, u, val);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(w)), "IndexPutBackward0");
    ct_tensor *g[2] = {0};
    ct_tensor *in[] = {x, val};
    ct_tensor *loss = ct_sum(w);
    CHECK(ct_autograd_grad(1, &loss, 2, in, g) == 0);
    CHECK_VALUES(g[0], 0, 1, 0, 1, 1, 0, 1);
    CHECK_VALUES(g[1], 0, 2); /* values broadcast over both rows: summed */
}
