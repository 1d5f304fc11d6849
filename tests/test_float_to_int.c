/* Float-to-integer conversions that C leaves undefined (NaN, infinity, out of range)
 * have the results ctorch defines (Note [Float to integer] in core/dtype.h) or are
 * errors; each case here was undefined behaviour once, which the sanitizer build
 * (-fsanitize=float-cast-overflow) reports. */
#include <math.h>
#include <stdint.h>

#include "ct_test.h"

/* NaN, +inf, -inf, 455, -1, 3e9, 1e20, -3.7 as float32 */
static ct_tensor *specials(ct_dtype dtype) {
    const float v[] = {NAN, INFINITY, -INFINITY, 455.f, -1.f, 3e9f, 1e20f, -3.7f};
    return ct_to(ct_tensor_f32(v, CT_SHAPE(8)), .dtype = dtype);
}

TEST(floats_cast_to_integers_as_documented) {
    const ct_dtype sources[] = {CT_F32, CT_F64, CT_F16}; /* bfloat16 rounds 455 to 456 */
    for (size_t s = 0; s < sizeof sources / sizeof *sources; s++) {
        ct_tensor *x = specials(sources[s]);
        /* float16 holds neither 3e9 nor 1e20 (they are inf) */
        bool half = sources[s] == CT_F16;
        CHECK_VALUES(ct_to(x, .dtype = CT_I64), 0, 0, (double)INT64_MAX, (double)INT64_MIN, 455, -1,
                     half ? (double)INT64_MAX : 3e9, (double)INT64_MAX, -3);
        if (sources[s] != CT_F32) continue; /* the low bits of the same int64 values */
        CHECK_VALUES(ct_to(x, .dtype = CT_U8), 0, 0, 255, 0, 199, 255, 0, 255, 253);
        CHECK_VALUES(ct_to(x, .dtype = CT_I8), 0, 0, -1, 0, -57, -1, 0, -1, -3);
        CHECK_VALUES(ct_to(x, .dtype = CT_I16), 0, 0, -1, 0, 455, -1, 24064, -1, -3);
        CHECK_VALUES(ct_to(x, .dtype = CT_I32), 0, 0, -1, 0, 455, -1, -1294967296, -1, -3);
        CHECK_VALUES(ct_to(x, .dtype = CT_BOOL), 0, 1, 1, 1, 1, 1, 1, 1, 1);
    }
}

TEST(fill_and_scalars_into_integer_tensors) {
    /* ct_fill_raw: a factory's value, and nll_loss's fill with a NaN input */
    CHECK_VALUES(ct_full(CT_SHAPE(1), NAN, .dtype = CT_I64), 0, 0);
    CHECK_VALUES(ct_full(CT_SHAPE(1), 1e300, .dtype = CT_I64), 0, (double)INT64_MAX);
    CHECK_VALUES(ct_full(CT_SHAPE(1), -INFINITY, .dtype = CT_I32), 0, 0);
    CHECK_VALUES(ct_full(CT_SHAPE(1), 455, .dtype = CT_U8), 0, 199);
    ct_tensor *logp = ct_full(CT_SHAPE(2, 3), NAN);
    ct_tensor *target = ct_tensor_i64(((int64_t[]){0, 2}), CT_SHAPE(2));
    ct_tensor *loss = ct_nll_loss(logp, target);
    CHECK(loss && isnan(ct_item(loss)));
}

TEST(item_int_refuses_what_has_no_integer_value) {
    CHECK_ERROR(ct_item_int(ct_scalar_tensor(NAN)), "ct_item_int: cannot convert float NaN to integer");
    CHECK_ERROR(ct_item_int(ct_scalar_tensor(-INFINITY)), "cannot convert float infinity to integer");
    CHECK_ERROR(ct_item_int(ct_scalar_tensor(1e300, .dtype = CT_F64)), "value 1e+300 is out of range for int64");
    CHECK_INT_EQ(ct_item_int(ct_scalar_tensor(-3.9)), -3);
    CHECK_INT_EQ(ct_item_int(ct_scalar_tensor(INT64_MAX, .dtype = CT_I64)), INT64_MAX);
}

TEST(exp_of_nan_in_float32) {
    const float v[] = {NAN, -NAN, 0, 100, -100};
    ct_tensor *e = ct_exp(ct_tensor_f32(v, CT_SHAPE(5)));
    CHECK(isnan(ct_item(ct_select(e, 0, 0))) && isnan(ct_item(ct_select(e, 0, 1))));
    CHECK_VALUES(ct_narrow(e, 0, 2, 3), 1e-30, 1, INFINITY, 0);
    ct_tensor *sm = ct_softmax(ct_tensor_f32(v, CT_SHAPE(5)), 0);
    CHECK(isnan(ct_item(ct_sum(sm))));
}

TEST(arange_with_nan_or_infinite_bounds) {
    CHECK_ERROR(ct_arange_range(0, NAN, 1), "ct_arange: unsupported range: 0 -> nan");
    CHECK_ERROR(ct_arange_range(0, INFINITY, 1, .dtype = CT_I64), "unsupported range: 0 -> inf");
    CHECK_ERROR(ct_arange_range(-INFINITY, 0.0, 1.0), "unsupported range: -inf -> 0");
    CHECK_ERROR(ct_arange_range(0, 1e300, 1e299, .dtype = CT_I32), "does not fit int32");
    CHECK_ERROR(ct_arange_range(0, 1.0, NAN), "step must be nonzero");
    CHECK_VALUES(ct_arange_range(0, 5.0, 2.0, .dtype = CT_I64), 0, 0, 2, 4);
}

TEST(interpolate_with_an_infinite_scale_factor) {
    ct_tensor *x = ct_ones(CT_SHAPE(1, 1, 2, 2));
    CHECK_ERROR(ct_interpolate(x, .scale_factor = {INFINITY}), "gives an output size too large");
    CHECK_ERROR(ct_interpolate(x, .scale_factor = {1e300, 2}), "too large");
    ct_tensor *y = ct_interpolate(x, .scale_factor = {2});
    CHECK(y && ct_size(y, 3) == 4);
}

TEST(uniform_init_with_a_negative_bound) {
    /* Every linear layer's init draws U(-b, b): the Bernoulli threshold of a negative
     * argument was undefined. */
    ct_manual_seed(3);
    ct_module *lin = ct_nn_linear(16, 8);
    ct_tensor *w = ct_module_get_parameter(lin, "weight");
    double bound = 1 / sqrt(16.0);
    CHECK(ct_item(ct_max(w)) <= bound && ct_item(ct_min(w)) >= -bound);
    ct_tensor *u = ct_uniform_(ct_empty(CT_SHAPE(1000)), -2, -1);
    CHECK(ct_item(ct_max(u)) <= -1 && ct_item(ct_min(u)) >= -2);
}

TEST(integer_pow_with_negative_exponents_as_pytorch) {
    /* tensor ** negative number is refused; tensor ** tensor truncates (PyTorch's powi) */
    ct_tensor *x = ct_tensor_i64(((int64_t[]){1, -1, 2, -1}), CT_SHAPE(4));
    CHECK_ERROR(ct_pow_scalar(x, -1), "Integers to negative integer powers are not allowed.");
    ct_tensor *e = ct_tensor_i64(((int64_t[]){-3, -3, -1, -2}), CT_SHAPE(4));
    CHECK_VALUES(ct_pow(x, e), 0, 1, -1, 0, 1);
    CHECK(ct_pow_scalar(ct_to(x, .dtype = CT_F32), -1) != NULL);
}

TEST(matmul_checks_the_output_size_before_copying) {
    /* [2^31, 1] x [1, 2^31] of expanded (stride 0) operands: the output does not fit,
     * and nothing of the operands' 8 GiB is copied first. */
    ct_tensor *a = ct_expand(ct_ones(CT_SHAPE(1, 1)), CT_SHAPE(1ll << 31, 1));
    ct_tensor *b = ct_expand(ct_ones(CT_SHAPE(1, 1)), CT_SHAPE(1, 1ll << 31));
    ct_reset_peak_memory_stats(CT_CPU);
    int64_t before = ct_memory_allocated(CT_CPU);
    CHECK_ERROR(ct_matmul(a, b), "overflowed");
    CHECK_ERROR(ct_mm(a, b), "overflowed");
    ct_tensor *a3 = ct_expand(ct_ones(CT_SHAPE(1, 1, 1)), CT_SHAPE(4, 1ll << 31, 1));
    ct_tensor *b3 = ct_expand(ct_ones(CT_SHAPE(1, 1, 1)), CT_SHAPE(4, 1, 1ll << 31));
    CHECK_ERROR(ct_matmul(a3, b3), "is too large");
    CHECK(ct_max_memory_allocated(CT_CPU) - before < (1 << 20));
}
