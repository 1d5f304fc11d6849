/* Image transforms (torchvision.transforms): ConvertImageDtype(float), Normalize,
 * RandomCrop, RandomHorizontalFlip.  Images are [..., C, H, W] tensors; random choices
 * draw from the sample's generator, in torchvision's order. */
#include <stdlib.h>

#include "data/data_impl.h"
#include "core/mem.h"

/* x itself, as a new reference registered with the scope (what ops return). */
static ct_tensor *unchanged(ct_tensor *x) { return ct_scope_register(ct_retain(x)); }

/* ---- ConvertImageDtype(torch.float) ------------------------------------------- */

static ct_tensor *to_float_apply(ct_transform *tf, ct_tensor *x, ct_generator *g) {
    (void)tf, (void)g;
    ct_dtype dt = ct_dtype_of(x);
    if (dt == CT_F32) return unchanged(x);
    if (ct_dtype_is_floating(dt)) return ct_to(x, .dtype = CT_F32);
    if (dt != CT_U8) {
        ct_error("ct_tf_to_float: expected a uint8 or floating image (got %s)", ct_dtype_name(dt));
        return NULL;
    }
    ct_tensor *y = NULL;
    CT_SCOPE { y = ct_keep(ct_div_scalar(ct_to(x, .dtype = CT_F32), 255.0)); }
    return y;
}

static const ct_transform_class TO_FLOAT = {.name = "ConvertImageDtype", .apply = to_float_apply};

ct_transform *(ct_tf_to_float)(void) { return ct_transform_new(&TO_FLOAT, 0); }

/* ---- Normalize ------------------------------------------------------------------ */

typedef struct {
    int n;
    double *mean, *std;   /* n values each */
    ct_tensor *mean32, *std32; /* float32 [n, 1, 1], the common case */
} normalize_state;

static ct_tensor *channel_tensor(const double *v, int n, ct_dtype dt) {
    ct_tensor *t = NULL;
    CT_SCOPE { t = ct_keep(ct_to(ct_tensor_f64(v, CT_SHAPE(n, 1, 1)), .dtype = dt)); }
    return t;
}

static ct_tensor *normalize_apply(ct_transform *tf, ct_tensor *x, ct_generator *g) {
    (void)g;
    normalize_state *s = ct_transform_state(tf);
    ct_dtype dt = ct_dtype_of(x);
    if (!ct_dtype_is_floating(dt)) {
        ct_error("ct_tf_normalize: Input tensor should be a float tensor. Got %s.", ct_dtype_name(dt));
        return NULL;
    }
    if (ct_ndim(x) < 3) {
        char buf[CT_SHAPE_STR_MAX];
        ct_shape sh = ct_shape_of(x);
        ct_error("ct_tf_normalize: Expected tensor to be a tensor image of size (..., C, H, W). "
                 "Got tensor.size() = %s", ct_shape_str(sh.ndim, sh.d, buf));
        return NULL;
    }
    int64_t c = ct_size(x, -3);
    if (s->n != 1 && s->n != c) {
        ct_error("ct_tf_normalize: the image has %lld channels but mean and std have %d values",
                 (long long)c, s->n);
        return NULL;
    }
    ct_tensor *y = NULL;
    CT_SCOPE {
        ct_tensor *mean = dt == CT_F32 ? s->mean32 : channel_tensor(s->mean, s->n, dt);
        ct_tensor *std = dt == CT_F32 ? s->std32 : channel_tensor(s->std, s->n, dt);
        y = ct_keep(ct_div(ct_sub(x, mean), std));
    }
    return y;
}

static void normalize_destroy(ct_transform *tf) {
    normalize_state *s = ct_transform_state(tf);
    free(s->mean);
    ct_release(s->mean32);
    ct_release(s->std32);
}

static const ct_transform_class NORMALIZE = {
    .name = "Normalize", .apply = normalize_apply, .destroy = normalize_destroy};

ct_transform *(ct_tf_normalize)(int n, const double *mean, const double *std) {
    if (n < 1 || !mean || !std) {
        ct_error("ct_tf_normalize: expected n >= 1 means and stds (got %d)", n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if ((float)std[i] == 0) {
            ct_error("ct_tf_normalize: std evaluated to zero after conversion to float32, leading "
                     "to division by zero.");
            return NULL;
        }
    }
    double *v = ct_malloc(sizeof(double) * 2 * (size_t)n);
    ct_transform *tf = v ? ct_transform_new(&NORMALIZE, sizeof(normalize_state)) : NULL;
    if (!tf) {
        if (!v) ct_error("ct_tf_normalize: out of memory");
        free(v);
        return NULL;
    }
    normalize_state *s = ct_transform_state(tf);
    for (int i = 0; i < n; i++) v[i] = mean[i], v[n + i] = std[i];
    s->n = n;
    s->mean = v;
    s->std = v + n;
    s->mean32 = data_adopt(channel_tensor(s->mean, n, CT_F32));
    s->std32 = data_adopt(channel_tensor(s->std, n, CT_F32));
    if (!s->mean32 || !s->std32) {
        ct_scope_unregister(tf);
        ct_release(tf);
        return NULL;
    }
    return tf;
}

/* ---- RandomCrop ---------------------------------------------------------------- */

typedef struct {
    int64_t h, w;
    ct_random_crop_options o;
} crop_state;

static ct_tensor *crop_apply(ct_transform *tf, ct_tensor *x, ct_generator *g) {
    crop_state *s = ct_transform_state(tf);
    if (ct_ndim(x) < 2) {
        ct_error("ct_tf_random_crop: expected an image [..., H, W] (got %d dims)", ct_ndim(x));
        return NULL;
    }
    ct_tensor *y = NULL;
    CT_SCOPE {
        int64_t p = s->o.padding;
        ct_tensor *img = p ? ct_pad(x, CT_DIMS(p, p, p, p), .mode = s->o.padding_mode,
                                    .value = s->o.fill)
                           : x;
        if (!img) break;
        int64_t h = ct_size(img, -2), w = ct_size(img, -1);
        if (h < s->h || w < s->w) {
            ct_error("ct_tf_random_crop: Required crop size (%lld, %lld) is larger than input "
                     "image size (%lld, %lld)", (long long)s->h, (long long)s->w, (long long)h,
                     (long long)w);
            break;
        }
        if (h == s->h && w == s->w) {
            y = ct_keep(img == x ? unchanged(x) : img);
            break;
        }
        int64_t i = data_randint(g, 0, h - s->h + 1);
        int64_t j = data_randint(g, 0, w - s->w + 1);
        y = ct_keep(ct_narrow(ct_narrow(img, -2, i, s->h), -1, j, s->w));
    }
    return y;
}

static const ct_transform_class RANDOM_CROP = {.name = "RandomCrop", .apply = crop_apply};

ct_transform *ct_tf_random_crop_with(int64_t height, int64_t width, ct_random_crop_options o) {
    if (height < 1 || width < 1 || o.padding < 0) {
        ct_error("ct_tf_random_crop: expected a positive size and padding >= 0 (got size (%lld, "
                 "%lld), padding %lld)", (long long)height, (long long)width, (long long)o.padding);
        return NULL;
    }
    ct_transform *tf = ct_transform_new(&RANDOM_CROP, sizeof(crop_state));
    if (tf) *(crop_state *)ct_transform_state(tf) = (crop_state){height, width, o};
    return tf;
}

/* ---- RandomHorizontalFlip ---------------------------------------------------------- */

static ct_tensor *hflip_apply(ct_transform *tf, ct_tensor *x, ct_generator *g) {
    double p = *(double *)ct_transform_state(tf);
    if (ct_ndim(x) < 1) {
        ct_error("ct_tf_random_horizontal_flip: expected an image [..., H, W] (got a 0-d tensor)");
        return NULL;
    }
    return data_rand(g) < p ? ct_flip(x, CT_DIMS(-1)) : unchanged(x);
}

static const ct_transform_class RANDOM_HFLIP = {.name = "RandomHorizontalFlip", .apply = hflip_apply};

ct_transform *(ct_tf_random_horizontal_flip)(double p) {
    if (!(p >= 0 && p <= 1)) {
        ct_error("ct_tf_random_horizontal_flip: p must lie in [0, 1] (got %g)", p);
        return NULL;
    }
    ct_transform *tf = ct_transform_new(&RANDOM_HFLIP, sizeof(double));
    if (tf) *(double *)ct_transform_state(tf) = p;
    return tf;
}
