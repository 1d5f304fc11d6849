/* Pointwise ops against PyTorch (tests/fixtures/pointwise.fx): values in float64 and
 * float32, gradients (the OPVALUES rows of tests/opinfo.def, large magnitudes
 * included), result dtypes, reduced precision (its OPLOWP rows); in-place forms.
 * (Error messages and thread-count independence: tests/opinfo.def's OPERROR and
 * OPLARGE rows.) */
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"
#include "fixtures.h"
#include "opinfo.h"

/* One tensor comparison, rtol and atol (ct_test.h). */
#define CHECK_CLOSE_T(what, got, want, rtol_, atol_) \
    CHECK_TENSOR_CLOSE(what, got, want, .rtol = (rtol_), .atol = (atol_))

static fx_file *fixtures(void) {
    static fx_file *f;
    if (!f) f = fx_load("pointwise");
    return f;
}

static char *key(const char *name, const char *suffix) {
    static char buf[128];
    snprintf(buf, sizeof buf, "%s.%s", name, suffix);
    return buf;
}

/* The unary values cases: the OPVALUES rows of tests/opinfo.def, which the fixture
 * generator reads too. */
typedef ct_tensor *(*unary_fn)(ct_tensor *);
#define OPVALUES(name, op, rtol32, c_expr, torch_expr, inputs) \
    static ct_tensor *u_##name(ct_tensor *x) { return c_expr; }
#include "opinfo.def"
#undef OPVALUES

static const struct {
    const char *name, *op;
    unary_fn f;
    double rtol32;
} UNARY[] = {
#define OPVALUES(name, op, rtol32, c_expr, torch_expr, inputs) {#name, #op, u_##name, rtol32},
#include "opinfo.def"
#undef OPVALUES
};

/* tests/force_isa.sh forces the kernels' instruction set: check that it took, or those
 * runs would test the default path again. */
TEST(forced_cpu_capability_is_used) {
    const char *forced = getenv("CT_CPU_CAPABILITY");
    if (forced && *forced) CHECK(strcmp(ct_cpu_capability(), forced) == 0);
    const char *cap = ct_cpu_capability();
    CHECK(!strcmp(cap, "default") || !strcmp(cap, "avx2") || !strcmp(cap, "avx512"));
}

TEST(unary_values_and_gradients_match_pytorch) {
    fx_file *f = fixtures();
    for (size_t i = 0; i < sizeof UNARY / sizeof UNARY[0]; i++) {
        const char *name = UNARY[i].name;
        if (!oi_row_of(UNARY[i].op))
            ct_test_fail(__FILE__, __LINE__, "values case %s: %s is no op of tests/opinfo.def",
                         name, UNARY[i].op);
        CT_SCOPE {
            ct_tensor *x = fx_get_as(f, key(name, "x"), CT_F64, true);
            ct_tensor *y = UNARY[i].f(x);
            char what[96];
            snprintf(what, sizeof what, "%s (float64)", name);
            CHECK_CLOSE_T(what, y, fx_get(f, key(name, "y")), 1e-12, 1e-300);
            if (y && ct_requires_grad(y)) {
                ct_tensor *w = fx_get(f, key(name, "w"));
                CHECK(ct_backward(ct_sum(ct_mul(y, w))) == 0);
                snprintf(what, sizeof what, "%s gradient", name);
                CHECK_CLOSE_T(what, ct_grad(x), fx_get(f, key(name, "g")), 1e-9, 1e-300);
            }
            ct_tensor *x32 = fx_get_as(f, key(name, "x"), CT_F32, false);
            snprintf(what, sizeof what, "%s (float32)", name);
            double rtol = UNARY[i].rtol32;
            CHECK_CLOSE_T(what, UNARY[i].f(x32), fx_get(f, key(name, rtol < 0 ? "y" : "y32")),
                          fabs(rtol), 1e-37);
        }
    }
}

/* The float32 polynomials of exp/log/tanh/sigmoid: within 2 ulp of PyTorch (plus
 * PyTorch's own error) over dense inputs, subnormal results and inputs included. */
TEST(float32_exp_log_tanh_sigmoid_accuracy) {
    fx_file *f = fixtures();
    ct_tensor *x = fx_get_as(f, "dense.x", CT_F32, false);
    ct_tensor *pos = fx_get_as(f, "dense.pos", CT_F32, false);
    CHECK_CLOSE_T("exp", ct_exp(x), fx_get(f, "dense.exp"), 2.4e-7, 1e-44);
    CHECK_CLOSE_T("tanh", ct_tanh(x), fx_get(f, "dense.tanh"), 2.4e-7, 1e-44);
    CHECK_CLOSE_T("sigmoid", ct_sigmoid(x), fx_get(f, "dense.sigmoid"), 2.4e-7, 1e-44);
    CHECK_CLOSE_T("log", ct_log(pos), fx_get(f, "dense.log"), 2.4e-7, 1e-44);
}

typedef ct_tensor *(*multi_fn)(ct_tensor **);
static ct_tensor *m_pow(ct_tensor **x) { return ct_pow(x[0], x[1]); }
static ct_tensor *m_maximum(ct_tensor **x) { return ct_maximum(x[0], x[1]); }
static ct_tensor *m_minimum(ct_tensor **x) { return ct_minimum(x[0], x[1]); }
static ct_tensor *m_where(ct_tensor **x) { return ct_where(ct_gt_scalar(x[0], 0), x[0], x[1]); }
static ct_tensor *m_lerp03(ct_tensor **x) { return ct_lerp(x[0], x[1], 0.3); }
static ct_tensor *m_lerp07(ct_tensor **x) { return ct_lerp(x[0], x[1], 0.7); }
static ct_tensor *m_lerpt(ct_tensor **x) { return ct_lerp_tensor(x[0], x[1], x[2]); }
static ct_tensor *m_clampt(ct_tensor **x) { return ct_clamp_tensor(x[0], x[1], x[2]); }
static ct_tensor *m_clampt_min(ct_tensor **x) { return ct_clamp_tensor(x[0], x[1], NULL); }
static ct_tensor *m_clampt_max(ct_tensor **x) { return ct_clamp_tensor(x[0], NULL, x[1]); }
static ct_tensor *m_eq(ct_tensor **x) { return ct_eq(x[0], x[1]); }
static ct_tensor *m_lt(ct_tensor **x) { return ct_lt(x[0], x[1]); }
static ct_tensor *m_ge(ct_tensor **x) { return ct_ge(x[0], x[1]); }
static ct_tensor *m_logical_xor(ct_tensor **x) { return ct_logical_xor(x[0], x[1]); }

TEST(binary_values_and_gradients_match_pytorch) {
    static const struct { const char *name; multi_fn f; int n; } cases[] = {
        {"pow", m_pow, 2},         {"maximum", m_maximum, 2},  {"minimum", m_minimum, 2},
        {"where", m_where, 2},     {"lerp03", m_lerp03, 2},    {"lerp07", m_lerp07, 2},
        {"lerpt", m_lerpt, 3},     {"clampt", m_clampt, 3},    {"clampt_min", m_clampt_min, 2},
        {"clampt_max", m_clampt_max, 2}, {"eq", m_eq, 2},      {"lt", m_lt, 2},
        {"ge", m_ge, 2},           {"logical_xor", m_logical_xor, 2},
    };
    fx_file *f = fixtures();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *name = cases[i].name;
        CT_SCOPE {
            ct_tensor *in[3];
            const char *sfx[] = {"a", "b", "c"}, *gsfx[] = {"ga", "gb", "gc"};
            for (int k = 0; k < cases[i].n; k++) in[k] = fx_get_as(f, key(name, sfx[k]), CT_F64, true);
            ct_tensor *y = cases[i].f(in);
            CHECK_CLOSE_T(name, y, fx_get(f, key(name, "y")), 1e-14, 1e-14); /* fma or not */
            if (y && ct_requires_grad(y)) {
                CHECK(ct_backward(ct_sum(ct_mul(y, fx_get(f, key(name, "w"))))) == 0);
                for (int k = 0; k < cases[i].n; k++) {
                    char what[64];
                    snprintf(what, sizeof what, "%s gradient %d", name, k);
                    ct_tensor *g = ct_grad(in[k]) ? ct_grad(in[k]) : ct_zeros_like(in[k]);
                    CHECK_CLOSE_T(what, g, fx_get(f, key(name, gsfx[k])), 1e-14, 0);
                }
            } else if (y) {
                CHECK(ct_dtype_of(y) == CT_BOOL);
            }
        }
    }
}

/* ---- result dtypes ---- */

static const ct_dtype DTYPES[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I64,
                                  CT_I32, CT_I16, CT_U8,  CT_I8,   CT_BOOL};
#define NDT 10

/* The fixture's dtype code (ct_dtype's value) or -1 when PyTorch refuses.  -1 for a
 * float16 input means PyTorch 1.13's cpu has no half kernel; ctorch computes those
 * through float32, so that entry is not checked. */
static void check_dtype(const char *file, int line, const char *what, ct_tensor *r, double want,
                        ct_dtype in) {
    if (want < 0) {
        if (in == CT_F16) {
            ct_clear_error();
            return;
        }
        if (r) ct_test_fail(file, line, "%s: PyTorch refuses, ctorch gave %s", what,
                            ct_dtype_name(ct_dtype_of(r)));
        ct_clear_error();
        return;
    }
    if (!r) ct_test_fail(file, line, "%s: %s", what, ct_last_error());
    else if (ct_dtype_of(r) != (ct_dtype)want)
        ct_test_fail(file, line, "%s: %s, expected %s", what, ct_dtype_name(ct_dtype_of(r)),
                     ct_dtype_name((ct_dtype)want));
    ct_clear_error();
}

TEST(type_promotion_table_matches_pytorch) {
    fx_file *f = fixtures();
    double *tt = ct_test_values(fx_get(f, "promo.tt")), *t0 = ct_test_values(fx_get(f, "promo.t0"));
    double *wh = ct_test_values(fx_get(f, "promo.where")), *pw = ct_test_values(fx_get(f, "promo.pow"));
    for (int i = 0; i < NDT; i++)
        for (int j = 0; j < NDT; j++) {
            CT_SCOPE {
                char what[96];
                ct_tensor *a = ct_ones(CT_SHAPE(2), .dtype = DTYPES[i]);
                ct_tensor *b = ct_ones(CT_SHAPE(2), .dtype = DTYPES[j]);
                ct_tensor *b0 = ct_ones(CT_SHAPE(), .dtype = DTYPES[j]);
                snprintf(what, sizeof what, "maximum(%s, %s)", ct_dtype_name(DTYPES[i]), ct_dtype_name(DTYPES[j]));
                check_dtype(__FILE__, __LINE__, what, ct_maximum(a, b), tt[i * NDT + j], CT_DTYPE_UNSET);
                snprintf(what, sizeof what, "maximum(%s, 0-d %s)", ct_dtype_name(DTYPES[i]), ct_dtype_name(DTYPES[j]));
                check_dtype(__FILE__, __LINE__, what, ct_maximum(a, b0), t0[i * NDT + j], CT_DTYPE_UNSET);
                snprintf(what, sizeof what, "where(c, %s, 0-d %s)", ct_dtype_name(DTYPES[i]), ct_dtype_name(DTYPES[j]));
                ct_tensor *c = ct_ones(CT_SHAPE(2), .dtype = CT_BOOL);
                check_dtype(__FILE__, __LINE__, what, ct_where(c, a, b0), wh[i * NDT + j], CT_DTYPE_UNSET);
                if (i < NDT - 1 && j < NDT - 1) {
                    snprintf(what, sizeof what, "pow(%s, %s)", ct_dtype_name(DTYPES[i]), ct_dtype_name(DTYPES[j]));
                    check_dtype(__FILE__, __LINE__, what, ct_pow(a, b), pw[i * (NDT - 1) + j], CT_DTYPE_UNSET);
                }
            }
        }
    free(tt), free(t0), free(wh), free(pw);
}

TEST(type_promotion_with_numbers_matches_pytorch) {
    fx_file *f = fixtures();
    static const char *keys[] = {"promo.clamp_int", "promo.clamp_float", "promo.pow_int",
                                 "promo.pow_float", "promo.eq_float", "promo.sqrt",
                                 "promo.abs", "promo.sign", "promo.relu"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        double *want = ct_test_values(fx_get(f, keys[k]));
        for (int i = 0; want && i < NDT; i++) {
            CT_SCOPE {
                ct_tensor *a = ct_ones(CT_SHAPE(2), .dtype = DTYPES[i]), *r = NULL;
                switch (k) {
                case 0: r = ct_clamp(a, .min = CT_SOME(0), .max = CT_SOME(1)); break;
                case 1: r = ct_clamp(a, .min = CT_SOME(0.5)); break;
                case 2: r = ct_pow_scalar(a, 2); break;
                case 3: r = ct_pow_scalar(a, 2.5); break;
                case 4: r = ct_eq_scalar(a, 2.5); break;
                case 5: r = ct_sqrt(a); break;
                case 6: r = ct_abs(a); break;
                case 7: r = ct_sign(a); break;
                default: r = ct_relu(a); break;
                }
                char what[64];
                snprintf(what, sizeof what, "%s(%s)", keys[k], ct_dtype_name(DTYPES[i]));
                check_dtype(__FILE__, __LINE__, what, r, want[i], DTYPES[i]);
            }
        }
        free(want);
    }
}

TEST(integer_inputs_follow_pytorch) {
    fx_file *f = fixtures();
    int64_t iv[] = {1, 2, 3};
    ct_tensor *i = ct_tensor_i64(iv, CT_SHAPE(3));
    CHECK_CLOSE_T("eq 2.5", ct_eq_scalar(i, 2.5), fx_get(f, "int_eq_2_5"), 0, 0);
    CHECK_CLOSE_T("lt 2.5", ct_lt_scalar(i, 2.5), fx_get(f, "int_lt_2_5"), 0, 0);
    CHECK_CLOSE_T("clamp 1.5", ct_clamp(i, .min = CT_SOME(1.5)), fx_get(f, "int_clamp_float"), 0, 0);
    int64_t bv[] = {2, -3, 1, 5, -1, 0}, ev[] = {3, 3, -2, -1, -3, 0};
    ct_tensor *p = ct_pow(ct_tensor_i64(bv, CT_SHAPE(6)), ct_tensor_i64(ev, CT_SHAPE(6)));
    CHECK_CLOSE_T("int pow", p, fx_get(f, "int_pow_tensor"), 0, 0);
    CHECK(ct_dtype_of(p) == CT_I64);
    uint8_t uv[] = {0, 5, 255};
    ct_tensor *u = ct_tensor_u8(uv, CT_SHAPE(3));
    ct_tensor *both = fx_get(f, "u8_abs_sign");
    double *w = ct_test_values(both), *a = ct_test_values(ct_abs(u)), *s = ct_test_values(ct_sign(u));
    for (int k = 0; w && a && s && k < 3; k++) {
        CHECK_CLOSE(a[k], w[k], 0);
        CHECK_CLOSE(s[k], w[3 + k], 0);
    }
    free(w), free(a), free(s);
    CHECK(ct_dtype_of(ct_maximum(ct_ones(CT_SHAPE(2), .dtype = CT_BOOL), ct_zeros(CT_SHAPE(2), .dtype = CT_BOOL))) == CT_BOOL);
    CHECK_VALUES(ct_clamp(ct_tensor_i64(((int64_t[]){-5, 0, 9}), CT_SHAPE(3)), .min = CT_SOME(-1), .max = CT_SOME(4)), 0, -1, 0, 4);
}

/* The OPLOWP rows of tests/opinfo.def: float16 / bfloat16 with kernels of their own
 * (converted in registers) keep the dtype and agree with PyTorch's reduced-precision
 * result within one unit in the last place (bfloat16: 8e-3 relative; float16: 1e-3),
 * plus the row's absolute epsilons; ROUNDED_ONCE rows are also bitwise the float32
 * kernel's result on the widened operands, rounded once. */
enum { ROUNDED_ONCE = 1 };
typedef ct_tensor *(*lowp_fn)(ct_tensor *x, ct_tensor *y);
#define OPLOWP(name, op, flags, atol_eps, c_expr, torch_expr, inputs) \
    static ct_tensor *lp_##name(ct_tensor *x, ct_tensor *y) {         \
        (void)x, (void)y;                                               \
        return c_expr;                                                  \
    }
#include "opinfo.def"
#undef OPLOWP

static const struct {
    const char *name, *op, *inputs;
    unsigned flags;
    double atol_eps;
    lowp_fn f;
    int line;
} LOWP[] = {
#define OPLOWP(name, op, flags, atol_eps, c_expr, torch_expr, inputs) \
    {#name, #op, inputs, (flags), (atol_eps), lp_##name, __LINE__},
#include "opinfo.def"
#undef OPLOWP
};

static void check_lowp(fx_file *f, size_t i, ct_dtype dt) {
    const char *name = LOWP[i].name, *dn = ct_dtype_name(dt);
    char kx[96], ky[96], kw[96], what[128];
    const oi_row *r = oi_row_of(LOWP[i].op);
    snprintf(what, sizeof what, "%s (%s, tests/opinfo.def:%d)", name, dn, LOWP[i].line);
    if (!oi_has_dtype(r, dt)) {
        ct_test_fail(__FILE__, __LINE__, "%s: op %s's row does not list %s", what, LOWP[i].op, dn);
        return;
    }
    if (*LOWP[i].inputs) { /* its own inputs, x and y alike */
        snprintf(kx, sizeof kx, "%s.x.%s", name, dn);
        snprintf(ky, sizeof ky, "%s.x.%s", name, dn);
    } else {
        snprintf(kx, sizeof kx, "lowp.x.%s", dn);
        snprintf(ky, sizeof ky, "lowp.y.%s", dn);
    }
    snprintf(kw, sizeof kw, "%s.%s", name, dn);
    ct_tensor *x = fx_get_as(f, kx, dt, false), *y = fx_get_as(f, ky, dt, false);
    ct_tensor *got = LOWP[i].f(x, y);
    if (got && ct_dtype_of(got) != dt)
        ct_test_fail(__FILE__, __LINE__, "%s: the result is %s", what, ct_dtype_name(ct_dtype_of(got)));
    double eps = dt == CT_BF16 ? 0x1p-7 : 0x1p-10;
    CHECK_CLOSE_T(what, got, fx_get(f, kw), dt == CT_BF16 ? 8e-3 : 1e-3, LOWP[i].atol_eps * eps);
    if (LOWP[i].flags & ROUNDED_ONCE) {
        ct_tensor *once = ct_to(LOWP[i].f(ct_to(x, .dtype = CT_F32), ct_to(y, .dtype = CT_F32)), .dtype = dt);
        snprintf(what, sizeof what, "%s (%s): the float32 result rounded once", name, dn);
        CHECK_CLOSE_T(what, got, once, 0, 0);
    }
}

TEST(reduced_precision_matches_pytorch) {
    fx_file *f = fixtures();
    for (size_t i = 0; i < sizeof LOWP / sizeof LOWP[0]; i++)
        for (int k = 0; k < 2; k++) CT_SCOPE { check_lowp(f, i, k ? CT_F16 : CT_BF16); }
}

/* ---- stability, in place, special cases ---- */

TEST(inplace_relu_and_clamp) {
    ct_tensor *a = ct_tensor_f32(((float[]){-1, 2, -3}), CT_SHAPE(3), .requires_grad = true);
    ct_tensor *y = ct_mul_scalar(a, 2);
    CHECK(ct_relu_(y) == y);
    CHECK_VALUES(y, 0, 0, 4, 0);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "ReluBackward0");
    ct_tensor *z = ct_mul_scalar(a, 1);
    CHECK(ct_clamp_(z, .min = CT_SOME(-2), .max = CT_SOME(1)) == z);
    CHECK_VALUES(z, 0, -1, 1, -2);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(z)), "ClampBackward1");
    CHECK(ct_backward(ct_sum(ct_add(y, z))) == 0);
    CHECK_VALUES(ct_grad(a), 0, 1, 2, 0);
    CHECK_ERROR(ct_relu_(a), "a leaf Variable that requires grad is being used in an in-place operation");
    ct_tensor *i = ct_tensor_i64(((int64_t[]){-1, 5}), CT_SHAPE(2));
    CHECK_ERROR(ct_clamp_(i, .min = CT_SOME(0.5)), "result type float32 can't be cast to the desired output type int64");
    CHECK(ct_clamp_(i, .max = CT_SOME(2)) == i);
    CHECK_VALUES(i, 0, -1, 2);
}

TEST(grad_fn_names_follow_pytorch) {
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    struct { ct_tensor *t; const char *name; } c[] = {
        {ct_log1p(x), "Log1PBackward0"},
        {ct_pow_scalar(x, 2), "PowBackward0"},
        {ct_pow(x, x), "PowBackward1"},
        {ct_rpow_scalar(x, 2), "PowBackward2"},
        {ct_clamp(x, .min = CT_SOME(0)), "ClampBackward1"},
        {ct_clamp_tensor(x, x, NULL), "ClampBackward0"},
        {ct_lerp(x, x, 0.5), "LerpBackward0"},
        {ct_lerp_tensor(x, x, x), "LerpBackward1"},
        {ct_gelu(x), "GeluBackward0"},
        {ct_where(ct_gt_scalar(x, 0), x, x), "WhereBackward0"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) CHECK_STR_EQ(ct_node_name(ct_grad_fn(c[i].t)), c[i].name);
    CHECK(!ct_requires_grad(ct_eq(x, x)) && ct_dtype_of(ct_isnan(x)) == CT_BOOL);
}

TEST(logical_and_classification_ops) {
    ct_tensor *x = ct_tensor_f64(((double[]){NAN, INFINITY, -INFINITY, 0, 2}), CT_SHAPE(5));
    CHECK_VALUES(ct_isnan(x), 0, 1, 0, 0, 0, 0);
    CHECK_VALUES(ct_isinf(x), 0, 0, 1, 1, 0, 0);
    CHECK_VALUES(ct_isfinite(x), 0, 0, 0, 0, 1, 1);
    CHECK_VALUES(ct_logical_not(x), 0, 0, 0, 0, 1, 0);
    CHECK_VALUES(ct_isfinite(ct_tensor_i64(((int64_t[]){1, 2}), CT_SHAPE(2))), 0, 1, 1);
    ct_tensor *b = ct_tensor_bool(((bool[]){true, false, true}), CT_SHAPE(3));
    ct_tensor *c = ct_tensor_i64(((int64_t[]){0, 0, 7}), CT_SHAPE(3));
    CHECK_VALUES(ct_logical_and(b, c), 0, 0, 0, 1);
    CHECK_VALUES(ct_logical_or(b, c), 0, 1, 0, 1);
    CHECK_VALUES(ct_logical_xor(b, c), 0, 1, 0, 0);
    CHECK_VALUES(ct_ne_scalar(c, 0), 0, 0, 0, 1);
    CHECK_VALUES(ct_le(c, ct_scalar_tensor(0, .dtype = CT_I64)), 0, 1, 1, 0);
    ct_tensor *w = ct_where_scalar(b, c, 0.5); /* torch.where(b, c, 0.5): float32 */
    CHECK(ct_dtype_of(w) == CT_F32);
    CHECK_VALUES(w, 0, 0, 0.5, 7);
    CHECK(ct_dtype_of(ct_where_scalar(b, c, 2)) == CT_I64);
}

/* ---- errors ---- */

/* The error messages are OPERROR rows of tests/opinfo.def (tests/gradcheck/errors.c). */
TEST(a_failed_calls_null_passes_through) { CHECK(ct_sigmoid(NULL) == NULL); }

/* Strided and broadcast inputs take the kernels' general paths: the same values as a
 * contiguous copy. */
TEST(noncontiguous_and_broadcast_inputs_match_contiguous) {
    ct_tensor *base = ct_empty(CT_SHAPE(6, 5));
    float *p = ct_data_ptr(base);
    for (int i = 0; i < 30; i++) p[i] = 0.37f * (float)(i - 14);
    ct_tensor *t = ct_transpose(base, 0, 1), *c = ct_contiguous(t);
    ct_tensor *row = ct_tensor_f32(((float[]){-1, 0.5, 2, -3, 1, 0}), CT_SHAPE(6));
    ct_tensor *pairs[][2] = {
        {ct_exp(t), ct_exp(c)},
        {ct_tanh(t), ct_tanh(c)},
        {ct_gelu(t), ct_gelu(c)},
        {ct_clamp(t, .min = CT_SOME(-1), .max = CT_SOME(1)), ct_clamp(c, .min = CT_SOME(-1), .max = CT_SOME(1))},
        {ct_maximum(t, row), ct_maximum(c, row)},
        {ct_where(ct_gt(t, row), t, row), ct_where(ct_gt(c, row), c, row)},
        {ct_lerp_tensor(t, row, ct_sigmoid(t)), ct_lerp_tensor(c, row, ct_sigmoid(c))},
        {ct_clamp_tensor(t, row, NULL), ct_clamp_tensor(c, row, NULL)},
        {ct_pow(ct_abs(t), row), ct_pow(ct_abs(c), row)},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char what[32];
        snprintf(what, sizeof what, "case %zu", i);
        CHECK_CLOSE_T(what, pairs[i][0], pairs[i][1], 0, 0);
    }
}

/* Thread-count independence: the OPLARGE rows of tests/opinfo.def
 * (tests/gradcheck/large.c). */

/* The examples at the head of ctorch/pointwise.h. */
TEST(header_examples_compile_and_run) {
    ct_tensor *x = ct_tensor_f32(((float[]){-2, 0.5, 9}), CT_SHAPE(3));
    ct_tensor *y = ct_clamp(ct_gelu(x, .approximate = CT_GELU_TANH), .max = CT_SOME(6));
    ct_tensor *m = ct_where(ct_gt_scalar(x, 0), x, ct_mul_scalar(x, 0.1));
    CHECK_VALUES(y, 1e-6, -0.04540231, 0.34571401, 6);
    CHECK_VALUES(m, 1e-6, -0.2, 0.5, 9);
}

/* div with rounding_mode trunc and floor, float64 and float32 (computed in float32):
 * exact values, including zero divisors (inf, nan) and negative operands; the
 * gradient of both inputs is zero, as in PyTorch. */
TEST(div_rounding_modes_match_pytorch) {
    fx_file *f = fixtures();
    const char *names[] = {"div_trunc", "div_floor"};
    const ct_rounding_mode modes[] = {CT_ROUND_TRUNC, CT_ROUND_FLOOR};
    for (int m = 0; m < 2; m++) CT_SCOPE {
        const char *name = names[m];
        ct_tensor *a = fx_get_as(f, key(name, "a"), CT_F64, true), *b = fx_get_as(f, key(name, "b"), CT_F64, true);
        ct_tensor *y = ct_div_mode(a, b, modes[m]);
        CHECK_CLOSE_T(name, y, fx_get(f, key(name, "y")), 0, 0);
        double *got = ct_test_values(y), *want = ct_test_values(fx_get(f, key(name, "y")));
        for (int64_t i = 0; got && want && i < ct_numel(y); i++) /* -0 where PyTorch has -0 */
            if (signbit(got[i]) != signbit(want[i]) && !isnan(want[i]))
                ct_test_fail(__FILE__, __LINE__, "%s[%lld]: %g, PyTorch %g", name, (long long)i, got[i], want[i]);
        free(got);
        free(want);
        ct_tensor *y32 = ct_div_mode(fx_get_as(f, key(name, "a"), CT_F32, false),
                                     fx_get_as(f, key(name, "b"), CT_F32, false), modes[m]);
        CHECK(y32 && ct_dtype_of(y32) == CT_F32);
        CHECK_CLOSE_T(name, y32, fx_get(f, key(name, "y32")), 0, 0);
        CHECK(ct_requires_grad(y));
        CHECK(ct_backward(ct_sum(y)) == 0);
        CHECK(ct_grad(a) && ct_grad(b));
        CHECK_CLOSE_T(name, ct_grad(a), fx_get(f, key(name, "ga")), 0, 0);
        CHECK_CLOSE_T(name, ct_grad(b), fx_get(f, key(name, "gb")), 0, 0);
    }
}
