/* arange, linspace, eye: values against PyTorch (tests/fixtures/factory.fx, written by
 * tests/fixtures/gen_factory.py), dtype rules, lengths and errors. */
#include <stdlib.h>

#include "ct_test.h"
#include "fixtures.h"

/* Float32 results may differ from PyTorch's in the last bit: its vectorized loops
 * compute some of them in float32 where ctorch uses double, so allow 2 ulp relative
 * (2^-22); float64 and integer results must match exactly (tol 1e-15 relative). */
static void check_fx(fx_file *f, const char *key, ct_tensor *got, ct_dtype dtype) {
    ct_tensor *want = fx_get(f, key);
    if (!got || !want) {
        ct_test_fail(__FILE__, __LINE__, "%s: %s", key, ct_last_error() ? ct_last_error() : "missing");
        return;
    }
    if (ct_dtype_of(got) != dtype)
        ct_test_fail(__FILE__, __LINE__, "%s: dtype %s, expected %s", key,
                     ct_dtype_name(ct_dtype_of(got)), ct_dtype_name(dtype));
    double *g = ct_test_values(got), *w = ct_test_values(want);
    if (ct_numel(got) != ct_numel(want) || ct_ndim(got) != ct_ndim(want)) {
        ct_test_fail(__FILE__, __LINE__, "%s: %lld elements, expected %lld", key,
                     (long long)ct_numel(got), (long long)ct_numel(want));
    } else {
        double rel = dtype == CT_F32 ? 0x1p-22 : 1e-15;
        for (int64_t i = 0; i < ct_numel(got); i++)
            if (fabs(g[i] - w[i]) > rel * fmax(1, fabs(w[i]))) {
                ct_test_fail(__FILE__, __LINE__, "%s[%lld] == %.17g, expected %.17g", key,
                             (long long)i, g[i], w[i]);
                break;
            }
    }
    free(g);
    free(w);
}

TEST(arange_matches_pytorch) {
    fx_file *f = fx_load("factory");
    check_fx(f, "arange_5", ct_arange(5), CT_I64);
    check_fx(f, "arange_1_10_3", ct_arange_range(1, 10, 3), CT_I64);
    check_fx(f, "arange_neg", ct_arange_range(10, -7, -4), CT_I64);
    check_fx(f, "arange_f_0_1_01", ct_arange_range(0, 1, 0.1), CT_F32);
    check_fx(f, "arange_f_1_0_m03", ct_arange_range(1, 0, -0.3), CT_F32);
    check_fx(f, "arange_f64_m5_5_07", ct_arange_range(-5, 5, 0.7, .dtype = CT_F64), CT_F64);
    check_fx(f, "arange_f_0_2_0125", ct_arange_range(0, 2, 0.125), CT_F32);
    check_fx(f, "arange_i32_7", ct_arange(7, .dtype = CT_I32), CT_I32);
    check_fx(f, "arange_f_big", ct_arange_range(0, 100, 0.37), CT_F32);
    fx_free(f);
}

TEST(linspace_and_eye_match_pytorch) {
    fx_file *f = fx_load("factory");
    check_fx(f, "linspace_0_1_5", ct_linspace(0, 1, 5), CT_F32);
    check_fx(f, "linspace_m3_7_11", ct_linspace(-3, 7, 11), CT_F32);
    check_fx(f, "linspace_0_1_7", ct_linspace(0, 1, 7), CT_F32);
    check_fx(f, "linspace_f64_0_1_100", ct_linspace(0, 1, 100, .dtype = CT_F64), CT_F64);
    check_fx(f, "linspace_f_1_m1_50", ct_linspace(1.5, -1.25, 50), CT_F32);
    check_fx(f, "linspace_i64_0_10_7", ct_linspace(0, 10, 7, .dtype = CT_I64), CT_I64);
    check_fx(f, "linspace_one", ct_linspace(2, 5, 1), CT_F32);
    check_fx(f, "eye_3", ct_eye(3), CT_F32);
    check_fx(f, "eye_2_4", ct_eye_nm(2, 4), CT_F32);
    check_fx(f, "eye_4_2", ct_eye_nm(4, 2), CT_F32);
    fx_free(f);
}

TEST(linspace_endpoints_are_exact) {
    /* the symmetric formula: the last value is `end` itself, whatever the rounding */
    ct_tensor *t = ct_linspace(0.1, 0.7, 1001, .dtype = CT_F64);
    const double *v = ct_data_ptr(t);
    CHECK(v[0] == 0.1 && v[1000] == 0.7);
    ct_tensor *s = ct_linspace(-1.3, 2.9, 33);
    const float *w = ct_data_ptr(s);
    CHECK(w[0] == -1.3f && w[32] == 2.9f);
    CHECK_INT_EQ(ct_numel(ct_linspace(0, 1, 0)), 0);
}

TEST(range_dtypes_and_lengths) {
    CHECK_INT_EQ(ct_dtype_of(ct_arange(5)), CT_I64);
    CHECK_INT_EQ(ct_dtype_of(ct_arange(5.0)), CT_F32);
    CHECK_INT_EQ(ct_dtype_of(ct_arange_range(0, 5, 1.0)), CT_F32);
    CHECK_INT_EQ(ct_dtype_of(ct_arange_range(0, CT_FLOAT(5), 1)), CT_F32);
    CHECK_INT_EQ(ct_dtype_of(ct_arange((int64_t)5, .dtype = CT_F16)), CT_F16);
    ct_set_default_dtype(CT_F64);
    CHECK_INT_EQ(ct_dtype_of(ct_arange(2.5)), CT_F64);
    CHECK_INT_EQ(ct_dtype_of(ct_linspace(0, 1, 3)), CT_F64);
    CHECK_INT_EQ(ct_dtype_of(ct_eye(2)), CT_F64);
    ct_set_default_dtype(CT_F32);
    /* ceil((end - start) / step) */
    CHECK_INT_EQ(ct_numel(ct_arange_range(0, 1, 0.3)), 4);
    CHECK_INT_EQ(ct_numel(ct_arange_range(0, 10, 5)), 2);
    CHECK_INT_EQ(ct_numel(ct_arange_range(3, 3, 1)), 0);
    CHECK_INT_EQ(ct_numel(ct_arange(0)), 0);
    CHECK_VALUES(ct_arange_range(1, 2.5, 0.5), 0, 1, 1.5, 2);
    CHECK_VALUES(ct_eye(0), 0);
    ct_tensor *e = ct_eye(2, .requires_grad = true);
    CHECK(ct_requires_grad(e));
    /* large int64 arguments stay exact */
    ct_tensor *big = ct_arange_range(INT64_C(9007199254740993), INT64_C(9007199254740996), 1);
    CHECK_INT_EQ(((int64_t *)ct_data_ptr(big))[2], INT64_C(9007199254740995));
}

TEST(range_errors) {
    CHECK_ERROR(ct_arange_range(0, 10, 0), "step must be nonzero");
    CHECK_ERROR(ct_arange_range(0, 10, -1), "upper bound and larger bound inconsistent with step sign");
    CHECK_ERROR(ct_arange_range(5, 0, 1), "inconsistent with step sign");
    CHECK_ERROR(ct_arange(INFINITY), "unsupported range");
    CHECK_ERROR(ct_arange(5, .requires_grad = true), "Only Tensors of floating point");
    CHECK_ERROR(ct_arange(5, .dtype = CT_BOOL), "not implemented for bool");
    CHECK_ERROR(ct_linspace(0, 1, -1), "number of steps must be non-negative");
    CHECK_ERROR(ct_eye(-1), "n must be greater or equal to 0, got -1");
    CHECK_ERROR(ct_eye_nm(2, -1), "m must be greater or equal to 0, got -1");
}
