/* Whole-file reading through zlib, which reads gzip'd and plain files alike. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "data/data_impl.h"
#include "core/mem.h"

char *data_read_file(const char *op, const char *path, size_t *len) {
    if (!path) {
        ct_error("%s: path is NULL", op);
        return NULL;
    }
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        ct_error("%s: cannot open '%s': %s", op, path, errno ? strerror(errno) : "out of memory");
        return NULL;
    }
    gzbuffer(f, 1 << 17);
    size_t cap = 1 << 20, n = 0;
    char *buf = ct_malloc(cap + 1);
    int got = 0;
    while (buf) {
        if (n == cap) {
            char *bigger = cap <= SIZE_MAX / 2 - 1 ? ct_realloc(buf, 2 * cap + 1) : NULL;
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t want = cap - n < (1u << 30) ? cap - n : (1u << 30);
        got = gzread(f, buf + n, (unsigned)want);
        if (got <= 0) break;
        n += (size_t)got;
    }
    int errnum = Z_OK;
    const char *msg = buf ? gzerror(f, &errnum) : NULL;
    if (!buf) {
        ct_error("%s: out of memory reading '%s'", op, path);
    } else if (got < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
        if (errnum == Z_ERRNO)
            ct_error("%s: cannot read '%s': %s", op, path, strerror(errno));
        else if (errnum == Z_BUF_ERROR)
            ct_error("%s: '%s' is a truncated gzip file (%s)", op, path, msg);
        else
            ct_error("%s: '%s' is a corrupt gzip file (%s)", op, path, msg);
        free(buf);
        buf = NULL;
    }
    gzclose(f);
    if (buf) {
        buf[n] = 0;
        *len = n;
    }
    return buf;
}
