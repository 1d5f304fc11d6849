/* PNG through libpng's write API into a growing buffer (png.h). */
#include "io/tensorboard/png.h"

#include <png.h>
#include <setjmp.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"

typedef struct {
    uint8_t *data;
    size_t len, cap;
    int failed; /* out of memory */
} png_buffer;

static void write_bytes(png_structp png, png_bytep data, size_t n) {
    png_buffer *b = png_get_io_ptr(png);
    if (b->failed) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n) cap *= 2;
        uint8_t *p = ct_realloc(b->data, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

static void flush_nothing(png_structp png) { (void)png; }

/* libpng's messages end the encoding through longjmp: keep the first one. */
static void on_error(png_structp png, png_const_charp msg) {
    char *first = png_get_error_ptr(png);
    if (!first[0]) snprintf(first, 256, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

int tb_png_encode(const char *op, const uint8_t *pixels, int h, int w, int c, uint8_t **out,
                  size_t *n_out) {
    char msg[256] = "";
    png_buffer b = {0};
    png_bytep *rows = ct_malloc(sizeof(png_bytep) * (size_t)(h > 0 ? h : 1));
    png_structp png = rows ? png_create_write_struct(PNG_LIBPNG_VER_STRING, msg, on_error, on_warning) : NULL;
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        if (png) png_destroy_write_struct(&png, NULL);
        free(rows);
        ct_error("%s: out of memory for a PNG", op);
        return -1;
    }
    /* volatile: read after the longjmp */
    volatile int ok = 0;
    if (setjmp(png_jmpbuf(png)) == 0) {
        png_set_write_fn(png, &b, write_bytes, flush_nothing);
        png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8,
                     c == 4 ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
        for (int y = 0; y < h; y++) rows[y] = (png_bytep)pixels + (size_t)y * (size_t)w * (size_t)c;
        png_set_rows(png, info, rows);
        png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
        ok = 1;
    }
    png_destroy_write_struct(&png, &info);
    free(rows);
    if (!ok || b.failed) {
        free(b.data);
        if (b.failed) ct_error("%s: out of memory for a PNG", op);
        else ct_error("%s: PNG encoding failed: %s", op, msg);
        return -1;
    }
    *out = b.data;
    *n_out = b.len;
    return 0;
}
