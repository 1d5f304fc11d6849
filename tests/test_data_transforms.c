/* Transforms: ConvertImageDtype(float), Normalize, RandomCrop, RandomHorizontalFlip,
 * Compose, custom transforms.  The arithmetic ones follow torchvision's formulas
 * (x.to(float32) / 255 and (x - mean) / std in the input's dtype). */
#include "ct_test.h"

TEST(to_float_scales_uint8) {
    uint8_t px[] = {0, 51, 255, 128};
    ct_tensor *x = ct_tensor_u8(px, CT_SHAPE(1, 2, 2));
    ct_tensor *y = ct_transform_apply(ct_tf_to_float(), x, NULL);
    CHECK_INT_EQ(ct_dtype_of(y), CT_F32);
    CHECK_VALUES(y, 0, 0.0, (double)(51.0f / 255.0f), 1.0, (double)(128.0f / 255.0f));
    ct_tensor *f = ct_ones(CT_SHAPE(2));
    CHECK(ct_transform_apply(ct_tf_to_float(), f, NULL) == f); /* float32 passes */
    CHECK_INT_EQ(ct_dtype_of(ct_transform_apply(ct_tf_to_float(), ct_ones(CT_SHAPE(1), .dtype = CT_F64), NULL)),
                 CT_F32);
    CHECK_ERROR(ct_transform_apply(ct_tf_to_float(), ct_arange(3), NULL), "expected a uint8 or floating image");
}

TEST(normalize_per_channel) {
    float v[] = {1, 3, 10, 30};
    ct_tensor *x = ct_tensor_f32(v, CT_SHAPE(2, 1, 2)); /* 2 channels */
    ct_transform *tf = ct_tf_normalize(2, ((double[]){1, 10}), ((double[]){2, 5}));
    CHECK_VALUES(ct_transform_apply(tf, x, NULL), 0, 0, 1, 0, 4);
    /* float64 input: mean and std in float64 too. */
    ct_tensor *y = ct_transform_apply(tf, ct_to(x, .dtype = CT_F64), NULL);
    CHECK_INT_EQ(ct_dtype_of(y), CT_F64);
    CHECK_VALUES(y, 0, 0, 1, 0, 4);
    /* One value for every channel; a batch of images [N, C, H, W] works too. */
    ct_transform *one = ct_tf_normalize(1, (double[]){0.5}, (double[]){0.25});
    CHECK_VALUES(ct_transform_apply(one, ct_ones(CT_SHAPE(2, 3, 1, 1)), NULL), 0, 2, 2, 2, 2, 2, 2);
    CHECK_ERROR(ct_transform_apply(tf, ct_ones(CT_SHAPE(3, 1, 1)), NULL),
                "the image has 3 channels but mean and std have 2 values");
    CHECK_ERROR(ct_transform_apply(tf, ct_ones(CT_SHAPE(1, 2, 2), .dtype = CT_U8), NULL),
                "Input tensor should be a float tensor. Got uint8.");
    CHECK_ERROR(ct_transform_apply(tf, ct_ones(CT_SHAPE(2, 2)), NULL),
                "Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = [2, 2]");
    CHECK_ERROR(ct_tf_normalize(1, (double[]){0}, (double[]){1e-50}), "std evaluated to zero");
}

/* Whether y [1, h, w] is the window at some (i, j) of x [1, H, W]. */
static bool is_window(ct_tensor *x, ct_tensor *y, int64_t *at_i, int64_t *at_j) {
    int64_t h = ct_size(y, -2), w = ct_size(y, -1);
    for (int64_t i = 0; i + h <= ct_size(x, -2); i++)
        for (int64_t j = 0; j + w <= ct_size(x, -1); j++) {
            bool same = false;
            CT_SCOPE { same = ct_test_max_diff(ct_narrow(ct_narrow(x, -2, i, h), -1, j, w), y) == 0; }
            if (same) {
                *at_i = i, *at_j = j;
                return true;
            }
        }
    return false;
}

TEST(random_crop_takes_every_window) {
    ct_tensor *x = ct_view(ct_arange(16, .dtype = CT_U8), CT_SHAPE(1, 4, 4));
    ct_transform *crop = ct_tf_random_crop(2);
    int hits[3][3] = {{0}};
    for (int seed = 0; seed < 90; seed++) {
        CT_SCOPE {
            ct_tensor *y = ct_transform_apply(crop, x, ct_generator_new((uint64_t)seed));
            int64_t i = -1, j = -1;
            CHECK(ct_size(y, 1) == 2 && ct_size(y, 2) == 2 && ct_dtype_of(y) == CT_U8);
            CHECK(is_window(x, y, &i, &j));
            if (i >= 0) hits[i][j]++;
        }
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) CHECK(hits[i][j] > 0);
    /* The same generator seed gives the same crop. */
    ct_tensor *a = ct_transform_apply(crop, x, ct_generator_new(5));
    ct_tensor *b = ct_transform_apply(crop, x, ct_generator_new(5));
    CHECK(ct_test_max_diff(a, b) == 0);
    /* A crop of the full size returns the image. */
    CHECK(ct_transform_apply(ct_tf_random_crop(4), x, NULL) == x);
}

TEST(random_crop_with_padding) {
    /* 28 -> pad 4 -> crop 28, the classic augmentation: the window lies in the padded
     * image, whose border is the fill value. */
    ct_tensor *x = ct_full(CT_SHAPE(1, 28, 28), 7, .dtype = CT_U8);
    ct_transform *crop = ct_tf_random_crop(28, .padding = 4, .fill = 1);
    ct_tensor *padded = ct_pad(x, CT_DIMS(4, 4, 4, 4), .value = 1);
    for (int seed = 0; seed < 10; seed++) {
        CT_SCOPE {
            ct_tensor *y = ct_transform_apply(crop, x, ct_generator_new((uint64_t)seed));
            int64_t i, j;
            CHECK_INT_EQ(ct_size(y, 1), 28);
            CHECK(is_window(padded, y, &i, &j));
        }
    }
    ct_tensor *r = ct_transform_apply(ct_tf_random_crop(3, .padding = 1, .padding_mode = CT_PAD_REFLECT),
                                      ct_view(ct_arange(4, .dtype = CT_F32), CT_SHAPE(1, 2, 2)), NULL);
    CHECK_INT_EQ(ct_size(r, 2), 3);
    CHECK_ERROR(ct_transform_apply(ct_tf_random_crop(32), x, NULL),
                "Required crop size (32, 32) is larger than input image size (28, 28)");
    CHECK_ERROR(ct_tf_random_crop(0), "expected a positive size");
}

TEST(random_horizontal_flip) {
    ct_tensor *x = ct_view(ct_arange(6, .dtype = CT_F32), CT_SHAPE(1, 2, 3));
    CHECK_VALUES(ct_transform_apply(ct_tf_random_horizontal_flip(1), x, NULL), 0, 2, 1, 0, 5, 4, 3);
    CHECK(ct_transform_apply(ct_tf_random_horizontal_flip(0), x, NULL) == x);
    ct_transform *half = ct_tf_random_horizontal_flip(0.5);
    int flips = 0;
    for (int seed = 0; seed < 200; seed++)
        CT_SCOPE { flips += ct_transform_apply(half, x, ct_generator_new((uint64_t)seed)) != x; }
    CHECK(flips > 70 && flips < 130);
    CHECK_ERROR(ct_tf_random_horizontal_flip(1.5), "p must lie in [0, 1]");
}

TEST(compose_applies_in_order) {
    uint8_t px[] = {0, 255};
    ct_tensor *x = ct_tensor_u8(px, CT_SHAPE(1, 1, 2));
    ct_transform *tf = ct_tf_compose(CT_TRANSFORM_LIST(
        ct_tf_random_horizontal_flip(1), ct_tf_to_float(),
        ct_tf_normalize(1, (double[]){0.5}, (double[]){0.5})));
    CHECK_VALUES(ct_transform_apply(tf, x, NULL), 0, 1, -1);
    /* The other order fails: Normalize needs floats. */
    ct_transform *wrong = ct_tf_compose(CT_TRANSFORM_LIST(
        ct_tf_normalize(1, (double[]){0.5}, (double[]){0.5}), ct_tf_to_float()));
    CHECK_ERROR(ct_transform_apply(wrong, x, NULL), "should be a float tensor");
    CHECK(ct_transform_apply(ct_tf_compose(0, NULL), x, NULL) != NULL);
}

/* A custom transform: adds gaussian noise drawn from the sample's generator. */
static ct_tensor *noise_apply(ct_transform *tf, ct_tensor *x, ct_generator *g) {
    double sigma = *(double *)ct_transform_state(tf);
    return ct_add(x, ct_mul_scalar(ct_randn_like(x, .generator = g), sigma));
}
static const ct_transform_class NOISE = {.name = "Noise", .apply = noise_apply};

TEST(custom_transform_draws_from_sample_generator) {
    ct_transform *tf = ct_transform_new(&NOISE, sizeof(double));
    *(double *)ct_transform_state(tf) = 0.1;
    ct_tensor *x = ct_zeros(CT_SHAPE(1, 2, 2));
    ct_tensor *a = ct_transform_apply(tf, x, ct_generator_new(3));
    ct_tensor *b = ct_transform_apply(tf, x, ct_generator_new(3));
    ct_tensor *c = ct_transform_apply(tf, x, ct_generator_new(4));
    CHECK(ct_test_max_diff(a, b) == 0);
    CHECK(ct_test_max_diff(a, c) > 0);
    CHECK_ERROR(ct_transform_new(NULL, 0), "needs apply");
}
