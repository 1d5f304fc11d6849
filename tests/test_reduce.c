/* Reductions, scans and softmax compared with PyTorch (tests/fixtures/reduce.fx,
 * written by tests/fixtures/gen_reduce.py), plus dtypes, errors, determinism across
 * thread counts and float32 accuracy. */
#include <stdlib.h>

#include "ct_test.h"
#include "fixtures.h"
#include "opcase.h"

/* ---- values and gradients against PyTorch: the OPCASE rows of file reduce in
 * tests/opinfo.def (the generator reads the same rows) ---- */

static opcase_tol tolerances(ct_dtype dt) {
    return dt == CT_F64 ? (opcase_tol){1e-10, 1e-9} : dt == CT_F32 ? (opcase_tol){1e-5, 1e-4}
                                                                    : (opcase_tol){0, 0};
}

TEST(fixtures_values_and_gradients) { CHECK(opcase_check("reduce", tolerances) > 100); }

#define check_close(what, a, b, rtol_, atol_) \
    CHECK_TENSOR_CLOSE(what, a, b, .rtol = (rtol_), .atol = (atol_))

/* d/dx and d/dgo of <grad_x(softmax(x, 1); go), w>: the backward-data op's backward. */
TEST(fixtures_softmax_double_backward) {
    fx_file *f = fx_load("reduce");
    const char *names[] = {"softmax_gg", "log_softmax_gg"};
    for (int k = 0; f && k < 2; k++) {
        CT_SCOPE_HERE;
        char key[64];
        ct_tensor *x = fx_get_as(f, "in.x", CT_F64, true);
        snprintf(key, sizeof key, "%s.go", names[k]);
        ct_tensor *go = fx_get_as(f, key, CT_F64, true);
        snprintf(key, sizeof key, "%s.w", names[k]);
        ct_tensor *w = fx_get(f, key);
        ct_tensor *y = k ? ct_log_softmax(x, 1) : ct_softmax(x, 1);
        ct_tensor *gx[1] = {NULL}, *outs[1] = {y}, *gos[1] = {go}, *ins[1] = {x};
        CHECK(ct_autograd_grad(1, outs, 1, ins, gx, .grad_outputs = gos, .create_graph = true) == 0);
        CHECK(ct_backward(ct_sum(ct_mul(gx[0], w))) == 0);
        snprintf(key, sizeof key, "%s.ggx", names[k]);
        check_close(key, ct_grad(x), fx_get(f, key), 1e-9, 1e-10);
        snprintf(key, sizeof key, "%s.ggo", names[k]);
        check_close(key, ct_grad(go), fx_get(f, key), 1e-9, 1e-10);
    }
    fx_free(f);
}

/* ---- dtypes ------------------------------------------------------------ */

TEST(result_dtypes) {
    int64_t iv[] = {1, 2, 3, 4, 5, 6};
    ct_tensor *i = ct_tensor_i64(iv, CT_SHAPE(2, 3));
    ct_tensor *s = ct_sum(ct_to(i, .dtype = CT_I32), .dims = CT_DIMS(1));
    CHECK(ct_dtype_of(s) == CT_I64);
    CHECK_VALUES(s, 0, 6, 15);
    CHECK(ct_dtype_of(ct_prod(ct_to(i, .dtype = CT_U8))) == CT_I64);
    CHECK_VALUES(ct_prod(i), 0, 720);
    CHECK(ct_dtype_of(ct_cumsum(ct_to(i, .dtype = CT_BOOL), 0)) == CT_I64);
    CHECK(ct_dtype_of(ct_amax(ct_to(i, .dtype = CT_I16))) == CT_I16);
    CHECK(ct_dtype_of(ct_all(i)) == CT_BOOL);
    CHECK(ct_dtype_of(ct_any(ct_to(i, .dtype = CT_U8))) == CT_U8);
    CHECK(ct_dtype_of(ct_argmax(i)) == CT_I64);
    CHECK_VALUES(ct_mean(i, .dtype = CT_F64), 1e-12, 3.5);
    CHECK(ct_dtype_of(ct_logsumexp(i, .dims = CT_DIMS(1))) == CT_F32);
    CHECK_VALUES(ct_sum(i, .dtype = CT_F64), 0, 21);
    /* float16 / bfloat16 compute in float32 and keep their dtype */
    float fv[] = {1000, 0.5f, -3, 2048, 7, 0.25f};
    ct_tensor *f = ct_tensor_f32(fv, CT_SHAPE(2, 3));
    ct_dtype red[] = {CT_F16, CT_BF16};
    for (int k = 0; k < 2; k++) {
        ct_tensor *h = ct_to(f, .dtype = red[k]);
        ct_tensor *r = ct_sum(h, .dims = CT_DIMS(1));
        CHECK(ct_dtype_of(r) == red[k]);
        CHECK_VALUES(r, 8, 997.5, 2055.25); /* the result rounds to 16 bits */
        CHECK(ct_dtype_of(ct_softmax(h, 1)) == red[k]);
        CHECK_VALUES(ct_amax(h, .dims = CT_DIMS(0)), 0, 2048, 7, 0.25);
        CHECK_VALUES(ct_max_dim(h, 1, false).indices, 0, 0, 0);
        CHECK_CLOSE(ct_item(ct_mean(h)), 3052.75 / 6, 1);
        CHECK(ct_dtype_of(ct_var(h)) == red[k]);
        CHECK(ct_dtype_of(ct_cumsum(h, 1)) == red[k]);
        CHECK(ct_dtype_of(ct_norm(h)) == red[k]);
    }
}

TEST(empty_reductions) {
    ct_tensor *e = ct_zeros(CT_SHAPE(2, 0));
    CHECK_VALUES(ct_sum(e, .dims = CT_DIMS(1)), 0, 0, 0);
    CHECK_VALUES(ct_prod(e, .dims = CT_DIMS(1)), 0, 1, 1);
    CHECK(isnan(ct_item(ct_mean(e))));
    CHECK_VALUES(ct_logsumexp(e, .dims = CT_DIMS(1)), 0, -INFINITY, -INFINITY);
    CHECK_VALUES(ct_all(e, .dims = CT_DIMS(1)), 0, 1, 1);
    CHECK_VALUES(ct_any(e, .dims = CT_DIMS(1)), 0, 0, 0);
    CHECK_VALUES(ct_norm(e, .dims = CT_DIMS(1)), 0, 0, 0);
    CHECK_INT_EQ(ct_numel(ct_amax(e, .dims = CT_DIMS(0))), 0);
    CHECK_INT_EQ(ct_numel(ct_softmax(e, 1)), 0);
    CHECK_INT_EQ(ct_numel(ct_cumsum(e, 1)), 0);
    /* 0-d inputs: dim 0 and -1 are allowed */
    ct_tensor *s = ct_scalar_tensor(3);
    CHECK_VALUES(ct_sum(s, .dims = CT_DIMS(0)), 0, 3);
    CHECK_VALUES(ct_softmax(s, -1), 0, 1);
    CHECK_VALUES(ct_cumprod(s, 0), 0, 3);
    CHECK_VALUES(ct_max_dim(s, 0, false).indices, 0, 0);
    /* NaN propagates, and its index is the one reported */
    float nv[] = {1, NAN, 3};
    ct_tensor *n = ct_tensor_f32(nv, CT_SHAPE(3));
    CHECK(isnan(ct_item(ct_max(n))) && isnan(ct_item(ct_amin(n))));
    CHECK_INT_EQ(ct_item_int(ct_argmax(n)), 1);
    CHECK_INT_EQ(ct_item_int(ct_min_dim(n, 0, false).indices), 1);
}

TEST(softmax_stable_at_large_magnitudes) {
    float v[] = {1e4f, -1e4f, 1e4f - 1, 0, 3e4f, 3e4f};
    ct_tensor *x = ct_tensor_f32(v, CT_SHAPE(2, 3));
    CHECK_VALUES(ct_softmax(x, 1), 1e-6, 1 / (1 + expf(-1)), 0, expf(-1) / (1 + expf(-1)), 0,
                 0.5, 0.5);
    CHECK_VALUES(ct_log_softmax(x, 1), 1e-3, -log1p(exp(-1)), -2e4 - log1p(exp(-1)),
                 -1 - log1p(exp(-1)), -3e4 - log(2), -log(2), -log(2));
    CHECK_VALUES(ct_logsumexp(x, .dims = CT_DIMS(1)), 1e-2, 1e4 + log1p(exp(-1)), 3e4 + log(2));
    /* and down a column (the strided kernel) */
    CHECK_VALUES(ct_softmax(ct_t(x), 0), 1e-6, 1 / (1 + expf(-1)), 0, 0, 0.5,
                 expf(-1) / (1 + expf(-1)), 0.5);
    float inf[] = {-INFINITY, -INFINITY, INFINITY, 1};
    CHECK_VALUES(ct_logsumexp(ct_tensor_f32(inf, CT_SHAPE(2, 2)), .dims = CT_DIMS(1)), 0,
                 -INFINITY, INFINITY);
}

TEST(ties_split_gradient_evenly) {
    double v[] = {1, 3, 3, 2, 3, 0};
    ct_tensor *x = ct_tensor_f64(v, CT_SHAPE(2, 3), .requires_grad = true);
    CHECK(ct_backward(ct_max(x)) == 0);
    CHECK_VALUES(ct_grad(x), 1e-15, 0, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3, 0);
    ct_set_grad(x, NULL);
    ct_values_indices m = ct_max_dim(x, 1, false);
    CHECK_VALUES(m.indices, 0, 1, 1);
    CHECK(ct_backward(ct_sum(m.values)) == 0);
    CHECK_VALUES(ct_grad(x), 0, 0, 1, 0, 0, 1, 0);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(m.values)), "MaxBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_max(x))), "MaxBackward1");
    CHECK(ct_grad_fn(m.indices) == NULL);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_prod(x))), "ProdBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_prod(x, .dims = CT_DIMS(0)))), "ProdBackward1");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_softmax(x, 0))), "SoftmaxBackward0");
}

/* ---- errors ------------------------------------------------------------ */

TEST(errors) {
    ct_tensor *x = ct_ones(CT_SHAPE(2, 3));
    ct_tensor *i = ct_ones(CT_SHAPE(2, 3), .dtype = CT_I64);
    CHECK_ERROR(ct_sum(x, .dims = CT_DIMS(2)),
                "ct_sum: Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    CHECK_ERROR(ct_mean(x, .dims = CT_DIMS(-3)), "Dimension out of range");
    CHECK_ERROR(ct_sum(x, .dims = CT_DIMS(1, -1)), "dim 1 appears multiple times in the list of dims");
    CHECK_ERROR(ct_mean(i), "mean(): could not infer output dtype. Input dtype must be either a "
                            "floating point or complex dtype. Got: Long");
    CHECK_ERROR(ct_mean(i, .dtype = CT_I32), "Optional dtype must be either a floating point or "
                                             "complex dtype. Got: Int");
    CHECK_ERROR(ct_var(i), "std and var only support floating point");
    CHECK_ERROR(ct_norm(i), "Expected a floating point or complex tensor as input. Got Long");
    CHECK_ERROR(ct_norm(x, .p = CT_SOME(3)), "p = 3 is not supported");
    CHECK_ERROR(ct_softmax(i, 0), "\"softmax_kernel_impl\" not implemented for 'Long'");
    CHECK_ERROR(ct_log_softmax(i, 1), "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'");
    CHECK_ERROR(ct_norm(ct_zeros(CT_SHAPE(0, 2)), .p = CT_SOME(INFINITY)), "cannot compute the inf norm on an empty tensor");
    CHECK_INT_EQ(ct_numel(ct_norm(ct_zeros(CT_SHAPE(0, 2)), .p = CT_SOME(INFINITY), .dims = CT_DIMS(1))), 0);
    CHECK_ERROR(ct_sum(ct_scalar_tensor(3), .dims = CT_DIMS(0, -1)), "dim 0 appears multiple times");
    CHECK_ERROR(ct_softmax(x, 2), "ct_softmax: Dimension out of range");
    CHECK_ERROR(ct_cumsum(x, -3), "ct_cumsum: Dimension out of range");
    CHECK_ERROR(ct_max_dim(x, 5, false).values, "ct_max_dim: Dimension out of range");
    CHECK_ERROR(ct_argmax(x, .dims = CT_DIMS(0, 1)), "expected at most one dim");
    ct_tensor *e = ct_zeros(CT_SHAPE(0, 3));
    CHECK_ERROR(ct_max(e), "max(): Expected reduction dim to be specified for input.numel() == 0");
    CHECK_ERROR(ct_amax(e, .dims = CT_DIMS(0)), "amax(): Expected reduction dim 0 to have non-zero size");
    CHECK_ERROR(ct_argmin(e), "argmin(): Expected reduction dim to be specified");
    CHECK_ERROR(ct_min_dim(e, 0, false).indices, "min(): Expected reduction dim 0 to have non-zero size");
    CHECK(ct_sum(NULL) == NULL);
    ct_values_indices r = ct_max_dim(NULL, 0, false);
    CHECK(!r.values && !r.indices);
}

/* ---- determinism and accuracy ----------------------------------------- */

/* Results of several reductions of x, computed with n threads. */
static ct_tensor *all_results(ct_tensor *x, int n, int k) {
    ct_set_num_threads(n);
    switch (k) {
    case 0: return ct_sum(x);
    case 1: return ct_sum(x, .dims = CT_DIMS(0));                  /* columns */
    case 2: return ct_sum(x, .dims = CT_DIMS(1));                  /* rows */
    case 3: return ct_sum(ct_t(x), .dims = CT_DIMS(0));            /* non-contiguous */
    case 4: return ct_prod(ct_add_scalar(ct_mul_scalar(x, 1e-3), 1), .dims = CT_DIMS(0));
    case 5: return ct_norm(x, .dims = CT_DIMS(1));
    case 6: return ct_var(x, .dims = CT_DIMS(0));
    case 7: return ct_softmax(x, 1);
    case 8: return ct_log_softmax(x, 0);
    case 9: return ct_logsumexp(x);
    case 10: return ct_cumsum(x, 0);
    case 11: return ct_amax(x, .dims = CT_DIMS(0));
    default: return ct_mean(x, .dims = CT_DIMS(0, 1));
    }
}

TEST(bitwise_identical_for_any_thread_count) {
    int prev = ct_get_num_threads();
    ct_tensor *shapes[] = {ct_empty(CT_SHAPE(3, 400000)), ct_empty(CT_SHAPE(2000, 600)),
                           ct_empty(CT_SHAPE(1, 1 << 20))};
    for (int s = 0; s < 3; s++) {
        float *p = ct_data_ptr(shapes[s]);
        uint32_t state = 12345;
        for (int64_t j = 0; j < ct_numel(shapes[s]); j++) {
            state = state * 1664525u + 1013904223u;
            p[j] = (float)((state >> 8) * (1.0 / 16777216.0) * 4 - 2);
        }
        for (int k = 0; k <= 12; k++) {
            CT_SCOPE_HERE;
            ct_tensor *a = all_results(shapes[s], 1, k), *b = all_results(shapes[s], 2, k);
            ct_tensor *c = all_results(shapes[s], 3, k);
            CHECK(a && b && c);
            if (!a || !b || !c) continue;
            size_t nb = (size_t)ct_numel(a) * sizeof(float);
            if (memcmp(ct_data_ptr(a), ct_data_ptr(b), nb) || memcmp(ct_data_ptr(a), ct_data_ptr(c), nb))
                ct_test_fail(__FILE__, __LINE__, "shape %d, reduction %d differs between 1, 2 "
                             "and 3 threads", s, k);
        }
    }
    ct_set_num_threads(prev);
}

/* float32 sums accumulate in double: 2^24 + many small terms stays exact enough. */
TEST(float32_sum_accuracy) {
    int64_t n = 1 << 22;
    ct_tensor *x = ct_empty(CT_SHAPE(n));
    float *p = ct_data_ptr(x);
    double ref = 0;
    for (int64_t j = 0; j < n; j++) {
        p[j] = (float)(0.1 + (double)(j % 1000) * 1e-4);
        ref += p[j];
    }
    CHECK_CLOSE(ct_item(ct_sum(x)) / ref, 1, 1e-6);
    CHECK_CLOSE(ct_item(ct_mean(x)) * (double)n / ref, 1, 1e-6);
    ct_tensor *col = ct_view(x, CT_SHAPE(-1, 4));
    double *c = ct_test_values(ct_sum(col, .dims = CT_DIMS(0)));
    double r0 = 0;
    for (int64_t j = 0; j < n; j += 4) r0 += p[j];
    CHECK_CLOSE(c[0] / r0, 1, 1e-6);
    free(c);
    ct_tensor *cs = ct_cumsum(x, 0);
    CHECK_CLOSE(((float *)ct_data_ptr(cs))[n - 1] / ref, 1, 1e-6);
}

/* The examples of include/ctorch/reduce.h, compiled so that they never rot. */
TEST(header_examples) {
    ct_tensor *t = ct_ones(CT_SHAPE(2, 3, 4));
    CHECK_VALUES(ct_sum(t), 0, 24);
    CHECK_INT_EQ(ct_numel(ct_sum(t, .dims = CT_DIMS(0, 2), .keepdim = true)), 3);
    CHECK_VALUES(ct_var(t, .dims = CT_DIMS(-1), .correction = CT_SOME(0)), 0, 0, 0, 0, 0, 0, 0);
    CHECK_INT_EQ(ct_numel(ct_norm(t, .p = CT_SOME(INFINITY), .dims = CT_DIMS(1))), 8);
    ct_values_indices m = ct_max_dim(t, 1, false);
    CHECK(m.values && ct_dtype_of(m.indices) == CT_I64);
    CHECK_CLOSE(ct_item(ct_sum(ct_softmax(t, -1))), 6, 1e-5);
}

/* Reductions over the leading dims of a contiguous tensor (and over either dim of a
 * transpose) read the input in place: no copy of the input is allocated. */
TEST(no_input_copies) {
    ct_tensor *x = ct_ones(CT_SHAPE(512, 256));
    ct_tensor *xt = ct_t(x);
    ct_tensor *x3 = ct_ones(CT_SHAPE(16, 64, 64));
    for (int k = 0; k < 7; k++) {
        CT_SCOPE_HERE;
        int64_t before = ct_memory_allocated(CT_CPU);
        ct_reset_peak_memory_stats(CT_CPU);
        ct_tensor *r = k == 0 ? ct_sum(x, .dims = CT_DIMS(0))
                     : k == 1 ? ct_mean(x, .dims = CT_DIMS(1))
                     : k == 2 ? ct_amax(xt, .dims = CT_DIMS(0))
                     : k == 3 ? ct_sum(xt, .dims = CT_DIMS(1))
                     : k == 4 ? ct_prod(x3, .dims = CT_DIMS(1))
                     : k == 5 ? ct_logsumexp(x3, .dims = CT_DIMS(0, 1))
                              : ct_norm(x3, .dims = CT_DIMS(1, 2));
        CHECK(r != NULL);
        if (ct_max_memory_allocated(CT_CPU) - before > 32 * 1024) /* outputs only */
            ct_test_fail(__FILE__, __LINE__, "reduction %d copied its input (%lld bytes)", k,
                         (long long)(ct_max_memory_allocated(CT_CPU) - before));
    }
}
