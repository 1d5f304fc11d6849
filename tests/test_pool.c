/* Pooling and interpolation: values, indices and gradients against PyTorch, errors. */
#include "ct_test.h"
#include "fx_case.h"

typedef enum { MAXP, AVGP, AAVG, AMAX, INTERP } pool_kind;
typedef struct {
    const char *name;
    pool_kind kind;
    ct_max_pool2d_options mp;
    ct_avg_pool2d_options ap;
    ct_dims out;                /* adaptive */
    ct_interpolate_options i;
    bool indices;
} pool_case;

/* Must match tests/fixtures/gen_pool.py. */
static const pool_case cases[] = {
    {"mp_basic", MAXP, .mp = {.kernel_size = CT_DIMS(2)}},
    {"mp_full", MAXP, .mp = {.kernel_size = CT_DIMS(3, 2), .stride = CT_DIMS(2, 1), .padding = CT_DIMS(1),
                       .dilation = CT_DIMS(2, 1), .ceil_mode = true}, .indices = true},
    {"mp_unbatched", MAXP, .mp = {.kernel_size = CT_DIMS(3), .stride = CT_DIMS(2), .padding = CT_DIMS(1)}},
    {"ap_basic", AVGP, .ap = {.kernel_size = CT_DIMS(3), .stride = CT_DIMS(2), .padding = CT_DIMS(1),
                            .count_include_pad = true}},
    {"ap_excl", AVGP, .ap = {.kernel_size = CT_DIMS(3, 2), .stride = CT_DIMS(2, 1), .padding = CT_DIMS(1),
                       .ceil_mode = true}},
    {"ap_div", AVGP, .ap = {.kernel_size = CT_DIMS(2), .count_include_pad = true, .divisor_override = 3}},
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
    case MAXP: return ct_max_pool2d_with_indices_with(x, idx, c->mp);
    case AVGP: return ct_avg_pool2d_with(x, c->ap);
    case AAVG: return ct_adaptive_avg_pool2d(x, c->out);
    case AMAX: return ct_adaptive_max_pool2d_with_indices(x, c->out, idx);
    case INTERP: return ct_interpolate_with(x, c->i);
    }
    return NULL;
}

static void check_case(fx_file *f, const pool_case *c, ct_dtype dt, double tol) {
    ct_tensor *x, *idx = NULL;
    fx_case_inputs(f, c->name, 1, dt, &x);
    ct_tensor *y = run(c, x, &idx);
    if (c->indices) {
        char key[64];
        snprintf(key, sizeof key, "%s_idx", c->name);
        CHECK(ct_dtype_of(idx) == CT_I64);
        CHECK(ct_test_max_diff(idx, fx_get(f, key)) == 0);
    }
    fx_case_check(f, c->name, 1, &x, y, dt, tol);
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

/* d/dx sum(pool(x)^2) built with create_graph, then differentiated again. */
TEST(pool_double_backward_names_and_values) {
    double v[] = {1, 5, 2, 3, 4, 0, 7, 6, 8, 1, 2, 3, 4, 9, 5, 6};
    ct_tensor *x = ct_tensor_f64(v, CT_SHAPE(1, 1, 4, 4), .requires_grad = true);
    ct_tensor *y = ct_max_pool2d(x, .kernel_size = CT_DIMS(2));
    ct_tensor *s = ct_sum(ct_mul(y, y)), *g = NULL;
    CHECK(ct_autograd_grad(1, &s, 1, &x, &g, .create_graph = true) == 0);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(g)), "MaxPool2DWithIndicesBackwardBackward0");
    CHECK(ct_backward(ct_sum(g)) == 0); /* d/dx sum(2 * scatter(y)) = 2 at each argmax */
    CHECK_VALUES(ct_grad(x), 0, 0, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 2, 0, 2);
    ct_tensor *a = ct_ones(CT_SHAPE(1, 1, 4, 4), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *ya = ct_interpolate(a, .scale_factor = {2}, .mode = CT_INTERP_BILINEAR);
    ct_tensor *sa = ct_sum(ct_mul(ya, ya)), *ga = NULL;
    CHECK(ct_autograd_grad(1, &sa, 1, &a, &ga, .create_graph = true) == 0);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ga)), "UpsampleBilinear2DBackwardBackward1");
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

/* max_pool2d against a scan in the generic order (first maximum wins, the first NaN
 * wins), with ties, NaN and -inf: 2x2/stride 2 (the fast path: vector rows of 16 and
 * a scalar tail) and shapes that skip it (ceil_mode's clipped last window, stride 1). */
static void check_max_scan(ct_dtype dt, int64_t H, int64_t W, int64_t k, int64_t s, bool ceil) {
    enum { P = 3 };
    double v[P * 9 * 41];
    CHECK(H * W <= 9 * 41);
    for (int64_t i = 0; i < P * H * W; i++) /* few distinct values: many ties */
        v[i] = i % 37 == 5 ? NAN : i % 23 == 7 ? -INFINITY : (double)((i * 7) % 5);
    ct_tensor *x = ct_to(ct_tensor_f64(v, CT_SHAPE(1, P, H, W)), .dtype = dt), *idx = NULL;
    ct_tensor *y = ct_to(ct_max_pool2d_with_indices(x, &idx, .kernel_size = CT_DIMS(k),
                                                    .stride = CT_DIMS(s), .ceil_mode = ceil),
                         .dtype = CT_F64);
    int64_t OH = ct_size(y, 2), OW = ct_size(y, 3);
    const double *yv = ct_data_ptr(y);
    const int64_t *iv = ct_data_ptr(idx);
    for (int64_t p = 0; p < P; p++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double best = -INFINITY;
                int64_t bi = oh * s * W + ow * s;
                for (int64_t h = oh * s; h < oh * s + k && h < H && !isnan(best); h++)
                    for (int64_t w = ow * s; w < ow * s + k && w < W && !isnan(best); w++) {
                        double e = v[(p * H + h) * W + w];
                        if (e > best || isnan(e)) best = e, bi = h * W + w;
                    }
                int64_t o = (p * OH + oh) * OW + ow;
                CHECK(isnan(best) ? isnan(yv[o]) : yv[o] == best);
                CHECK_INT_EQ(iv[o], bi);
            }
}

TEST(max_pool_fast_path_matches_scan) {
    for (int d = 0; d < 2; d++) {
        ct_dtype dt = d ? CT_F64 : CT_F32;
        check_max_scan(dt, 8, 40, 2, 2, false); /* 20 outputs per row: 16 + 4 */
        check_max_scan(dt, 9, 41, 2, 2, false); /* odd sizes: the last row/column unused */
        check_max_scan(dt, 4, 6, 2, 2, false);  /* rows shorter than a vector */
        check_max_scan(dt, 9, 41, 2, 2, true);  /* ceil_mode: clipped windows, generic */
        check_max_scan(dt, 6, 10, 2, 1, false); /* stride 1: generic */
    }
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
}

/* Backward reads max pooling's argmax in the narrowest type that holds a plane's
 * offsets (int16 up to 181x181 planes, int32 above): the same gradient as through
 * the int64 indices ct_max_pool2d_with_indices hands out. */
TEST(max_pool_backward_reads_narrowed_indices) {
    const int64_t sides[] = {20, 181, 182, 200};
    for (int k = 0; k < 4; k++) {
        ct_tensor *x = ct_randn(CT_SHAPE(2, 1, sides[k], sides[k]), .requires_grad = true);
        ct_tensor *x2 = ct_detach(x), *idx = NULL;
        ct_set_requires_grad(x2, true);
        ct_tensor *y = ct_max_pool2d(x, .kernel_size = CT_DIMS(3), .stride = CT_DIMS(2));
        ct_tensor *y2 = ct_max_pool2d_with_indices(x2, &idx, .kernel_size = CT_DIMS(3), .stride = CT_DIMS(2));
        ct_tensor *g = ct_randn_like(y);
        CHECK(ct_backward(y, .gradient = g) == 0);
        CHECK(ct_backward(y2, .gradient = g) == 0);
        CHECK(idx && ct_dtype_of(idx) == CT_I64);
        CHECK_TENSOR_CLOSE("gradient", ct_grad(x), ct_grad(x2), .rtol = 0, .atol = 0);
    }
}
