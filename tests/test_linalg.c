/* Matrix products: values and gradients against PyTorch, dtypes, layouts, errors,
 * and results independent of the thread count. */
#include <cblas.h>
#include <stdlib.h>
#include <strings.h>

#include "ct_test.h"
#include "fx_case.h"

typedef enum { MATMUL, ADDMM, BADDBMM, OUTER } kind;

static ct_tensor *apply(kind k, ct_tensor **in) {
    switch (k) {
    case MATMUL: return ct_matmul(in[0], in[1]);
    case ADDMM: return ct_addmm(in[0], in[1], in[2], .beta = CT_SOME(0.5), .alpha = CT_SOME(2.0));
    case BADDBMM: return ct_baddbmm(in[0], in[1], in[2], .beta = CT_SOME(0.7), .alpha = CT_SOME(-1.5));
    case OUTER: return ct_outer(in[0], in[1]);
    }
    return NULL;
}

/* Compares out and every input gradient of one fixture case, in dtype. */
static void check_case(fx_file *f, const char *name, kind k, int n_in, ct_dtype dt, double tol) {
    ct_tensor *in[3];
    fx_case_inputs(f, name, n_in, dt, in);
    fx_case_check(f, name, n_in, in, apply(k, in), dt, tol);
}

TEST(linalg_matches_pytorch) {
    fx_file *f = fx_load("linalg");
    ct_dtype dts[] = {CT_F64, CT_F32};
    double tols[] = {1e-12, 1e-5};
    for (int t = 0; t < 2; t++) {
        for (int i = 0; i < 13; i++) {
            char name[32];
            snprintf(name, sizeof name, "matmul%d", i);
            check_case(f, name, MATMUL, 2, dts[t], tols[t]);
        }
        check_case(f, "addmm", ADDMM, 3, dts[t], tols[t]);
        check_case(f, "baddbmm", BADDBMM, 3, dts[t], tols[t]);
        check_case(f, "outer", OUTER, 2, dts[t], tols[t]);
    }
    fx_free(f);
}

TEST(grad_fn_names_follow_pytorch) {
    ct_tensor *m = ct_ones(CT_SHAPE(2, 3), .requires_grad = true);
    ct_tensor *n = ct_ones(CT_SHAPE(3, 4), .requires_grad = true);
    ct_tensor *v = ct_ones(CT_SHAPE(3), .requires_grad = true);
    ct_tensor *b = ct_ones(CT_SHAPE(5, 2, 3), .requires_grad = true);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_matmul(m, n))), "MmBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_matmul(m, v))), "MvBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_matmul(v, v))), "DotBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_bmm(b, ct_ones(CT_SHAPE(5, 3, 1))))), "BmmBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_addmm(v, n, ct_ones(CT_SHAPE(4, 3))))),
                 "AddmmBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_outer(v, v))), "MulBackward0");
}

/* Transposed operands reach BLAS as they are: the only new memory is the output. */
TEST(transposed_operands_are_not_copied) {
    ct_tensor *a = ct_ones(CT_SHAPE(300, 200)), *b = ct_ones(CT_SHAPE(400, 300));
    CT_SCOPE {
        ct_tensor *at = ct_t(a), *bt = ct_t(b);
        int64_t before = ct_memory_allocated(CT_CPU);
        ct_reset_peak_memory_stats(CT_CPU);
        ct_tensor *c = ct_mm(at, bt); /* [200, 300] @ [300, 400] */
        CHECK_INT_EQ(ct_max_memory_allocated(CT_CPU) - before, 200 * 400 * 4);
        CHECK_CLOSE(ct_item(ct_sum(c)), 200.0 * 400 * 300, 0);
    }
}

TEST(layouts_agree_with_contiguous) {
    ct_tensor *a = ct_tensor_f64(((double[]){1, 2, 3, 4, 5, 6}), CT_SHAPE(2, 3));
    ct_tensor *b = ct_tensor_f64(((double[]){1, -1, 2, 0, 3, 1}), CT_SHAPE(3, 2));
    ct_tensor *want = ct_mm(a, b);
    CHECK_VALUES(want, 0, 14, 2, 32, 2);
    CHECK(ct_test_max_diff(ct_mm(ct_t(ct_contiguous(ct_t(a))), b), want) == 0);
    CHECK(ct_test_max_diff(ct_mm(a, ct_t(ct_contiguous(ct_t(b)))), want) == 0);
    /* A column slice via expand/stride-0: copied for BLAS, same values. */
    ct_tensor *e = ct_expand(ct_tensor_f64(((double[]){1, 2, 3}), CT_SHAPE(1, 3)), CT_SHAPE(2, 3));
    CHECK_VALUES(ct_mm(e, b), 0, 14, 2, 14, 2);
    /* mv and dot with strided vectors: v = [1, 2, 3] with stride 2. */
    double buf[] = {1, 9, 2, 9, 3, 9};
    ct_tensor *v = ct_from_blob(buf, CT_F64, CT_SHAPE(3), (int64_t[]){2}, NULL, NULL);
    CHECK_VALUES(ct_mv(a, v), 0, 14, 32);
    CHECK_VALUES(ct_dot(v, v), 0, 14);
    CHECK_VALUES(ct_matmul(v, b), 0, 14, 2);
}

TEST(dtypes) {
    int32_t ai[] = {1, 2, 3, 4, 5, 6}, bi[] = {1, -1, 2, 0, 3, 1};
    ct_tensor *a = ct_tensor_i32(ai, CT_SHAPE(2, 3)), *b = ct_tensor_i32(bi, CT_SHAPE(3, 2));
    ct_tensor *c = ct_mm(a, b);
    CHECK(ct_dtype_of(c) == CT_I32);
    CHECK_VALUES(c, 0, 14, 2, 32, 2);
    CHECK_VALUES(ct_matmul(ct_t(a), ct_t(b)), 0, -3, 2, 7, -3, 4, 11, -3, 6, 15);
    ct_tensor *h = ct_mm(ct_to(a, .dtype = CT_F16), ct_to(b, .dtype = CT_F16));
    CHECK(ct_dtype_of(h) == CT_F16);
    CHECK_VALUES(h, 0, 14, 2, 32, 2);
    CHECK_VALUES(ct_dot(ct_tensor_i64(((int64_t[]){1, 2}), CT_SHAPE(2)),
                        ct_tensor_i64(((int64_t[]){3, 4}), CT_SHAPE(2))), 0, 11);
    CHECK_ERROR(ct_mm(ct_to(a, .dtype = CT_BOOL), ct_to(b, .dtype = CT_BOOL)),
                "ct_mm: not implemented for bool");
}

TEST(addmm_beta_zero_ignores_input) {
    ct_tensor *nan = ct_full(CT_SHAPE(2, 2), NAN);
    ct_tensor *a = ct_ones(CT_SHAPE(2, 3)), *b = ct_ones(CT_SHAPE(3, 2));
    CHECK_VALUES(ct_addmm(nan, a, b, .beta = CT_SOME(0)), 0, 3, 3, 3, 3);
    CHECK_VALUES(ct_addmm(ct_ones(CT_SHAPE(1)), a, b, .beta = CT_SOME(2), .alpha = CT_SOME(0.5)), 0, 3.5, 3.5, 3.5, 3.5);
}

TEST(errors_name_the_shapes) {
    ct_tensor *x = ct_zeros(CT_SHAPE(64, 784)), *w = ct_zeros(CT_SHAPE(128, 10));
    CHECK_ERROR(ct_matmul(x, w), "ct_matmul: shapes [64, 784] and [128, 10] cannot be multiplied (784 != 128)");
    CHECK_ERROR(ct_mm(x, w), "ct_mm: shapes [64, 784] and [128, 10] cannot be multiplied (784 != 128)");
    CHECK_ERROR(ct_mm(x, ct_zeros(CT_SHAPE(784))), "ct_mm: mat2 must be a 2D tensor (got 1D)");
    CHECK_ERROR(ct_mm(x, ct_zeros(CT_SHAPE(784, 2), .dtype = CT_F64)),
                "expected both inputs to have the same dtype, but got float32 and float64");
    CHECK_ERROR(ct_bmm(ct_zeros(CT_SHAPE(2, 2, 3)), ct_zeros(CT_SHAPE(3, 3, 2))),
                "ct_bmm: Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3].");
    CHECK_ERROR(ct_bmm(x, x), "ct_bmm: batch1 must be a 3D tensor");
    CHECK_ERROR(ct_dot(ct_zeros(CT_SHAPE(2)), ct_zeros(CT_SHAPE(3))),
                "inconsistent tensor size, expected tensor [2] and src [3]");
    CHECK_ERROR(ct_dot(ct_zeros(CT_SHAPE(2, 2)), ct_zeros(CT_SHAPE(2))),
                "1D tensors expected, but got 2D and 1D tensors");
    CHECK_ERROR(ct_matmul(ct_zeros(CT_SHAPE()), ct_zeros(CT_SHAPE(2))),
                "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
    CHECK_ERROR(ct_matmul(ct_zeros(CT_SHAPE(2, 3, 4)), ct_zeros(CT_SHAPE(5, 4, 2))),
                "ct_matmul: The size of tensor a (2) must match the size of tensor b (5) at non-singleton dimension 0");
    CHECK_ERROR(ct_outer(ct_zeros(CT_SHAPE(3, 2)), ct_zeros(CT_SHAPE(4))),
                "ct_outer: Expected 1-D argument self, but got 2-D");
    CHECK_ERROR(ct_addmm(ct_zeros(CT_SHAPE(3)), ct_zeros(CT_SHAPE(2, 3)), ct_zeros(CT_SHAPE(3, 4))),
                "ct_addmm: self of size [3] cannot be broadcast to the product's size [2, 4]");
    CHECK(ct_matmul(NULL, x) == NULL);
}

/* See Note [GEMM determinism]: bitwise equal results for 1, 2 and 3 threads. */
static ct_tensor *fill_pattern(ct_shape s) {
    ct_tensor *t = ct_empty(s);
    float *p = ct_data_ptr(t);
    for (int64_t i = 0; i < ct_numel(t); i++) p[i] = (float)((i * 7919 % 1000) / 1000.0 - 0.5);
    return t;
}

TEST(results_do_not_depend_on_threads) {
    int saved = ct_get_num_threads();
    ct_tensor *a = fill_pattern(CT_SHAPE(301, 517)), *b = fill_pattern(CT_SHAPE(517, 259));
    ct_tensor *ba = fill_pattern(CT_SHAPE(16, 17, 33)), *bb = fill_pattern(CT_SHAPE(16, 33, 9));
    ct_tensor *v = fill_pattern(CT_SHAPE(200000));
    ct_tensor *ad = ct_to(a, .dtype = CT_F64), *bd = ct_to(b, .dtype = CT_F64);
    /* Big and long-k products, where OpenBLAS's own blocking differs between core types. */
    ct_tensor *big = fill_pattern(CT_SHAPE(1030, 1030));
    ct_tensor *lk = fill_pattern(CT_SHAPE(97, 1500)), *lk2 = fill_pattern(CT_SHAPE(1500, 83));
    ct_tensor *w = fill_pattern(CT_SHAPE(600, 700)), *w2 = fill_pattern(CT_SHAPE(700, 900));
    ct_tensor *bigd = ct_to(big, .dtype = CT_F64);
    enum { N = 8 };
    ct_tensor *ref[N] = {0};
    for (int nt = 1; nt <= 3; nt++) {
        ct_set_num_threads(nt);
        ct_tensor *r[N] = {ct_matmul(a, b),   ct_matmul(ba, bb), ct_dot(v, v),
                           ct_matmul(ad, bd), ct_matmul(big, big), ct_matmul(lk, lk2),
                           ct_matmul(w, w2),  ct_matmul(bigd, bigd)};
        for (int i = 0; i < N; i++) {
            if (nt == 1) ref[i] = r[i];
            else if (ct_test_max_diff(r[i], ref[i]) != 0)
                ct_test_fail(__FILE__, __LINE__, "product %d differs with %d threads by %g", i, nt,
                             ct_test_max_diff(r[i], ref[i]));
        }
    }
    ct_set_num_threads(saved);
}

/* tests/openblas_core.sh forces OpenBLAS's core type: check that OpenBLAS took it, or
 * those runs would test the default kernels again. */
TEST(forced_openblas_core_type_is_used) {
    const char *forced = getenv("OPENBLAS_CORETYPE");
    if (forced && *forced) CHECK(strcasecmp(openblas_get_corename(), forced) == 0);
}

/* A program's own OpenBLAS thread count survives ctorch's products (which run OpenBLAS
 * on one thread while they last). */
TEST(blas_thread_count_is_restored) {
    int saved = openblas_get_num_threads();
    openblas_set_num_threads(3);
    ct_tensor *a = fill_pattern(CT_SHAPE(300, 300));
    ct_matmul(a, a);
    ct_tensor *img = ct_to(ct_reshape(a, CT_SHAPE(1, 1, 300, 300)), .dtype = CT_F64);
    ct_conv2d(img, ct_ones(CT_SHAPE(2, 1, 3, 3), .dtype = CT_F64), NULL); /* im2col + dgemm */
    CHECK(openblas_get_num_threads() == 3);
    openblas_set_num_threads(saved);
}
