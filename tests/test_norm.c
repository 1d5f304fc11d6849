/* batch_norm, layer_norm, group_norm: values, gradients and running statistics against
 * PyTorch (tests/fixtures/gen_norm.py) in float64, float32 and bfloat16; results
 * identical for any thread count; grad_fn names; errors. */
#include <stdlib.h>
#include <string.h>

#include "fx_case.h"
#include "core/tensor_impl.h" /* ct_version_counter */

typedef enum { BN, LN, GN } norm_kind;

typedef struct {
    const char *name;
    norm_kind kind;
    int n_in;         /* x, weight, bias */
    int64_t arg;      /* layer_norm: normalized dims; group_norm: groups */
} norm_fixture;

static const norm_fixture CASES[] = {
    {"bn1d_2d", BN, 3, 0},       {"bn1d_3d", BN, 3, 0},        {"bn2d", BN, 3, 0},
    {"bn2d_eval", BN, 3, 0},     {"bn2d_noaffine", BN, 1, 0},  {"bn2d_untracked", BN, 3, 0},
    {"bn1d_eval_noaffine", BN, 1, 0},
    {"ln1", LN, 3, 1},           {"ln2", LN, 3, 2},            {"ln1_noaffine", LN, 1, 1},
    {"gn", GN, 3, 2},            {"gn_3d", GN, 3, 4},          {"gn_noaffine", GN, 1, 3},
};

static void run_case(fx_file *f, const norm_fixture *c, ct_dtype dt, double tol) {
    char key[96];
    ct_tensor *in[3] = {NULL, NULL, NULL};
    fx_case_inputs(f, c->name, c->n_in, dt, in);
    ct_tensor *x = in[0], *w = in[1], *b = in[2], *y = NULL, *rm = NULL, *rv = NULL;
    if (c->kind == BN) {
        snprintf(key, sizeof key, "%s_opts", c->name);
        double *o = ct_test_values(fx_get(f, key));
        if (!o) return;
        bool running = o[1] != 0, training = o[2] != 0;
        double momentum = o[3];
        free(o);
        if (running) {
            snprintf(key, sizeof key, "%s_rm", c->name);
            rm = fx_get_as(f, key, dt, false);
            snprintf(key, sizeof key, "%s_rv", c->name);
            rv = fx_get_as(f, key, dt, false);
        }
        y = ct_batch_norm(x, rm, rv, .weight = w, .bias = b, .training = training,
                          .momentum = CT_SOME(momentum));
        CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "NativeBatchNormBackward0");
    } else if (c->kind == LN) {
        ct_shape ns = {.ndim = (int)c->arg};
        for (int i = 0; i < ns.ndim; i++) ns.d[i] = ct_size(x, ct_ndim(x) - ns.ndim + i);
        y = ct_layer_norm(x, ns, .weight = w, .bias = b);
        CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "NativeLayerNormBackward0");
    } else {
        y = ct_group_norm(x, c->arg, .weight = w, .bias = b);
        CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "NativeGroupNormBackward0");
    }
    CHECK(ct_dtype_of(y) == dt);
    fx_case_check(f, c->name, c->n_in, in, y, dt, tol);
    if (rm) {
        snprintf(key, sizeof key, "%s_rm_after", c->name);
        double d = ct_test_max_diff(rm, fx_get(f, key));
        snprintf(key, sizeof key, "%s_rv_after", c->name);
        double e = ct_test_max_diff(rv, fx_get(f, key));
        if (!(d <= tol && e <= tol))
            ct_test_fail(__FILE__, __LINE__, "%s (%s): running stats differ by %g, %g", c->name,
                         ct_dtype_name(dt), d, e);
    }
}

TEST(norm_fixtures_float64_float32_bfloat16) {
    fx_file *f = fx_load("norm");
    if (!f) return;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        CT_SCOPE { run_case(f, &CASES[i], CT_F64, 1e-10); }
        CT_SCOPE { run_case(f, &CASES[i], CT_F32, 2e-4); }
        /* bfloat16 inputs and outputs, computed in float32: 8 bits of mantissa */
        CT_SCOPE { run_case(f, &CASES[i], CT_BF16, 0.15); }
    }
    fx_free(f);
}

/* Forward and backward of one op on x (weight and bias [c] or [d]); the output and
 * the three gradients, detached. */
static void run_op(norm_kind k, ct_tensor *x, ct_tensor *w, ct_tensor *b, ct_tensor **res) {
    ct_tensor *y = k == BN   ? ct_batch_norm(x, NULL, NULL, .weight = w, .bias = b, .training = true)
                   : k == LN ? ct_layer_norm(x, CT_SHAPE(ct_size(x, -1)), .weight = w, .bias = b)
                             : ct_group_norm(x, 4, .weight = w, .bias = b);
    ct_tensor *g = ct_sin(ct_detach(y)); /* a gradient that is not a function of y alone */
    CHECK(ct_backward(y, .gradient = g) == 0);
    res[0] = ct_detach(y);
    ct_tensor *leaves[3] = {x, w, b};
    for (int i = 0; i < 3; i++) {
        res[1 + i] = ct_clone(ct_grad(leaves[i]));
        ct_set_grad(leaves[i], NULL);
    }
}

TEST(norm_results_do_not_depend_on_threads) {
    /* big enough for the parallel paths (and layer_norm's row chunks) */
    struct { norm_kind k; ct_shape xs; int64_t c; } big[] = {
        {BN, CT_SHAPE(8, 16, 17, 15), 16}, {BN, CT_SHAPE(300, 130), 130},
        {LN, CT_SHAPE(2, 700, 70), 70},    {GN, CT_SHAPE(6, 16, 19, 19), 16},
    };
    ct_manual_seed(7);
    int saved = ct_get_num_threads();
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        CT_SCOPE {
            ct_tensor *x = ct_add_scalar(ct_mul_scalar(ct_randn(big[i].xs), 3), 2);
            ct_tensor *w = ct_randn(CT_SHAPE(big[i].c)), *b = ct_randn(CT_SHAPE(big[i].c));
            ct_tensor *r1[4], *r2[4], *r64[4];
            ct_tensor *x64 = ct_to(x, .dtype = CT_F64), *w64 = ct_to(w, .dtype = CT_F64);
            ct_tensor *b64 = ct_to(b, .dtype = CT_F64);
            ct_tensor *leaves[] = {x, w, b, x64, w64, b64};
            for (int l = 0; l < 6; l++) ct_set_requires_grad(leaves[l], true);
            ct_set_num_threads(1);
            run_op(big[i].k, x, w, b, r1);
            ct_set_num_threads(2);
            run_op(big[i].k, x, w, b, r2);
            run_op(big[i].k, x64, w64, b64, r64);
            for (int j = 0; j < 4; j++) {
                double d = ct_test_max_diff(r1[j], r2[j]);
                if (d != 0) ct_test_fail(__FILE__, __LINE__, "case %zu result %d: 1 vs 2 threads differ by %g", i, j, d);
                /* float32 against float64: relative to the result's size */
                double scale = ct_item(ct_amax(ct_abs(r64[j])));
                d = ct_test_max_diff(ct_to(r2[j], .dtype = CT_F64), r64[j]);
                if (!(d <= 1e-5 * (1 + scale)))
                    ct_test_fail(__FILE__, __LINE__, "case %zu result %d: float32 off by %g (scale %g)", i, j, d, scale);
            }
        }
    }
    ct_set_num_threads(saved);
}

TEST(norm_training_updates_running_stats_in_place) {
    ct_tensor *rm = ct_zeros(CT_SHAPE(2)), *rv = ct_ones(CT_SHAPE(2));
    unsigned v0 = ct_version_counter(rm);
    ct_tensor *x = ct_tensor_f32(((float[]){1, 2, 3, 4, 5, 6, 7, 8}), CT_SHAPE(2, 2, 2));
    ct_batch_norm(x, rm, rv, .training = true, .momentum = CT_SOME(0.5));
    CHECK(ct_version_counter(rm) != v0);
    /* channel 0: 1, 2, 5, 6 (mean 3.5, unbiased var 17/3); channel 1: 3, 4, 7, 8 */
    CHECK_VALUES(rm, 1e-6, 1.75, 2.75);
    CHECK_VALUES(rv, 1e-6, 0.5 + 17.0 / 6, 0.5 + 17.0 / 6);
    /* a non-contiguous float64 running mean is updated through a copy */
    ct_tensor *wide = ct_zeros(CT_SHAPE(2, 2), .dtype = CT_F64);
    ct_tensor *col = ct_select(wide, 1, 0);
    ct_batch_norm(x, col, NULL, .training = true, .momentum = CT_SOME(1));
    CHECK_VALUES(wide, 1e-6, 3.5, 0, 5.5, 0);
}

TEST(norm_errors) {
    ct_tensor *x = ct_ones(CT_SHAPE(2, 4, 3));
    CHECK_ERROR(ct_layer_norm(ct_ones(CT_SHAPE(2, 4)), CT_SHAPE(4), .weight = ct_ones(CT_SHAPE(5))),
                "Expected weight to be of same shape as normalized_shape, but got weight of shape "
                "[5] and normalized_shape = [4]");
    CHECK_ERROR(ct_group_norm(x, 2, .weight = ct_ones(CT_SHAPE(3))),
                "Expected weight to be a vector of size equal to the number of channels in input, "
                "but got weight of shape [3] and input of shape [2, 4, 3]");
    CHECK_ERROR(ct_batch_norm(x, NULL, NULL, .weight = ct_ones(CT_SHAPE(3)), .training = true),
                "weight should contain 4 elements not 3");
    CHECK_ERROR(ct_batch_norm(ct_ones(CT_SHAPE(1, 4)), NULL, NULL, .training = true),
                "Expected more than 1 value per channel when training");
    CHECK_ERROR(ct_batch_norm(x, NULL, NULL), "running_mean and running_var must be defined");
    CHECK_ERROR(ct_layer_norm(ct_ones(CT_SHAPE(2, 4), .dtype = CT_I64), CT_SHAPE(4)),
                "not implemented for int64");
    /* the input modified in place after the forward */
    ct_tensor *a = ct_randn(CT_SHAPE(3, 4), .requires_grad = true);
    ct_tensor *h = ct_mul_scalar(a, 2);
    ct_tensor *y = ct_layer_norm(h, CT_SHAPE(4));
    CT_NO_GRAD { ct_add_scalar_(h, 1); }
    CHECK_ERROR(ct_backward(ct_sum(y)), "modified by an inplace operation");
}
