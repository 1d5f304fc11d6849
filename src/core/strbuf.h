/* A growing, NUL-terminated string for text the library builds (reprs, tables, JSON
 * headers).  Out of memory frees it once and drops everything after: the caller checks
 * `failed` (or a false return) at the end instead of after every piece. */
#ifndef CT_CORE_STRBUF_H
#define CT_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *s;     /* the text (NULL until something is added, and after a failure) */
    size_t len;  /* its length */
    size_t cap;  /* bytes allocated */
    bool failed; /* out of memory: s is freed, further text dropped */
} ct_strbuf;

/* Appends printf-formatted text; false (and failed) when memory is short, or after
 * an earlier failure. */
bool ct_strbuf_put(ct_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
