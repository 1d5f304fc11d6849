/* Iteration over parameters, buffers and modules with PyTorch's dotted names and
 * order: a module's own entries first, then each child's, depth first; a tensor or
 * module reachable twice is listed once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "core/error.h"
#include "nn/module_impl.h"
#include "core/mem.h"

typedef struct {
    char **names;
    void **objs;
    int len, cap;
} walk;

static bool seen(const walk *w, const void *obj) {
    for (int i = 0; i < w->len; i++)
        if (w->objs[i] == obj) return true;
    return false;
}

static bool out_of_memory(void) {
    ct_error("out of memory listing module entries");
    return false;
}

/* False when out of memory. */
static bool add(walk *w, const char *prefix, const char *name, void *obj) {
    if (seen(w, obj)) return true;
    if (w->len == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        char **names = ct_realloc(w->names, (size_t)cap * sizeof *w->names);
        if (names) w->names = names;
        void **objs = names ? ct_realloc(w->objs, (size_t)cap * sizeof *w->objs) : NULL;
        if (!objs) return out_of_memory();
        w->objs = objs;
        w->cap = cap;
    }
    size_t n = strlen(prefix) + strlen(name) + 2;
    char *full = ct_malloc(n);
    if (!full) return out_of_memory();
    snprintf(full, n, "%s%s%s", prefix, *prefix && *name ? "." : "", name);
    w->names[w->len] = full;
    w->objs[w->len++] = obj;
    return true;
}

static void walk_free(walk *w) {
    for (int i = 0; i < w->len; i++) free(w->names[i]);
    free(w->names);
    free(w->objs);
}


/* False when out of memory. */
static bool collect(const ct_module *m, const char *prefix, walk_kind kind, walk *w) {
    if (kind == WALK_MODULES && !add(w, prefix, "", (void *)m)) return false;
    const slot_vec *own = kind == WALK_PARAMS ? &m->params : &m->buffers;
    if (kind != WALK_MODULES)
        for (int i = 0; i < own->len; i++)
            if ((kind != WALK_PERSISTENT_BUFFERS || own->items[i].persistent) &&
                !add(w, prefix, own->items[i].name, own->items[i].obj))
                return false;
    for (int i = 0; i < m->children.len; i++) {
        size_t n = strlen(prefix) + strlen(m->children.items[i].name) + 2;
        char *sub = ct_malloc(n);
        if (!sub) return out_of_memory();
        snprintf(sub, n, "%s%s%s", prefix, *prefix ? "." : "", m->children.items[i].name);
        bool ok = collect(m->children.items[i].obj, sub, kind, w);
        free(sub);
        if (!ok) return false;
    }
    return true;
}

/* Hands the walk's results out with names from the module's cache, which changes only
 * when the names do: pointers stay valid across calls while the structure stands. */
static int deliver(ct_module *m, int cache, walk *w, const char **names, void **out, int max) {
    name_cache *c = &m->names[cache];
    bool same = c->len == w->len;
    for (int i = 0; same && i < w->len; i++) same = !strcmp(c->items[i], w->names[i]);
    char **drop = same ? w->names : c->items;
    int ndrop = same ? w->len : c->len;
    for (int i = 0; i < ndrop; i++) free(drop[i]);
    free(drop);
    if (!same) {
        c->items = w->names;
        c->len = w->len;
    }
    for (int i = 0; i < c->len && i < max; i++) {
        if (names) names[i] = c->items[i];
        if (out) out[i] = w->objs[i];
    }
    free(w->objs);
    return w->len;
}

int ct_module_walk(ct_module *m, int kind, const char **names, void **out, int max) {
    walk w = {0};
    if (!collect(m, "", (walk_kind)kind, &w)) {
        walk_free(&w);
        return -1;
    }
    int cache = kind == WALK_PARAMS ? NAMES_PARAMS : kind == WALK_MODULES ? NAMES_MODULES
              : kind == WALK_BUFFERS ? NAMES_BUFFERS : NAMES_PERSISTENT;
    return deliver(m, cache, &w, names, out, max);
}

int ct_named_parameters(ct_module *m, const char **names, ct_tensor **out, int max) {
    if (!ct_alive("ct_named_parameters", 1, m)) return -1;
    return m ? ct_module_walk(m, WALK_PARAMS, names, (void **)out, max) : -1;
}
int ct_parameters(ct_module *m, ct_tensor **out, int max) {
    if (!ct_alive("ct_parameters", 1, m)) return -1;
    return ct_named_parameters(m, NULL, out, max);
}
int ct_named_buffers(ct_module *m, const char **names, ct_tensor **out, int max) {
    if (!ct_alive("ct_named_buffers", 1, m)) return -1;
    return m ? ct_module_walk(m, WALK_BUFFERS, names, (void **)out, max) : -1;
}
int ct_buffers(ct_module *m, ct_tensor **out, int max) {
    if (!ct_alive("ct_buffers", 1, m)) return -1;
    return ct_named_buffers(m, NULL, out, max);
}
int ct_named_modules(ct_module *m, const char **names, ct_module **out, int max) {
    if (!ct_alive("ct_named_modules", 1, m)) return -1;
    return m ? ct_module_walk(m, WALK_MODULES, names, (void **)out, max) : -1;
}

int ct_named_children(ct_module *m, const char **names, ct_module **out, int max) {
    if (!ct_alive("ct_named_children", 1, m)) return -1;
    if (!m) return -1;
    walk w = {0};
    for (int i = 0; i < m->children.len; i++)
        if (!add(&w, "", m->children.items[i].name, m->children.items[i].obj)) {
            walk_free(&w);
            return -1;
        }
    return deliver(m, NAMES_CHILDREN, &w, names, (void **)out, max);
}

/* The sum over m's parameters (or buffers) of elements, or of bytes. */
static int64_t sum_over(ct_module *m, bool buffers, bool trainable_only, bool bytes) {
    int n = buffers ? ct_buffers(m, NULL, 0) : ct_parameters(m, NULL, 0);
    if (n <= 0) return n < 0 ? -1 : 0;
    ct_tensor **ps = ct_malloc(sizeof *ps * (size_t)n);
    if (!ps) {
        out_of_memory();
        return -1;
    }
    if ((buffers ? ct_buffers(m, ps, n) : ct_parameters(m, ps, n)) != n) {
        free(ps);
        return -1;
    }
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        if (!trainable_only || ct_requires_grad(ps[i]))
            total += ct_numel(ps[i]) * (bytes ? (int64_t)ct_dtype_size(ct_dtype_of(ps[i])) : 1);
    free(ps);
    return total;
}

int64_t ct_module_num_parameters(ct_module *m, bool trainable_only) {
    if (!ct_alive("ct_module_num_parameters", 1, m)) return -1;
    return sum_over(m, false, trainable_only, false);
}

int64_t ct_module_num_bytes(ct_module *m) {
    if (!ct_alive("ct_module_num_bytes", 1, m)) return -1;
    int64_t params = sum_over(m, false, false, true), buffers = sum_over(m, true, false, true);
    return params < 0 || buffers < 0 ? -1 : params + buffers;
}
