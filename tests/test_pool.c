/* Pooling and interpolation: values, indices and gradients against PyTorch, errors. */
#include "ct_test.h"
#include "fixtures.h"

typedef enum { MAXP, AVGP, AAVG, AMAX, INTERP } pool_kind;
typedef struct {
    const char *name;
    pool_kind kind;
    ct_pool_options p;
    ct_dims out;                /* adaptive */
    ct_interpolate_options i;
    bool indices;
} pool_case;

/* Must match tests/fixtures/gen_pool.py. */
static const pool_case cases[] = {
    {"mp_basic", MAXP, .p = {.kernel_size = CT_DIMS(2)}},
    {"mp_full", MAXP, .p = {.kernel_size = CT_DIMS(3, 2), .stride = CT_DIMS(2, 1), .padding = CT_DIMS(1),
                       .dilation = CT_DIMS(2, 1), .ceil_mode = true}, .indices = true},
    {"mp_unbatched", MAXP, .p = {.kernel_size = CT_DIMS(3), .stride = CT_DIMS(2), .padding = CT_DIMS(1)}},
    {"ap_basic", AVGP, .p = {.kernel_size = CT_DIMS(3), .stride = CT_DIMS(2), .padding = CT_DIMS(1)}},
    {"ap_excl", AVGP, .p = {.kernel_size = CT_DIMS(3, 2), .stride = CT_DIMS(2, 1), .padding = CT_DIMS(1),
                       .ceil_mode = true, .exclude_pad = true}},
    {"ap_div", AVGP, .p = {.kernel_size = CT_DIMS(2), .divisor_override = 3}},
    {"aap", AAVG, .out = CT_DIMS(3, 4)},
    {"amp", AMAX, .out = CT_DIMS(3, 2), .indices = true},
    {"up_near2", INTERP, .i = {.scale_factor = {2}}},
    {"up_near_size", INTERP, .i = {.size = CT_DIMS(5, 7)}},
    {"up_near_frac", INTERP, .i = {.scale_factor = {1.5}}},
    {"up_bil", INTERP, .i = {.size = CT_DIMS(5, 7), .mode = CT_INTERP_BILINEAR}},
    {"up_bil_ac", INTERP, .i = {.size = CT_DIMS(5, 7), .mode = CT_INTERP_BILINEAR, .align_corners = true}},
    {"up_bil_scale", INTERP, .i = {.scale_factor = {2, 1.5}, .mode = CT_INTERP_BILINEAR}},
};

static ct_tensor *run(const pool_case *c, ct_tensor *x, ct_tensor **idx) {
    switch (c->kind) {
    case MAXP: return ct_max_pool2d_with_indices_with(x, idx, c->p);
    case AVGP: return ct_avg_pool2d_with(x, c->p);
    case AAVG: return ct_adaptive_avg_pool2d(x, c->out);
    case AMAX: return ct_adaptive_max_pool2d_with_indices(x, c->out, idx);
    case INTERP: return ct_interpolate_with(x, c->i);
    }
    return NULL;
}

static void check_case(fx_file *f, const pool_case *c, ct_dtype dt, double tol) {
    char key[64];
    snprintf(key, sizeof key, "%s_in0", c->name);
    ct_tensor *x = fx_get_as(f, key, dt, true), *idx = NULL;
    ct_tensor *y = run(c, x, &idx);
    snprintf(key, sizeof key, "%s_out", c->name);
    double d = ct_test_max_diff(y, fx_get(f, key));
    if (!(d <= tol)) ct_test_fail(__FILE__, __LINE__, "%s (%s): output differs by %g (%s)", c->name,
                                  ct_dtype_name(dt), d, ct_last_error() ? ct_last_error() : "");
    if (c->indices) {
        snprintf(key, sizeof key, "%s_idx", c->name);
        CHECK(ct_dtype_of(idx) == CT_I64);
        CHECK(ct_test_max_diff(idx, fx_get(f, key)) == 0);
    }
    snprintf(key, sizeof key, "%s_g", c->name);
    CHECK(ct_backward(y, .gradient = fx_get_as(f, key, dt, false)) == 0);
    snprintf(key, sizeof key, "%s_grad0", c->name);
    d = ct_test_max_diff(ct_grad(x), fx_get(f, key));
    if (!(d <= tol))
        ct_test_fail(__FILE__, __LINE__, "%s (%s): grad differs by %g", c->name, ct_dtype_name(dt), d);
}

TEST(pool_matches_pytorch) {
    fx_file *f = fx_load("pool");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_case(f, &cases[i], CT_F64, 1e-12);
        check_case(f, &cases[i], CT_F32, 1e-5);
    }
    fx_free(f);
}

TEST(pool_grad_fn_names) {
    ct_tensor *x = ct_ones(CT_SHAPE(1, 1, 4, 4), .requires_grad = true);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_max_pool2d(x, .kernel_size = CT_DIMS(2)))),
                 "MaxPool2DWithIndicesBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_avg_pool2d(x, .kernel_size = CT_DIMS(2)))),
                 "AvgPool2DBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_adaptive_avg_pool2d(x, CT_DIMS(1)))),
                 "AdaptiveAvgPool2DBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_interpolate(x, .scale_factor = {2}))),
                 "UpsampleNearest2DBackward1");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_interpolate(x, .size = CT_DIMS(3), .mode = CT_INTERP_BILINEAR))),
                 "UpsampleBilinear2DBackward1");
}

TEST(max_pool_nan_and_batch_zero) {
    double v[] = {1, NAN, 3, 4};
    ct_tensor *x = ct_tensor_f64(v, CT_SHAPE(1, 1, 2, 2));
    ct_tensor *idx = NULL;
    ct_tensor *y = ct_max_pool2d_with_indices(x, &idx, .kernel_size = CT_DIMS(2));
    CHECK(isnan(ct_item(y)));
    CHECK_INT_EQ(ct_item_int(idx), 1);
    ct_tensor *e = ct_max_pool2d(ct_zeros(CT_SHAPE(0, 2, 4, 4)), .kernel_size = CT_DIMS(2));
    CHECK(e && ct_numel(e) == 0);
    ct_tensor *h = ct_avg_pool2d(ct_ones(CT_SHAPE(1, 1, 2, 2), .dtype = CT_BF16), .kernel_size = CT_DIMS(2));
    CHECK(ct_dtype_of(h) == CT_BF16);
    CHECK_VALUES(h, 0, 1);
}

TEST(pool_errors) {
    ct_tensor *x = ct_zeros(CT_SHAPE(1, 2, 5, 5));
    CHECK_ERROR(ct_max_pool2d(x, .kernel_size = CT_DIMS(3), .padding = CT_DIMS(2)),
                "ct_max_pool2d: pad should be at most half of kernel size, but got pad=2 and kernel_size=3");
    CHECK_ERROR(ct_max_pool2d(ct_zeros(CT_SHAPE(1, 1, 2, 2)), .kernel_size = CT_DIMS(3)),
                "Given input size: (1x2x2). Calculated output size: (1x0x0). Output size is too small");
    CHECK_ERROR(ct_avg_pool2d(ct_zeros(CT_SHAPE(2, 2)), .kernel_size = CT_DIMS(1)),
                "non-empty 3D or 4D (batch mode) tensor expected for input");
    CHECK_ERROR(ct_max_pool2d(x, .kernel_size = CT_DIMS(2), .stride = CT_DIMS(0)),
                "stride should not be zero");
    CHECK_ERROR(ct_max_pool2d(x), "kernel_size is required");
    CHECK_ERROR(ct_interpolate(x, .size = CT_DIMS(3), .align_corners = true),
                "align_corners option can only be set with the interpolating modes");
    CHECK_ERROR(ct_interpolate(x), "either size or scale_factor should be defined");
    CHECK_ERROR(ct_interpolate(x, .size = CT_DIMS(3), .scale_factor = {2}),
                "only one of size or scale_factor should be defined");
    CHECK_ERROR(ct_interpolate(ct_zeros(CT_SHAPE(2, 5, 5)), .size = CT_DIMS(3)),
                "expected a 4D input");
    ct_tensor *xg = ct_ones(CT_SHAPE(1, 1, 2, 2), .requires_grad = true);
    ct_tensor *s = ct_sum(ct_max_pool2d(xg, .kernel_size = CT_DIMS(2)));
    ct_tensor *g = NULL;
    CHECK_ERROR(ct_autograd_grad(1, &s, 1, &xg, &g, .create_graph = true),
                "MaxPool2DWithIndicesBackward0: double backward is not implemented");
}
