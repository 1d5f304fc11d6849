/* torch.load for .pt / .pth files (ctorch/pt.h): the containers, and the meaning of
 * the few globals the unpickler (io/pickle.h) lets through.
 *
 * The zip format (torch.save since 1.6): <prefix>/data.pkl is the pickle (protocol 2),
 * each storage the entry <prefix>/data/<key> named by its persistent id
 * ('storage', torch.<Type>Storage, key, location, numel); <prefix>/byteorder, when
 * present, says "little" or "big".  The zip itself is read by libzip.
 *
 * The legacy format (before 1.6, and _use_new_zipfile_serialization=False): five
 * pickles in a row — a magic number, the protocol version 1001, a dict of system
 * facts, the object (persistent ids ('storage', type, key, location, numel, None)),
 * the list of storage keys — then for each key in that order an int64 element count
 * and the elements, little-endian.
 *
 * A tensor is _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks):
 * a view of its storage, so tensors sharing a storage share it here too.  Every
 * storage is read whole into one 1-d tensor, after its length has been checked
 * against its entry; each view's extent is checked against the storage (with
 * overflow-checked arithmetic) before it is made.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "ctorch.h"
#include "ctorch/pt.h"
#include "ctorch/serialize.h"
#include "io/pickle.h"
#include "io/json.h"
#include "io/pt_format.h"
#include "core/error.h"
#include "core/mem.h"
#include "io/read_file.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "storages are read as little-endian");

/* The globals the unpickler may name (PT_GLOBAL's i); storage types are
 * G_STORAGE + their dtype. */
enum {
    G_ORDERED_DICT = 1,
    G_REBUILD_TENSOR_V2,
    G_REBUILD_TENSOR,
    G_REBUILD_PARAMETER,
    G_REBUILD_PARAMETER_WITH_STATE,
    G_SIZE,
    G_CODECS_ENCODE,
    G_STORAGE = 64,
};

static const struct {
    const char *name;
    int id;
} allowed[] = {
    {"collections.OrderedDict", G_ORDERED_DICT},
    {"torch._utils._rebuild_tensor_v2", G_REBUILD_TENSOR_V2},
    {"torch._utils._rebuild_tensor", G_REBUILD_TENSOR},
    {"torch._utils._rebuild_parameter", G_REBUILD_PARAMETER},
    {"torch._utils._rebuild_parameter_with_state", G_REBUILD_PARAMETER_WITH_STATE},
    {"torch.Size", G_SIZE},
    {"_codecs.encode", G_CODECS_ENCODE},
};

typedef struct {
    char *key;
    ct_tensor *t;    /* all the storage's elements, 1-d, on the target device */
    int64_t numel;
    bool filled;     /* legacy: its bytes were read */
} storage;

typedef struct {
    const char *where;   /* "ct_load_pt: <file>" */
    ct_device device;
    zip_t *zip;          /* the zip format; NULL for the legacy one */
    char prefix[256];    /* the zip's top folder */
    bool big_endian;
    size_t file_size;    /* the legacy format: no storage is larger */
    storage *st;
    int nst, capst;
} loader;

/* ---- hooks: globals, persistent ids, calls --------------------------------------- */

static ct_pt_value *find_global(void *ctx, const char *module, const char *name) {
    loader *L = ctx;
    char full[520];
    snprintf(full, sizeof full, "%s.%s", module, name);
    int id = 0;
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed && !id; i++)
        if (!strcmp(allowed[i].name, full)) id = allowed[i].id;
    if (!id && !strcmp(module, "torch")) {
        for (int d = 1; d < CT_NUM_DTYPES && !id; d++)
            if (pt_storage_class((ct_dtype)d) && !strcmp(pt_storage_class((ct_dtype)d), name)) id = G_STORAGE + d;
        if (!id && strlen(name) > 7 && !strcmp(name + strlen(name) - 7, "Storage")) {
            pk_error(L->where, "storage type '%s' holds a dtype ctorch does not have", full);
            return NULL;
        }
    }
    if (!id) {
        pk_error(L->where, "refusing to load global '%s' (only tensors, containers and numbers are allowed)", full);
        return NULL;
    }
    ct_pt_value *g = pt_new_str(PT_GLOBAL, full, strlen(full), "ct_load_pt");
    if (g) g->i = id;
    return g;
}

static bool int_item(const ct_pt_value *v, int64_t *out) {
    if (v->kind != CT_PT_INT) return false;
    *out = v->i;
    return true;
}

static storage *find_storage(loader *L, const char *key) {
    for (int i = 0; i < L->nst; i++)
        if (!strcmp(L->st[i].key, key)) return &L->st[i];
    return NULL;
}

static void swap_bytes(void *data, int64_t numel, size_t elem) {
    unsigned char *p = data;
    for (int64_t i = 0; elem > 1 && i < numel; i++, p += elem)
        for (size_t a = 0, b = elem - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* Reads a zip entry of exactly `size` bytes into dst. */
static bool read_entry(loader *L, const char *name, void *dst, uint64_t size) {
    zip_stat_t s;
    zip_int64_t idx = zip_name_locate(L->zip, name, 0);
    if (idx < 0 || zip_stat_index(L->zip, (zip_uint64_t)idx, 0, &s) != 0) {
        pk_error(L->where, "the archive has no entry %s", name);
        return false;
    }
    if (s.size != size) {
        pk_error(L->where, "entry %s holds %llu bytes, expected %llu", name, (unsigned long long)s.size,
                 (unsigned long long)size);
        return false;
    }
    zip_file_t *f = zip_fopen_index(L->zip, (zip_uint64_t)idx, 0);
    if (!f) {
        pk_error(L->where, "cannot read entry %s: %s", name, zip_strerror(L->zip));
        return false;
    }
    uint64_t got = 0;
    while (got < size) {
        zip_int64_t n = zip_fread(f, (char *)dst + got, size - got);
        if (n <= 0) break;
        got += (uint64_t)n;
    }
    char probe;
    bool ok = got == size && zip_fread(f, &probe, 1) == 0; /* at the end, libzip checks the CRC */
    if (!ok) pk_error(L->where, "entry %s is damaged or cut short: %s", name, zip_file_strerror(f));
    zip_fclose(f);
    return ok;
}

/* A new storage of numel elements of dtype, its bytes read from the zip (legacy: later). */
static storage *new_storage(loader *L, const char *key, ct_dtype dtype, int64_t numel) {
    size_t elem = ct_dtype_size(dtype);
    if (numel < 0 || (uint64_t)numel > (L->zip ? UINT64_MAX : L->file_size) / elem) {
        pk_error(L->where, "storage '%s' claims %lld elements, more than the file holds", key, (long long)numel);
        return NULL;
    }
    if (L->nst == L->capst) {
        int cap = L->capst ? 2 * L->capst : 16;
        storage *s = ct_realloc(L->st, sizeof *s * (size_t)cap);
        if (!s) {
            pk_error(L->where, "out of memory");
            return NULL;
        }
        L->st = s;
        L->capst = cap;
    }
    storage *s = &L->st[L->nst];
    *s = (storage){.key = ct_strdup(key), .numel = numel};
    if (!s->key) {
        pk_error(L->where, "out of memory");
        return NULL;
    }
    L->nst++;
    if (L->zip) {
        char name[600];
        snprintf(name, sizeof name, "%s/data/%s", L->prefix, key);
        /* the entry's size bounds the allocation before it is made */
        zip_stat_t zs;
        zip_int64_t idx = zip_name_locate(L->zip, name, 0);
        if (idx >= 0 && zip_stat_index(L->zip, (zip_uint64_t)idx, 0, &zs) == 0 && zs.size != (uint64_t)numel * elem) {
            pk_error(L->where, "entry %s holds %llu bytes, but its storage needs %lld elements of %s", name,
                     (unsigned long long)zs.size, (long long)numel, ct_dtype_name(dtype));
            return NULL;
        }
        if (idx < 0) {
            pk_error(L->where, "the archive has no entry %s", name);
            return NULL;
        }
    }
    s->t = (ct_empty_with)(CT_SHAPE(numel), (ct_tensor_options){.dtype = dtype});
    if (!s->t) return NULL;
    ct_scope_unregister(s->t); /* the loader's until it finishes */
    if (L->zip) {
        char name[600];
        snprintf(name, sizeof name, "%s/data/%s", L->prefix, key);
        if (!read_entry(L, name, ct_data_ptr(s->t), (uint64_t)numel * elem)) return NULL;
        s->filled = true;
    }
    return s;
}

/* Checks the bytes of a filled storage and moves it to the target device. */
static bool finish_storage(loader *L, storage *s) {
    ct_dtype dtype = ct_dtype_of(s->t);
    if (L->big_endian) swap_bytes(ct_data_ptr(s->t), s->numel, ct_dtype_size(dtype));
    if (dtype == CT_BOOL) {
        const unsigned char *b = ct_data_ptr(s->t);
        for (int64_t i = 0; i < s->numel; i++)
            if (b[i] > 1) {
                pk_error(L->where, "storage '%s' has a bool that is neither 0 nor 1", s->key);
                return false;
            }
    }
    if (L->zip && L->device.type && L->device.type != CT_DEV_CPU) { /* views are made after this */
        ct_tensor *t = (ct_to_with)(s->t, (ct_to_options){.device = L->device});
        if (!t) return false;
        ct_scope_unregister(t);
        ct_release(s->t);
        s->t = t;
    }
    return true;
}

static ct_pt_value *persistent_load(void *ctx, const ct_pt_value *pid) {
    loader *L = ctx;
    int want = L->zip ? 5 : 6;
    if (pid->kind != CT_PT_TUPLE || pid->n != want || pid->items[0]->kind != CT_PT_STR ||
        strcmp(pid->items[0]->str, "storage")) {
        pk_error(L->where, "a persistent id is not ('storage', type, key, location, numel%s)", L->zip ? "" : ", view");
        return NULL;
    }
    const ct_pt_value *type = pid->items[1], *key = pid->items[2], *loc = pid->items[3];
    int64_t numel;
    if (type->kind != PT_GLOBAL || type->i <= G_STORAGE || key->kind != CT_PT_STR || strlen(key->str) != key->len ||
        !key->len || key->len > 200 || strchr(key->str, '/') || loc->kind != CT_PT_STR ||
        !int_item(pid->items[4], &numel)) {
        pk_error(L->where, "a storage's persistent id has the wrong types (a storage type, a key, a location, a count)");
        return NULL;
    }
    if (!L->zip && pid->items[5]->kind != CT_PT_NONE) {
        pk_error(L->where, "storage '%s' is a view of another storage (the legacy format's storage views are not "
                 "supported)", key->str);
        return NULL;
    }
    ct_dtype dtype = (ct_dtype)(type->i - G_STORAGE);
    storage *s = find_storage(L, key->str);
    if (s && (ct_dtype_of(s->t) != dtype || s->numel != numel)) {
        pk_error(L->where, "storage '%s' is named twice with different types or sizes", key->str);
        return NULL;
    }
    if (!s) {
        s = new_storage(L, key->str, dtype, numel);
        if (!s || (L->zip && !finish_storage(L, s))) return NULL;
    }
    ct_pt_value *v = pt_new_str(PT_STORAGE, key->str, key->len, "ct_load_pt");
    if (v) v->tensor = ct_retain(s->t);
    return v;
}

/* A tuple of n ints into out (the sizes or strides of a tensor). */
static bool dims(loader *L, const ct_pt_value *v, const char *what, ct_shape *out) {
    if (v->kind != CT_PT_TUPLE || v->n > CT_MAX_DIMS) {
        pk_error(L->where, "a tensor's %s is not a tuple of at most %d ints", what, CT_MAX_DIMS);
        return false;
    }
    out->ndim = (int)v->n;
    for (int64_t i = 0; i < v->n; i++)
        if (!int_item(v->items[i], &out->d[i]) || out->d[i] < 0) {
            pk_error(L->where, "a tensor's %s holds something other than a non-negative int", what);
            return false;
        }
    return true;
}

/* A view of storage sv: the geometry checked against the storage first. */
static ct_pt_value *rebuild_tensor(loader *L, const ct_pt_value *sv, const ct_pt_value *offv, const ct_pt_value *sizev,
                                   const ct_pt_value *stridev, bool requires_grad) {
    ct_shape size, stride;
    int64_t offset;
    if (sv->kind != PT_STORAGE || !int_item(offv, &offset) || offset < 0) {
        pk_error(L->where, "a tensor is rebuilt from something other than a storage and an offset");
        return NULL;
    }
    if (!dims(L, sizev, "size", &size) || !dims(L, stridev, "stride", &stride)) return NULL;
    if (size.ndim != stride.ndim) {
        pk_error(L->where, "a tensor has %d sizes but %d strides", size.ndim, stride.ndim);
        return NULL;
    }
    int64_t avail = ct_numel(sv->tensor), last = offset, numel = 1;
    bool overflow = false;
    for (int d = 0; d < size.ndim; d++) {
        int64_t span;
        overflow |= __builtin_mul_overflow(numel, size.d[d], &numel);
        if (size.d[d]) overflow |= __builtin_mul_overflow(size.d[d] - 1, stride.d[d], &span) ||
                                   __builtin_add_overflow(last, span, &last);
    }
    if (overflow || (numel > 0 ? last >= avail : offset > avail)) {
        pk_error(L->where, "a tensor's offset, sizes and strides reach beyond its storage '%s' of %lld elements",
                 sv->str, (long long)avail);
        return NULL;
    }
    ct_pt_value *v = NULL;
    CT_SCOPE {
        ct_tensor *t = ct_detach(ct_as_strided(sv->tensor, size, stride, offset));
        if (t && requires_grad && ct_set_requires_grad(t, true) != 0) t = NULL;
        v = t ? pt_new(CT_PT_TENSOR, "ct_load_pt") : NULL;
        if (v) v->tensor = ct_retain(t);
    }
    return v;
}

static bool bool_item(const ct_pt_value *v) { return v->kind == CT_PT_BOOL && v->b; }

/* _codecs.encode(s, "latin1"): how protocol 2 pickles bytes. */
static ct_pt_value *latin1(loader *L, const ct_pt_value *s, const ct_pt_value *enc) {
    if (s->kind != CT_PT_STR || enc->kind != CT_PT_STR || (strcmp(enc->str, "latin1") && strcmp(enc->str, "latin-1"))) {
        pk_error(L->where, "_codecs.encode is allowed only as protocol 2 pickles bytes: (str, 'latin1')");
        return NULL;
    }
    ct_pt_value *b = pt_new_str(CT_PT_BYTES, s->str, s->len, "ct_load_pt");
    if (!b) return NULL;
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s->str, *end = p + s->len; p < end;) {
        int k = utf8_len(p, end);
        unsigned cp = k == 1 ? p[0] : k == 2 ? (unsigned)(p[0] & 0x1F) << 6 | (p[1] & 0x3F) : 256;
        if (cp > 255) {
            pk_error(L->where, "_codecs.encode: a character beyond latin-1");
            ct_object_release(b);
            return NULL;
        }
        b->str[n++] = (char)cp;
        p += k;
    }
    b->str[n] = 0;
    b->len = n;
    return b;
}

static ct_pt_value *reduce(void *ctx, const ct_pt_value *f, const ct_pt_value *args) {
    loader *L = ctx;
    ct_pt_value *const *a = args->items;
    int64_t n = args->n;
    switch (f->i) {
    case G_ORDERED_DICT:
        if (n == 0) {
            ct_pt_value *d = pt_new(CT_PT_DICT, "ct_load_pt");
            if (d) d->b = true;
            return d;
        }
        break;
    case G_REBUILD_TENSOR_V2: /* (storage, offset, size, stride, requires_grad, hooks[, metadata]) */
        if (n == 6 || n == 7) return rebuild_tensor(L, a[0], a[1], a[2], a[3], bool_item(a[4]));
        break;
    case G_REBUILD_TENSOR: /* (storage, offset, size, stride) */
        if (n == 4) return rebuild_tensor(L, a[0], a[1], a[2], a[3], false);
        break;
    case G_REBUILD_PARAMETER: /* (tensor, requires_grad, hooks) */
    case G_REBUILD_PARAMETER_WITH_STATE: /* (tensor, requires_grad, hooks, state) */
        if (n == (f->i == G_REBUILD_PARAMETER ? 3 : 4) && a[0]->kind == CT_PT_TENSOR) {
            ct_pt_value *v = pt_new(CT_PT_TENSOR, "ct_load_pt");
            if (v) v->tensor = ct_retain(a[0]->tensor);
            if (v && ct_requires_grad(v->tensor) != bool_item(a[1]) && ct_set_requires_grad(v->tensor, bool_item(a[1]))) {
                ct_object_release(v);
                return NULL;
            }
            return v;
        }
        break;
    case G_SIZE:
        if (n == 1 && a[0]->kind == CT_PT_TUPLE) return ct_retain(a[0]);
        break;
    case G_CODECS_ENCODE:
        if (n == 2) return latin1(L, a[0], a[1]);
        break;
    default: break;
    }
    pk_error(L->where, "%s is called with arguments it does not take (%lld of them)", f->str, (long long)n);
    return NULL;
}

static bool build(void *ctx, const ct_pt_value *obj, const ct_pt_value *state) {
    loader *L = ctx;
    (void)state; /* an OrderedDict's _metadata (module versions), a Parameter's attributes */
    if (obj->kind == CT_PT_DICT || obj->kind == CT_PT_TENSOR) return true;
    pk_error(L->where, "BUILD (setting an object's state) on a %s is not allowed", ct_pt_kind_name(ct_pt_kind_of(obj)));
    return false;
}

static pk_hooks hooks_for(loader *L) {
    return (pk_hooks){.ctx = L, .find_global = find_global, .reduce = reduce, .persistent_load = persistent_load,
                      .build = build};
}

/* ---- the two containers --------------------------------------------------------- */

static ct_pt_value *load_zip(loader *L, zip_source_t *src) {
    zip_error_t ze;
    zip_error_init(&ze);
    L->zip = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    if (!L->zip) {
        pk_error(L->where, "not a readable zip archive: %s", zip_error_strerror(&ze));
        zip_error_fini(&ze);
        zip_source_free(src);
        return NULL;
    }
    zip_error_fini(&ze);
    ct_pt_value *root = NULL;
    zip_int64_t n = zip_get_num_entries(L->zip, 0);
    for (zip_int64_t i = 0; i < n && !L->prefix[0]; i++) {
        const char *name = zip_get_name(L->zip, (zip_uint64_t)i, 0), *slash = name ? strchr(name, '/') : NULL;
        if (slash && slash > name && (size_t)(slash - name) < sizeof L->prefix && !strcmp(slash, "/data.pkl")) {
            memcpy(L->prefix, name, (size_t)(slash - name));
            L->prefix[slash - name] = 0;
        }
    }
    char name[300];
    zip_stat_t s;
    snprintf(name, sizeof name, "%s/byteorder", L->prefix);
    char order[8] = {0};
    if (!L->prefix[0]) {
        pk_error(L->where, "the zip archive has no <name>/data.pkl (not a file torch.save wrote)");
    } else if (zip_stat(L->zip, name, 0, &s) == 0 && s.size < sizeof order &&
               !read_entry(L, name, order, s.size)) {
    } else if (order[0] && strcmp(order, "little") && strcmp(order, "big")) {
        pk_error(L->where, "%s says '%s', neither little nor big", name, order);
    } else {
        L->big_endian = !strcmp(order, "big");
        snprintf(name, sizeof name, "%s/data.pkl", L->prefix);
        unsigned char *pkl = NULL;
        /* deflate expands at most ~1032 times: a larger claim is a lie */
        bool sane = zip_stat(L->zip, name, 0, &s) == 0 && s.size < (1ull << 32) &&
                    (s.comp_method == ZIP_CM_STORE || s.size <= s.comp_size * 1100 + 4096);
        if (!sane) pk_error(L->where, "entry %s claims an impossible size", name);
        else if (!(pkl = ct_malloc(s.size + 1))) pk_error(L->where, "out of memory for data.pkl");
        else if (read_entry(L, name, pkl, s.size)) {
            pk_hooks h = hooks_for(L);
            size_t used;
            root = pk_load(pkl, s.size, &used, &h, L->where);
        }
        free(pkl);
    }
    zip_discard(L->zip); /* frees src too */
    L->zip = NULL;
    return root;
}

static const unsigned char legacy_magic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                             0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};

static ct_pt_value *load_legacy(loader *L, const unsigned char *data, size_t size) {
    pk_hooks h = hooks_for(L);
    size_t at = sizeof legacy_magic, used;
    L->file_size = size;
    ct_pt_value *version = pk_load(data + at, size - at, &used, &h, L->where), *info = NULL, *root = NULL, *keys = NULL;
    bool ok = version && (version->kind == CT_PT_INT && version->i == 1001);
    if (version && !ok) pk_error(L->where, "the legacy format's protocol version is not 1001");
    if (ok) {
        at += used;
        ok = (info = pk_load(data + at, size - at, &used, &h, L->where)) != NULL;
    }
    if (ok) {
        at += used;
        ok = (root = pk_load(data + at, size - at, &used, &h, L->where)) != NULL;
    }
    if (ok) {
        at += used;
        ok = (keys = pk_load(data + at, size - at, &used, &h, L->where)) != NULL;
        if (ok && keys->kind != CT_PT_LIST) ok = (pk_error(L->where, "the legacy format's storage keys are not a list"), false);
        at += used;
    }
    for (int64_t k = 0; ok && k < keys->n; k++) {
        storage *s = keys->items[k]->kind == CT_PT_STR ? find_storage(L, keys->items[k]->str) : NULL;
        if (!s || s->filled) {
            pk_error(L->where, "storage key %lld names no storage of the object, or one twice", (long long)k);
            ok = false;
            break;
        }
        size_t bytes = (size_t)s->numel * ct_dtype_size(ct_dtype_of(s->t));
        int64_t count;
        if (size - at < 8 || (memcpy(&count, data + at, 8), count != s->numel) || size - at - 8 < bytes) {
            pk_error(L->where, "storage '%s' is cut short or its count (%lld elements) is wrong", s->key,
                     (long long)s->numel);
            ok = false;
            break;
        }
        memcpy(ct_data_ptr(s->t), data + at + 8, bytes);
        at += 8 + bytes;
        s->filled = true;
        ok = finish_storage(L, s);
    }
    for (int i = 0; ok && i < L->nst; i++)
        if (!L->st[i].filled) ok = (pk_error(L->where, "storage '%s' has no data", L->st[i].key), false);
    ct_object_release(version);
    ct_object_release(info);
    ct_object_release(keys);
    if (!ok) {
        ct_object_release(root);
        return NULL;
    }
    return root;
}

/* ---- the public loaders ------------------------------------------------------- */

static ct_pt_value *pick_key(const char *where, ct_pt_value *root, const char *key) {
    if (!root || !key) return root;
    ct_pt_value *v = root->kind == CT_PT_DICT ? (ct_pt_get)(root, key) : NULL;
    if (!v) pk_error(where, "the saved object has no entry '%s' (it is a %s%s)", key,
                     ct_pt_kind_name(ct_pt_kind_of(root)), root->kind == CT_PT_DICT ? " without that key" : "");
    else ct_retain(v);
    ct_object_release(root);
    return v;
}

static ct_pt_value *finish(loader *L, ct_pt_value *root, ct_pt_load_options o) {
    for (int i = 0; i < L->nst; i++) {
        free(L->st[i].key);
        ct_release(L->st[i].t);
    }
    free(L->st);
    root = pick_key(L->where, root, o.key);
    return root ? ct_scope_register(root) : NULL;
}

static ct_pt_value *from_memory(const char *where, const void *data, size_t size, ct_pt_load_options o) {
    loader L = {.where = where, .device = o.map_location};
    const unsigned char *b = data;
    ct_pt_value *root = NULL;
    if (b && size >= 4 && !memcmp(b, "PK\x03\x04", 4)) {
        zip_error_t ze;
        zip_error_init(&ze);
        zip_source_t *src = zip_source_buffer_create(data, size, 0, &ze);
        zip_error_fini(&ze);
        if (!src) pk_error(where, "out of memory");
        else root = load_zip(&L, src);
    } else if (b && size >= sizeof legacy_magic && !memcmp(b, legacy_magic, sizeof legacy_magic)) {
        /* its tensors are made before their storages are read: they stay on the cpu */
        if (o.map_location.type && o.map_location.type != CT_DEV_CPU)
            pk_error(where, "the legacy format loads onto the cpu only (map_location is not supported for it)");
        else root = load_legacy(&L, b, size);
    } else if (b && size > 262 && !memcmp(b + 257, "ustar", 5)) {
        pk_error(where, "a tar archive: PyTorch's tar format (before 0.4) is not supported; load it in PyTorch "
                 "and save it again");
    } else {
        pk_error(where, "not a PyTorch file (neither torch.save's zip archive nor its legacy format)");
    }
    return finish(&L, root, o);
}

ct_pt_value *ct_pt_from_buffer(const void *data, size_t size, ct_pt_load_options o) {
    return from_memory("ct_load_pt: buffer", data, size, o);
}

ct_pt_value *ct_load_pt_with(const char *path, ct_pt_load_options o) {
    if (!path) {
        ct_error("ct_load_pt: path is NULL");
        return NULL;
    }
    char where[4200];
    snprintf(where, sizeof where, "ct_load_pt: %s", path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        pk_error(where, "cannot open: %s", strerror(errno));
        return NULL;
    }
    unsigned char head[4] = {0};
    size_t n = fread(head, 1, 4, f);
    if (n == 4 && !memcmp(head, "PK\x03\x04", 4)) { /* libzip reads the file where it lies */
        fclose(f);
        loader L = {.where = where, .device = o.map_location};
        zip_error_t ze;
        zip_error_init(&ze);
        zip_source_t *src = zip_source_file_create(path, 0, -1, &ze);
        if (!src) pk_error(where, "cannot open: %s", zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return finish(&L, src ? load_zip(&L, src) : NULL, o);
    }
    fclose(f);
    size_t size = 0;
    unsigned char *data = ct_read_file(where, path, &size);
    if (!data) return NULL;
    ct_pt_value *v = from_memory(where, (const char *)data, size, o);
    free(data);
    return v;
}

ct_state_dict *ct_load_pt_state_dict_with(const char *path, ct_pt_load_options o) {
    ct_state_dict *sd = NULL;
    CT_SCOPE {
        ct_pt_value *v = ct_load_pt_with(path, o);
        sd = v ? ct_pt_state_dict(v) : NULL;
        if (sd) ct_keep(sd);
    }
    return sd;
}

int ct_load_state_dict_file_with(ct_module *m, const char *path, ct_load_options o) {
    if (!ct_alive("ct_load_state_dict_file", 1, m)) return -1;
    if (!m || !path) {
        ct_error("ct_load_state_dict_file: module and path must be given");
        return -1;
    }
    unsigned char head[sizeof legacy_magic] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        ct_error("ct_load_state_dict_file: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    bool pt = (n >= 4 && !memcmp(head, "PK\x03\x04", 4)) || (n == sizeof head && !memcmp(head, legacy_magic, n));
    int rc = -1;
    CT_SCOPE {
        ct_state_dict *sd = pt ? ct_load_pt_state_dict_with(path, (ct_pt_load_options){0})
                               : ct_load_safetensors_with(path, (ct_load_file_options){0});
        if (sd) rc = ct_load_state_dict_with(m, sd, o);
    }
    return rc;
}
