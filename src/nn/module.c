/* The module base: registration, lookup, calling, iteration, modes, conversion. */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "core/error.h"
#include "core/lifetime.h"
#include "core/object.h"
#include "core/tensor_impl.h"
#include "nn/module_impl.h"
#include "core/mem.h"

static void slots_free(slot_vec *v) {
    for (int i = 0; i < v->len; i++) {
        free(v->items[i].name);
        ct_release(v->items[i].obj);
    }
    free(v->items);
}

static void module_destroy(ct_object *o) {
    ct_module *m = (ct_module *)o;
    if (m->cls->destroy) m->cls->destroy(m);
    /* Children last: a class's destroy may still look at them. */
    slots_free(&m->params);
    slots_free(&m->buffers);
    slots_free(&m->children);
    free(m->hooks);
    for (int k = 0; k < NAME_CACHES; k++) {
        for (int i = 0; i < m->names[k].len; i++) free(m->names[k].items[i]);
        free(m->names[k].items);
    }
    ct_lifetime_free(m);
}

ct_module *ct_module_new(const ct_module_class *cls, size_t state_size) {
    if (!cls) {
        ct_error("ct_module_new: class is NULL");
        return NULL;
    }
    ct_module *m = ct_calloc(1, sizeof *m + state_size);
    if (!m) {
        ct_error("ct_module_new: out of memory");
        return NULL;
    }
    ct_object_init(&m->obj, module_destroy);
    m->cls = cls;
    m->training = true;
    m->state_size = state_size;
    return ct_scope_register(m);
}

void *ct_module_state(const ct_module *m) {
    if (!ct_alive("ct_module_state", 1, m)) return NULL;
    return m ? (void *)m->state : NULL;
}
const char *ct_module_type(const ct_module *m) {
    if (!ct_alive("ct_module_type", 1, m)) return NULL;
    return m ? m->cls->name : NULL;
}

/* ---- registration -------------------------------------------------------- */

static slot *find(const slot_vec *v, const char *name) {
    for (int i = 0; i < v->len; i++)
        if (!strcmp(v->items[i].name, name)) return &v->items[i];
    return NULL;
}

/* Whether m is tree or lies inside it (a registration must not make a cycle). */
static bool inside(const ct_module *tree, const ct_module *m) {
    if (tree == m) return true;
    for (int i = 0; i < tree->children.len; i++)
        if (inside(tree->children.items[i].obj, m)) return true;
    return false;
}

static bool valid_name(const char *op, const ct_module *m, const char *name) {
    if (!name || !*name || strchr(name, '.')) {
        ct_error("%s: name \"%s\" must be a non-empty string without '.'", op, name ? name : "(null)");
        return false;
    }
    if (find(&m->params, name) || find(&m->buffers, name) || find(&m->children, name)) {
        ct_error("%s: attribute '%s' already exists in %s (ct_module_set replaces a child, "
                 "ct_module_set_tensor a parameter or buffer)", op, name, m->cls->name);
        return false;
    }
    return true;
}

static bool push(slot_vec *v, const char *name, void *obj, bool persistent) {
    if (v->len == v->cap) {
        int cap = v->cap ? 2 * v->cap : 4;
        slot *items = ct_realloc(v->items, (size_t)cap * sizeof *items);
        if (!items) return false;
        v->items = items;
        v->cap = cap;
    }
    char *copy = ct_strdup(name);
    if (!copy) return false;
    v->items[v->len++] = (slot){copy, obj, persistent};
    return true;
}

/* Takes over the caller's reference (see nn.h): the one a scope holds, if the object
 * is registered with the current scope, else the caller's own. */
static void *adopt(void *obj) {
    ct_scope_unregister(obj);
    return obj;
}

ct_module *ct_module_add(ct_module *m, const char *name, ct_module *child) {
    if (!ct_alive("ct_module_add", 1, m) || !ct_alive("ct_module_add", 3, child)) return NULL;
    if (!m || !child) return NULL;
    if (!valid_name("ct_module_add", m, name)) return NULL;
    if (inside(child, m)) {
        ct_error("ct_module_add: cannot register %s '%s' inside itself", child->cls->name, name);
        return NULL;
    }
    if (!push(&m->children, name, child, true)) {
        ct_error("ct_module_add: out of memory");
        return NULL;
    }
    adopt(child); /* only once pushed: until then the caller's scope owns it */
    return child;
}

ct_tensor *ct_module_add_parameter(ct_module *m, const char *name, ct_tensor *p) {
    if (!ct_alive("ct_module_add_parameter", 1, m) || !ct_alive("ct_module_add_parameter", 3, p))
        return NULL;
    if (!m || !p) return NULL;
    if (!valid_name("ct_module_add_parameter", m, name)) return NULL;
    if (!ct_dtype_is_floating(ct_dtype_of(p))) {
        ct_error("ct_module_add_parameter: parameter '%s' must be a floating point tensor (got %s)",
                 name, ct_dtype_name(ct_dtype_of(p)));
        return NULL;
    }
    if (!ct_is_leaf(p)) {
        ct_error("ct_module_add_parameter: cannot assign a non-leaf tensor as parameter '%s'; "
                 "parameters must be leaves (use ct_detach)", name);
        return NULL;
    }
    if (!push(&m->params, name, p, true)) {
        ct_error("ct_module_add_parameter: out of memory");
        return NULL;
    }
    adopt(p);
    ct_set_requires_grad(p, true);
    return p;
}

ct_tensor *ct_module_add_buffer(ct_module *m, const char *name, ct_tensor *b, bool persistent) {
    if (!ct_alive("ct_module_add_buffer", 1, m) || !ct_alive("ct_module_add_buffer", 3, b))
        return NULL;
    if (!m || !b) return NULL;
    if (!valid_name("ct_module_add_buffer", m, name)) return NULL;
    if (!push(&m->buffers, name, b, persistent)) {
        ct_error("ct_module_add_buffer: out of memory");
        return NULL;
    }
    adopt(b);
    return b;
}

/* What `name` is in m, for messages: "a parameter", "a buffer" or NULL. */
static const char *kind_of(const ct_module *m, const char *name) {
    return find(&m->params, name) ? "a parameter" : find(&m->buffers, name) ? "a buffer" : NULL;
}

/* Walks a dotted path to the module owning its last component.  op NULL: a missing
 * component gives NULL silently (the getters); else an error naming op. */
static ct_module *owner_of(const ct_module *m, const char *path, const char **leaf, const char *op) {
    const char *full = path, *dot;
    while ((dot = strchr(path, '.'))) {
        char part[256];
        size_t n = (size_t)(dot - path);
        slot *s = NULL;
        if (n < sizeof part) {
            memcpy(part, path, n);
            part[n] = 0;
            s = find(&m->children, part);
        }
        if (!s) {
            const char *what = n < sizeof part ? kind_of(m, part) : NULL;
            if (op && what)
                ct_error("%s: '%s' in '%s' is %s of %s, not a module", op, part, full, what,
                         m->cls->name);
            else if (op)
                ct_error("%s: %s has no submodule '%.*s' (in '%s')", op, m->cls->name, (int)n,
                         path, full);
            return NULL;
        }
        m = s->obj;
        path = dot + 1;
    }
    *leaf = path;
    return (ct_module *)m;
}

ct_tensor *ct_module_get_parameter(const ct_module *m, const char *name) {
    if (!ct_alive("ct_module_get_parameter", 1, m)) return NULL;
    const char *leaf;
    const ct_module *o = m && name ? owner_of(m, name, &leaf, NULL) : NULL;
    slot *s = o ? find(&o->params, leaf) : NULL;
    return s ? s->obj : NULL;
}

ct_tensor *ct_module_get_buffer(const ct_module *m, const char *name) {
    if (!ct_alive("ct_module_get_buffer", 1, m)) return NULL;
    const char *leaf;
    const ct_module *o = m && name ? owner_of(m, name, &leaf, NULL) : NULL;
    slot *s = o ? find(&o->buffers, leaf) : NULL;
    return s ? s->obj : NULL;
}

ct_module *ct_module_get_submodule(const ct_module *m, const char *name) {
    if (!ct_alive("ct_module_get_submodule", 1, m)) return NULL;
    if (!m || !name) return NULL;
    if (!*name) return (ct_module *)m;
    const char *leaf;
    const ct_module *o = owner_of(m, name, &leaf, NULL);
    slot *s = o ? find(&o->children, leaf) : NULL;
    return s ? s->obj : NULL;
}

/* Puts obj (a reference the slot takes over) in slot s of o and releases the old
 * object, after re-pointing every field of o's state that held the old one: the
 * pointers a class kept from registration (s->fc = ct_module_add(...)) then see the
 * new object, as attribute lookups in PyTorch do. */
static void replace(ct_module *o, slot *s, void *obj) {
    void *old = s->obj;
    for (size_t off = 0; off + sizeof old <= o->state_size; off += alignof(void *)) {
        void *p;
        memcpy(&p, o->state + off, sizeof p);
        if (p == old) memcpy(o->state + off, &obj, sizeof obj);
    }
    s->obj = obj;
    ct_release(old);
}

ct_module *ct_module_set(ct_module *m, const char *path, ct_module *child) {
    if (!ct_alive("ct_module_set", 1, m) || !ct_alive("ct_module_set", 3, child)) return NULL;
    if (!m || !path || !child) {
        if (!ct_last_error())
            ct_error("ct_module_set: %s is NULL", !m ? "the module" : !path ? "the path" : "the child");
        return NULL;
    }
    const char *leaf;
    ct_module *o = owner_of(m, path, &leaf, "ct_module_set");
    if (!o) return NULL;
    slot *s = find(&o->children, leaf);
    if (!s) {
        const char *what = kind_of(o, leaf);
        if (what)
            ct_error("ct_module_set: '%s' is %s of %s, not a module (ct_module_set_tensor "
                     "replaces it)", path, what, o->cls->name);
        else
            ct_error("ct_module_set: %s has no child module '%s' (in '%s'; ct_module_add "
                     "registers a new one)", o->cls->name, leaf, path);
        return NULL;
    }
    if (s->obj == child) return child; /* model.fc = model.fc */
    if (inside(child, o)) {
        ct_error("ct_module_set: cannot put %s '%s' inside itself", child->cls->name, path);
        return NULL;
    }
    replace(o, s, adopt(child));
    return child;
}

int ct_module_set_tensor(ct_module *m, const char *name, ct_tensor *t) {
    if (!ct_alive("ct_module_set_tensor", 1, m) || !ct_alive("ct_module_set_tensor", 3, t))
        return -1;
    if (!m || !name || !t) return -1;
    const char *leaf;
    ct_module *o = owner_of(m, name, &leaf, NULL);
    slot *s = o ? find(&o->params, leaf) : NULL;
    bool is_param = s != NULL;
    if (!s && o) s = find(&o->buffers, leaf);
    if (!s) {
        ct_error("ct_module_set_tensor: %s has no parameter or buffer named '%s'",
                 m->cls->name, name);
        return -1;
    }
    if (s->obj != t) replace(o, s, ct_retain(t));
    if (is_param) ct_set_requires_grad(t, true);
    return 0;
}

/* ---- calling ----------------------------------------------------------------- */

static int add_hook(ct_module *m, int kind, void *fn, void *ctx) {
    if (!m || !fn) return -1;
    ct_module_hook *h = ct_realloc(m->hooks, (size_t)(m->n_hooks + 1) * sizeof *h);
    if (!h) {
        ct_error("out of memory registering a module hook");
        return -1;
    }
    m->hooks = h;
    h[m->n_hooks] = (ct_module_hook){kind, m->next_handle, fn, ctx};
    m->n_hooks++;
    return m->next_handle++;
}

int ct_module_register_forward_pre_hook(ct_module *m, ct_forward_pre_hook fn, void *ctx) {
    if (!ct_alive("ct_module_register_forward_pre_hook", 1, m)) return -1;
    return add_hook(m, 0, (void *)fn, ctx);
}
int ct_module_register_forward_hook(ct_module *m, ct_forward_hook fn, void *ctx) {
    if (!ct_alive("ct_module_register_forward_hook", 1, m)) return -1;
    return add_hook(m, 1, (void *)fn, ctx);
}
int ct_module_remove_hook(ct_module *m, int handle) {
    if (!ct_alive("ct_module_remove_hook", 1, m)) return -1;
    for (int i = 0; m && i < m->n_hooks; i++) {
        if (m->hooks[i].handle != handle) continue;
        memmove(&m->hooks[i], &m->hooks[i + 1], (size_t)(m->n_hooks - i - 1) * sizeof *m->hooks);
        m->n_hooks--;
        return 0;
    }
    if (m) ct_error("ct_module_remove_hook: no hook with handle %d", handle);
    return -1;
}

/* Hooks see the first input and the first output (all there is for most modules).
 * A hook that reports an error (ct_set_error) fails the call: NULL. */
static ct_tensor *run_pre_hooks(ct_module *m, ct_tensor *x) {
    unsigned errors = ct_error_count();
    for (int i = 0; i < m->n_hooks && x; i++)
        if (m->hooks[i].kind == 0) {
            ct_tensor *r = ((ct_forward_pre_hook)m->hooks[i].fn)(m, x, m->hooks[i].ctx);
            if (ct_error_count() != errors) return NULL;
            if (r) x = r;
        }
    return x;
}

static ct_tensor *run_hooks(ct_module *m, ct_tensor *x, ct_tensor *y) {
    unsigned errors = ct_error_count();
    for (int i = 0; i < m->n_hooks && y; i++)
        if (m->hooks[i].kind == 1) {
            ct_tensor *r = ((ct_forward_hook)m->hooks[i].fn)(m, x, y, m->hooks[i].ctx);
            if (ct_error_count() != errors) return NULL;
            if (r) y = r;
        }
    return y;
}

ct_tensor *ct_forward(ct_module *m, ct_tensor *x) {
    if (!ct_alive("ct_forward", 1, m) || !ct_alive("ct_forward", 2, x)) return NULL;
    if (!m || !x) return NULL;
    if (!(x = run_pre_hooks(m, x))) return NULL;
    ct_tensor *y = NULL;
    if (m->cls->forward) {
        y = m->cls->forward(m, x);
    } else if (m->cls->forward_multi) {
        if (m->cls->forward_multi(m, 1, &x, &y, 1) < 1) y = NULL;
    } else {
        ct_error("ct_forward: module %s has no forward", m->cls->name);
    }
    return y ? run_hooks(m, x, y) : NULL;
}

int ct_forward_multi(ct_module *m, int n_in, ct_tensor *const *in, ct_tensor **out, int max_out) {
    if (!ct_alive("ct_forward_multi", 1, m) || !ct_all_alive("ct_forward_multi", 3, in, n_in))
        return -1;
    if (!m || !in || !out || n_in < 1) return -1;
    for (int i = 0; i < n_in; i++)
        if (!in[i]) return -1;
    if (!m->cls->forward_multi) {
        if (n_in != 1 || max_out < 1) {
            ct_error("ct_forward_multi: module %s takes one input and gives one output", m->cls->name);
            return -1;
        }
        out[0] = ct_forward(m, in[0]);
        return out[0] ? 1 : -1;
    }
    ct_tensor *args[n_in];
    for (int i = 0; i < n_in; i++) args[i] = in[i];
    if (!(args[0] = run_pre_hooks(m, args[0]))) return -1;
    int n = m->cls->forward_multi(m, n_in, args, out, max_out);
    if (n >= 1 && max_out >= 1 && !(out[0] = run_hooks(m, args[0], out[0]))) return -1;
    return n;
}

/* ---- modes --------------------------------------------------------------------- */

void ct_module_train(ct_module *m, bool training) {
    if (!ct_alive("ct_module_train", 1, m)) return;
    if (!m) return;
    m->training = training;
    for (int i = 0; i < m->children.len; i++) ct_module_train(m->children.items[i].obj, training);
}
void ct_module_eval(ct_module *m) {
    if (!ct_alive("ct_module_eval", 1, m)) return;
    ct_module_train(m, false);
}
bool ct_module_is_training(const ct_module *m) {
    if (!ct_alive("ct_module_is_training", 1, m)) return false;
    return m && m->training;
}

void ct_module_apply(ct_module *m, void (*fn)(ct_module *, void *), void *ctx) {
    if (!ct_alive("ct_module_apply", 1, m)) return;
    if (!m || !fn) return;
    for (int i = 0; i < m->children.len; i++) ct_module_apply(m->children.items[i].obj, fn, ctx);
    fn(m, ctx);
}
