/* Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.
 * Their entries are the module's own children / parameters (so iteration, state
 * dicts and printing come from the base); lists name them "0", "1", ... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "core/error.h"
#include "ctorch/layers.h"
#include "core/object.h"
#include "nn/layer_util.h"
#include "nn/module_impl.h"

static ct_tensor *sequential_forward(ct_module *m, ct_tensor *x) {
    if (m->children.len == 0) { /* the input itself, with a reference like any result */
        ct_retain(x);
        return ct_scope_register(x);
    }
    /* Each child in a scope of its own: an output the next child has consumed is freed
     * then (unless backward saved it), not when the caller's scope ends, as Python
     * frees a Sequential's intermediates. */
    ct_tensor *cur = ct_retain(x); /* owned */
    for (int i = 0; cur && i < m->children.len; i++) {
        ct_tensor *next = NULL;
        CT_SCOPE { next = ct_retain(ct_forward(m->children.items[i].obj, cur)); }
        ct_release(cur);
        cur = next;
    }
    return cur ? ct_scope_register(cur) : NULL;
}

static void param_list_repr(const ct_module *m, char *buf, size_t size);
static void param_dict_repr(const ct_module *m, char *buf, size_t size);

static const ct_module_class SEQUENTIAL = {.name = "Sequential", .forward = sequential_forward};
static const ct_module_class MODULE_LIST = {.name = "ModuleList"};
static const ct_module_class MODULE_DICT = {.name = "ModuleDict"};
static const ct_module_class PARAMETER_LIST = {.name = "ParameterList", .extra_repr = param_list_repr};
static const ct_module_class PARAMETER_DICT = {.name = "ParameterDict", .extra_repr = param_dict_repr};
static bool is(const ct_module *m, const ct_module_class *cls, const char *op) {
    if (!m) return false;
    if (m->cls != cls) {
        ct_error("%s: expected a %s (got %s)", op, cls->name, m->cls->name);
        return false;
    }
    return true;
}

/* Python's index rules: negative i counts from the end. */
static int normalize_index(const char *op, int i, int len) {
    int j = i < 0 ? i + len : i;
    if (j < 0 || j >= len) {
        ct_error("%s: index %d is out of range", op, i);
        return -1;
    }
    return j;
}

/* What a container holds: parameters for ParameterList/Dict, else children. */
static slot_vec *held(const ct_module *m) {
    return (slot_vec *)(m->cls == &PARAMETER_LIST || m->cls == &PARAMETER_DICT ? &m->params
                                                                               : &m->children);
}
static int length(const ct_module *m, const ct_module_class *cls, const char *op) {
    return is(m, cls, op) ? held(m)->len : -1;
}
static slot *at_index(const ct_module *m, const ct_module_class *cls, const char *op, int i) {
    if (!is(m, cls, op)) return NULL;
    int j = normalize_index(op, i, held(m)->len);
    return j < 0 ? NULL : &held(m)->items[j];
}
static slot *find_slot(const slot_vec *v, const char *key) {
    for (int i = 0; key && i < v->len; i++)
        if (!strcmp(v->items[i].name, key)) return &v->items[i];
    return NULL;
}
static void *at_key(const ct_module *m, const ct_module_class *cls, const char *op, const char *key) {
    slot *s = is(m, cls, op) ? find_slot(held(m), key) : NULL;
    return s ? s->obj : NULL;
}

static ct_module *append_child(ct_module *m, ct_module *child) {
    char name[24];
    snprintf(name, sizeof name, "%d", m->children.len);
    return ct_module_add(m, name, child) ? m : NULL;
}

static ct_module *list_new(const ct_module_class *cls, int n, ct_module *const *mods) {
    for (int i = 0; i < n; i++)
        if (!mods || !mods[i]) {
            if (!ct_last_error()) ct_error("ct_%s: module %d is NULL", cls == &SEQUENTIAL ? "sequential" : "module_list", i);
            return NULL;
        }
    ct_module *m = ct_module_new(cls, 0);
    for (int i = 0; m && i < n; i++)
        if (!append_child(m, mods[i])) {
            ct_layer_discard(m);
            return NULL;
        }
    return m;
}

ct_module *(ct_sequential)(int n, ct_module *const *modules) { return list_new(&SEQUENTIAL, n, modules); }
ct_module *(ct_module_list)(int n, ct_module *const *modules) { return list_new(&MODULE_LIST, n, modules); }

ct_module *ct_sequential_append(ct_module *seq, ct_module *m) {
    if (!ct_alive("ct_sequential_append", 1, seq) || !ct_alive("ct_sequential_append", 2, m))
        return NULL;
    return is(seq, &SEQUENTIAL, "ct_sequential_append") && m ? append_child(seq, m) : NULL;
}
ct_module *ct_module_list_append(ct_module *list, ct_module *m) {
    if (!ct_alive("ct_module_list_append", 1, list) || !ct_alive("ct_module_list_append", 2, m))
        return NULL;
    return is(list, &MODULE_LIST, "ct_module_list_append") && m ? append_child(list, m) : NULL;
}

ct_module *ct_sequential_get(ct_module *seq, int i) {
    if (!ct_alive("ct_sequential_get", 1, seq)) return NULL;
    slot *s = at_index(seq, &SEQUENTIAL, "ct_sequential_get", i);
    return s ? s->obj : NULL;
}
ct_module *ct_module_list_get(ct_module *list, int i) {
    if (!ct_alive("ct_module_list_get", 1, list)) return NULL;
    slot *s = at_index(list, &MODULE_LIST, "ct_module_list_get", i);
    return s ? s->obj : NULL;
}
int ct_sequential_len(const ct_module *seq) {
    if (!ct_alive("ct_sequential_len", 1, seq)) return -1;
    return length(seq, &SEQUENTIAL, "ct_sequential_len");
}
int ct_module_list_len(const ct_module *list) {
    if (!ct_alive("ct_module_list_len", 1, list)) return -1;
    return length(list, &MODULE_LIST, "ct_module_list_len");
}

/* ---- ModuleDict ------------------------------------------------------------ */

ct_module *ct_module_dict(void) { return ct_module_new(&MODULE_DICT, 0); }

ct_module *ct_module_dict_set(ct_module *dict, const char *key, ct_module *m) {
    if (!ct_alive("ct_module_dict_set", 1, dict) || !ct_alive("ct_module_dict_set", 3, m))
        return NULL;
    if (!is(dict, &MODULE_DICT, "ct_module_dict_set") || !m) return NULL;
    /* Replacing keeps the key's position, as assigning into a dict does. */
    return find_slot(&dict->children, key) ? ct_module_set(dict, key, m) : ct_module_add(dict, key, m);
}

ct_module *ct_module_dict_get(ct_module *dict, const char *key) {
    if (!ct_alive("ct_module_dict_get", 1, dict)) return NULL;
    return at_key(dict, &MODULE_DICT, "ct_module_dict_get", key);
}
int ct_module_dict_len(const ct_module *dict) {
    if (!ct_alive("ct_module_dict_len", 1, dict)) return -1;
    return length(dict, &MODULE_DICT, "ct_module_dict_len");
}
const char *ct_module_dict_key(const ct_module *dict, int i) {
    if (!ct_alive("ct_module_dict_key", 1, dict)) return NULL;
    slot *s = at_index(dict, &MODULE_DICT, "ct_module_dict_key", i);
    return s ? s->name : NULL;
}

/* ---- ParameterList / ParameterDict ----------------------------------------- */

/* "3x4" (empty for a 0-d tensor), as PyTorch prints sizes in these reprs. */
static void size_str(const ct_tensor *t, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = 0;
    for (int d = 0; d < ct_ndim(t) && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, d ? "x%lld" : "%lld", (long long)ct_size(t, d));
}

/* torch.float32 / torch.FloatTensor: ParameterList prints the first, ParameterDict
 * (PyTorch 1.13) the second. */
static const char *torch_dtype(ct_dtype dt, bool legacy) {
    switch (dt) {
    case CT_F32: return legacy ? "torch.FloatTensor" : "torch.float32";
    case CT_F64: return legacy ? "torch.DoubleTensor" : "torch.float64";
    case CT_F16: return legacy ? "torch.HalfTensor" : "torch.float16";
    case CT_BF16: return legacy ? "torch.BFloat16Tensor" : "torch.bfloat16";
    default: return ct_dtype_name(dt);
    }
}

static void params_repr(const ct_module *m, char *buf, size_t size, bool legacy) {
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < m->params.len && n < size; i++) {
        char sz[128];
        size_str(m->params.items[i].obj, sz, sizeof sz);
        n += (size_t)snprintf(buf + n, size - n, "%s  (%s): Parameter containing: [%s of size %s]",
                              i ? "\n" : "", m->params.items[i].name,
                              torch_dtype(ct_dtype_of(m->params.items[i].obj), legacy), sz);
    }
}
static void param_list_repr(const ct_module *m, char *buf, size_t size) { params_repr(m, buf, size, false); }
static void param_dict_repr(const ct_module *m, char *buf, size_t size) { params_repr(m, buf, size, true); }

ct_module *ct_parameter_list(int n, ct_tensor *const *params) {
    if (!ct_all_alive("ct_parameter_list", 2, params, n)) return NULL;
    for (int i = 0; i < n; i++)
        if (!params || !params[i]) return NULL;
    ct_module *m = ct_module_new(&PARAMETER_LIST, 0);
    for (int i = 0; m && i < n; i++)
        if (!ct_parameter_list_append(m, params[i])) {
            ct_layer_discard(m);
            return NULL;
        }
    return m;
}

ct_tensor *ct_parameter_list_append(ct_module *list, ct_tensor *p) {
    if (!ct_alive("ct_parameter_list_append", 1, list) ||
        !ct_alive("ct_parameter_list_append", 2, p))
        return NULL;
    if (!is(list, &PARAMETER_LIST, "ct_parameter_list_append") || !p) return NULL;
    char name[24];
    snprintf(name, sizeof name, "%d", list->params.len);
    return ct_module_add_parameter(list, name, p);
}

ct_tensor *ct_parameter_list_get(ct_module *list, int i) {
    if (!ct_alive("ct_parameter_list_get", 1, list)) return NULL;
    slot *s = at_index(list, &PARAMETER_LIST, "ct_parameter_list_get", i);
    return s ? s->obj : NULL;
}
int ct_parameter_list_len(const ct_module *list) {
    if (!ct_alive("ct_parameter_list_len", 1, list)) return -1;
    return length(list, &PARAMETER_LIST, "ct_parameter_list_len");
}

ct_module *ct_parameter_dict(void) { return ct_module_new(&PARAMETER_DICT, 0); }

ct_tensor *ct_parameter_dict_set(ct_module *dict, const char *key, ct_tensor *p) {
    if (!ct_alive("ct_parameter_dict_set", 1, dict) || !ct_alive("ct_parameter_dict_set", 3, p))
        return NULL;
    if (!is(dict, &PARAMETER_DICT, "ct_parameter_dict_set") || !p) return NULL;
    if (!find_slot(&dict->params, key)) return ct_module_add_parameter(dict, key, p);
    if (ct_module_set_tensor(dict, key, p)) return NULL;
    ct_scope_unregister(p); /* set_tensor retained p: the dict adopts the caller's reference */
    ct_release(p);
    return p;
}

ct_tensor *ct_parameter_dict_get(ct_module *dict, const char *key) {
    if (!ct_alive("ct_parameter_dict_get", 1, dict)) return NULL;
    return at_key(dict, &PARAMETER_DICT, "ct_parameter_dict_get", key);
}
int ct_parameter_dict_len(const ct_module *dict) {
    if (!ct_alive("ct_parameter_dict_len", 1, dict)) return -1;
    return length(dict, &PARAMETER_DICT, "ct_parameter_dict_len");
}
const char *ct_parameter_dict_key(const ct_module *dict, int i) {
    if (!ct_alive("ct_parameter_dict_key", 1, dict)) return NULL;
    slot *s = at_index(dict, &PARAMETER_DICT, "ct_parameter_dict_key", i);
    return s ? s->name : NULL;
}
