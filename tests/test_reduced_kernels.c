/* The float16 / bfloat16 kernels of their own beyond the pointwise loops: softmax,
 * log_softmax, their gradients and logsumexp (cpu/softmax_reduced.c), max / min and
 * their indices, all / any, cumsum / cumprod, activations, comparisons, matrix products
 * (cpu/gemm_reduced.c), convolution, fold / unfold, pooling and upsampling
 * (cpu/conv_reduced.c, cpu/pool.c), layer / group / batch norm and their gradients
 * (cpu/norm_reduced.c), vector norms, pow, lerp, clamp with tensor bounds, where, the
 * fused recurrent cells, the paddings' backward and the tile conversions
 * (cpu/reduced_cvt.c).  Values against
 * PyTorch 1.13's reduced-precision results (tests/fixtures/gen_reduced.py) and against
 * float64 on the same rounded inputs; results bitwise equal for 1 and 3 threads; the
 * conversions bitwise equal on every instruction-set path this CPU has; no float32
 * temporaries of the operands. */
#include <stdlib.h>
#include <string.h>

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

/* The losses of tests/fixtures/gen_reduced.py, on x, y [4, 300] (and the class
 * targets, class weights and pos_weight of the fixture). */
typedef struct {
    ct_tensor *pw, *cls, *cw;
} loss_extra;
static const char *const LOSS_NAMES[] = {"mse", "l1", "smooth_l1", "huber", "bce", "bce_logits",
                                         "bce_logits_pw", "kl_div", "nll", "cross_entropy"};
enum { N_LOSSES = sizeof LOSS_NAMES / sizeof LOSS_NAMES[0] };
/* Loss i of (x, y), the inputs first mapped as the fixture does (sigmoid, log_softmax,
 * softmax: in their dtype), then widened to `as` when it is set (a float64 reference
 * on the very operands the reduced loss sees). */
static ct_tensor *loss_case(int i, ct_tensor *x, ct_tensor *y, const loss_extra *e, ct_reduction r,
                            ct_dtype as) {
    ct_tensor *a = x, *b = y;
    if (i == 4) a = ct_sigmoid(x);
    if (i >= 4 && i <= 6) b = ct_sigmoid(y);
    if (i == 7) a = ct_log_softmax(x, 1), b = ct_softmax(y, 1);
    if (as != CT_DTYPE_UNSET) a = ct_to(a, .dtype = as), b = ct_to(b, .dtype = as);
    switch (i) {
    case 0: return ct_mse_loss(a, b, .reduction = r);
    case 1: return ct_l1_loss(a, b, .reduction = r);
    case 2: return ct_smooth_l1_loss(a, b, .reduction = r, .beta = CT_SOME(0.5));
    case 3: return ct_huber_loss(a, b, .reduction = r, .delta = 0.5);
    case 4: return ct_binary_cross_entropy(a, b, .reduction = r);
    case 5: return ct_binary_cross_entropy_with_logits(a, b, .reduction = r);
    case 6: return ct_binary_cross_entropy_with_logits(a, b, .reduction = r, .pos_weight = e->pw);
    case 7: return ct_kl_div(a, b, .reduction = r);
    case 8: return ct_nll_loss(a, e->cls, .weight = e->cw, .reduction = r);
    case 9: return ct_cross_entropy(a, e->cls, .reduction = r);
    }
    return NULL;
}

static double max_abs(ct_tensor *t) { return ct_item(ct_max(ct_abs(ct_to(t, .dtype = CT_F64)))); }

/* The losses keep the dtype and give the float32 kernel's value on the widened
 * operands, rounded once: within a unit roundoff u of float64 on the same operands,
 * plus u of the largest value (the mean adds rounded elements).  PyTorch's reduced
 * losses round between their steps, and some (mse and bce in bfloat16, the class
 * losses and bce in float16) have no 1.13 cpu kernel, so the fixture holds the float32
 * result rounded: within 2 u, plus 2 u of the largest.  Gradients of the mean round
 * twice (the incoming gradient scaled to the dtype, then the product), and a mapped
 * input's gradient carries that map's own rounding (log_softmax's output at -6 is off
 * by u 6, its exponential by 6 u): within 16 u of the largest entry of float64's
 * gradient (through float64 maps), and PyTorch's within 4 u of its largest. */
TEST(losses_match_pytorch) {
    fx_file *f = fixtures();
    for (int d = 0; d < 2; d++) {
        ct_tensor *x = fx_get_as(f, key(PRE[d], "loss", "x"), DT[d], false);
        ct_tensor *y = fx_get_as(f, key(PRE[d], "loss", "y"), DT[d], false);
        loss_extra e = {fx_get_as(f, key(PRE[d], "loss", "pw"), DT[d], false),
                        fx_get_as(f, key(PRE[d], "loss", "cls"), CT_I64, false),
                        fx_get_as(f, key(PRE[d], "loss", "cw"), DT[d], false)};
        ct_tensor *x64 = ct_to(x, .dtype = CT_F64), *y64 = ct_to(y, .dtype = CT_F64);
        loss_extra e64 = {ct_to(e.pw, .dtype = CT_F64), e.cls, ct_to(e.cw, .dtype = CT_F64)};
        double u = ULP[d];
        for (int i = 0; i < N_LOSSES; i++) {
            char what[64], k[48];
            for (int r = 0; r < 2; r++) {
                ct_reduction red = r == 0 ? CT_REDUCTION_MEAN : CT_REDUCTION_NONE;
                snprintf(k, sizeof k, "%s.%s", LOSS_NAMES[i], r == 0 ? "mean" : "none");
                snprintf(what, sizeof what, "%s loss", k);
                ct_tensor *l = loss_case(i, x, y, &e, red, CT_DTYPE_UNSET);
                ct_tensor *want = fx_get(f, key(PRE[d], "loss", k));
                ct_tensor *want64 = loss_case(i, x, y, &e64, red, CT_F64);
                check_within(what, l, want, DT[d], 2 * u, 2 * u * max_abs(want));
                check_within(what, l, want64, DT[d], u, u * max_abs(want64));
            }
            snprintf(k, sizeof k, "%s.grad", LOSS_NAMES[i]);
            snprintf(what, sizeof what, "%s gradient", LOSS_NAMES[i]);
            ct_tensor *xg = ct_detach(x), *x64g = ct_detach(x64);
            ct_set_requires_grad(xg, true);
            ct_set_requires_grad(x64g, true);
            CHECK(ct_backward(loss_case(i, xg, y, &e, CT_REDUCTION_MEAN, CT_DTYPE_UNSET)) == 0);
            CHECK(ct_backward(loss_case(i, x64g, y64, &e64, CT_REDUCTION_MEAN, CT_DTYPE_UNSET)) == 0);
            ct_tensor *want = fx_get(f, key(PRE[d], "loss", k));
            check_within(what, ct_grad(xg), want, DT[d], 2 * u, 4 * u * max_abs(want));
            check_within(what, ct_grad(xg), ct_grad(x64g), DT[d], 2 * u, 16 * u * max_abs(ct_grad(x64g)));
        }
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

/* ---- normalizations ---------------------------------------------------------------- */

static ct_tensor *leaf(ct_tensor *t) {
    ct_tensor *l = ct_detach(t);
    ct_set_requires_grad(l, true);
    return l;
}

typedef enum { LN, GN, BN } norm_kind;

/* y of kind on x (weight w, bias b; batch_norm: running statistics rm, rv, training or
 * not), and in g[0..2] the gradients of sum(y * gy) for x, w, b. */
static ct_tensor *norm_run(norm_kind k, ct_tensor *x, ct_tensor *w, ct_tensor *b, ct_tensor *rm,
                           ct_tensor *rv, bool train, ct_tensor *gy, ct_tensor **g) {
    ct_tensor *in[3] = {leaf(x), leaf(w), leaf(b)};
    ct_tensor *y = k == LN ? ct_layer_norm(in[0], CT_SHAPE(ct_size(x, 1)), .weight = in[1], .bias = in[2])
                   : k == GN ? ct_group_norm(in[0], 3, .weight = in[1], .bias = in[2])
                             : ct_batch_norm(in[0], rm, rv, .weight = in[1], .bias = in[2],
                                             .training = train);
    CHECK(y && ct_backward(y, .gradient = gy) == 0);
    for (int i = 0; i < 3; i++) g[i] = ct_grad(in[i]);
    return y;
}

/* Against PyTorch's bfloat16 kernels (float16: PyTorch 1.13 has none; its float32
 * result rounded) and against our float32 kernels on the widened inputs, whose result
 * ours is within a unit roundoff of (rounded once), plus float accumulation. */
TEST(normalizations_match_pytorch) {
    fx_file *f = fixtures();
    const char *names[] = {"ln", "gn", "bn", "bn_cols"};
    const char *outs[] = {"y", "gx", "gw", "gb", "rm", "rv"};
    for (int d = 0; d < 2; d++)
        for (int c = 0; c < 4; c++)
            for (int mode = 0; mode < (c < 2 ? 1 : 4); mode++) {
                /* batch_norm: train, eval, and both with float32 parameters (bfloat16) */
                bool train = mode % 2 == 0, mixed = mode >= 2;
                if (mixed && d == 1) continue;
                char k[64], what[160];
                snprintf(k, sizeof k, "norm.%s", names[c]);
                ct_tensor *in[6], *in32[6];
                const char *inn[] = {"x", "g", "w", "b", "rm", "rv"};
                for (int i = 0; i < (c < 2 ? 4 : 6); i++) {
                    ct_dtype pd = mixed && i >= 2 ? CT_F32 : DT[d];
                    in[i] = fx_get_as(f, key(PRE[d], k, inn[i]), pd, false);
                    in32[i] = ct_to(ct_clone(in[i]), .dtype = CT_F32); /* not an alias: rm, rv change */
                }
                norm_kind kind = c < 2 ? (norm_kind)c : BN;
                ct_tensor *g[3], *g32[3], *got[6], *want32[6];
                got[0] = norm_run(kind, in[0], in[2], in[3], c < 2 ? NULL : in[4],
                                  c < 2 ? NULL : in[5], train, in[1], g);
                want32[0] = norm_run(kind, in32[0], in32[2], in32[3], c < 2 ? NULL : in32[4],
                                     c < 2 ? NULL : in32[5], train, in32[1], g32);
                for (int i = 0; i < 3; i++) got[i + 1] = g[i], want32[i + 1] = g32[i];
                for (int i = 4; i < 6; i++) got[i] = c < 2 ? NULL : in[i], want32[i] = c < 2 ? NULL : in32[i];
                char mk[80];
                snprintf(mk, sizeof mk, "%s%s", c < 2 ? "" : train ? "train" : "eval", mixed ? "_mixed" : "");
                for (int i = 0; i < (c < 2 ? 4 : train ? 6 : 4); i++) {
                    char fk[160];
                    snprintf(fk, sizeof fk, "%s.%s%s%s", k, mk, *mk ? "." : "", outs[i]);
                    snprintf(what, sizeof what, "%s %s %s", names[c], mk, outs[i]);
                    ct_dtype dt = mixed && i >= 2 ? CT_F32 : DT[d];
                    double u = dt == CT_F32 ? 1e-6 : ULP[d];
                    /* PyTorch 1.13's bfloat16 kernels round between their steps (its
                     * backward reads the rounded statistics): up to an ulp (two unit
                     * roundoffs) off, and the weight / bias gradients, sums of up to
                     * 210 terms, a unit roundoff of a partial sum (to 16) off.  Values
                     * are to 8, gradients to 40. */
                    double big = i == 0 || i >= 4 ? 8 : 40;
                    check_within(what, got[i], fx_get(f, key(PRE[d], k, fk + strlen(k) + 1)), dt,
                                 4 * ULP[d], (i == 0 || i >= 4 ? 4 : 16) * ULP[d]);
                    check_within(what, got[i], want32[i], dt, u, 1e-6 * big);
                }
            }
}

/* Rows longer than the kernel's whole-row buffer (4096 elements) are widened a tile
 * at a time per pass: the same values as the float32 kernel on the widened inputs. */
TEST(long_rows_match_float32) {
    ct_manual_seed(5);
    for (int d = 0; d < 2; d++)
        for (int c = 0; c < 2; c++) {
            ct_shape sh = c == 0 ? CT_SHAPE(3, 5000) : CT_SHAPE(2, 6, 2000);
            int64_t np = c == 0 ? 5000 : 6;
            ct_tensor *x = ct_to(ct_add_scalar(ct_randn(sh), 0.5), .dtype = DT[d]);
            ct_tensor *gy = ct_to(ct_randn(sh), .dtype = DT[d]);
            ct_tensor *w = ct_to(ct_add_scalar(ct_rand(CT_SHAPE(np)), 0.5), .dtype = DT[d]);
            ct_tensor *b = ct_to(ct_randn(CT_SHAPE(np)), .dtype = DT[d]);
            ct_tensor *g[3], *g32[3];
            ct_tensor *y = norm_run((norm_kind)c, x, w, b, NULL, NULL, false, gy, g);
            ct_tensor *y32 = norm_run((norm_kind)c, ct_to(x, .dtype = CT_F32), ct_to(w, .dtype = CT_F32),
                                      ct_to(b, .dtype = CT_F32), NULL, NULL, false,
                                      ct_to(gy, .dtype = CT_F32), g32);
            const char *what[] = {"long y", "long gx", "long gw", "long gb"};
            check_within(what[0], y, y32, DT[d], ULP[d], 1e-5);
            /* the weight / bias gradients: sums of 6000 to 12000 terms in float */
            for (int i = 0; i < 3; i++) check_within(what[i + 1], g[i], g32[i], DT[d], ULP[d], i ? 1e-3 : 1e-5);
        }
}

TEST(vector_norms_match_pytorch) {
    fx_file *f = fixtures();
    const char *pn[] = {"p0", "p1", "p2", "pinf", "pninf"};
    const double p[] = {0, 1, 2, INFINITY, -INFINITY};
    for (int d = 0; d < 2; d++) {
        ct_tensor *x = fx_get_as(f, key(PRE[d], "vnorm", "x"), DT[d], false);
        ct_tensor *x64 = ct_to(x, .dtype = CT_F64);
        for (int i = 0; i < 5; i++)
            for (int dim = 0; dim < 2; dim++) {
                char k[16];
                snprintf(k, sizeof k, "%s.d%d", pn[i], dim);
                ct_tensor *y = ct_norm(x, .p = CT_SOME(p[i]), .dims = CT_DIMS(dim));
                check_within(k, y, fx_get(f, key(PRE[d], "vnorm", k)), DT[d], ULP[d], 0);
                check_within(k, y, ct_norm(x64, .p = CT_SOME(p[i]), .dims = CT_DIMS(dim)), DT[d], ULP[d], 0);
            }
    }
}

/* The normalizations: y and the gradients of x and the weight, concatenated. */
static ct_tensor *norm_thread_case(int i, ct_tensor *x, ct_tensor *a) {
    if (i > 7) return NULL;
    ct_dtype dt = i % 2 ? CT_F16 : CT_BF16;
    static const int64_t shapes[4][3] = {{7, 10001, 1}, {10, 70, 100}, {10, 70, 100}, {1000, 70, 1}};
    const int64_t *sh = shapes[i / 2];
    ct_tensor *xs = ct_narrow(x, 0, 0, sh[0] * sh[1] * sh[2]);
    ct_tensor *xl = leaf(ct_to(sh[2] == 1 ? ct_view(xs, CT_SHAPE(sh[0], sh[1])) : ct_view(xs, CT_SHAPE(sh[0], sh[1], sh[2])), .dtype = dt));
    ct_tensor *w = leaf(ct_to(ct_add_scalar(ct_narrow(ct_flatten(a, 0, -1), 0, 0, sh[1]), 1), .dtype = dt));
    ct_tensor *b = ct_to(ct_narrow(ct_flatten(a, 0, -1), 0, sh[1], sh[1]), .dtype = dt), *y;
    switch (i / 2) {
    case 0: y = ct_layer_norm(xl, CT_SHAPE(sh[1]), .weight = w, .bias = b); break;
    case 1: y = ct_group_norm(xl, 7, .weight = w, .bias = b); break;
    default: y = ct_batch_norm(xl, NULL, NULL, .weight = w, .bias = b, .training = true); break;
    }
    if (ct_backward(y, .gradient = ct_cos(y)) != 0) return NULL;
    return ct_cat(3, (ct_tensor *[]){ct_flatten(y, 0, -1), ct_flatten(ct_grad(xl), 0, -1), ct_grad(w)}, 0);
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

/* n int64 targets in [0, c), every tenth ignored (-100). */
static ct_tensor *nll_targets(int64_t n, int64_t c) {
    int64_t *t = malloc(sizeof(int64_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) t[i] = i % 10 == 3 ? -100 : (i * 7919) % c;
    ct_tensor *r = ct_tensor_i64(t, CT_SHAPE(n));
    free(t);
    return r;
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
    /* nll's blocked sums, over 7 rows of 10001 classes and over 10001 rows of 7 */
    case 15: return ct_nll_loss(ct_view(ct_to(x, .dtype = CT_BF16), CT_SHAPE(7, 10001)), nll_targets(7, 10001));
    case 16: return ct_nll_loss(ct_view(ct_to(x, .dtype = CT_F16), CT_SHAPE(10001, 7)), nll_targets(10001, 7),
                                .reduction = CT_REDUCTION_SUM);
    case 17: return ct_cross_entropy(ct_view(ct_to(x, .dtype = CT_F16), CT_SHAPE(10001, 7)), nll_targets(10001, 7));
    case 18: return ct_smooth_l1_loss(ct_to(x, .dtype = CT_BF16), ct_to(ct_flip(x, CT_DIMS(0)), .dtype = CT_BF16));
    case 19: return ct_pow(ct_abs(ct_to(x, .dtype = CT_F16)), ct_to(ct_flip(x, CT_DIMS(0)), .dtype = CT_F16));
    case 20: return ct_lerp_tensor(ct_to(x, .dtype = CT_BF16), ct_to(ct_flip(x, CT_DIMS(0)), .dtype = CT_BF16),
                                   ct_sigmoid(ct_to(x, .dtype = CT_BF16)));
    case 21: return ct_thnn_fused_lstm_cell(ct_to(a, .dtype = CT_BF16), ct_to(a, .dtype = CT_BF16),
                                            ct_narrow(ct_to(a, .dtype = CT_BF16), 1, 0, 130), NULL, NULL).hy;
    case 22: return ct_norm(ct_view(ct_to(x, .dtype = CT_F16), CT_SHAPE(7, 10001)), .dims = CT_DIMS(1));
    default: return norm_thread_case(i - 23, x, a);
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
static bool isa_available(ct_isa isa) { return isa <= ct_cpu_isa_best(); }

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

/* The reduced kernels allocate only their output (the losses too: bce unreduced, nll
 * unreduced and its mean, whose sum and weight are a float64 [2] tensor): no float32 copy of an operand or of the result (the
 * per-thread tiles are bounded and outside the tensor allocator). */
TEST(reduced_kernels_allocate_only_their_output) {
    for (int d = 0; d < 2; d++) {
        ct_tensor *x = ct_full(CT_SHAPE(64, 1000), 0.5, .dtype = DT[d]);
        ct_tensor *a = ct_full(CT_SHAPE(300, 300), 0.25, .dtype = DT[d]);
        ct_tensor *c = ct_full(CT_SHAPE(300, 75), 0.5, .dtype = DT[d]);
        ct_tensor *x2 = ct_full(CT_SHAPE(64, 1000), 0.25, .dtype = DT[d]);
        ct_tensor *cls = nll_targets(64, 1000);
        for (int i = 0; i < 15; i++) {
            int64_t base = ct_memory_allocated(CT_CPU);
            ct_reset_peak_memory_stats(CT_CPU);
            int64_t want = i == 3 ? 300 * 300 * 2 : i == 5 ? 64 * (2 + 8)
                           : i == 10 ? (300 * 75 * 2 + 300 * 300) * 2 /* hy, cy, workspace */
                           : i == 11 ? 64 * 998 * 2
                           : i == 13 ? 64 * 2 : i == 14 ? 2 + 2 * 8 /* the float64 sums */
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
                               : i == 11 ? ct_pad_backward(x, 2, (int64_t[]){64, 998},
                                                           CT_PAD_REFLECT, CT_DIMS(1, 1))
                               : i == 12 ? ct_binary_cross_entropy(x, x2, .reduction = CT_REDUCTION_NONE)
                               : i == 13 ? ct_nll_loss(x, cls, .reduction = CT_REDUCTION_NONE)
                                         : ct_nll_loss(x, cls);
                CHECK(y != NULL);
            }
            int64_t peak = ct_max_memory_allocated(CT_CPU) - base;
            if (peak != want)
                ct_test_fail(__FILE__, __LINE__, "%s case %d: peak %lld bytes, expected %lld",
                             ct_dtype_name(DT[d]), i, (long long)peak, (long long)want);
        }
    }
}

/* ---- convolution, F.unfold / F.fold, pooling, upsampling (cpu/conv_reduced.c,
 * cpu/pool.c) ---- */

static ct_tensor *conv_case(const char *name, ct_tensor *x, ct_tensor *w, ct_tensor *b) {
    if (!strcmp(name, "k288")) return ct_conv2d(x, w, b, .padding = CT_DIMS(1));
    if (!strcmp(name, "grouped"))
        return ct_conv2d(x, w, b, .stride = CT_DIMS(2, 1), .dilation = CT_DIMS(1, 2),
                         .padding = CT_DIMS(1, 0), .groups = 2);
    if (!strcmp(name, "pointwise")) return ct_conv2d(x, w, b);
    if (!strcmp(name, "transposed"))
        return ct_conv_transpose2d(x, w, b, .stride = CT_DIMS(2), .padding = CT_DIMS(1),
                                   .output_padding = CT_DIMS(1));
    return ct_conv1d(x, w, b, .padding = CT_DIMS(2));
}

/* y and the gradients of sum(y * g) of the inputs in[0..n) (detached copies). */
static void conv_with_grads(const char *name, ct_tensor **in, int n, ct_tensor *g,
                            ct_tensor **y, ct_tensor **grads) {
    ct_tensor *leaf[3] = {NULL, NULL, NULL};
    for (int i = 0; i < n; i++) {
        leaf[i] = ct_detach(in[i]);
        ct_set_requires_grad(leaf[i], true);
    }
    *y = conv_case(name, leaf[0], leaf[1], leaf[2]);
    CHECK(ct_backward(*y, .gradient = ct_to(g, .dtype = ct_dtype_of(in[0]))) == 0);
    for (int i = 0; i < n; i++) grads[i] = ct_grad(leaf[i]);
}

/* Every output and gradient is a float sum rounded once: within a unit roundoff of the
 * exact (float64) result on the same inputs, and of PyTorch's (bfloat16: oneDNN, which
 * rounds once too; float16: PyTorch's float32 result rounded). */
TEST(convolutions_match_pytorch) {
    fx_file *f = fixtures();
    const char *cases[] = {"k288", "grouped", "pointwise", "transposed", "conv1d"};
    const char *outs[] = {"gx", "gw", "gb"};
    for (int d = 0; d < 2; d++)
        for (int c = 0; c < 5; c++) {
            char pre[32];
            snprintf(pre, sizeof pre, "%s.conv", PRE[d]);
            int n = c == 4 ? 2 : 3;
            ct_tensor *in[3], *in64[3];
            const char *names[] = {"x", "w", "b"};
            for (int i = 0; i < n; i++) {
                in[i] = fx_get_as(f, key(pre, cases[c], names[i]), DT[d], false);
                in64[i] = ct_to(in[i], .dtype = CT_F64);
            }
            ct_tensor *g = fx_get_as(f, key(pre, cases[c], "g"), DT[d], false);
            ct_tensor *y, *grads[3], *y64, *grads64[3];
            conv_with_grads(cases[c], in, n, g, &y, grads);
            conv_with_grads(cases[c], in64, n, g, &y64, grads64);
            char what[64];
            snprintf(what, sizeof what, "conv %s", cases[c]);
            check_within(what, y, fx_get(f, key(pre, cases[c], "y")), DT[d], 2 * ULP[d], 1e-3);
            check_within(what, y, y64, DT[d], ULP[d] + 1e-5, 1e-4);
            for (int i = 0; i < n; i++) {
                snprintf(what, sizeof what, "conv %s %s", cases[c], outs[i]);
                check_within(what, grads[i], fx_get(f, key(pre, cases[c], outs[i])), DT[d],
                             2 * ULP[d], 1e-3);
                check_within(what, grads[i], grads64[i], DT[d], ULP[d] + 1e-5, 1e-4);
            }
        }
}

/* F.unfold copies; F.fold sums the overlaps in float and rounds once (PyTorch 1.13
 * adds in the reduced dtype, rounding each add: a few units apart where windows
 * overlap). */
TEST(unfold_and_fold_match_pytorch) {
    fx_file *f = fixtures();
    for (int d = 0; d < 2; d++) {
        char pre[32];
        snprintf(pre, sizeof pre, "%s", PRE[d]);
        ct_tensor *x = fx_get_as(f, key(pre, "fold", "x"), DT[d], false);
        ct_tensor *cols = fx_get_as(f, key(pre, "fold", "cols"), DT[d], false);
        ct_tensor *u = ct_im2col(x, .kernel_size = CT_DIMS(3, 2), .padding = CT_DIMS(1),
                                 .stride = CT_DIMS(2, 1));
        check_within("unfold", u, fx_get(f, key(pre, "fold", "unfold")), DT[d], 0, 0);
        ct_tensor *fo = ct_col2im(cols, CT_DIMS(8, 9), .kernel_size = CT_DIMS(3, 2),
                                  .padding = CT_DIMS(1), .stride = CT_DIMS(2, 1));
        check_within("fold", fo, fx_get(f, key(pre, "fold", "fold")), DT[d], 4 * ULP[d], 4 * ULP[d]);
        ct_tensor *fo64 = ct_col2im(ct_to(cols, .dtype = CT_F64), CT_DIMS(8, 9),
                                    .kernel_size = CT_DIMS(3, 2), .padding = CT_DIMS(1),
                                    .stride = CT_DIMS(2, 1));
        check_within("fold", fo, fo64, DT[d], ULP[d] + 1e-6, 1e-6);
    }
}

/* Inputs k/16 with |k| <= 32 (exact in both reduced dtypes): every product and sum is
 * exact in float, so each result is the float64 one rounded once, bitwise, across
 * GEMM tiles (K = 360 > 256), blocks of output rows (the grad_input window moves
 * three times) and groups, strides and dilations. */
static ct_tensor *grid4(int64_t a, int64_t b, int64_t c, int64_t e, int salt, ct_dtype dt) {
    return ct_reshape(grid(a * b, c * e, salt, dt), CT_SHAPE(a, b, c, e));
}

static ct_tensor *exact_case(int i, ct_tensor *x, ct_tensor *w, ct_tensor *b) {
    switch (i) {
    case 0: return ct_conv2d(x, w, b, .padding = CT_DIMS(1));
    case 1:
        return ct_conv2d(x, w, b, .stride = CT_DIMS(2), .dilation = CT_DIMS(2, 1),
                         .padding = CT_DIMS(2, 1), .groups = 2);
    case 2: return ct_conv_transpose2d(x, w, b, .stride = CT_DIMS(2), .padding = CT_DIMS(1));
    case 3: return ct_conv2d(x, w, b); /* 1x1 */
    default: return NULL;
    }
}

TEST(exact_convolutions_round_once) {
    const int64_t xs[4][4] = {{2, 40, 30, 36}, {2, 6, 31, 29}, {2, 8, 9, 10}, {3, 12, 7, 9}};
    const int64_t ws[4][4] = {{8, 40, 3, 3}, {4, 3, 3, 5}, {8, 4, 3, 3}, {5, 12, 1, 1}};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 4; i++) {
            ct_tensor *in[3] = {grid4(xs[i][0], xs[i][1], xs[i][2], xs[i][3], 1, DT[d]),
                                grid4(ws[i][0], ws[i][1], ws[i][2], ws[i][3], 2, DT[d]),
                                NULL};
            in[2] = ct_to(ct_reshape(grid(1, i == 2 ? ws[i][1] : ws[i][0], 3, CT_F64),
                                     CT_SHAPE(-1)), .dtype = DT[d]);
            ct_tensor *leaf[3], *leaf64[3];
            for (int k = 0; k < 3; k++) {
                leaf[k] = ct_detach(in[k]);
                leaf64[k] = ct_to(in[k], .dtype = CT_F64);
                ct_set_requires_grad(leaf[k], true);
                ct_set_requires_grad(leaf64[k], true);
            }
            ct_tensor *y = exact_case(i, leaf[0], leaf[1], leaf[2]);
            ct_tensor *y64 = exact_case(i, leaf64[0], leaf64[1], leaf64[2]);
            ct_shape ys = ct_shape_of(y);
            ct_tensor *g = ct_reshape(grid(ys.d[0] * ys.d[1], ys.d[2] * ys.d[3], 4, DT[d]), ys);
            CHECK(ct_backward(y, .gradient = g) == 0);
            CHECK(ct_backward(y64, .gradient = ct_to(g, .dtype = CT_F64)) == 0);
            CHECK_CLOSE(ct_test_max_diff(y, ct_to(y64, .dtype = DT[d])), 0, 0);
            for (int k = 0; k < 3; k++)
                if (!(ct_test_max_diff(ct_grad(leaf[k]), ct_to(ct_grad(leaf64[k]), .dtype = DT[d])) == 0))
                    ct_test_fail(__FILE__, __LINE__, "%s case %d: gradient %d differs",
                                 ct_dtype_name(DT[d]), i, k);
        }
    /* F.fold over three blocks of rows, F.unfold */
    for (int d = 0; d < 2; d++) {
        ct_tensor *x = grid4(2, 5, 40, 33, 5, DT[d]);
        ct_tensor *u = ct_im2col(x, .kernel_size = CT_DIMS(3), .padding = CT_DIMS(1));
        ct_tensor *u64 = ct_im2col(ct_to(x, .dtype = CT_F64), .kernel_size = CT_DIMS(3),
                                   .padding = CT_DIMS(1));
        CHECK_CLOSE(ct_test_max_diff(u, ct_to(u64, .dtype = DT[d])), 0, 0);
        ct_tensor *fo = ct_col2im(u, CT_DIMS(40, 33), .kernel_size = CT_DIMS(3), .padding = CT_DIMS(1));
        ct_tensor *fo64 = ct_col2im(u64, CT_DIMS(40, 33), .kernel_size = CT_DIMS(3), .padding = CT_DIMS(1));
        CHECK_CLOSE(ct_test_max_diff(fo, ct_to(fo64, .dtype = DT[d])), 0, 0);
    }
}

static ct_tensor *pool_case(int i, ct_tensor *x) {
    switch (i) {
    case 0: return ct_max_pool2d(x, .kernel_size = CT_DIMS(3), .stride = CT_DIMS(2), .padding = CT_DIMS(1));
    case 1: return ct_max_pool2d(x, .kernel_size = CT_DIMS(2));
    case 2:
        return ct_avg_pool2d(x, .kernel_size = CT_DIMS(3), .stride = CT_DIMS(2), .padding = CT_DIMS(1),
                             .ceil_mode = true, .count_include_pad = false);
    case 3: return ct_avg_pool2d(x, .kernel_size = CT_DIMS(3), .stride = CT_DIMS(1));
    case 4: return ct_adaptive_max_pool2d(x, CT_DIMS(4, 5));
    case 5: return ct_adaptive_avg_pool2d(x, CT_DIMS(4, 5));
    case 6: return ct_interpolate(x, .scale_factor = {2.0});
    case 7: return ct_interpolate(x, .size = CT_DIMS(13, 7));
    case 8: return ct_interpolate(x, .size = CT_DIMS(13, 17), .mode = CT_INTERP_BILINEAR);
    case 9:
        return ct_interpolate(x, .scale_factor = {2.0}, .mode = CT_INTERP_BILINEAR,
                              .align_corners = true);
    default: return NULL;
    }
}

/* The float32 kernel's result on the widened input, rounded once (max pooling and
 * nearest are exact), forward and backward: the backwards sum each input's gradient
 * in float, in the float32 kernel's order, except max pooling's, which rounds per add
 * where windows overlap, as PyTorch's does (PyTorch 1.13 rounds per add in all of
 * them). */
TEST(pooling_and_upsampling_match_pytorch) {
    fx_file *f = fixtures();
    const char *names[] = {"max3", "max2", "avg", "avg_overlap", "adaptive_max",
                           "adaptive_avg", "nearest", "nearest_size", "bilinear", "bilinear_ac"};
    for (int d = 0; d < 2; d++) {
        char pre[32];
        snprintf(pre, sizeof pre, "%s.pool", PRE[d]);
        ct_tensor *x = fx_get_as(f, key(PRE[d], "pool", "x"), DT[d], false);
        for (int i = 0; pool_case(i, x); i++) {
            ct_tensor *xg = ct_detach(x), *x32 = ct_to(x, .dtype = CT_F32);
            ct_set_requires_grad(xg, true);
            ct_set_requires_grad(x32, true);
            ct_tensor *g = fx_get_as(f, key(pre, names[i], "g"), DT[d], false);
            ct_tensor *y = pool_case(i, xg), *y32 = pool_case(i, x32);
            CHECK(ct_backward(y, .gradient = g) == 0);
            CHECK(ct_backward(y32, .gradient = ct_to(g, .dtype = CT_F32)) == 0);
            char what[64];
            snprintf(what, sizeof what, "%s", names[i]);
            /* PyTorch 1.13's bfloat16 bilinear rounds its weights to bfloat16 (0.5 turns
             * 0.498): 0.09 off at |x| = 2.5; its float32 weights differ from ours (from
             * double) in the last bits, which the weighted sums' cancellation shows */
            double bil = i >= 8 ? (d == 0 ? 32 : 4) * ULP[d] : 0;
            check_within(what, y, fx_get(f, key(pre, names[i], "y")), DT[d], ULP[d], bil);
            check_within(what, y, ct_to(y32, .dtype = DT[d]), DT[d], 0, 0);
            snprintf(what, sizeof what, "%s gradient", names[i]);
            check_within(what, ct_grad(xg), fx_get(f, key(pre, names[i], "gx")), DT[d],
                         4 * ULP[d], 8 * ULP[d] + bil);
            bool shared_max = i == 0 || i == 4; /* overlapping max windows */
            check_within(what, ct_grad(xg), ct_to(ct_grad(x32), .dtype = DT[d]), DT[d],
                         shared_max ? 4 * ULP[d] : 0, shared_max ? 8 * ULP[d] : 0);
        }
    }
}

/* Fixed work items, blocks and batch chunks: the same bits for 1 and 3 threads. */
static ct_tensor *nn_thread_case(int i, ct_tensor *x, ct_tensor *w, ct_tensor **grad) {
    ct_dtype dt = i % 2 ? CT_F16 : CT_BF16;
    ct_tensor *xr = ct_detach(ct_to(x, .dtype = dt)), *wr = ct_detach(ct_to(w, .dtype = dt));
    ct_set_requires_grad(xr, true);
    ct_set_requires_grad(wr, true);
    ct_tensor *y = NULL;
    switch (i) {
    case 0: case 1: y = ct_conv2d(xr, wr, NULL, .padding = CT_DIMS(1)); break;
    case 2: case 3: y = ct_conv_transpose2d(xr, wr, NULL, .stride = CT_DIMS(2)); break;
    case 4: case 5: y = ct_avg_pool2d(xr, .kernel_size = CT_DIMS(3), .stride = CT_DIMS(1)); break;
    case 6: case 7: y = ct_interpolate(xr, .scale_factor = {1.7}, .mode = CT_INTERP_BILINEAR); break;
    case 8: case 9: y = ct_max_pool2d(xr, .kernel_size = CT_DIMS(3), .stride = CT_DIMS(2)); break;
    default: return NULL;
    }
    CHECK(ct_backward(ct_sum(ct_mul(y, ct_cos(y)))) == 0);
    grad[0] = ct_grad(xr);
    grad[1] = i < 4 ? ct_grad(wr) : ct_grad(xr);
    return y;
}

TEST(reduced_nn_kernels_equal_across_threads) {
    int threads = ct_get_num_threads();
    ct_manual_seed(4);
    ct_tensor *x = ct_randn(CT_SHAPE(9, 16, 20, 20)), *w = ct_randn(CT_SHAPE(16, 16, 3, 3));
    ct_tensor *g1[2], *g3[2];
    for (int i = 0;; i++) {
        ct_set_num_threads(1);
        ct_tensor *one = nn_thread_case(i, x, w, g1);
        if (!one) break;
        ct_set_num_threads(3);
        ct_tensor *three = nn_thread_case(i, x, w, g3);
        double d[3] = {ct_test_max_diff(three, one), ct_test_max_diff(g3[0], g1[0]),
                       ct_test_max_diff(g3[1], g1[1])};
        for (int k = 0; k < 3; k++)
            if (!(d[k] == 0))
                ct_test_fail(__FILE__, __LINE__, "nn case %d (%d) differs with 3 threads by %g", i, k, d[k]);
    }
    ct_set_num_threads(threads);
}

/* The reduced convolution, pooling and upsampling kernels allocate only their output
 * (their column blocks and windows are bounded and outside the tensor allocator). */
TEST(reduced_nn_kernels_allocate_only_their_output) {
    for (int d = 0; d < 2; d++) {
        ct_tensor *x = ct_full(CT_SHAPE(2, 8, 30, 30), 0.5, .dtype = DT[d]);
        ct_tensor *w = ct_full(CT_SHAPE(4, 8, 3, 3), 0.25, .dtype = DT[d]);
        ct_tensor *b = ct_full(CT_SHAPE(4), 0.25, .dtype = DT[d]);
        for (int i = 0; i < 5; i++) {
            int64_t base = ct_memory_allocated(CT_CPU);
            ct_reset_peak_memory_stats(CT_CPU);
            const int64_t want[] = {2 * 4 * 30 * 30 * 2, 2 * 8 * 9 * 30 * 30 * 2,
                                    2 * 8 * 15 * 15 * 2, 2 * 8 * 45 * 45 * 2, 2 * 8 * 30 * 30 * 2};
            CT_SCOPE {
                ct_tensor *y = i == 0 ? ct_conv2d(x, w, b, .padding = CT_DIMS(1))
                               : i == 1 ? ct_im2col(x, .kernel_size = CT_DIMS(3), .padding = CT_DIMS(1))
                               : i == 2 ? ct_avg_pool2d(x, .kernel_size = CT_DIMS(2))
                               : i == 3 ? ct_interpolate(x, .scale_factor = {1.5}, .mode = CT_INTERP_BILINEAR)
                                        : ct_col2im(ct_im2col(x, .kernel_size = CT_DIMS(1)), CT_DIMS(30, 30),
                                                    .kernel_size = CT_DIMS(1));
                CHECK(y != NULL);
            }
            int64_t peak = ct_max_memory_allocated(CT_CPU) - base;
            /* fold's case holds its unfolded input too */
            if (peak != want[i] * (i == 4 ? 2 : 1))
                ct_test_fail(__FILE__, __LINE__, "%s nn case %d: peak %lld bytes, expected %lld",
                             ct_dtype_name(DT[d]), i, (long long)peak, (long long)(want[i] * (i == 4 ? 2 : 1)));
        }
    }
}

/* The normalizations allocate their output and float32 statistics (and a float32 copy
 * of a reduced weight or bias, of the parameters' size), nothing of the input's size. */
TEST(normalizations_allocate_no_float32_input) {
    for (int d = 0; d < 2; d++) {
        ct_tensor *x = ct_full(CT_SHAPE(64, 1000), 0.5, .dtype = DT[d]);
        ct_tensor *w = ct_full(CT_SHAPE(1000), 2, .dtype = DT[d]);
        ct_tensor *x3 = ct_full(CT_SHAPE(8, 16, 500), 0.5, .dtype = DT[d]);
        for (int i = 0; i < 4; i++) {
            int64_t base = ct_memory_allocated(CT_CPU);
            ct_reset_peak_memory_stats(CT_CPU);
            int64_t want = i == 0 ? 64 * 1000 * 2 + 2 * 64 * 4
                           : i == 1 ? 64 * 1000 * 2 + 2 * 64 * 4 + 1000 * 4
                           : i == 2 ? 8 * 16 * 500 * 2 + 2 * 8 * 2 * 4
                                    : 8 * 16 * 500 * 2 + 2 * 16 * 4;
            CT_SCOPE {
                ct_tensor *y = i == 0 ? ct_layer_norm(x, CT_SHAPE(1000))
                               : i == 1 ? ct_layer_norm(x, CT_SHAPE(1000), .weight = w)
                               : i == 2 ? ct_group_norm(x3, 2)
                                        : ct_batch_norm(x3, NULL, NULL, .training = true);
                CHECK(y != NULL);
            }
            int64_t peak = ct_max_memory_allocated(CT_CPU) - base;
            if (peak != want)
                ct_test_fail(__FILE__, __LINE__, "%s norm case %d: peak %lld bytes, expected %lld",
                             ct_dtype_name(DT[d]), i, (long long)peak, (long long)want);
        }
    }
}

/* 2x2 max pooling of float32, float16 and bfloat16 rows of every length a vector step
 * can end at (ties, NaNs): each instruction-set path gives the scalar path's bits and
 * indices. */
TEST(max_pool_pairs_equal_on_every_isa_path) {
    const int64_t widths[] = {2, 14, 16, 28, 32, 34, 66};
    const ct_dtype dts[] = {CT_F32, CT_BF16, CT_F16};
    int saved = ct_cpu_isa_level;
    for (int d = 0; d < 3; d++)
        for (int k = 0; k < 7; k++) {
            ct_manual_seed(7 + k);
            /* small integers: many ties; 1 in 8: NaN */
            ct_tensor *r = ct_randint(-3, 5, CT_SHAPE(3, 2, 6, widths[k]), .dtype = CT_F32);
            ct_tensor *x = ct_masked_fill(r, ct_gt_scalar(r, 3.5), NAN);
            x = ct_to(x, .dtype = dts[d]);
            ct_tensor *want_ix = NULL, *want = NULL;
            __atomic_store_n(&ct_cpu_isa_level, CT_ISA_DEFAULT, __ATOMIC_RELAXED);
            want = ct_max_pool2d_with_indices(x, &want_ix, .kernel_size = CT_DIMS(2));
            for (int isa = CT_ISA_AVX2; isa <= CT_ISA_AVX512; isa++) {
                if (!isa_available((ct_isa)isa)) continue;
                __atomic_store_n(&ct_cpu_isa_level, isa, __ATOMIC_RELAXED);
                ct_tensor *ix = NULL, *y = ct_max_pool2d_with_indices(x, &ix, .kernel_size = CT_DIMS(2));
                CHECK(y && ix);
                if (!y || !ix) continue;
                int64_t n = ct_numel(y);
                CHECK(!memcmp(ct_data_ptr(y), ct_data_ptr(want), ct_dtype_size(dts[d]) * (size_t)n));
                CHECK(!memcmp(ct_data_ptr(ix), ct_data_ptr(want_ix), 8 * (size_t)n));
            }
            __atomic_store_n(&ct_cpu_isa_level, saved, __ATOMIC_RELAXED);
        }
}
