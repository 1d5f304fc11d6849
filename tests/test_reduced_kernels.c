/* The float16 / bfloat16 kernels of their own beyond the pointwise loops: softmax,
 * log_softmax, their gradients and logsumexp (cpu/softmax_reduced.c), max / min and
 * their indices, all / any, cumsum / cumprod, activations, comparisons, matrix products
 * (cpu/gemm_reduced.c), pow, lerp, clamp with tensor bounds, where, the fused
 * recurrent cells, the paddings' backward and the tile conversions
 * (cpu/reduced_cvt.c).  Values against
 * PyTorch 1.13's reduced-precision results (tests/fixtures/gen_reduced.py) and against
 * float64 on the same rounded inputs; results bitwise equal for 1 and 3 threads; the
 * conversions bitwise equal on every instruction-set path this CPU has; no float32
 * temporaries of the operands. */
#include <stdlib.h>

#include "cpu/isa.h"
#include "cpu/reduced_cvt.h"
#include "ct_test.h"
#include "ops/shape_internal.h"
#include "fixtures.h"

static fx_file *fixtures(void) {
    static fx_file *f;
    if (!f) f = fx_load("reduced");
    return f;
}

static char *key(const char *pre, const char *name, const char *what) {
    static char buf[96];
    snprintf(buf, sizeof buf, "%s.%s.%s", pre, name, what);
    return buf;
}

/* |got - want| <= atol + rtol |want| everywhere (computed in float64), and got keeps
 * dtype dt. */
static void check_within(const char *what, ct_tensor *got, ct_tensor *want, ct_dtype dt,
                         double rtol, double atol) {
    if (!got || ct_dtype_of(got) != dt) {
        ct_test_fail(__FILE__, __LINE__, "%s: %s", what,
                     got ? "wrong dtype" : ct_last_error() ? ct_last_error() : "NULL");
        return;
    }
    ct_tensor *g = ct_to(got, .dtype = CT_F64), *w = ct_to(want, .dtype = CT_F64);
    ct_tensor *excess = ct_sub(ct_abs(ct_sub(g, w)), ct_add_scalar(ct_mul_scalar(ct_abs(w), rtol), atol));
    double worst = ct_item(ct_max(excess));
    if (!(worst <= 0))
        ct_test_fail(__FILE__, __LINE__, "%s (%s): off by %g beyond atol %g + rtol %g", what,
                     ct_dtype_name(dt), worst, atol, rtol);
}

static const char *PRE[] = {"bf16", "f16"};
static const ct_dtype DT[] = {CT_BF16, CT_F16};
/* The unit roundoff, the relative error of rounding an exact result once: bfloat16
 * 2^-8, float16 2^-11.  PyTorch's own reduced result may be a few units off the exact
 * one (1.13's bfloat16 softmax rounds between its steps). */
static const double ULP[] = {1.0 / 256, 1.0 / 2048};

typedef enum { SOFTMAX, LOG_SOFTMAX } sm_kind;
static ct_tensor *sm(sm_kind k, ct_tensor *x) {
    return k == SOFTMAX ? ct_softmax(x, 1) : ct_log_softmax(x, 1);
}

TEST(softmax_family_matches_pytorch) {
    fx_file *f = fixtures();
    const char *shapes[] = {"row", "col"};
    const char *kinds[] = {"softmax", "log_softmax"};
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < 2; s++) {
            ct_tensor *x = fx_get_as(f, key(PRE[d], shapes[s], "x"), DT[d], false);
            ct_tensor *g = fx_get_as(f, key(PRE[d], shapes[s], "g"), DT[d], false);
            ct_tensor *x64 = ct_to(x, .dtype = CT_F64);
            for (int k = 0; k < 2; k++) {
                char what[64], gk[32];
                snprintf(what, sizeof what, "%s %s", shapes[s], kinds[k]);
                ct_tensor *y = sm((sm_kind)k, x);
                /* log_softmax's values reach -20: absolute units of its largest value */
                double atol = k == LOG_SOFTMAX ? 24 * ULP[d] : 1e-6;
                check_within(what, y, fx_get(f, key(PRE[d], shapes[s], kinds[k])), DT[d],
                             4 * ULP[d], atol);
                check_within(what, y, sm((sm_kind)k, x64), DT[d], ULP[d], atol / 2);
                /* the gradient of sum(y * g), through softmax_backward_data */
                ct_tensor *xg = ct_detach(x);
                ct_set_requires_grad(xg, true);
                CHECK(ct_backward(ct_sum(ct_mul(sm((sm_kind)k, xg), g))) == 0);
                ct_tensor *x64g = ct_detach(x64);
                ct_set_requires_grad(x64g, true);
                CHECK(ct_backward(ct_sum(ct_mul(sm((sm_kind)k, x64g), ct_to(g, .dtype = CT_F64)))) == 0);
                snprintf(what, sizeof what, "%s %s gradient", shapes[s], kinds[k]);
                snprintf(gk, sizeof gk, "%s_grad", kinds[k]);
                check_within(what, ct_grad(xg), fx_get(f, key(PRE[d], shapes[s], gk)), DT[d],
                             8 * ULP[d], 8 * ULP[d]);
                check_within(what, ct_grad(xg), ct_grad(x64g), DT[d], 4 * ULP[d], 4 * ULP[d]);
            }
            char what[64];
            snprintf(what, sizeof what, "%s logsumexp", shapes[s]);
            ct_tensor *l = ct_logsumexp(x, .dims = CT_DIMS(1));
            check_within(what, l, fx_get(f, key(PRE[d], shapes[s], "logsumexp")), DT[d], 4 * ULP[d],
                         16 * ULP[d]);
            check_within(what, l, ct_logsumexp(x64, .dims = CT_DIMS(1)), DT[d], ULP[d], 0);
        }
}

/* max / min return an element and its first index: exactly PyTorch's; the scans
 * accumulate in float and round each running value, as PyTorch's do. */
TEST(reductions_and_scans_match_pytorch) {
    fx_file *f = fixtures();
    const char *shapes[] = {"row", "col"};
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < 2; s++) {
            ct_tensor *x = fx_get_as(f, key(PRE[d], shapes[s], "x"), DT[d], false);
            ct_tensor *x64 = ct_to(x, .dtype = CT_F64);
            ct_values_indices mx = ct_max_dim(x, 1, false), mn = ct_min_dim(x, 1, false);
            check_within("amax", ct_amax(x, .dims = CT_DIMS(1)), fx_get(f, key(PRE[d], shapes[s], "amax")), DT[d], 0, 0);
            check_within("amin", ct_amin(x, .dims = CT_DIMS(1)), fx_get(f, key(PRE[d], shapes[s], "amin")), DT[d], 0, 0);
            check_within("max values", mx.values, fx_get(f, key(PRE[d], shapes[s], "amax")), DT[d], 0, 0);
            check_within("min values", mn.values, fx_get(f, key(PRE[d], shapes[s], "amin")), DT[d], 0, 0);
            check_within("max indices", mx.indices, fx_get(f, key(PRE[d], shapes[s], "argmax")), CT_I64, 0, 0);
            check_within("argmax", ct_argmax(x, .dims = CT_DIMS(1)), fx_get(f, key(PRE[d], shapes[s], "argmax")), CT_I64, 0, 0);
            check_within("argmin", ct_argmin(x, .dims = CT_DIMS(1)), fx_get(f, key(PRE[d], shapes[s], "argmin")), CT_I64, 0, 0);
            check_within("all", ct_all(x, .dims = CT_DIMS(1)), fx_get(f, key(PRE[d], shapes[s], "all")), CT_BOOL, 0, 0);
            check_within("any", ct_any(x, .dims = CT_DIMS(1)), fx_get(f, key(PRE[d], shapes[s], "any")), CT_BOOL, 0, 0);
            /* 300 (or 3) running sums of values to 10: a unit of the largest partial */
            ct_tensor *cs = ct_cumsum(x, 1);
            check_within("cumsum", cs, fx_get(f, key(PRE[d], shapes[s], "cumsum")), DT[d], 2 * ULP[d], 64 * ULP[d]);
            check_within("cumsum", cs, ct_cumsum(x64, 1), DT[d], ULP[d], 32 * ULP[d]);
            ct_tensor *cp_in = fx_get_as(f, key(PRE[d], shapes[s], "cp_in"), DT[d], false);
            ct_tensor *cp = ct_cumprod(cp_in, 1);
            check_within("cumprod", cp, fx_get(f, key(PRE[d], shapes[s], "cumprod")), DT[d], 4 * ULP[d], 0);
            check_within("cumprod", cp, ct_cumprod(ct_to(cp_in, .dtype = CT_F64), 1), DT[d], 2 * ULP[d], 0);
        }
    /* all / any see zeros and NaN as float does */
    for (int d = 0; d < 2; d++) {
        ct_tensor *z = ct_to(ct_tensor_f32(((float[]){0, NAN, -0.0f, 0, 2, 0}), CT_SHAPE(3, 2)), .dtype = DT[d]);
        CHECK_VALUES(ct_all(z, .dims = CT_DIMS(1)), 0, 0, 0, 0);
        CHECK_VALUES(ct_any(z, .dims = CT_DIMS(1)), 0, 1, 0, 1);
        CHECK_VALUES(ct_argmax(z, .dims = CT_DIMS(0)), 0, 2, 0); /* NaN wins */
    }
}

/* The activations a bfloat16 model runs: the float32 kernel's result on the widened
 * input, rounded once (so within a unit roundoff of PyTorch's), and relu's gradient
 * (threshold_backward) too. */
static ct_tensor *act(int i, ct_tensor *x) {
    switch (i) {
    case 0: return ct_relu(x);
    case 1: return ct_gelu(x);
    case 2: return ct_silu(x);
    case 3: return ct_leaky_relu(x);
    case 4: return ct_elu(x);
    case 5: return ct_hardtanh(x);
    }
    return NULL;
}

TEST(activations_match_pytorch) {
    fx_file *f = fixtures();
    const char *names[] = {"relu", "gelu", "silu", "leaky_relu", "elu", "hardtanh"};
    for (int d = 0; d < 2; d++) {
        ct_tensor *x = fx_get_as(f, key(PRE[d], "row", "x"), DT[d], false);
        ct_tensor *x32 = ct_to(x, .dtype = CT_F32);
        for (int i = 0; i < 6; i++) {
            ct_tensor *y = act(i, x);
            /* PyTorch 1.13's reduced gelu and silu lose digits at negative x (gelu:
             * the cancellation of 1 + erf) */
            check_within(names[i], y, fx_get(f, key(PRE[d], "row", names[i])), DT[d], 2 * ULP[d], ULP[d]);
            check_within(names[i], y, act(i, ct_to(x, .dtype = CT_F64)), DT[d], ULP[d], 1e-6);
            check_within(names[i], y, ct_to(act(i, x32), .dtype = DT[d]), DT[d], 0, 0);
        }
        ct_tensor *xg = ct_detach(x), *g = fx_get_as(f, key(PRE[d], "row", "g"), DT[d], false);
        ct_set_requires_grad(xg, true);
        CHECK(ct_backward(ct_relu(xg), .gradient = g) == 0);
        check_within("relu gradient", ct_grad(xg), ct_where(ct_gt_scalar(x, 0), g, ct_zeros_like(g)),
                     DT[d], 0, 0);
    }
}

/* Comparisons, maximum and minimum see the widened elements; a number compared with
 * a reduced tensor rounds to its dtype first, as in PyTorch. */
TEST(comparisons_match_pytorch) {
    fx_file *f = fixtures();
    for (int d = 0; d < 2; d++) {
        ct_tensor *x = fx_get_as(f, key(PRE[d], "row", "x"), DT[d], false);
        ct_tensor *g = fx_get_as(f, key(PRE[d], "row", "g"), DT[d], false);
        ct_tensor *got[] = {ct_lt(x, g), ct_ge(x, g), ct_eq(x, ct_flip(x, CT_DIMS(0))), ct_maximum(x, g),
                            ct_minimum(x, g), ct_gt_scalar(x, 0.1)};
        const char *names[] = {"lt", "ge", "eq", "maximum", "minimum", "gt_scalar"};
        for (int i = 0; i < 6; i++) {
            ct_dtype want_dt = i == 3 || i == 4 ? DT[d] : CT_BOOL;
            ct_tensor *want = i == 2 ? ct_eq(ct_to(x, .dtype = CT_F64), ct_to(ct_flip(x, CT_DIMS(0)), .dtype = CT_F64))
                                     : fx_get(f, key(PRE[d], "row", names[i]));
            check_within(names[i], got[i], want, want_dt, 0, 0);
        }
        ct_tensor *s = ct_to(ct_tensor_f32(((float[]){NAN, INFINITY, -INFINITY, 1}), CT_SHAPE(4)), .dtype = DT[d]);
        CHECK_VALUES(ct_isnan(s), 0, 1, 0, 0, 0);
        CHECK_VALUES(ct_isinf(s), 0, 0, 1, 1, 0);
        CHECK_VALUES(ct_isfinite(s), 0, 0, 0, 0, 1);
        CHECK(isnan(ct_item(ct_max(ct_maximum(s, ct_ones_like(s))))));
    }
}

static ct_tensor *mm_case(int i, ct_tensor **in) {
    switch (i) {
    case 0: return ct_mm(in[0], in[1]);
    case 1: return ct_mm(ct_t(ct_contiguous(ct_t(in[0]))), in[1]); /* a column-major */
    case 2: return ct_addmm(in[2], in[0], in[1], .beta = CT_SOME(0.5), .alpha = CT_SOME(2.0));
    case 3: return ct_mv(in[0], in[3]);
    case 4: return ct_bmm(in[4], in[5]);
    case 5: return ct_linear(in[7], in[6], in[2]);
    }
    return NULL;
}

TEST(matrix_products_match_pytorch) {
    fx_file *f = fixtures();
    const char *names[] = {"a", "b", "c", "v", "ba", "bb", "w", "xs"};
    const char *cases[] = {"mm", "mm_ta", "addmm", "mv", "bmm", "linear"};
    for (int d = 0; d < 2; d++) {
        ct_tensor *in[8], *in64[8];
        for (int i = 0; i < 8; i++) {
            in[i] = fx_get_as(f, key(PRE[d], "mm", names[i]), DT[d], false);
            in64[i] = ct_to(in[i], .dtype = CT_F64);
        }
        for (int i = 0; i < 6; i++) {
            ct_tensor *y = mm_case(i, in);
            /* Sums of 300 products of N(0, 1), magnitudes to 50.  PyTorch 1.13's bfloat16
             * product (no AVX-512 here) is up to 0.92 off the exact one; its float16
             * product goes through float32 and rounds once.  Ours rounds the float32
             * sum once: within a unit roundoff of the exact product (plus float32's
             * accumulation error, far smaller). */
            if (d == 0) /* addmm: alpha = 2 doubles PyTorch's error */
                check_within(cases[i], y, fx_get(f, key(PRE[d], "mm", cases[i])), DT[d], 1.0 / 64,
                             i == 2 ? 2.0 : 1.0);
            else
                check_within(cases[i], y, fx_get(f, key(PRE[d], "mm", cases[i])), DT[d], 2 * ULP[d], 1e-3);
            check_within(cases[i], y, mm_case(i, in64), DT[d], ULP[d] + 1e-5, 1e-4);
        }
    }
}

/* Exact products: entries k/16 with |k| <= 32 multiply and add exactly in float, so
 * the result is the float64 product rounded once, across every tile and k-slice
 * boundary (300 x 600 @ 600 x 270: two tiles of rows, two of columns, three slices),
 * for plain, transposed and batched operands. */
static ct_tensor *grid(int64_t r, int64_t c, int salt, ct_dtype dt) {
    double *v = malloc(sizeof(double) * (size_t)(r * c));
    for (int64_t i = 0; i < r * c; i++) v[i] = (double)((i * 37 + salt * 11 + i / 7) % 65 - 32) / 16;
    ct_tensor *t = ct_to(ct_tensor_f64(v, CT_SHAPE(r, c)), .dtype = dt);
    free(v);
    return t;
}

TEST(exact_products_round_once) {
    for (int d = 0; d < 2; d++) {
        ct_tensor *a = grid(300, 600, 1, DT[d]), *b = grid(600, 270, 2, DT[d]);
        ct_tensor *a64 = ct_to(a, .dtype = CT_F64), *b64 = ct_to(b, .dtype = CT_F64);
        ct_tensor *want = ct_to(ct_mm(a64, b64), .dtype = DT[d]);
        CHECK_CLOSE(ct_test_max_diff(ct_mm(a, b), want), 0, 0);
        ct_tensor *at = ct_t(ct_contiguous(ct_t(a))), *bt = ct_t(ct_contiguous(ct_t(b)));
        CHECK_CLOSE(ct_test_max_diff(ct_mm(at, bt), want), 0, 0);
        ct_tensor *c = grid(300, 270, 3, DT[d]);
        ct_tensor *want2 = ct_to(ct_addmm(ct_to(c, .dtype = CT_F64), a64, b64, .beta = CT_SOME(0.5)),
                                 .dtype = DT[d]);
        CHECK_CLOSE(ct_test_max_diff(ct_addmm(c, a, b, .beta = CT_SOME(0.5)), want2), 0, 0);
        ct_tensor *ba = ct_reshape(grid(6, 2000, 4, DT[d]), CT_SHAPE(3, 40, 100));
        ct_tensor *bb = ct_reshape(grid(6, 1500, 5, DT[d]), CT_SHAPE(3, 100, 30));
        ct_tensor *wantb = ct_to(ct_bmm(ct_to(ba, .dtype = CT_F64), ct_to(bb, .dtype = CT_F64)),
                                 .dtype = DT[d]);
        CHECK_CLOSE(ct_test_max_diff(ct_bmm(ba, bb), wantb), 0, 0);
        /* k == 0: beta * c; empty results */
        ct_tensor *e = ct_addmm(ct_ones(CT_SHAPE(2, 3), .dtype = DT[d]),
                                ct_zeros(CT_SHAPE(2, 0), .dtype = DT[d]),
                                ct_zeros(CT_SHAPE(0, 3), .dtype = DT[d]), .beta = CT_SOME(0.5));
        CHECK_VALUES(e, 0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5);
        CHECK_INT_EQ(ct_numel(ct_mm(ct_zeros(CT_SHAPE(0, 4), .dtype = DT[d]),
                                    ct_zeros(CT_SHAPE(4, 3), .dtype = DT[d]))), 0);
    }
}

/* The pointwise ops that convert in registers: within a unit or two of PyTorch's
 * reduced result, and the bits of the float32 op on the widened operands rounded once
 * (contiguous, broadcast and strided).  PyTorch rounds a number operand of pow to the
 * tensor's dtype first (x ** 1.7 is x ** 1.703125 in bfloat16); its bfloat16 x ** 3
 * rounds x * x before the third factor, ours the product once. */
static ct_tensor *pw_case(int i, ct_tensor *const *in, double e17, double b13) {
    ct_tensor *x = in[0], *e = in[1], *s = in[2], *w = in[3], *lo = in[4], *hi = in[5];
    switch (i) {
    case 0: return ct_pow(x, e);
    case 1: return ct_pow_scalar(x, e17);
    case 2: return ct_pow_scalar(x, 2);
    case 3: return ct_pow_scalar(x, 3);
    case 4: return ct_pow_scalar(x, 0.5);
    case 5: return ct_pow_scalar(x, -1);
    case 6: return ct_rpow_scalar(e, b13);
    case 7: return ct_lerp(s, e, 0.3);
    case 8: return ct_lerp(s, e, 0.8);
    case 9: return ct_lerp_tensor(s, e, w);
    case 10: return ct_clamp_tensor(s, lo, hi);
    case 11: return ct_where(ct_gt_scalar(s, 0), s, e);
    /* a broadcast third operand, then strided operands */
    case 12: return ct_lerp_tensor(s, e, ct_expand(ct_narrow(w, 0, 7, 1), CT_SHAPE(300)));
    case 13: return ct_clamp_tensor(s, lo, ct_expand(ct_narrow(hi, 0, 3, 1), CT_SHAPE(300)));
    case 14: return ct_lerp_tensor(ct_slice(s, 0, 0, 300, 2), ct_slice(e, 0, 1, 300, 2), ct_slice(w, 0, 0, 300, 2));
    case 15: return ct_clamp_tensor(ct_slice(s, 0, 0, 300, 3), ct_slice(lo, 0, 0, 300, 3), ct_slice(hi, 0, 2, 300, 3));
    case 16: return ct_pow(ct_slice(x, 0, 0, 300, 2), ct_slice(e, 0, 1, 300, 2));
    case 17: return ct_lerp(ct_slice(s, 0, 0, 300, 2), ct_expand(ct_narrow(e, 0, 5, 1), CT_SHAPE(150)), 0.3);
    }
    return NULL;
}

TEST(pointwise_ops_match_pytorch) {
    fx_file *f = fixtures();
    const char *names[] = {"pow", "pow_1_7", "pow_2", "pow_3", "pow_0_5", "pow_m1", "rpow_1_3",
                           "lerp_0_3", "lerp_0_8", "lerp_tensor", "clamp_tensor", "where"};
    const char *ins[] = {"x", "e", "s", "w", "lo", "hi"};
    for (int d = 0; d < 2; d++) {
        ct_tensor *in[6], *in32[6];
        for (int i = 0; i < 6; i++) {
            in[i] = fx_get_as(f, key(PRE[d], "pw", ins[i]), DT[d], false);
            in32[i] = ct_to(in[i], .dtype = CT_F32);
        }
        /* the numbers as the reduced dtype holds them */
        double e17 = ct_item(ct_full(CT_SHAPE(), 1.7, .dtype = DT[d]));
        double b13 = ct_item(ct_full(CT_SHAPE(), 1.3, .dtype = DT[d]));
        for (int i = 0; pw_case(i, in, 1.7, 1.3); i++) {
            ct_tensor *y = pw_case(i, in, 1.7, 1.3);
            char what[64];
            snprintf(what, sizeof what, "case %d (%s)", i, i < 12 ? names[i] : "strided");
            if (i < 12) {
                bool exact = i >= 10, steps = i == 3;
                double tol = exact ? 0 : steps ? 4 * ULP[d] : 2 * ULP[d];
                check_within(what, y, fx_get(f, key(PRE[d], "pw", names[i])), DT[d], tol,
                             exact ? 0 : 1e-6);
            }
            check_within(what, y, ct_to(pw_case(i, in32, e17, b13), .dtype = DT[d]), DT[d], 0, 0);
        }
    }
}

/* The fused cells convert the gates tile by tile (hidden size 130: two tiles): the
 * float32 cell's bits on the widened operands, rounded once; within a few units of
 * PyTorch's cells, whose every op rounds; gradients near float64's on the same
 * rounded inputs. */
static void cell(bool lstm, ct_tensor *const *in, ct_tensor **out) {
    if (lstm) {
        ct_lstm_cell_result r = ct_thnn_fused_lstm_cell(in[0], in[1], in[2], in[3], in[4]);
        out[0] = r.hy, out[1] = r.cy, out[2] = r.workspace;
    } else {
        ct_gru_cell_result r = ct_thnn_fused_gru_cell(in[0], in[1], in[2], in[3], in[4]);
        out[0] = r.hy, out[1] = r.workspace, out[2] = NULL;
    }
}

TEST(fused_cells_match_pytorch) {
    fx_file *f = fixtures();
    for (int d = 0; d < 2; d++)
        for (int l = 0; l < 2; l++) {
            bool lstm = l == 0;
            const char *name = lstm ? "lstm" : "gru";
            ct_tensor *in[5], *in32[5], *in64[5], *out[3], *out32[3], *out64[3];
            for (int i = 0; i < 5; i++) {
                char k[8];
                snprintf(k, sizeof k, "in%d", i);
                in[i] = fx_get_as(f, key(PRE[d], name, k), DT[d], true);
                in32[i] = ct_to(ct_detach(in[i]), .dtype = CT_F32);
                in64[i] = ct_detach(ct_to(ct_detach(in[i]), .dtype = CT_F64));
                ct_set_requires_grad(in64[i], true);
            }
            cell(lstm, in, out);
            cell(lstm, in32, out32);
            cell(lstm, in64, out64);
            for (int i = 0; i < (lstm ? 3 : 2); i++) {
                char what[64], k[8];
                snprintf(what, sizeof what, "%s output %d", name, i);
                check_within(what, out[i], ct_to(out32[i], .dtype = DT[d]), DT[d], 0, 0);
                snprintf(k, sizeof k, "out%d", i);
                if (i < (lstm ? 2 : 1))
                    check_within(what, out[i], fx_get(f, key(PRE[d], name, k)), DT[d], 4 * ULP[d],
                                 4 * ULP[d]);
            }
            /* the fused backward (no graph) of sum(hy * hy) */
            CHECK(ct_backward(ct_sum(ct_mul(out[0], out[0]))) == 0);
            CHECK(ct_backward(ct_sum(ct_mul(out64[0], out64[0]))) == 0);
            for (int i = 0; i < 5; i++) {
                char what[64];
                snprintf(what, sizeof what, "%s gradient of input %d", name, i);
                /* the biases' gradients sum 3 rows; all see the workspace rounded */
                check_within(what, ct_grad(in[i]), ct_grad(in64[i]), DT[d], 8 * ULP[d], 8 * ULP[d]);
            }
        }
}

/* The backward of reflect and replicate padding sums each input element's gradient
 * from the output elements that read it, in float, rounded once: the float32
 * backward's bits on the widened gradient, within a unit of float64's.  (PyTorch 1.13
 * has no reduced cpu kernel of these paddings.)  Replicating by 9 makes the edges sum
 * ten terms and more; 300 columns: more than one float16 tile. */
TEST(pad_backward_rounds_once) {
    struct { int64_t shape[5]; int ndim; ct_dims pad; ct_pad_mode mode; } cases[] = {
        {{2, 3, 300}, 3, CT_DIMS(3, 5), CT_PAD_REFLECT},
        {{2, 3, 300}, 3, CT_DIMS(9, 9), CT_PAD_REPLICATE},
        {{2, 5, 7}, 3, CT_DIMS(-2, 3), CT_PAD_REFLECT},
        {{1, 2, 6, 7}, 4, CT_DIMS(2, 1, 3, 2), CT_PAD_REFLECT},
        {{2, 6, 7}, 3, CT_DIMS(9, 2, 4, 9), CT_PAD_REPLICATE},
        {{1, 1, 4, 5, 6}, 5, CT_DIMS(1, 2, 3, 1, 2, 3), CT_PAD_REFLECT},
        {{1, 1, 4, 5, 6}, 5, CT_DIMS(4, 1, 2, 5, 3, 3), CT_PAD_REPLICATE},
    };
    ct_manual_seed(5);
    for (int d = 0; d < 2; d++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            ct_shape shape = {.ndim = cases[c].ndim};
            memcpy(shape.d, cases[c].shape, sizeof(int64_t) * (size_t)shape.ndim);
            ct_tensor *x = ct_to(ct_randn(shape), .dtype = DT[d]), *grad[3];
            const ct_dtype dts[] = {DT[d], CT_F32, CT_F64};
            ct_tensor *g = NULL;
            for (int k = 0; k < 3; k++) {
                ct_tensor *xk = ct_detach(ct_to(ct_detach(x), .dtype = dts[k]));
                ct_set_requires_grad(xk, true);
                ct_tensor *y = ct_pad(xk, cases[c].pad, .mode = cases[c].mode);
                if (!g) g = ct_to(ct_mul_scalar(ct_randn(ct_shape_of(y)), 4), .dtype = DT[d]);
                CHECK(ct_backward(y, .gradient = ct_to(g, .dtype = dts[k])) == 0);
                grad[k] = ct_grad(xk);
            }
            char what[64];
            snprintf(what, sizeof what, "pad case %zu gradient", c);
            check_within(what, grad[0], ct_to(grad[1], .dtype = DT[d]), DT[d], 0, 0);
            check_within(what, grad[0], grad[2], DT[d], ULP[d], 1e-6);
        }
}

static ct_tensor *thread_case(int i, ct_tensor *x, ct_tensor *a, ct_tensor *b) {
    switch (i) {
    case 0: return ct_softmax(ct_view(ct_to(x, .dtype = CT_BF16), CT_SHAPE(7, 10001)), 1);
    case 1: return ct_log_softmax(ct_view(ct_to(x, .dtype = CT_F16), CT_SHAPE(7, 10001)), 1);
    case 2: return ct_softmax(ct_view(ct_to(x, .dtype = CT_BF16), CT_SHAPE(1, 70, 1000)), 1);
    case 3: return ct_log_softmax(ct_view(ct_to(x, .dtype = CT_F16), CT_SHAPE(2, 35, 1000)), 1);
    case 4: return ct_logsumexp(ct_view(ct_to(x, .dtype = CT_BF16), CT_SHAPE(70, 1000)), .dims = CT_DIMS(0));
    case 5: return ct_mm(ct_to(a, .dtype = CT_BF16), ct_to(b, .dtype = CT_BF16));
    case 6: return ct_mm(ct_to(a, .dtype = CT_F16), ct_to(b, .dtype = CT_F16));
    case 7: return ct_sum(ct_to(x, .dtype = CT_F16));
    case 8: return ct_add(ct_to(x, .dtype = CT_F16), ct_to(ct_flip(x, CT_DIMS(0)), .dtype = CT_F16));
    case 9: return ct_exp(ct_to(x, .dtype = CT_F16));
    case 10: return ct_cumsum(ct_view(ct_to(x, .dtype = CT_BF16), CT_SHAPE(7, 10001)), 1);
    case 11: return ct_amax(ct_view(ct_to(x, .dtype = CT_F16), CT_SHAPE(70007)));
    case 12: return ct_argmax(ct_view(ct_to(x, .dtype = CT_BF16), CT_SHAPE(7, 10001)), .dims = CT_DIMS(1));
    case 13: return ct_gelu(ct_to(x, .dtype = CT_F16));
    case 14: return ct_lt(ct_to(x, .dtype = CT_BF16), ct_to(ct_flip(x, CT_DIMS(0)), .dtype = CT_BF16));
    case 15: return ct_pow(ct_abs(ct_to(x, .dtype = CT_F16)), ct_to(ct_flip(x, CT_DIMS(0)), .dtype = CT_F16));
    case 16: return ct_lerp_tensor(ct_to(x, .dtype = CT_BF16), ct_to(ct_flip(x, CT_DIMS(0)), .dtype = CT_BF16),
                                   ct_sigmoid(ct_to(x, .dtype = CT_BF16)));
    case 17: return ct_thnn_fused_lstm_cell(ct_to(a, .dtype = CT_BF16), ct_to(a, .dtype = CT_BF16),
                                            ct_narrow(ct_to(a, .dtype = CT_BF16), 1, 0, 130), NULL, NULL).hy;
    default: return NULL;
    }
}

TEST(reduced_kernels_equal_across_threads) {
    int threads = ct_get_num_threads();
    ct_manual_seed(3);
    ct_tensor *x = ct_randn(CT_SHAPE(70007)), *a = ct_randn(CT_SHAPE(300, 520)),
              *b = ct_randn(CT_SHAPE(520, 290));
    for (int i = 0; thread_case(i, x, a, b); i++) {
        ct_set_num_threads(1);
        ct_tensor *one = thread_case(i, x, a, b);
        ct_set_num_threads(3);
        double d = ct_test_max_diff(thread_case(i, x, a, b), one);
        if (!(d == 0)) ct_test_fail(__FILE__, __LINE__, "case %d differs with 3 threads by %g", i, d);
    }
    ct_set_num_threads(threads);
}

/* Every float16 bit pattern widens, and a spread of floats (ties, subnormals, the
 * overflow edge, infinities, NaNs with payloads) narrows, to the same bits on each
 * instruction-set path as the scalar conversions. */
static bool isa_available(ct_isa isa) {
    switch (isa) {
    case CT_ISA_AVX512: return __builtin_cpu_supports("avx512f");
    case CT_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c");
    default: return true;
    }
}

TEST(conversions_equal_on_every_isa_path) {
    enum { NH = 65536, NF = 1 << 18 };
    ct_half *h = malloc(sizeof(ct_half) * NH), *h2 = malloc(sizeof(ct_half) * NF);
    float *wide = malloc(sizeof(float) * NH), *f = malloc(sizeof(float) * NF);
    ct_bf16 *b2 = malloc(sizeof(ct_bf16) * NF);
    for (uint32_t i = 0; i < NH; i++) {
        uint16_t bits = (uint16_t)i;
        memcpy(&h[i], &bits, 2);
    }
    uint32_t s = 12345;
    for (int i = 0; i < NF; i++) {
        s = s * 1664525u + 1013904223u;
        /* exponents around float16's range, mantissas with tie bits set */
        uint32_t u = (s & 0x807fffffu) | ((uint32_t)(96 + (s >> 8) % 64) << 23);
        if (i % 8 == 1) u = (u & ~0x1fffu) | 0x1000u;   /* float16 ties */
        if (i % 8 == 2) u = (u & ~0xffffu) | 0x8000u;   /* bfloat16 ties */
        if (i % 64 == 3) u = 0x7f800000u | (s & 0x7fffffu) | 1u; /* NaNs */
        memcpy(&f[i], &u, 4);
    }
    const float edge[] = {65504.0f, 65519.99f, 65520.0f, INFINITY, -INFINITY, 0.0f, -0.0f,
                          5.96e-8f, 2.98e-8f, 2.99e-8f, 6.1e-5f};
    memcpy(f, edge, sizeof edge);
    int saved = ct_cpu_isa_level;
    for (int isa = CT_ISA_DEFAULT; isa <= CT_ISA_AVX512; isa++) {
        if (!isa_available((ct_isa)isa)) continue;
        __atomic_store_n(&ct_cpu_isa_level, isa, __ATOMIC_RELAXED);
        CHECK_INT_EQ(ct_cpu_isa(), isa);
        ct_half_to_float_n(wide, h, NH);
        int bad = 0;
        for (int i = 0; i < NH && bad < 3; i++) {
            float want = ct_half_to_float(h[i]);
            if (memcmp(&want, &wide[i], 4)) bad++, ct_test_fail(__FILE__, __LINE__,
                "isa %d: float16 0x%04x widens differently", isa, (unsigned)i);
        }
        ct_float_to_half_n(h2, f, NF);
        ct_float_to_bf16_n(b2, f, NF);
        for (int i = 0; i < NF && bad < 6; i++) {
            ct_half wh = ct_float_to_half(f[i]);
            ct_bf16 wb = ct_float_to_bf16(f[i]);
            uint32_t u;
            memcpy(&u, &f[i], 4);
            if (memcmp(&wh, &h2[i], 2)) bad++, ct_test_fail(__FILE__, __LINE__,
                "isa %d: float 0x%08x narrows to float16 differently", isa, (unsigned)u);
            if (memcmp(&wb, &b2[i], 2)) bad++, ct_test_fail(__FILE__, __LINE__,
                "isa %d: float 0x%08x narrows to bfloat16 differently", isa, (unsigned)u);
        }
        /* odd lengths: the vector body and the scalar tail agree */
        ct_half_to_float_n(wide, h + 1, 37);
        for (int i = 0; i < 37; i++) CHECK(wide[i] == ct_half_to_float(h[i + 1]) || wide[i] != wide[i]);
    }
    __atomic_store_n(&ct_cpu_isa_level, saved, __ATOMIC_RELAXED);
    free(h), free(h2), free(wide), free(f), free(b2);
}

/* The reduced kernels allocate only their output: no float32 copy of an operand or
 * of the result (the per-thread tiles are bounded and outside the tensor allocator). */
TEST(reduced_kernels_allocate_only_their_output) {
    for (int d = 0; d < 2; d++) {
        ct_tensor *x = ct_full(CT_SHAPE(64, 1000), 0.5, .dtype = DT[d]);
        ct_tensor *a = ct_full(CT_SHAPE(300, 300), 0.25, .dtype = DT[d]);
        ct_tensor *c = ct_full(CT_SHAPE(300, 75), 0.5, .dtype = DT[d]);
        for (int i = 0; i < 12; i++) {
            int64_t base = ct_memory_allocated(CT_CPU);
            ct_reset_peak_memory_stats(CT_CPU);
            int64_t want = i == 3 ? 300 * 300 * 2 : i == 5 ? 64 * (2 + 8)
                           : i == 10 ? (300 * 75 * 2 + 300 * 300) * 2 /* hy, cy, workspace */
                           : i == 11 ? 64 * 998 * 2
                                     : 64 * 1000 * 2;
            CT_SCOPE {
                ct_tensor *y = i == 0 ? ct_softmax(x, 1) : i == 1 ? ct_log_softmax(x, 0)
                               : i == 2 ? ct_softmax(ct_view(x, CT_SHAPE(8, 8, 1000)), 1)
                               : i == 3 ? ct_mm(a, a)
                               : i == 4 ? ct_cumsum(x, 1)
                               : i == 5 ? ct_max_dim(x, 1, false).values
                               : i == 6 ? ct_pow(x, x)
                               : i == 7 ? ct_pow_scalar(x, 1.7)
                               : i == 8 ? ct_lerp_tensor(x, x, x)
                               : i == 9 ? ct_clamp_tensor(x, x, x)
                               : i == 10 ? ct_thnn_fused_lstm_cell(a, a, c, NULL, NULL).hy
                                         : ct_pad_backward(x, 2, (int64_t[]){64, 998},
                                                           CT_PAD_REFLECT, CT_DIMS(1, 1));
                CHECK(y != NULL);
            }
            int64_t peak = ct_max_memory_allocated(CT_CPU) - base;
            if (peak != want)
                ct_test_fail(__FILE__, __LINE__, "%s case %d: peak %lld bytes, expected %lld",
                             ct_dtype_name(DT[d]), i, (long long)peak, (long long)want);
        }
    }
}
