/* The IDX format (MNIST's): a magic number 0x0000TTNN (TT the element type, NN the
 * number of dims), NN big-endian uint32 sizes, then the elements in C order, each
 * big-endian.  The file is read once into a buffer that becomes the tensor's storage. */
#include <stdlib.h>
#include <string.h>

#include "data/data_impl.h"
#include "core/mem.h"

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static ct_dtype idx_dtype(int code) {
    switch (code) {
    case 0x08: return CT_U8;
    case 0x09: return CT_I8;
    case 0x0B: return CT_I16;
    case 0x0C: return CT_I32;
    case 0x0D: return CT_F32;
    case 0x0E: return CT_F64;
    default: return CT_DTYPE_UNSET;
    }
}

/* Big-endian elements of `size` bytes to the host's order, in place. */
static void to_host_order(unsigned char *p, size_t n, size_t size) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (size_t i = 0; i < n; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char c = p[a];
            p[a] = p[b];
            p[b] = c;
        }
#else
    (void)p, (void)n, (void)size;
#endif
}

static void free_buffer(void *data, void *ctx) {
    (void)ctx;
    free(data);
}

/* Checks the header; fills shape and dtype and returns the header's size, or -1. */
static int64_t parse_header(const char *path, const unsigned char *b, size_t len, ct_shape *shape,
                            ct_dtype *dtype) {
    if (len < 4) {
        ct_error("ct_read_idx: '%s' is not an IDX file (%zu bytes: too short for a magic number)",
                 path, len);
        return -1;
    }
    uint32_t magic = be32(b);
    *dtype = idx_dtype(b[2]);
    if (b[0] || b[1] || !*dtype) {
        ct_error("ct_read_idx: '%s' is not an IDX file (bad magic number 0x%08x: expected "
                 "0x0000TTNN with type TT in 08, 09, 0B, 0C, 0D, 0E)", path, magic);
        return -1;
    }
    int ndim = b[3];
    if (ndim < 1 || ndim > CT_MAX_DIMS) {
        ct_error("ct_read_idx: '%s' declares %d dims (expected 1 to %d)", path, ndim, CT_MAX_DIMS);
        return -1;
    }
    size_t header = 4 + 4 * (size_t)ndim;
    if (len < header) {
        ct_error("ct_read_idx: '%s' is truncated (%zu bytes: the header of %d dims needs %zu)",
                 path, len, ndim, header);
        return -1;
    }
    shape->ndim = ndim;
    for (int d = 0; d < ndim; d++) shape->d[d] = be32(b + 4 + 4 * d);
    return (int64_t)header;
}

/* The file's size its header gives (SIZE_MAX when the header is not whole or not
 * valid: parse_header then says why). */
static size_t expected_size(const unsigned char *b, size_t n) {
    if (n < 4 || b[0] || b[1] || !idx_dtype(b[2]) || b[3] < 1 || b[3] > CT_MAX_DIMS ||
        n < 4 + 4 * (size_t)b[3])
        return SIZE_MAX;
    double need = (double)ct_dtype_size(idx_dtype(b[2]));
    for (int d = 0; d < b[3]; d++) need *= (double)be32(b + 4 + 4 * d);
    need += 4 + 4 * (double)b[3];
    return need < (double)SIZE_MAX ? (size_t)need : SIZE_MAX;
}

ct_tensor *(ct_read_idx)(const char *path) {
    size_t len;
    unsigned char *buf = (unsigned char *)data_read_file("ct_read_idx", path, &len, expected_size);
    if (!buf) return NULL;
    ct_shape shape;
    ct_dtype dtype;
    int64_t header = parse_header(path, buf, len, &shape, &dtype);
    if (header < 0) {
        free(buf);
        return NULL;
    }
    /* The data size, in a double first: a damaged header may overflow 64 bits. */
    size_t size = ct_dtype_size(dtype), body = len - (size_t)header;
    double need = (double)size;
    for (int d = 0; d < shape.ndim; d++) need *= (double)shape.d[d];
    char sbuf[CT_SHAPE_STR_MAX];
    if (need != (double)body) {
        ct_shape_str(shape.ndim, shape.d, sbuf);
        if (need > (double)body)
            ct_error("ct_read_idx: '%s' is truncated: its shape %s of %s needs %.0f bytes of data, "
                     "the file has %zu", path, sbuf, ct_dtype_name(dtype), need, body);
        else
            ct_error("ct_read_idx: '%s' has %.0f bytes after the data of shape %s of %s", path,
                     (double)body - need, sbuf, ct_dtype_name(dtype));
        free(buf);
        return NULL;
    }
    /* The elements to the front of the buffer (malloc's alignment suits every dtype). */
    memmove(buf, buf + header, body);
    to_host_order(buf, body / size, size);
    unsigned char *fit = ct_realloc(buf, body ? body : 1); /* the read grew it by doubling */
    if (fit) buf = fit;
    ct_tensor *t = ct_from_blob(buf, dtype, shape, NULL, free_buffer, NULL);
    if (!t) free(buf);
    return t;
}
