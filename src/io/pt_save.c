/* torch.save for ctorch (ctorch/pt.h): a pickle of protocol 2, as PyTorch writes it,
 * in a zip archive written through libzip (entries stored, not compressed).
 *
 *     archive/data.pkl    the object; a tensor is
 *                         _rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
 *                         OrderedDict()), its storage the persistent id
 *                         ('storage', torch.FloatStorage, "<key>", "cpu", numel)
 *     archive/byteorder   "little"
 *     archive/data/<key>  each storage's bytes
 *     archive/version     "3\n", the format version PyTorch 1.6 and later read
 *
 * Tensors on the cpu that share a storage (views, or a state dict's aliases) are
 * written with one storage, so PyTorch loads them sharing it again.  The archive is
 * built in memory, then written with an atomic rename (io/atomic_file.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "ctorch.h"
#include "ctorch/pt.h"
#include "io/atomic_file.h"
#include "io/pickle.h"
#include "io/pt_format.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/tensor_impl.h"

typedef struct {
    const ct_storage *storage; /* NULL: a copy that shares with nothing */
    ct_dtype dtype;
    ct_tensor *flat;           /* every element of the storage, 1-d, on the cpu */
} saved_storage;

typedef struct {
    const char *fn;
    unsigned char *buf;
    size_t len, cap;
    bool ok;
    saved_storage *st;
    int nst, capst;
} writer;

static void put(writer *w, const void *data, size_t n) {
    if (!w->ok) return;
    if (w->len + n > w->cap) {
        size_t cap = (w->len + n) * 2 + 256;
        unsigned char *b = ct_realloc(w->buf, cap);
        if (!b) {
            ct_error("%s: out of memory writing the pickle", w->fn);
            w->ok = false;
            return;
        }
        w->buf = b;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, data, n);
    w->len += n;
}

static void op(writer *w, unsigned char c) { put(w, &c, 1); }

static void put_le(writer *w, uint64_t v, int n) {
    unsigned char b[8];
    for (int i = 0; i < n; i++) b[i] = (unsigned char)(v >> (8 * i));
    put(w, b, (size_t)n);
}

static void put_int(writer *w, int64_t v) {
    if (v >= 0 && v < 256) {
        op(w, 'K'); /* BININT1 */
        put_le(w, (uint64_t)v, 1);
    } else if (v >= 0 && v < 65536) {
        op(w, 'M'); /* BININT2 */
        put_le(w, (uint64_t)v, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        op(w, 'J'); /* BININT */
        put_le(w, (uint64_t)v, 4);
    } else {
        op(w, 0x8a); /* LONG1, 8 bytes of two's complement */
        put_le(w, 8, 1);
        put_le(w, (uint64_t)v, 8);
    }
}

static void put_str(writer *w, const char *s, size_t n) {
    op(w, 'X'); /* BINUNICODE */
    put_le(w, n, 4);
    put(w, s, n);
}

static void put_global(writer *w, const char *module, const char *name) {
    op(w, 'c');
    put(w, module, strlen(module));
    op(w, '\n');
    put(w, name, strlen(name));
    op(w, '\n');
}

static void put_ordered_dict(writer *w) { /* OrderedDict(): GLOBAL, (), REDUCE */
    put_global(w, "collections", "OrderedDict");
    op(w, ')');
    op(w, 'R');
}

static void put_dims(writer *w, int n, const int64_t *d) {
    op(w, '(');
    for (int i = 0; i < n; i++) put_int(w, d[i]);
    op(w, 't');
}

/* The storage t is written with (added when new): its index, t's offset and strides in
 * it into *offset / strides; -1 with an error. */
static int storage_of(writer *w, ct_tensor *t, int64_t *offset, int64_t *strides) {
    ct_dtype dtype = ct_dtype_of(t);
    if (!pt_storage_class(dtype)) {
        ct_error("%s: a tensor of dtype %s cannot be written (PyTorch's .pt has no storage type for it)", w->fn,
                 ct_dtype_name(dtype));
        return -1;
    }
    if (ct_is_meta(t)) {
        ct_error("%s: a tensor on the meta device has no data to save", w->fn);
        return -1;
    }
    bool on_cpu = ct_device_of(t).type == CT_DEV_CPU;
    const ct_storage *s = on_cpu ? t->storage : NULL;
    for (int i = 0; s && i < w->nst; i++)
        if (w->st[i].storage == s && w->st[i].dtype == dtype) {
            *offset = ct_storage_offset(t);
            for (int d = 0; d < ct_ndim(t); d++) strides[d] = ct_stride(t, d);
            return i;
        }
    if (w->nst == w->capst) {
        int cap = w->capst ? 2 * w->capst : 16;
        saved_storage *st = ct_realloc(w->st, sizeof *st * (size_t)cap);
        if (!st) {
            ct_error("%s: out of memory", w->fn);
            return -1;
        }
        w->st = st;
        w->capst = cap;
    }
    ct_tensor *flat;
    if (s) { /* the whole storage, as PyTorch writes it */
        flat = ct_as_strided(t, CT_SHAPE((int64_t)(s->nbytes / ct_dtype_size(dtype))), CT_SHAPE(1), 0);
        *offset = ct_storage_offset(t);
        for (int d = 0; d < ct_ndim(t); d++) strides[d] = ct_stride(t, d);
    } else { /* another device: a cpu copy of just t's elements */
        ct_tensor *c = NULL;
        CT_SCOPE {
            c = ct_contiguous(ct_to(t, .device = CT_CPU));
            c = c ? ct_keep(ct_flatten(c, 0, -1)) : NULL;
        }
        flat = c;
        *offset = 0;
        for (int d = ct_ndim(t) - 1, step = 1; d >= 0; step *= (int)ct_size(t, d), d--) strides[d] = step;
    }
    if (!flat) return -1;
    ct_scope_unregister(flat); /* held until the archive is written */
    w->st[w->nst] = (saved_storage){s, dtype, flat};
    return w->nst++;
}

static void put_tensor(writer *w, ct_tensor *t) {
    int64_t offset = 0, strides[CT_MAX_DIMS], sizes[CT_MAX_DIMS];
    int k = storage_of(w, t, &offset, strides);
    if (k < 0) {
        w->ok = false;
        return;
    }
    for (int d = 0; d < ct_ndim(t); d++) sizes[d] = ct_size(t, d);
    char key[24];
    snprintf(key, sizeof key, "%d", k);
    put_global(w, "torch._utils", "_rebuild_tensor_v2");
    op(w, '(');
    op(w, '('); /* the persistent id */
    put_str(w, "storage", 7);
    put_global(w, "torch", pt_storage_class(w->st[k].dtype));
    put_str(w, key, strlen(key));
    put_str(w, "cpu", 3);
    put_int(w, ct_numel(w->st[k].flat));
    op(w, 't');
    op(w, 'Q'); /* BINPERSID */
    put_int(w, offset);
    put_dims(w, ct_ndim(t), sizes);
    put_dims(w, ct_ndim(t), strides);
    op(w, ct_requires_grad(t) ? 0x88 : 0x89);
    put_ordered_dict(w); /* backward hooks: none */
    op(w, 't');
    op(w, 'R');
}

static void put_value(writer *w, const ct_pt_value *v, int depth) {
    if (!w->ok) return;
    if (depth > PK_MAX_DEPTH) {
        ct_error("%s: containers nest deeper than %d levels", w->fn, PK_MAX_DEPTH);
        w->ok = false;
        return;
    }
    switch (v->kind) {
    case CT_PT_NONE: op(w, 'N'); break;
    case CT_PT_BOOL: op(w, v->b ? 0x88 : 0x89); break;
    case CT_PT_INT: put_int(w, v->i); break;
    case CT_PT_FLOAT: {
        uint64_t u;
        memcpy(&u, &v->f, 8);
        op(w, 'G'); /* BINFLOAT, big-endian */
        for (int i = 7; i >= 0; i--) op(w, (unsigned char)(u >> (8 * i)));
        break;
    }
    case CT_PT_STR: put_str(w, v->str, v->len); break;
    case CT_PT_BYTES: { /* protocol 2: _codecs.encode(<the bytes as latin-1 text>, "latin1") */
        put_global(w, "_codecs", "encode");
        op(w, 'X');
        size_t n = 0;
        for (size_t i = 0; i < v->len; i++) n += (unsigned char)v->str[i] < 0x80 ? 1 : 2;
        put_le(w, n, 4);
        for (size_t i = 0; i < v->len; i++) {
            unsigned char c = (unsigned char)v->str[i];
            if (c < 0x80) op(w, c);
            else {
                op(w, (unsigned char)(0xC0 | c >> 6));
                op(w, (unsigned char)(0x80 | (c & 0x3F)));
            }
        }
        put_str(w, "latin1", 6);
        op(w, 0x86);
        op(w, 'R');
        break;
    }
    case CT_PT_TENSOR: put_tensor(w, v->tensor); break;
    case CT_PT_LIST:
        op(w, ']');
        if (v->n) {
            op(w, '(');
            for (int64_t i = 0; i < v->n; i++) put_value(w, v->items[i], depth + 1);
            op(w, 'e');
        }
        break;
    case CT_PT_TUPLE:
        op(w, '(');
        for (int64_t i = 0; i < v->n; i++) put_value(w, v->items[i], depth + 1);
        op(w, 't');
        break;
    case CT_PT_DICT:
        if (v->b) put_ordered_dict(w);
        else op(w, '}');
        if (v->n) {
            op(w, '(');
            for (int64_t i = 0; i < v->n; i++) {
                put_value(w, v->keys[i], depth + 1);
                put_value(w, v->items[i], depth + 1);
            }
            op(w, 'u');
        }
        break;
    default:
        ct_error("%s: a value of an unknown kind", w->fn);
        w->ok = false;
    }
}

/* Adds data[0..n) (alive until zip_close) as a stored entry. */
static bool add_entry(writer *w, zip_t *za, const char *name, const void *data, size_t n) {
    zip_source_t *s = zip_source_buffer(za, data, n, 0);
    zip_int64_t idx = s ? zip_file_add(za, name, s, ZIP_FL_ENC_UTF_8) : -1;
    if (idx < 0) {
        zip_source_free(s);
        ct_error("%s: cannot add %s to the archive: %s", w->fn, name, zip_strerror(za));
        return false;
    }
    /* stored: PyTorch reads entries in place; a fixed time keeps the bytes reproducible */
    zip_set_file_compression(za, (zip_uint64_t)idx, ZIP_CM_STORE, 0);
    zip_file_set_mtime(za, (zip_uint64_t)idx, 315532800 + 86400, 0);
    return true;
}

/* Writes the archive for the pickle in w to path. */
static int write_archive(writer *w, const char *path) {
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *mem = zip_source_buffer_create(NULL, 0, 0, &ze);
    zip_t *za = mem ? zip_open_from_source(mem, ZIP_TRUNCATE, &ze) : NULL;
    if (!za) {
        ct_error("%s: cannot make a zip archive: %s", w->fn, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        zip_source_free(mem);
        return -1;
    }
    zip_error_fini(&ze);
    zip_source_keep(mem); /* its bytes are read after zip_close */
    static const char little[] = "little", version[] = "3\n";
    bool ok = add_entry(w, za, "archive/data.pkl", w->buf, w->len) &&
              add_entry(w, za, "archive/byteorder", little, 6);
    char (*names)[32] = ct_malloc(sizeof *names * ((size_t)w->nst + 1));
    ok = ok && names;
    for (int i = 0; ok && i < w->nst; i++) {
        snprintf(names[i], sizeof names[i], "archive/data/%d", i);
        ok = add_entry(w, za, names[i], ct_data_ptr(w->st[i].flat),
                       (size_t)ct_numel(w->st[i].flat) * ct_dtype_size(w->st[i].dtype));
    }
    ok = ok && add_entry(w, za, "archive/version", version, 2);
    if (ok && zip_close(za) != 0) {
        ct_error("%s: cannot write the zip archive: %s", w->fn, zip_strerror(za));
        ok = false;
    }
    if (!ok) zip_discard(za);
    free(names);
    ct_atomic_file f;
    if (ok && ct_atomic_open(&f, path, w->fn) == 0) {
        ok = zip_source_open(mem) == 0;
        char chunk[1 << 16];
        zip_int64_t n;
        while (ok && (n = zip_source_read(mem, chunk, sizeof chunk)) > 0) ok = ct_atomic_write(&f, chunk, (size_t)n);
        zip_source_close(mem);
        zip_source_free(mem);
        return ct_atomic_commit(&f, ok);
    }
    zip_source_free(mem);
    return -1;
}

static int save(const char *fn, const ct_pt_value *v, const char *path) {
    if (!path) {
        ct_error("%s: path is NULL", fn);
        return -1;
    }
    writer w = {.fn = fn, .ok = true};
    op(&w, 0x80); /* PROTO 2 */
    op(&w, 2);
    put_value(&w, v, 0);
    op(&w, '.');
    int rc = w.ok ? write_archive(&w, path) : -1;
    for (int i = 0; i < w.nst; i++) ct_release(w.st[i].flat);
    free(w.st);
    free(w.buf);
    return rc;
}

int ct_save_pt_value(const ct_pt_value *v, const char *path) {
    if (!ct_alive("ct_save_pt_value", 1, v)) return -1;
    if (!v) {
        ct_error("ct_save_pt_value: the value is NULL");
        return -1;
    }
    return save("ct_save_pt_value", v, path);
}

int ct_save_pt(const ct_state_dict *sd, const char *path) {
    if (!ct_alive("ct_save_pt", 1, sd)) return -1;
    if (!sd) {
        ct_error("ct_save_pt: the state dict is NULL");
        return -1;
    }
    int rc = -1;
    CT_SCOPE {
        ct_pt_value *v = ct_pt_from_state_dict(sd);
        if (v) rc = save("ct_save_pt", v, path);
    }
    return rc;
}
