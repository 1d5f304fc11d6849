/* PyTorch's module repr: "Name(extra)" for leaves, children indented by two spaces. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "core/error.h"
#include "nn/module_impl.h"
#include "core/mem.h"

typedef struct {
    char *s;
    size_t len, cap;
    bool failed; /* out of memory: s is freed, further text dropped */
} strbuf;

static void put(strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->failed) return;
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = (b->len + (size_t)n + 1) * 2;
        char *s = ct_realloc(b->s, b->cap);
        if (!s) {
            free(b->s);
            *b = (strbuf){.failed = true};
            return;
        }
        b->s = s;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Appends text with every line after the first indented by `indent` spaces. */
static void put_indented(strbuf *b, const char *text, int indent) {
    for (const char *p = text; *p; p++) {
        put(b, "%c", *p);
        if (*p == '\n') put(b, "%*s", indent, "");
    }
}

char *ct_module_to_string(const ct_module *m) {
    if (!ct_alive("ct_module_to_string", 1, m)) return NULL;
    if (!m) return NULL;
    strbuf b = {0};
    char extra[4096] = "";
    if (m->cls->extra_repr) m->cls->extra_repr(m, extra, sizeof extra);
    put(&b, "%s(", m->cls->name);
    /* PyTorch puts a one-line extra_repr inside the parentheses, and a multi-line
     * one (ParameterList) on lines of its own, like children. */
    if (m->children.len == 0 && !strchr(extra, '\n')) {
        put_indented(&b, extra, 2);
    } else {
        if (*extra) {
            put(&b, "\n  ");
            put_indented(&b, extra, 2);
        }
        for (int i = 0; i < m->children.len; i++) {
            char *child = ct_module_to_string(m->children.items[i].obj);
            if (!child) {
                free(b.s);
                return NULL;
            }
            put(&b, "\n  (%s): ", m->children.items[i].name);
            put_indented(&b, child, 2);
            free(child);
        }
        put(&b, "\n");
    }
    put(&b, ")");
    if (b.failed) ct_error("ct_module_to_string: out of memory");
    return b.s;
}

void ct_module_print(ct_module *m) {
    if (!ct_alive("ct_module_print", 1, m)) return;
    char *s = ct_module_to_string(m);
    if (!s) return;
    printf("%s\nParameters: %" PRId64 " (trainable: %" PRId64 ")\n", s,
           ct_module_num_parameters(m, false), ct_module_num_parameters(m, true));
    free(s);
}
