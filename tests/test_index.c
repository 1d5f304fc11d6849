/* Indexing ops: values and gradients against PyTorch (fixtures/index.fx, written by
 * fixtures/gen_index.py), error messages, determinism, dtypes.
 *
 * Tolerances: float64 ops that only move values are exact (0); sums (index_add,
 * scatter_add, gradients that accumulate) 1e-12; float32 runs compared with the
 * float64 fixtures 1e-5. */
#include "ct_test.h"
#include "fixtures.h"

/* t equals fixture key within tol (same shape). */
#define CHECK_FX(t, key, tol)                                                          \
    do {                                                                               \
        double d_ = ct_test_max_diff((t), fx_get(fx, key));                            \
        if (!(d_ <= (tol)))                                                            \
            ct_test_fail(__FILE__, __LINE__, "%s vs fixture %s: max diff %g (tol %g)%s%s", \
                         #t, key, d_, (double)(tol), ct_last_error() ? "; " : "",      \
                         ct_last_error() ? ct_last_error() : "");                      \
    } while (0)

/* out and the gradients of sum(out * w) with respect to inputs match fixtures
 * <name>.out and <name>.g<i>. */
static void check_grads(fx_file *fx, const char *file, int line, const char *name,
                        ct_tensor *out, int n, ct_tensor **inputs, double tol) {
    char key[64];
    snprintf(key, sizeof key, "%s.out", name);
    double d = ct_test_max_diff(out, fx_get(fx, key));
    if (!(d <= tol)) ct_test_fail(file, line, "%s: max diff %g", key, d);
    snprintf(key, sizeof key, "%s.w", name);
    ct_tensor *loss = ct_sum(ct_mul(out, fx_get(fx, key)));
    ct_tensor *g[4] = {0};
    if (ct_autograd_grad(1, &loss, n, inputs, g) != 0) {
        ct_test_fail(file, line, "%s: backward failed: %s", name, ct_last_error());
        return;
    }
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s.g%d", name, i);
        d = ct_test_max_diff(g[i], fx_get(fx, key));
        if (!(d <= tol)) ct_test_fail(file, line, "%s: max diff %g", key, d);
    }
}
#define CHECK_GRADS(name, out, n, inputs, tol) \
    check_grads(fx, __FILE__, __LINE__, name, out, n, inputs, tol)

static ct_tensor *leaf(fx_file *fx, const char *key) { return fx_get_as(fx, key, CT_F64, true); }
static ct_tensor *mask(fx_file *fx, const char *key) { return fx_get_as(fx, key, CT_BOOL, false); }

TEST(index_select_and_index_add_match_pytorch) {
    fx_file *fx = fx_load("index");
    ct_tensor *x = leaf(fx, "isel.x");
    ct_tensor *y = ct_index_select(x, 1, fx_get(fx, "isel.i"));
    CHECK_GRADS("isel", y, 1, &x, 1e-12);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "IndexSelectBackward0");
    /* int32 indices and float32 data */
    ct_tensor *x32 = ct_to(x, .dtype = CT_F32);
    ct_tensor *y32 = ct_index_select(x32, -1, ct_to(fx_get(fx, "isel.i"), .dtype = CT_I32));
    CHECK_FX(y32, "isel.out", 1e-6);

    ct_tensor *in[] = {leaf(fx, "iadd.x"), leaf(fx, "iadd.s")};
    ct_tensor *z = ct_index_add(in[0], 0, fx_get(fx, "iadd.i"), in[1], 2.5);
    CHECK_GRADS("iadd", z, 2, in, 1e-12);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(z)), "IndexAddBackward0");
    ct_tensor *zi = ct_index_add(fx_get(fx, "iaddi.x"), 0, fx_get(fx, "iadd.i"),
                                 fx_get(fx, "iaddi.s"), 2.9); /* alpha truncated to 2 */
    CHECK(ct_dtype_of(zi) == CT_I64);
    CHECK_FX(zi, "iaddi.out", 0);
    fx_free(fx);
}

TEST(gather_scatter_match_pytorch) {
    fx_file *fx = fx_load("index");
    ct_tensor *x = leaf(fx, "gat.x");
    ct_tensor *y = ct_gather(x, 1, fx_get(fx, "gat.i"));
    CHECK_GRADS("gat", y, 1, &x, 1e-12);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "GatherBackward0");

    ct_tensor *in[] = {leaf(fx, "sct.x"), leaf(fx, "sct.s")};
    ct_tensor *idx = fx_get(fx, "sct.i");
    ct_tensor *s = ct_scatter(in[0], 1, idx, in[1]);
    CHECK_GRADS("sct", s, 2, in, 0);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(s)), "ScatterBackward0");
    ct_tensor *sv = ct_scatter_value(in[0], 1, idx, -2.5);
    CHECK_GRADS("sctv", sv, 1, in, 0);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(sv)), "ScatterBackward1");
    CHECK_FX(ct_scatter(in[0], 1, idx, fx_get(fx, "sctb.s")), "sctb.out", 0);

    ct_tensor *ia[] = {leaf(fx, "sadd.x"), leaf(fx, "sadd.s")};
    ct_tensor *sa = ct_scatter_add(ia[0], 0, fx_get(fx, "sadd.i"), ia[1]);
    CHECK_GRADS("sadd", sa, 2, ia, 1e-12);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(sa)), "ScatterAddBackward0");
    int64_t iv[] = {0, 1, 0, 3, 3, 3, 0, 1, 2};
    ct_tensor *si = ct_scatter_add(fx_get(fx, "iaddi.x"), 0, ct_tensor_i64(iv, CT_SHAPE(3, 3)),
                                   fx_get(fx, "iaddi.s"));
    CHECK_FX(si, "saddi.out", 0);
    fx_free(fx);
}

TEST(masked_ops_match_pytorch) {
    fx_file *fx = fx_load("index");
    ct_tensor *x = leaf(fx, "mf.x"), *m = mask(fx, "mf.m");
    ct_tensor *y = ct_masked_fill(x, m, -3.0);
    CHECK_GRADS("mf", y, 1, &x, 0);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "MaskedFillBackward0");
    ct_tensor *in[] = {x, leaf(fx, "mf.v")};
    ct_tensor *yt = ct_masked_fill_tensor(x, m, in[1]);
    CHECK_GRADS("mft", yt, 2, in, 1e-12);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(yt)), "MaskedFillBackward1");
    CHECK_GRADS("mfb", ct_masked_fill(x, mask(fx, "mfb.m"), 1.5), 1, &x, 1e-12);
    /* in place on a non-leaf: same values and gradient */
    ct_tensor *c = ct_mul_scalar(x, 1);
    CHECK(ct_masked_fill_(c, m, -3.0) == c);
    CHECK_GRADS("mf", c, 1, &x, 0);
    /* uint8 masks still work, as in PyTorch */
    CHECK_FX(ct_masked_fill(x, ct_to(m, .dtype = CT_U8), -3.0), "mf.out", 0);

    ct_tensor *xs = leaf(fx, "ms.x");
    ct_tensor *sel = ct_masked_select(xs, mask(fx, "ms.m"));
    CHECK_GRADS("ms", sel, 1, &xs, 1e-12);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(sel)), "MaskedSelectBackward0");
    CHECK_INT_EQ(ct_ndim(sel), 1);
    fx_free(fx);
}

TEST(nonzero_and_one_hot_match_pytorch) {
    fx_file *fx = fx_load("index");
    ct_tensor *nz = ct_nonzero(fx_get(fx, "nz.t"));
    CHECK(ct_dtype_of(nz) == CT_I64);
    CHECK_FX(nz, "nz.out", 0);
    CHECK_FX(ct_nonzero(ct_to(fx_get(fx, "nz.t"), .dtype = CT_F32)), "nz.out", 0);
    ct_tensor *nan = ct_tensor_f32(((float[]){0.5f, NAN, 0}), CT_SHAPE(3));
    CHECK_VALUES(ct_nonzero(nan), 0, 0, 1);
    ct_tensor *s = ct_nonzero(ct_scalar_tensor(3));
    CHECK(ct_ndim(s) == 2 && ct_size(s, 0) == 1 && ct_size(s, 1) == 0);
    CHECK_FX(ct_one_hot(fx_get(fx, "oh.t"), -1), "oh.out", 0);
    CHECK_FX(ct_one_hot(fx_get(fx, "oh.t"), 6), "oh.out6", 0);
    ct_tensor *e = ct_one_hot(ct_empty(CT_SHAPE(0), .dtype = CT_I64), 3);
    CHECK(ct_ndim(e) == 2 && ct_size(e, 0) == 0 && ct_size(e, 1) == 3);
    fx_free(fx);
}

TEST(sort_and_topk_match_pytorch) {
    fx_file *fx = fx_load("index");
    ct_tensor *x = leaf(fx, "sort.x");
    struct { const char *name; int dim; bool desc; } cases[] = {
        {"sort1a", 1, false}, {"sort1d", 1, true}, {"sort0a", 0, false}, {"sort0d", 0, true}};
    char key[32];
    for (int i = 0; i < 4; i++) {
        ct_values_indices r = ct_sort(x, cases[i].dim, .descending = cases[i].desc, .stable = true);
        CHECK_GRADS(cases[i].name, r.values, 1, &x, 0);
        snprintf(key, sizeof key, "%s.idx", cases[i].name);
        CHECK_FX(r.indices, key, 0); /* ties keep index order */
        CHECK(ct_dtype_of(r.indices) == CT_I64);
    }
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_sort(x, 0).values)), "SortBackward0");
    /* float32 through the same kernel */
    ct_values_indices r32 = ct_sort(ct_to(x, .dtype = CT_F32), 1, .descending = true);
    CHECK_FX(r32.indices, "sort1d.idx", 0);
    /* NaN sorts as the largest value, -inf as the smallest */
    ct_tensor *xn = fx_get(fx, "sortn.x");
    ct_values_indices a = ct_sort(xn, 0), d = ct_sort(xn, -1, .descending = true);
    CHECK_FX(a.values, "sortna.v", 0);
    CHECK_FX(a.indices, "sortna.idx", 0);
    CHECK_FX(d.values, "sortnd.v", 0);
    CHECK_FX(d.indices, "sortnd.idx", 0);
    ct_values_indices ri = ct_sort(fx_get(fx, "sorti.x"), 1, .descending = true);
    CHECK(ct_dtype_of(ri.values) == CT_I64);
    CHECK_FX(ri.values, "sorti.v", 0);
    CHECK_FX(ri.indices, "sorti.idx", 0);

    ct_tensor *t = leaf(fx, "topk.x");
    struct { const char *name; int64_t k; int dim; bool smallest; } tk[] = {
        {"topk1l", 3, 1, false}, {"topk1s", 2, 1, true}, {"topk0l", 4, 0, false}};
    for (int i = 0; i < 3; i++) {
        ct_values_indices r = ct_topk(t, tk[i].k, tk[i].dim, .smallest = tk[i].smallest);
        CHECK_GRADS(tk[i].name, r.values, 1, &t, 0);
        snprintf(key, sizeof key, "%s.idx", tk[i].name);
        CHECK_FX(r.indices, key, 0);
    }
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_topk(t, 1, 0).values)), "TopkBackward0");
    fx_free(fx);
}

TEST(embedding_matches_pytorch) {
    fx_file *fx = fx_load("index");
    ct_tensor *w = leaf(fx, "emb.weight"), *i = fx_get(fx, "emb.i");
    ct_tensor *e = ct_embedding(i, w);
    CHECK_GRADS("emb", e, 1, &w, 1e-12);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(e)), "EmbeddingBackward0");
    CHECK_GRADS("embp", ct_embedding(i, w, .padding_idx = CT_SOME(-4)), 1, &w, 1e-12); /* padding row 2 */
    CHECK_GRADS("embp", ct_embedding(ct_to(i, .dtype = CT_I32), w, .padding_idx = CT_SOME(2)), 1, &w, 1e-12);
    fx_free(fx);
}

/* scale_grad_by_freq: each row's gradient divided by its index's count in the batch,
 * through F.embedding and nn.Embedding; sparse gradients are refused. */
TEST(embedding_scale_grad_by_freq_matches_pytorch) {
    fx_file *fx = fx_load("index");
    ct_tensor *w = leaf(fx, "embf.weight"), *i = fx_get(fx, "embf.i");
    CHECK_GRADS("embf", ct_embedding(i, w, .scale_grad_by_freq = true), 1, &w,
                1e-12);
    CHECK_GRADS("embfp", ct_embedding(ct_to(i, .dtype = CT_I32), w, .padding_idx = CT_SOME(5), .scale_grad_by_freq = true),
                1, &w, 1e-12);
    ct_module *m = ct_nn_embedding(6, 3, .padding_idx = CT_SOME(5), .scale_grad_by_freq = true,
                                   .dtype = CT_F64);
    ct_tensor *mw = ct_module_get_parameter(m, "weight");
    CT_NO_GRAD { ct_copy_(mw, w); }
    CHECK_GRADS("embfp", ct_forward(m, i), 1, &mw, 1e-12);
    CHECK_ERROR(ct_embedding(i, w, .sparse = true),
                "ct_embedding: sparse=True is not supported: ctorch has no sparse tensors");
    CHECK_ERROR(ct_nn_embedding(6, 3, .sparse = true), "sparse=True is not supported");
    fx_free(fx);
}

TEST(index_put_matches_pytorch) {
    fx_file *fx = fx_load("index");
    ct_tensor *x = leaf(fx, "iput.x"), *v = leaf(fx, "iput.v");
    ct_tensor *in[] = {x, v};
    ct_tensor *i = fx_get(fx, "iput.i"), *iu = fx_get(fx, "iput.iu");
    ct_tensor *a = ct_index_put_(ct_clone(x), 1, &i, v, true);
    CHECK_GRADS("iputa", a, 2, in, 1e-12);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(a)), "IndexPutBackward0");
    CHECK_GRADS("iput", ct_index_put_(ct_clone(x), 1, &iu, v, false), 2, in, 0);
    ct_tensor *m = mask(fx, "iputm.m");
    ct_tensor *inm[] = {x, leaf(fx, "iputm.v")};
    CHECK_GRADS("iputm", ct_index_put_(ct_clone(x), 1, &m, inm[1], false), 2, inm, 0);
    /* a 1-D mask over dim 0 and a 0-d value, accumulated */
    ct_tensor *m0 = ct_index_select(m, 1, ct_tensor_i64((int64_t[]){0}, CT_SHAPE(1)));
    ct_tensor *m0v = ct_view(m0, CT_SHAPE(-1));
    ct_tensor *ins[] = {x, leaf(fx, "iputs.v")};
    CHECK_GRADS("iputs", ct_index_put_(ct_clone(x), 1, &m0v, ins[1], true), 2, ins, 1e-12);
    fx_free(fx);
}

/* ---- errors ------------------------------------------------------------ */

TEST(index_errors_use_pytorch_wording) {
    ct_tensor *x = ct_zeros(CT_SHAPE(3, 4));
    ct_tensor *bad = ct_tensor_i64(((int64_t[]){0, 5}), CT_SHAPE(2));
    ct_tensor *neg = ct_tensor_i64(((int64_t[]){0, -1}), CT_SHAPE(2));
    ct_tensor *f = ct_tensor_f32(((float[]){0, 1}), CT_SHAPE(2));
    CHECK_ERROR(ct_index_select(x, 0, bad), "index 5 is out of bounds for dimension 0 with size 3");
    CHECK_ERROR(ct_index_select(x, 1, neg), "index -1 is out of bounds for dimension 1 with size 4");
    CHECK_ERROR(ct_index_select(x, 0, f), "index_select(): Expected dtype int32 or int64 for index");
    CHECK_ERROR(ct_index_select(x, 2, bad), "Dimension out of range");
    CHECK_ERROR(ct_index_select(x, 0, ct_zeros(CT_SHAPE(1, 1), .dtype = CT_I64)),
                "Index is supposed to be a vector");
    CHECK_ERROR(ct_index_add(x, 0, bad, ct_zeros(CT_SHAPE(2, 4)), 1),
                "index 5 is out of bounds for dimension 0 with size 3");
    CHECK_ERROR(ct_index_add(x, 0, neg, ct_zeros(CT_SHAPE(1, 4)), 1),
                "Number of indices (2) should be equal to source.size(dim): (1), for dim: 0");
    CHECK_ERROR(ct_index_add(x, 0, neg, ct_zeros(CT_SHAPE(2, 4), .dtype = CT_F64), 1),
                "must have the same scalar type");

    ct_tensor *i2 = ct_tensor_i64(((int64_t[]){0, 4}), CT_SHAPE(1, 2));
    CHECK_ERROR(ct_gather(x, 1, i2), "index 4 is out of bounds for dimension 1 with size 4");
    CHECK_ERROR(ct_gather(x, 1, ct_to(i2, .dtype = CT_I32)), "gather(): Expected dtype int64 for index");
    CHECK_ERROR(ct_gather(x, 1, bad), "Index tensor must have the same number of dimensions");
    CHECK_ERROR(ct_gather(x, 1, ct_zeros(CT_SHAPE(4, 1), .dtype = CT_I64)),
                "Size does not match at dimension 0 expected index [4, 1] to be smaller than "
                "self [3, 4] apart from dimension 1");
    CHECK_ERROR(ct_scatter(x, 1, i2, ct_ones(CT_SHAPE(1, 2))),
                "index 4 is out of bounds for dimension 1 with size 4");
    CHECK_ERROR(ct_scatter(x, 1, ct_zeros(CT_SHAPE(1, 2), .dtype = CT_I64), ct_ones(CT_SHAPE(1, 1))),
                "Expected index [1, 2] to be smaller than self [3, 4] apart from dimension 1 and "
                "to be smaller size than src [1, 1]");
    CHECK_ERROR(ct_scatter(x, 1, i2, ct_ones(CT_SHAPE(1, 2), .dtype = CT_F64)),
                "scatter(): Expected self.dtype to be equal to src.dtype");
    CHECK_ERROR(ct_scatter_value(x, 1, ct_tensor_i64(((int64_t[]){-1}), CT_SHAPE(1, 1)), 1),
                "index -1 is out of bounds for dimension 1 with size 4");
    CHECK_ERROR(ct_scatter_add(x, 0, ct_zeros(CT_SHAPE(1, 5), .dtype = CT_I64), ct_ones(CT_SHAPE(1, 5))),
                "Expected index [1, 5] to be smaller than self [3, 4] apart from dimension 0 and "
                "to be smaller size than src [1, 5]");

    ct_tensor *mb = ct_tensor_bool(((bool[]){true, false, true}), CT_SHAPE(3));
    CHECK_ERROR(ct_masked_fill(x, mb, 1), "cannot be broadcast together");
    CHECK_ERROR(ct_masked_fill(x, ct_ones(CT_SHAPE(4), .dtype = CT_I64), 1),
                "masked_fill_ only supports boolean masks, but got mask with dtype int64");
    CHECK_ERROR(ct_masked_fill_tensor(x, ct_ones(CT_SHAPE(4), .dtype = CT_BOOL), ct_ones(CT_SHAPE(1))),
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
                "dimension(s).");
    CHECK_ERROR(ct_masked_fill_(ct_zeros(CT_SHAPE(4)), ct_ones(CT_SHAPE(2, 4), .dtype = CT_BOOL), 1),
                "cannot be broadcast to self of shape [4]");
    CHECK_ERROR(ct_masked_fill_(ct_ones(CT_SHAPE(2), .requires_grad = true),
                                ct_ones(CT_SHAPE(2), .dtype = CT_BOOL), 1),
                "a leaf Variable that requires grad is being used in an in-place operation");
    CHECK_ERROR(ct_masked_select(x, ct_ones(CT_SHAPE(4), .dtype = CT_I64)),
                "masked_select: expected BoolTensor or ByteTensor for mask");

    ct_tensor *w = ct_ones(CT_SHAPE(4, 2));
    CHECK_ERROR(ct_embedding(bad, w), "index out of range in self");
    CHECK_ERROR(ct_embedding(ct_tensor_i64(((int64_t[]){-1}), CT_SHAPE(1)), w),
                "index -1 is out of bounds for dimension 0 with size 4");
    CHECK_ERROR(ct_embedding(f, w),
                "Expected tensor for argument #1 'indices' to have one of the following scalar "
                "types: Long, Int; but got float32 instead");
    CHECK_ERROR(ct_embedding(bad, w, .padding_idx = CT_SOME(4)), "Padding_idx must be within num_embeddings");
    CHECK_ERROR(ct_embedding(bad, ct_ones(CT_SHAPE(4))), "'weight' must be 2-D");

    CHECK_ERROR(ct_one_hot(f, 3), "one_hot is only applicable to index tensor.");
    CHECK_ERROR(ct_one_hot(bad, 3), "Class values must be smaller than num_classes.");
    CHECK_ERROR(ct_one_hot(neg, 3), "Class values must be non-negative.");
    CHECK_ERROR(ct_one_hot(ct_empty(CT_SHAPE(0), .dtype = CT_I64), -1),
                "Can not infer total number of classes from empty tensor.");

    CHECK(ct_topk(x, 5, 1).values == NULL);
    CHECK_ERROR(ct_topk(x, 5, 1).indices, "selected index k out of range");
    CHECK_ERROR(ct_topk(x, -1, 1).values, "selected index k out of range");
    CHECK_ERROR(ct_sort(x, 2).values, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");

    ct_tensor *y = ct_zeros(CT_SHAPE(3, 2));
    ct_tensor *ib[] = {ct_tensor_i64(((int64_t[]){0, -4}), CT_SHAPE(2))};
    CHECK_ERROR(ct_index_put_(y, 1, ib, ct_ones(CT_SHAPE(1)), false),
                "index -4 is out of bounds for dimension 0 with size 3");
    ct_tensor *ii[] = {ct_tensor_i64(((int64_t[]){0, 1}), CT_SHAPE(2))};
    CHECK_ERROR(ct_index_put_(y, 1, ii, ct_ones(CT_SHAPE(4)), false),
                "shape mismatch: value tensor of shape [4] cannot be broadcast to indexing result "
                "of shape [2, 2]");
    CHECK_ERROR(ct_index_put_(y, 1, ii, ct_ones(CT_SHAPE(1), .dtype = CT_I64), false),
                "Index put requires the source and destination dtypes match, got float32 for the "
                "destination and int64 for the source.");
    ct_tensor *i32[] = {ct_to(ii[0], .dtype = CT_I32)};
    CHECK_ERROR(ct_index_put_(y, 1, i32, ct_ones(CT_SHAPE(1)), false),
                "tensors used as indices must be long, byte or bool tensors");
    ct_tensor *mm[] = {ct_ones(CT_SHAPE(2), .dtype = CT_BOOL)};
    CHECK_ERROR(ct_index_put_(y, 1, mm, ct_ones(CT_SHAPE(1)), false),
                "The shape of the mask [2] at index 0 does not match the shape of the indexed "
                "tensor [3, 2] at index 0");
    ct_tensor *three[] = {ii[0], ii[0], ii[0]};
    CHECK_ERROR(ct_index_put_(y, 3, three, ct_ones(CT_SHAPE(1)), false),
                "too many indices for tensor of dimension 2 (got 3)");
    /* nothing was written by the failing calls */
    CHECK_INT_EQ(ct_item(ct_sum(y)), 0);
    /* NULL inputs keep the first error */
    ct_clear_error();
    CHECK(ct_gather(NULL, 0, bad) == NULL && ct_last_error() == NULL);
}

/* ---- behaviour --------------------------------------------------------- */

TEST(negative_indices_and_duplicates_in_index_put) {
    ct_tensor *y = ct_zeros(CT_SHAPE(3));
    ct_tensor *i[] = {ct_tensor_i64(((int64_t[]){-1, 0, -1}), CT_SHAPE(3))};
    ct_index_put_(y, 1, i, ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3)), true);
    CHECK_VALUES(y, 0, 2, 0, 4);
    ct_index_put_(y, 1, i, ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3)), false);
    CHECK_VALUES(y, 0, 2, 0, 3); /* the last write wins */
    /* index_put_ on a non-contiguous view writes through to its base */
    ct_tensor *b = ct_zeros(CT_SHAPE(2, 3));
    ct_tensor *bt = ct_transpose(b, 0, 1); /* [3, 2] */
    ct_tensor *r[] = {ct_tensor_i64(((int64_t[]){2}), CT_SHAPE(1))};
    ct_index_put_(bt, 1, r, ct_tensor_f32(((float[]){5, 6}), CT_SHAPE(2)), false);
    CHECK_VALUES(b, 0, 0, 0, 5, 0, 0, 6);
}

TEST(dtypes_and_non_contiguous_inputs) {
    /* every dtype moves through gather/scatter/masked_fill/index_select/sort */
    ct_dtype all[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I64, CT_I32, CT_I16, CT_U8, CT_I8};
    ct_tensor *base = ct_tensor_f32(((float[]){3, 1, 2, 0, 5, 4}), CT_SHAPE(2, 3));
    ct_tensor *idx = ct_tensor_i64(((int64_t[]){2, 0, 1, 1, 2, 0}), CT_SHAPE(2, 3));
    ct_tensor *m = ct_tensor_bool(((bool[]){true, false, false}), CT_SHAPE(3));
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        CT_SCOPE_HERE;
        ct_tensor *x = ct_to(base, .dtype = all[k]);
        CHECK_VALUES(ct_gather(x, 1, idx), 0, 2, 3, 1, 5, 4, 0);
        CHECK_VALUES(ct_scatter(x, 1, idx, x), 0, 1, 2, 3, 4, 0, 5);
        CHECK_VALUES(ct_scatter_add(x, 1, idx, x), 0, 4, 3, 5, 4, 5, 9);
        CHECK_VALUES(ct_masked_fill(x, m, 7), 0, 7, 1, 2, 7, 5, 4);
        CHECK_VALUES(ct_index_select(x, 1, ct_tensor_i64(((int64_t[]){2}), CT_SHAPE(1))), 0, 2, 4);
        CHECK_VALUES(ct_index_add(x, 0, ct_tensor_i64(((int64_t[]){0, 0}), CT_SHAPE(2)), x, 1),
                     0, 6, 7, 8, 0, 5, 4);
        ct_values_indices s = ct_sort(x, 1);
        CHECK_VALUES(s.values, 0, 1, 2, 3, 0, 4, 5);
        CHECK_VALUES(s.indices, 0, 1, 2, 0, 0, 2, 1);
        CHECK_VALUES(ct_topk(x, 1, 0).values, 0, 3, 5, 4);
        CHECK_VALUES(ct_masked_select(x, m), 0, 3, 0);
    }
    ct_tensor *bx = ct_tensor_bool(((bool[]){true, false, true}), CT_SHAPE(3));
    CHECK_VALUES(ct_sort(bx, 0).values, 0, 0, 1, 1);
    CHECK_VALUES(ct_scatter_add(bx, 0, ct_tensor_i64(((int64_t[]){1}), CT_SHAPE(1)), bx), 0, 1, 1, 1);
    /* transposed (non-contiguous) self and index */
    ct_tensor *xt = ct_transpose(base, 0, 1); /* [[3, 0], [1, 5], [2, 4]] */
    ct_tensor *it = ct_transpose(ct_tensor_i64(((int64_t[]){1, 0, 1, 0, 0, 1}), CT_SHAPE(2, 3)), 0, 1);
    CHECK_VALUES(ct_gather(xt, 1, it), 0, 0, 3, 1, 1, 4, 4);
    CHECK_VALUES(ct_index_select(xt, 0, ct_tensor_i64(((int64_t[]){2, 0}), CT_SHAPE(2))), 0, 2, 4, 3, 0);
    CHECK_VALUES(ct_sort(xt, 0, .descending = true).values, 0, 3, 5, 2, 4, 1, 0);
    /* scalars */
    ct_tensor *s = ct_scalar_tensor(3);
    CHECK_VALUES(ct_index_select(s, 0, ct_tensor_i64((int64_t[]){0}, CT_SHAPE(1))), 0, 3);
    CHECK_VALUES(ct_gather(s, 0, ct_tensor_i64((int64_t[]){0}, CT_SHAPE())), 0, 3);
    CHECK_VALUES(ct_masked_select(s, ct_tensor_bool(((bool[]){true, false}), CT_SHAPE(2))), 0, 3);
    CHECK_VALUES(ct_sort(s, 0).indices, 0, 0);
}

/* Large enough to run on several threads: results must not depend on their count. */
TEST(accumulating_ops_are_deterministic) {
    int64_t n = 200000, rows = 50, cols = 64;
    ct_tensor *src = ct_empty(CT_SHAPE(n), .dtype = CT_F32);
    ct_tensor *idx = ct_empty(CT_SHAPE(n), .dtype = CT_I64);
    float *sp = ct_data_ptr(src);
    int64_t *ip = ct_data_ptr(idx);
    uint64_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        sp[i] = (float)((s >> 40) % 1000) / 7.0f - 50.0f;
        ip[i] = (int64_t)((s >> 20) % 17);
    }
    ct_tensor *emb_src = ct_reshape(src, CT_SHAPE(n / cols, cols));
    ct_tensor *rid = ct_empty(CT_SHAPE(n / cols), .dtype = CT_I64);
    int64_t *rp = ct_data_ptr(rid);
    for (int64_t i = 0; i < n / cols; i++) rp[i] = (i * 7) % rows;
    ct_tensor *r1[3], *r2[3];
    int threads[2] = {1, 4};
    for (int t = 0; t < 2; t++) {
        ct_set_num_threads(threads[t]);
        ct_tensor **r = t ? r2 : r1;
        r[0] = ct_scatter_add(ct_zeros(CT_SHAPE(17)), 0, idx, src);
        r[1] = ct_index_add(ct_zeros(CT_SHAPE(rows, cols)), 0, rid, emb_src, 0.5);
        r[2] = ct_sort(ct_reshape(src, CT_SHAPE(100, -1)), 1).values;
    }
    ct_set_num_threads(2);
    for (int k = 0; k < 3; k++) CHECK(ct_test_max_diff(r1[k], r2[k]) == 0);
}

TEST(embedding_rows_and_large_select) {
    /* a larger table through the parallel row copy */
    ct_tensor *w = ct_reshape(ct_to(ct_nonzero(ct_ones(CT_SHAPE(1000, 64))), .dtype = CT_F32),
                              CT_SHAPE(-1, 64)); /* row r holds coordinates, all distinct rows */
    int64_t n = ct_size(w, 0);
    ct_tensor *ids = ct_empty(CT_SHAPE(4096), .dtype = CT_I64);
    int64_t *ip = ct_data_ptr(ids);
    for (int64_t i = 0; i < 4096; i++) ip[i] = (i * 31) % n;
    ct_tensor *e = ct_embedding(ids, w);
    ct_tensor *g = ct_index_select(w, 0, ids);
    CHECK(ct_test_max_diff(e, g) == 0);
    CHECK_INT_EQ(ct_size(e, 0), 4096);
    ct_tensor *row = ct_index_select(e, 0, ct_tensor_i64(((int64_t[]){4095}), CT_SHAPE(1)));
    ct_tensor *want = ct_index_select(w, 0, ct_tensor_i64(((int64_t[]){(4095 * 31) % 2000}), CT_SHAPE(1)));
    CHECK(ct_test_max_diff(row, want) == 0);
}

/* topk with a small k selects with a heap: same values and indices (ties in index
 * order, NaN largest) as the first k of a stable sort. */
TEST(topk_selection_agrees_with_sort) {
    ct_tensor *x = ct_empty(CT_SHAPE(3, 100), .dtype = CT_F64);
    double *p = ct_data_ptr(x);
    for (int i = 0; i < 300; i++) p[i] = (double)((i * 37) % 11) - 5;
    p[17] = p[150] = p[151] = NAN;
    for (int k = 1; k <= 12; k += 11) {
        for (int smallest = 0; smallest < 2; smallest++) {
            ct_values_indices t = ct_topk(x, k, 1, .smallest = smallest);
            ct_values_indices s = ct_sort(x, 1, .descending = !smallest);
            ct_tensor *kk = ct_reshape(ct_nonzero(ct_ones(CT_SHAPE(k))), CT_SHAPE(-1)); /* 0..k-1 */
            CHECK(ct_test_max_diff(t.values, ct_index_select(s.values, 1, kk)) == 0);
            CHECK(ct_test_max_diff(t.indices, ct_index_select(s.indices, 1, kk)) == 0);
        }
    }
}
