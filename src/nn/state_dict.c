/* State dicts: an ordered map, and a module's parameters and buffers as one. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "ctorch/state_dict.h"
#include "core/error.h"
#include "core/lifetime.h"
#include "core/object.h"
#include "nn/module_impl.h"
#include "core/mem.h"

struct ct_state_dict {
    ct_object obj;
    char **keys;
    ct_tensor **values;
    int len, cap;
};

static void sd_destroy(ct_object *o) {
    ct_state_dict *sd = (ct_state_dict *)o;
    for (int i = 0; i < sd->len; i++) {
        free(sd->keys[i]);
        ct_release(sd->values[i]);
    }
    free(sd->keys);
    free(sd->values);
    ct_lifetime_free(sd);
}

ct_state_dict *ct_state_dict_new(void) {
    ct_state_dict *sd = ct_calloc(1, sizeof *sd);
    if (!sd) {
        ct_error("ct_state_dict_new: out of memory");
        return NULL;
    }
    ct_object_init(&sd->obj, sd_destroy);
    return ct_scope_register(sd);
}

static int index_of(const ct_state_dict *sd, const char *key) {
    for (int i = 0; i < sd->len; i++)
        if (!strcmp(sd->keys[i], key)) return i;
    return -1;
}

int ct_state_dict_set(ct_state_dict *sd, const char *key, ct_tensor *t) {
    if (!ct_alive("ct_state_dict_set", 1, sd) || !ct_alive("ct_state_dict_set", 3, t)) return -1;
    if (!sd || !key || !t) return -1;
    int i = index_of(sd, key);
    if (i >= 0) {
        ct_retain(t);
        ct_release(sd->values[i]);
        sd->values[i] = t;
        return 0;
    }
    if (sd->len == sd->cap) {
        int cap = sd->cap ? 2 * sd->cap : 16;
        char **k = ct_realloc(sd->keys, sizeof *k * (size_t)cap);
        if (k) sd->keys = k;
        ct_tensor **v = ct_realloc(sd->values, sizeof *v * (size_t)cap);
        if (v) sd->values = v;
        if (!k || !v) {
            ct_error("ct_state_dict_set: out of memory");
            return -1;
        }
        sd->cap = cap;
    }
    if (!(sd->keys[sd->len] = ct_strdup(key))) {
        ct_error("ct_state_dict_set: out of memory");
        return -1;
    }
    sd->values[sd->len++] = ct_retain(t);
    return 0;
}

ct_tensor *ct_state_dict_get(const ct_state_dict *sd, const char *key) {
    if (!ct_alive("ct_state_dict_get", 1, sd)) return NULL;
    int i = sd && key ? index_of(sd, key) : -1;
    return i >= 0 ? sd->values[i] : NULL;
}
int ct_state_dict_len(const ct_state_dict *sd) {
    if (!ct_alive("ct_state_dict_len", 1, sd)) return -1;
    return sd ? sd->len : -1;
}
const char *ct_state_dict_key(const ct_state_dict *sd, int i) {
    if (!ct_alive("ct_state_dict_key", 1, sd)) return NULL;
    return sd && i >= 0 && i < sd->len ? sd->keys[i] : NULL;
}
ct_tensor *ct_state_dict_value(const ct_state_dict *sd, int i) {
    if (!ct_alive("ct_state_dict_value", 1, sd)) return NULL;
    return sd && i >= 0 && i < sd->len ? sd->values[i] : NULL;
}

int ct_state_dict_remove(ct_state_dict *sd, const char *key) {
    if (!ct_alive("ct_state_dict_remove", 1, sd)) return -1;
    int i = sd && key ? index_of(sd, key) : -1;
    if (i < 0) return -1;
    free(sd->keys[i]);
    ct_release(sd->values[i]);
    memmove(&sd->keys[i], &sd->keys[i + 1], sizeof(char *) * (size_t)(sd->len - i - 1));
    memmove(&sd->values[i], &sd->values[i + 1], sizeof(ct_tensor *) * (size_t)(sd->len - i - 1));
    sd->len--;
    return 0;
}

/* Parameters then persistent buffers, each sub-tree in PyTorch's order. */
typedef struct {
    int n;
    const char **names;
    ct_tensor **tensors;
} entries;

/* The dotted path of the module owning entry `name` has length of the part before
 * the last '.' (0 for the root). */
static size_t owner_len(const char *name) {
    const char *dot = strrchr(name, '.');
    return dot ? (size_t)(dot - name) : 0;
}

/* PyTorch's state_dict order: module by module (depth first), each module's own
 * parameters then its buffers — not all parameters before all buffers. */
static bool reorder_by_module(ct_module *m, entries *e) {
    int nm = ct_named_modules(m, NULL, NULL, 0);
    if (nm < 0) return false;
    const char **mods = ct_malloc(sizeof(char *) * (size_t)(nm + 1));
    const char **names = ct_malloc(sizeof(char *) * (size_t)(e->n + 1));
    ct_tensor **ts = ct_malloc(sizeof(ct_tensor *) * (size_t)(e->n + 1));
    bool *used = ct_calloc((size_t)e->n + 1, 1);
    bool ok = mods && names && ts && used;
    if (!ok) ct_error("ct_state_dict: out of memory");
    ok = ok && ct_named_modules(m, mods, NULL, nm) == nm;
    int k = 0;
    for (int j = 0; ok && j < nm; j++)
        for (int i = 0; i < e->n; i++) {
            size_t len = owner_len(e->names[i]);
            if (used[i] || len != strlen(mods[j]) || strncmp(e->names[i], mods[j], len)) continue;
            used[i] = true;
            names[k] = e->names[i];
            ts[k++] = e->tensors[i];
        }
    for (int i = 0; ok && i < e->n; i++) /* entries of a module listed twice stay where they were */
        if (!used[i]) {
            names[k] = e->names[i];
            ts[k++] = e->tensors[i];
        }
    if (ok) {
        memcpy(e->names, names, sizeof(char *) * (size_t)e->n);
        memcpy(e->tensors, ts, sizeof(ct_tensor *) * (size_t)e->n);
    }
    free(mods);
    free(names);
    free(ts);
    free(used);
    return ok;
}

/* e.n is -1 when out of memory (the error set). */
static void entries_free(entries *e) {
    free(e->names);
    free(e->tensors);
}

static entries module_entries(ct_module *m) {
    int np = ct_module_walk(m, WALK_PARAMS, NULL, NULL, 0);
    int nb = np >= 0 ? ct_module_walk(m, WALK_PERSISTENT_BUFFERS, NULL, NULL, 0) : -1;
    if (nb < 0) return (entries){-1, NULL, NULL};
    entries e = {np + nb, ct_malloc(sizeof(char *) * (size_t)(np + nb + 1)),
                 ct_malloc(sizeof(ct_tensor *) * (size_t)(np + nb + 1))};
    bool ok = e.names && e.tensors;
    if (!ok) ct_error("ct_state_dict: out of memory");
    /* Buffers use the buffer cache, so both name lists stay valid together. */
    ok = ok && ct_module_walk(m, WALK_PARAMS, e.names, (void **)e.tensors, np) == np &&
         ct_module_walk(m, WALK_PERSISTENT_BUFFERS, e.names + np, (void **)(e.tensors + np), nb) == nb &&
         reorder_by_module(m, &e);
    if (!ok) {
        entries_free(&e);
        e = (entries){-1, NULL, NULL};
    }
    return e;
}

ct_state_dict *ct_module_state_dict(ct_module *m) {
    if (!ct_alive("ct_module_state_dict", 1, m)) return NULL;
    if (!m) return NULL;
    ct_state_dict *sd = NULL;
    CT_SCOPE {
        sd = ct_state_dict_new();
        entries e = module_entries(m);
        bool ok = sd && e.n >= 0;
        for (int i = 0; ok && i < e.n; i++)
            ok = ct_state_dict_set(sd, e.names[i], ct_detach(e.tensors[i])) == 0;
        entries_free(&e);
        sd = ok ? ct_keep(sd) : NULL;
    }
    return sd;
}

static bool same_shape(const ct_tensor *a, const ct_tensor *b) {
    if (ct_ndim(a) != ct_ndim(b)) return false;
    for (int d = 0; d < ct_ndim(a); d++)
        if (ct_size(a, d) != ct_size(b, d)) return false;
    return true;
}

static void shape_text(const ct_tensor *t, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "torch.Size([");
    for (int d = 0; d < ct_ndim(t) && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, d ? ", %lld" : "%lld", (long long)ct_size(t, d));
    if (k < n) snprintf(buf + k, n - k, "])");
}

/* Appends to a fixed buffer, never past its end. */
static void append(char *buf, size_t size, size_t *len, const char *fmt, ...) {
    if (*len >= size) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, size - *len, fmt, ap);
    va_end(ap);
    *len += n > 0 ? (size_t)n : 0;
}

static void list_keys(char *buf, size_t size, size_t *len, const char *label, int n,
                      const char *const *names) {
    if (!n) return;
    append(buf, size, len, "\n\t%s key(s) in state_dict: ", label);
    for (int i = 0; i < n && i < 64; i++) append(buf, size, len, "%s\"%s\"", i ? ", " : "", names[i]);
    append(buf, size, len, ". ");
}

/* Checks sd against m and, when commit is set and the checks pass, copies it in. */
static int load_module(ct_module *m, const ct_state_dict *sd, ct_load_options o, bool commit) {
    if (!m || !sd) return -1;
    entries e = module_entries(m);
    if (e.n < 0) return -1;
    ct_load_result r = {0};
    char mismatches[4096] = "";
    size_t mlen = 0;
    for (int i = 0; i < e.n; i++) {
        ct_tensor *v = ct_state_dict_get(sd, e.names[i]);
        if (!v) {
            if (r.n_missing < 64) r.missing[r.n_missing] = e.names[i];
            r.n_missing++;
        } else if (!same_shape(v, e.tensors[i])) {
            char a[128], b[128];
            shape_text(v, a, sizeof a);
            shape_text(e.tensors[i], b, sizeof b);
            append(mismatches, sizeof mismatches, &mlen,
                   "\n\tsize mismatch for %s: copying a param with shape %s from checkpoint, the "
                   "shape in current model is %s.", e.names[i], a, b);
        }
    }
    for (int i = 0; i < sd->len; i++) {
        bool known = false;
        for (int j = 0; j < e.n && !known; j++) known = !strcmp(sd->keys[i], e.names[j]);
        if (known) continue;
        if (r.n_unexpected < 64) r.unexpected[r.n_unexpected] = sd->keys[i];
        r.n_unexpected++;
    }
    bool strict_fail = !o.non_strict && (r.n_missing || r.n_unexpected);
    if (strict_fail || mlen) {
        /* As PyTorch: missing and unexpected keys (strict only), then size mismatches. */
        char keys[4096] = "";
        size_t klen = 0;
        if (strict_fail) {
            list_keys(keys, sizeof keys, &klen, "Missing", r.n_missing, r.missing);
            list_keys(keys, sizeof keys, &klen, "Unexpected", r.n_unexpected, r.unexpected);
        }
        ct_error("Error(s) in loading state_dict for %s:%s%s", m->cls->name, keys, mismatches);
    } else if (commit) {
        CT_SCOPE {
            CT_NO_GRAD {
                for (int i = 0; i < e.n; i++) {
                    ct_tensor *v = ct_state_dict_get(sd, e.names[i]);
                    if (v) ct_copy_(e.tensors[i], v);
                }
            }
        }
    }
    if (o.result) *o.result = r;
    entries_free(&e);
    return strict_fail || mlen ? -1 : 0;
}

int ct_load_state_dict_with(ct_module *m, const ct_state_dict *sd, ct_load_options o) {
    if (!ct_alive("ct_load_state_dict", 1, m) || !ct_alive("ct_load_state_dict", 2, sd)) return -1;
    return load_module(m, sd, o, true);
}

int ct_module_check_state_dict(ct_module *m, const ct_state_dict *sd) {
    return load_module(m, sd, (ct_load_options){0}, false);
}
