/* add_image and add_images (SummaryWriter.add_image, .add_images).
 *
 * As PyTorch: the tensor is laid out as HWC (convert_to_HWC: HW and one-channel
 * images become three equal channels; a batch NCHW becomes make_grid's canvas, 8
 * images per row, no padding), then scaled: uint8 as it is, anything else as
 * float32 * 255 truncated to uint8 (clipped to [0, 255] first, where numpy's cast
 * would wrap).  The scaling is per element, so it is done first, on the tensor's
 * values in C order, and the layout moves bytes. */
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "core/object.h"
#include "io/tensorboard/png.h"
#include "io/tensorboard/writer.h"
#include "tensorboard/summary.pb-c.h"

/* The tensor's values in C order as uint8 (scaled as above); NULL with an error. */
static uint8_t *values_u8(const char *op, ct_tensor *t, int64_t n) {
    uint8_t *u = ct_malloc((size_t)n);
    float *f = ct_dtype_of(t) == CT_U8 ? NULL : ct_malloc(sizeof(float) * (size_t)n);
    if (!u || (ct_dtype_of(t) != CT_U8 && !f)) {
        free(u);
        free(f);
        ct_error("%s: out of memory for an image of %lld values", op, (long long)n);
        return NULL;
    }
    int rc = f ? ct_copy_to_buffer(t, f, CT_F32, sizeof(float) * (size_t)n)
               : ct_copy_to_buffer(t, u, CT_U8, (size_t)n);
    for (int64_t i = 0; f && rc == 0 && i < n; i++) {
        float v = f[i] * 255.0f;
        u[i] = !(v > 0) ? 0 : v >= 255 ? 255 : (uint8_t)v; /* NaN: 0 */
    }
    free(f);
    if (rc != 0) {
        free(u);
        return NULL;
    }
    return u;
}

/* The position of each of the letters of want in fmt (a permutation of them), or -1
 * with an error. */
static int find_dims(const char *op, const char *fmt, const char *want, int ndim, int *pos) {
    size_t k = strlen(want);
    int ok = strlen(fmt) == k && (int)k == ndim;
    for (size_t i = 0; ok && i < k; i++) {
        const char *p = strchr(fmt, want[i]);
        ok = p && !strchr(p + 1, want[i]);
        if (ok) pos[i] = (int)(p - fmt);
    }
    if (!ok) {
        ct_error("%s: dataformats \"%s\" does not fit a tensor of %d dims (expected a permutation "
                 "of \"%s\" with one letter per dim)", op, fmt, ndim, want);
        return -1;
    }
    return 0;
}

/* PNG-encodes the h x w x c pixels and writes them as Summary.Image under tag. */
static int write_image(ct_summary_writer *w, const char *op, const char *tag, const uint8_t *hwc,
                       int h, int wd, int c, int64_t step, double walltime) {
    uint8_t *png;
    size_t n_png;
    if (tb_png_encode(op, hwc, h, wd, c, &png, &n_png) != 0) return -1;
    Tensorboard__Summary__Image img = TENSORBOARD__SUMMARY__IMAGE__INIT;
    img.height = h;
    img.width = wd;
    img.colorspace = c;
    img.encoded_image_string = (ProtobufCBinaryData){n_png, png};
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = (char *)tag;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_IMAGE;
    v.image = &img;
    int rc = tb_write_value(w, op, &v, step, walltime);
    free(png);
    return rc;
}

/* Checks common to both: writer, tag and a tensor with values.  Its dims into d. */
static int check_image(const char *op, ct_summary_writer *w, const char *tag, ct_tensor *t,
                       int64_t d[4], int *ndim) {
    if (!ct_alive(op, 3, t) || !tb_check_writer(op, w)) return -1;
    if (!tag || !t) {
        if (!ct_last_error()) ct_error("%s: %s is NULL", op, tag ? "the image tensor" : "tag");
        return -1;
    }
    if (ct_dtype_of(t) == CT_BOOL) {
        ct_error("%s: images must be uint8 or floating point (got bool)", op);
        return -1;
    }
    *ndim = ct_ndim(t);
    for (int i = 0; i < *ndim && i < 4; i++) d[i] = ct_size(t, i);
    for (int i = 0; i < *ndim && i < 4; i++)
        if (d[i] == 0 || d[i] > 32767) {
            ct_error("%s: image dims must be 1 to 32767 (dim %d is %lld)", op, i, (long long)d[i]);
            return -1;
        }
    return 0;
}

int ct_tb_add_image_with(ct_summary_writer *w, const char *tag, ct_tensor *img, int64_t step,
                      ct_tb_image_options o) {
    static const char *op = "ct_tb_add_image";
    int64_t d[4];
    int ndim, pos[3] = {0, 0, 0};
    if (check_image(op, w, tag, img, d, &ndim) != 0) return -1;
    const char *fmt = o.dataformats ? o.dataformats : "CHW";
    int hw_only = strlen(fmt) == 2;
    if (find_dims(op, fmt, hw_only ? "HW" : "HWC", ndim, pos) != 0) return -1;
    int64_t h = d[pos[0]], wd = d[pos[1]], c = hw_only ? 1 : d[pos[2]];
    if (c != 1 && c != 3 && c != 4) {
        ct_error("%s: an image has 1, 3 or 4 channels (got %lld, dataformats \"%s\")", op,
                 (long long)c, fmt);
        return -1;
    }
    /* C-order strides of the source, by the letter */
    int64_t stride[3] = {0, 0, 0}, s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        for (int k = 0; k < (hw_only ? 2 : 3); k++)
            if (pos[k] == i) stride[k] = s;
        s *= d[i];
    }
    uint8_t *u = values_u8(op, img, h * wd * c);
    int oc = c == 1 ? 3 : (int)c;
    uint8_t *hwc = u ? ct_malloc((size_t)(h * wd * oc)) : NULL;
    if (!hwc) {
        if (u) ct_error("%s: out of memory", op);
        free(u);
        return -1;
    }
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < wd; x++)
            for (int k = 0; k < oc; k++)
                hwc[(y * wd + x) * oc + k] = u[y * stride[0] + x * stride[1] + (c == 1 ? 0 : k) * stride[2]];
    free(u);
    int rc = write_image(w, op, tag, hwc, (int)h, (int)wd, oc, step, o.walltime);
    free(hwc);
    return rc;
}

int ct_tb_add_images_with(ct_summary_writer *w, const char *tag, ct_tensor *imgs, int64_t step,
                       ct_tb_image_options o) {
    static const char *op = "ct_tb_add_images";
    int64_t d[4];
    int ndim, pos[4];
    if (check_image(op, w, tag, imgs, d, &ndim) != 0) return -1;
    const char *fmt = o.dataformats ? o.dataformats : "NCHW";
    if (find_dims(op, fmt, "NCHW", ndim, pos) != 0) return -1;
    int64_t n = d[pos[0]], c = d[pos[1]], h = d[pos[2]], wd = d[pos[3]];
    if (c != 1 && c != 3) {
        ct_error("%s: a batch of images has 1 or 3 channels (got %lld, dataformats \"%s\")", op,
                 (long long)c, fmt);
        return -1;
    }
    int64_t stride[4], s = 1;
    for (int i = 3; i >= 0; i--) {
        for (int k = 0; k < 4; k++)
            if (pos[k] == i) stride[k] = s;
        s *= d[i];
    }
    int64_t ncols = n < 8 ? n : 8, nrows = (n + ncols - 1) / ncols;
    int64_t gh = h * nrows, gw = wd * ncols;
    if (gh > 32767 || gw > 32767) {
        ct_error("%s: the grid of %lld images of %lldx%lld is too large for an image", op,
                 (long long)n, (long long)h, (long long)wd);
        return -1;
    }
    uint8_t *u = values_u8(op, imgs, n * c * h * wd);
    uint8_t *grid = u ? ct_calloc((size_t)(gh * gw * 3), 1) : NULL;
    if (!grid) {
        if (u) ct_error("%s: out of memory", op);
        free(u);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t oy = (i / ncols) * h, ox = (i % ncols) * wd;
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < wd; x++)
                for (int k = 0; k < 3; k++)
                    grid[((oy + y) * gw + ox + x) * 3 + k] =
                        u[i * stride[0] + (c == 1 ? 0 : k) * stride[1] + y * stride[2] + x * stride[3]];
    }
    free(u);
    int rc = write_image(w, op, tag, grid, (int)gh, (int)gw, 3, step, o.walltime);
    free(grid);
    return rc;
}
