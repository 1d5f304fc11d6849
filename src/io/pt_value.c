/* The values of a pickled object (ctorch/pt.h): scalars, strings, tensors, lists,
 * tuples and dicts, reference counted like every ctorch object.  A container owns a
 * reference to each item; a value may sit in several containers (a pickle's memo
 * shares them), never inside itself: ct_pt_append and ct_pt_set refuse a cycle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/pt_value.h"
#include "core/error.h"
#include "core/lifetime.h"
#include "core/mem.h"

static void value_destroy(ct_object *o) {
    ct_pt_value *v = (ct_pt_value *)o;
    for (int64_t i = 0; i < v->n; i++) {
        ct_object_release(v->items[i]);
        if (v->keys) ct_object_release(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    ct_release(v->tensor);
    ct_lifetime_free(v);
}

ct_pt_value *pt_new(int kind, const char *fn) {
    ct_pt_value *v = ct_calloc(1, sizeof *v);
    if (!v) {
        ct_error("%s: out of memory", fn);
        return NULL;
    }
    ct_object_init(&v->obj, value_destroy);
    v->kind = (uint8_t)kind;
    v->height = 1;
    return v;
}

ct_pt_value *pt_new_str(int kind, const char *s, size_t n, const char *fn) {
    ct_pt_value *v = pt_new(kind, fn);
    if (v && !(v->str = ct_malloc(n + 1))) {
        ct_error("%s: out of memory for a string of %zu bytes", fn, n);
        ct_object_release(v);
        return NULL;
    }
    if (v) {
        if (n) memcpy(v->str, s, n);
        v->str[n] = 0;
        v->len = n;
    }
    return v;
}

bool pt_push(ct_pt_value *seq, ct_pt_value *key, ct_pt_value *item, const char *fn) {
    if (seq->n == seq->cap) {
        int64_t cap = seq->cap ? 2 * seq->cap : 8;
        ct_pt_value **items = ct_realloc(seq->items, sizeof *items * (size_t)cap);
        if (items) seq->items = items;
        ct_pt_value **keys = seq->kind == CT_PT_DICT ? ct_realloc(seq->keys, sizeof *keys * (size_t)cap) : NULL;
        if (keys) seq->keys = keys;
        if (!items || (seq->kind == CT_PT_DICT && !keys)) {
            ct_error("%s: out of memory", fn);
            return false;
        }
        seq->cap = cap;
    }
    if (key) seq->keys[seq->n] = ct_retain(key);
    seq->items[seq->n++] = ct_retain(item);
    return true;
}

bool pt_key_equal(const ct_pt_value *a, const ct_pt_value *b) {
    if (a == b) return true;
    bool an = a->kind == CT_PT_INT || a->kind == CT_PT_BOOL, bn = b->kind == CT_PT_INT || b->kind == CT_PT_BOOL;
    if (an || bn) /* True == 1 as dict keys */
        return an && bn && (a->kind == CT_PT_BOOL ? a->b : a->i) == (b->kind == CT_PT_BOOL ? b->b : b->i);
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case CT_PT_NONE: return true;
    case CT_PT_STR:
    case CT_PT_BYTES: return a->len == b->len && !memcmp(a->str, b->str, a->len);
    default: return false;
    }
}

bool pt_dict_put(ct_pt_value *d, ct_pt_value *key, ct_pt_value *item, const char *fn) {
    for (int64_t i = 0; i < d->n; i++)
        if (pt_key_equal(d->keys[i], key)) {
            ct_retain(item);
            ct_object_release(d->items[i]);
            d->items[i] = item;
            return true;
        }
    return pt_push(d, key, item, fn);
}

/* ---- the public values ------------------------------------------------------------ */

static const char *const kind_names[] = {
    [CT_PT_INVALID] = "invalid", [CT_PT_NONE] = "NoneType", [CT_PT_BOOL] = "bool",
    [CT_PT_INT] = "int",         [CT_PT_FLOAT] = "float",   [CT_PT_STR] = "str",
    [CT_PT_BYTES] = "bytes",     [CT_PT_TENSOR] = "Tensor", [CT_PT_LIST] = "list",
    [CT_PT_TUPLE] = "tuple",     [CT_PT_DICT] = "dict",
};

const char *ct_pt_kind_name(ct_pt_kind k) {
    return (unsigned)k < sizeof kind_names / sizeof *kind_names ? kind_names[k] : "invalid";
}

ct_pt_kind ct_pt_kind_of(const ct_pt_value *v) {
    if (!ct_alive("ct_pt_kind_of", 1, v) || !v) return CT_PT_INVALID;
    return v->kind <= CT_PT_DICT ? (ct_pt_kind)v->kind : CT_PT_INVALID;
}

static ct_pt_value *registered(ct_pt_value *v) { return v ? ct_scope_register(v) : NULL; }

ct_pt_value *ct_pt_none(void) { return registered(pt_new(CT_PT_NONE, "ct_pt_none")); }
ct_pt_value *ct_pt_list(void) { return registered(pt_new(CT_PT_LIST, "ct_pt_list")); }
ct_pt_value *ct_pt_tuple(void) { return registered(pt_new(CT_PT_TUPLE, "ct_pt_tuple")); }
ct_pt_value *ct_pt_dict(void) { return registered(pt_new(CT_PT_DICT, "ct_pt_dict")); }

ct_pt_value *ct_pt_bool(bool b) {
    ct_pt_value *v = pt_new(CT_PT_BOOL, "ct_pt_bool");
    if (v) v->b = b;
    return registered(v);
}
ct_pt_value *ct_pt_int(int64_t i) {
    ct_pt_value *v = pt_new(CT_PT_INT, "ct_pt_int");
    if (v) v->i = i;
    return registered(v);
}
ct_pt_value *ct_pt_float(double f) {
    ct_pt_value *v = pt_new(CT_PT_FLOAT, "ct_pt_float");
    if (v) v->f = f;
    return registered(v);
}
ct_pt_value *ct_pt_str(const char *s) {
    if (!s) {
        ct_error("ct_pt_str: the string is NULL");
        return NULL;
    }
    return registered(pt_new_str(CT_PT_STR, s, strlen(s), "ct_pt_str"));
}
ct_pt_value *ct_pt_bytes(const void *data, size_t n) {
    if (!data && n) {
        ct_error("ct_pt_bytes: data is NULL");
        return NULL;
    }
    return registered(pt_new_str(CT_PT_BYTES, data, n, "ct_pt_bytes"));
}
ct_pt_value *ct_pt_tensor(ct_tensor *t) {
    if (!ct_alive("ct_pt_tensor", 1, t) || !t) return NULL;
    ct_pt_value *v = pt_new(CT_PT_TENSOR, "ct_pt_tensor");
    if (v) v->tensor = ct_retain(t);
    return registered(v);
}

ct_pt_value *ct_pt_from_state_dict(const ct_state_dict *sd) {
    if (!ct_alive("ct_pt_from_state_dict", 1, sd) || !sd) return NULL;
    ct_pt_value *d = pt_new(CT_PT_DICT, "ct_pt_from_state_dict");
    bool ok = d != NULL;
    if (d) d->b = true; /* an OrderedDict, as module.state_dict() returns */
    for (int i = 0; ok && i < ct_state_dict_len(sd); i++) {
        const char *k = ct_state_dict_key(sd, i);
        ct_pt_value *key = pt_new_str(CT_PT_STR, k, strlen(k), "ct_pt_from_state_dict");
        ct_pt_value *t = pt_new(CT_PT_TENSOR, "ct_pt_from_state_dict");
        if (t) t->tensor = ct_retain(ct_state_dict_value(sd, i));
        ok = key && t && pt_push(d, key, t, "ct_pt_from_state_dict");
        ct_object_release(key);
        ct_object_release(t);
    }
    if (!ok) {
        ct_object_release(d);
        return NULL;
    }
    return registered(d);
}

/* Whether `target` is v or inside it (depth first; a tree built through this API has
 * no cycle, so the walk ends). */
static bool holds(const ct_pt_value *v, const ct_pt_value *target) {
    if (v == target) return true;
    for (int64_t i = 0; i < v->n; i++)
        if (holds(v->items[i], target) || (v->keys && holds(v->keys[i], target))) return true;
    return false;
}

static bool can_insert(const char *fn, const ct_pt_value *c, const ct_pt_value *item, int want) {
    if (!ct_alive(fn, 1, c) || !ct_alive(fn, 3, item) || !c || !item) return false;
    bool kind_ok = want == CT_PT_DICT ? c->kind == CT_PT_DICT : c->kind == CT_PT_LIST || c->kind == CT_PT_TUPLE;
    if (!kind_ok) {
        ct_error("%s: expected a %s, got a %s", fn, want == CT_PT_DICT ? "dict" : "list or tuple",
                 ct_pt_kind_name(ct_pt_kind_of(c)));
        return false;
    }
    if (holds(item, c)) {
        ct_error("%s: the item holds the container itself (a cycle, which torch.save's files cannot "
                 "represent here)", fn);
        return false;
    }
    return true;
}

int ct_pt_append(ct_pt_value *seq, ct_pt_value *item) {
    if (!can_insert("ct_pt_append", seq, item, CT_PT_LIST)) return -1;
    return pt_push(seq, NULL, item, "ct_pt_append") ? 0 : -1;
}

int ct_pt_set_item(ct_pt_value *dict, ct_pt_value *key, ct_pt_value *item) {
    if (!can_insert("ct_pt_set_item", dict, item, CT_PT_DICT) || !ct_alive("ct_pt_set_item", 2, key)) return -1;
    if (!key) return -1;
    if (key->kind != CT_PT_STR && key->kind != CT_PT_INT && key->kind != CT_PT_BOOL && key->kind != CT_PT_NONE &&
        key->kind != CT_PT_BYTES) {
        ct_error("ct_pt_set_item: a dict key must be a str, bytes, int, bool or None, got a %s",
                 ct_pt_kind_name(ct_pt_kind_of(key)));
        return -1;
    }
    return pt_dict_put(dict, key, item, "ct_pt_set_item") ? 0 : -1;
}

int ct_pt_set(ct_pt_value *dict, const char *key, ct_pt_value *item) {
    if (!can_insert("ct_pt_set", dict, item, CT_PT_DICT)) return -1;
    if (!key) {
        ct_error("ct_pt_set: the key is NULL");
        return -1;
    }
    ct_pt_value *k = pt_new_str(CT_PT_STR, key, strlen(key), "ct_pt_set");
    bool ok = k && pt_dict_put(dict, k, item, "ct_pt_set");
    ct_object_release(k);
    return ok ? 0 : -1;
}

int64_t ct_pt_len(const ct_pt_value *v) {
    if (!ct_alive("ct_pt_len", 1, v) || !v) return -1;
    return v->kind == CT_PT_LIST || v->kind == CT_PT_TUPLE || v->kind == CT_PT_DICT ? v->n : -1;
}

ct_pt_value *ct_pt_at(const ct_pt_value *v, int64_t i) {
    if (!ct_alive("ct_pt_at", 1, v) || !v) return NULL;
    if (ct_pt_len(v) < 0 || i < 0 || i >= v->n) {
        ct_error("ct_pt_at: index %lld is out of range for a %s of %lld items", (long long)i,
                 ct_pt_kind_name(ct_pt_kind_of(v)), (long long)(ct_pt_len(v) < 0 ? 0 : v->n));
        return NULL;
    }
    return v->items[i];
}

ct_pt_value *ct_pt_key_at(const ct_pt_value *dict, int64_t i) {
    if (!ct_alive("ct_pt_key_at", 1, dict) || !dict) return NULL;
    if (dict->kind != CT_PT_DICT || i < 0 || i >= dict->n) {
        ct_error("ct_pt_key_at: index %lld is out of range (or the value is not a dict)", (long long)i);
        return NULL;
    }
    return dict->keys[i];
}

ct_pt_value *ct_pt_get(const ct_pt_value *dict, const char *key) {
    if (!ct_alive("ct_pt_get", 1, dict) || !dict || !key) return NULL;
    if (dict->kind != CT_PT_DICT) {
        ct_error("ct_pt_get: expected a dict, got a %s", ct_pt_kind_name(ct_pt_kind_of(dict)));
        return NULL;
    }
    size_t n = strlen(key);
    for (int64_t i = 0; i < dict->n; i++)
        if (dict->keys[i]->kind == CT_PT_STR && dict->keys[i]->len == n && !memcmp(dict->keys[i]->str, key, n))
            return dict->items[i];
    return NULL;
}

static bool is_kind(const char *fn, const ct_pt_value *v, int kind, int also) {
    if (!ct_alive(fn, 1, v)) return false;
    if (v && (v->kind == kind || v->kind == also)) return true;
    ct_error("%s: expected a %s, got %s%s", fn, ct_pt_kind_name((ct_pt_kind)kind), v ? "a " : "",
             v ? ct_pt_kind_name(ct_pt_kind_of(v)) : "NULL");
    return false;
}

bool ct_pt_as_bool(const ct_pt_value *v) { return is_kind("ct_pt_as_bool", v, CT_PT_BOOL, -1) && v->b; }
int64_t ct_pt_as_int(const ct_pt_value *v) {
    if (!is_kind("ct_pt_as_int", v, CT_PT_INT, CT_PT_BOOL)) return 0;
    return v->kind == CT_PT_BOOL ? v->b : v->i;
}
double ct_pt_as_float(const ct_pt_value *v) {
    if (!is_kind("ct_pt_as_float", v, CT_PT_FLOAT, CT_PT_INT)) return 0;
    return v->kind == CT_PT_INT ? (double)v->i : v->f;
}
const char *ct_pt_as_str(const ct_pt_value *v) { return is_kind("ct_pt_as_str", v, CT_PT_STR, -1) ? v->str : NULL; }
const void *ct_pt_as_bytes(const ct_pt_value *v, size_t *n) {
    if (!is_kind("ct_pt_as_bytes", v, CT_PT_BYTES, -1)) return NULL;
    if (n) *n = v->len;
    return v->str;
}
ct_tensor *ct_pt_as_tensor(const ct_pt_value *v) {
    return is_kind("ct_pt_as_tensor", v, CT_PT_TENSOR, -1) ? v->tensor : NULL;
}

ct_state_dict *ct_pt_state_dict(const ct_pt_value *dict) {
    if (!is_kind("ct_pt_state_dict", dict, CT_PT_DICT, -1)) return NULL;
    ct_state_dict *sd = NULL;
    CT_SCOPE {
        ct_state_dict *d = ct_state_dict_new();
        bool ok = d != NULL;
        for (int64_t i = 0; ok && i < dict->n; i++) {
            const ct_pt_value *k = dict->keys[i], *v = dict->items[i];
            if (k->kind != CT_PT_STR || strlen(k->str) != k->len) {
                ct_error("ct_pt_state_dict: entry %lld has a %s key, not a string", (long long)i,
                         ct_pt_kind_name(ct_pt_kind_of(k)));
                ok = false;
            } else if (v->kind != CT_PT_TENSOR) {
                ct_error("ct_pt_state_dict: entry '%s' is a %s, not a tensor", k->str, ct_pt_kind_name(ct_pt_kind_of(v)));
                ok = false;
            } else {
                ok = ct_state_dict_set(d, k->str, v->tensor) == 0;
            }
        }
        sd = ok ? ct_keep(d) : NULL;
    }
    return sd;
}
