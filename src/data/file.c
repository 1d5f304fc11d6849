/* Whole-file reading through zlib, which reads gzip'd and plain files alike. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "data/data_impl.h"
#include "core/mem.h"

/* The machine's physical memory: no file's content may be larger. */
static size_t physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0 || (unsigned long)pages > SIZE_MAX / (unsigned long)page) return SIZE_MAX;
    return (size_t)pages * (size_t)page;
}

char *data_read_file(const char *op, const char *path, size_t *len, data_expected_size expected) {
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
    size_t cap = 1 << 20, n = 0, memory = physical_memory(), told = SIZE_MAX, limit = memory;
    bool header_read = !expected, too_large = false;
    char *buf = ct_malloc(cap + 1);
    int got = 0;
    while (buf) {
        if (!header_read && n > 0) {
            /* after the first read (a whole buffer, or all there is: a small file's
             * surplus is left to the caller's checks, which can say more) */
            told = expected((const unsigned char *)buf, n);
            if (told < limit) limit = told > n ? told : n;
            header_read = true;
        }
        if (n > limit) {
            too_large = true;
            break;
        }
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
        if (header_read && want > limit - n + 1) want = limit - n + 1; /* one past: too large */
        got = gzread(f, buf + n, (unsigned)want);
        if (got <= 0) break;
        n += (size_t)got;
    }
    int errnum = Z_OK;
    const char *msg = buf ? gzerror(f, &errnum) : NULL;
    if (!buf) {
        ct_error("%s: out of memory reading '%s'", op, path);
    } else if (too_large) {
        if (limit < memory)
            ct_error("%s: '%s' holds more than the %zu bytes its header gives (a damaged file or "
                     "a decompression bomb)", op, path, told);
        else
            ct_error("%s: '%s' holds more than this machine's memory (%zu bytes: a decompression "
                     "bomb?)", op, path, memory);
        free(buf);
        buf = NULL;
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
