#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/mem.h"
#include "core/strbuf.h"

bool ct_strbuf_put(ct_strbuf *b, const char *fmt, ...) {
    if (b->failed) return false;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return true; /* nothing a format can print */
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = (b->len + (size_t)n + 1) * 2;
        char *s = ct_realloc(b->s, cap);
        if (!s) {
            free(b->s);
            *b = (ct_strbuf){.failed = true};
            return false;
        }
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return true;
}
