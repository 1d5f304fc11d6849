/* PyTorch's module repr: "Name(extra)" for leaves, children indented by two spaces. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "core/error.h"
#include "nn/module_impl.h"
#include "core/mem.h"
#include "core/strbuf.h"

/* Appends text with every line after the first indented by `indent` spaces. */
static void put_indented(ct_strbuf *b, const char *text, int indent) {
    for (const char *p = text; *p; p++) {
        ct_strbuf_put(b, "%c", *p);
        if (*p == '\n') ct_strbuf_put(b, "%*s", indent, "");
    }
}

char *ct_module_to_string(const ct_module *m) {
    if (!ct_alive("ct_module_to_string", 1, m)) return NULL;
    if (!m) return NULL;
    ct_strbuf b = {0};
    char extra[4096] = "";
    if (m->cls->extra_repr) m->cls->extra_repr(m, extra, sizeof extra);
    ct_strbuf_put(&b, "%s(", m->cls->name);
    /* PyTorch puts a one-line extra_repr inside the parentheses, and a multi-line
     * one (ParameterList) on lines of its own, like children. */
    if (m->children.len == 0 && !strchr(extra, '\n')) {
        put_indented(&b, extra, 2);
    } else {
        if (*extra) {
            ct_strbuf_put(&b, "\n  ");
            put_indented(&b, extra, 2);
        }
        for (int i = 0; i < m->children.len; i++) {
            char *child = ct_module_to_string(m->children.items[i].obj);
            if (!child) {
                free(b.s);
                return NULL;
            }
            ct_strbuf_put(&b, "\n  (%s): ", m->children.items[i].name);
            put_indented(&b, child, 2);
            free(child);
        }
        ct_strbuf_put(&b, "\n");
    }
    ct_strbuf_put(&b, ")");
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
