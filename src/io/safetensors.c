/* The safetensors format: writing with an atomic rename, and a loader that treats the
 * file as hostile (every length, offset and name is checked before use).
 *
 * Note [Tensor checksums]: ctorch's extension of the format.  The header's
 * "__metadata__" holds "ctorch.crc32": the CRC-32 (zlib's crc32, the gzip polynomial)
 * of each tensor's data bytes, 8 lower-case hex digits each, separated by spaces, in
 * the order of the tensors' data offsets.  Other readers ignore it (metadata is free
 * text); ctorch verifies it on load, so a flipped data byte is an error, and loads
 * files without it as before.  The key is not shown in the metadata a load returns. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "ctorch.h"
#include "ctorch/serialize.h"
#include "core/error.h"
#include "core/object.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/read_file.h"
#include "io/safetensors.h"
#include "core/mem.h"
#include "core/strbuf.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian");

#define MAX_HEADER (100u << 20) /* as the reference implementation */
#define CRC_KEY "ctorch.crc32"

static const struct {
    const char *name;
    ct_dtype dtype;
} dtypes[] = {
    {"F64", CT_F64}, {"F32", CT_F32}, {"F16", CT_F16}, {"BF16", CT_BF16}, {"I64", CT_I64},
    {"I32", CT_I32}, {"I16", CT_I16}, {"I8", CT_I8},   {"U8", CT_U8},     {"BOOL", CT_BOOL},
};

static const char *dtype_code(ct_dtype t) {
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (dtypes[i].dtype == t) return dtypes[i].name;
    return NULL;
}

static ct_dtype dtype_of_code(const char *code) {
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (!strcmp(dtypes[i].name, code)) return dtypes[i].dtype;
    return CT_DTYPE_UNSET;
}

/* ---- writing -------------------------------------------------------------------- */

static bool text_add_string(ct_strbuf *t, const char *s) {
    size_t need = strlen(s) * 6 + 3;
    if (t->len + need > t->cap) {
        size_t cap = (t->len + need) * 2;
        char *p = ct_realloc(t->s, cap);
        if (!p) return false;
        t->s = p;
        t->cap = cap;
    }
    size_t n = json_escape(t->s, t->cap, t->len, s);
    if (!n) return false;
    t->len = n;
    return true;
}

bool ct_safetensors_write(ct_atomic_file *f, const ct_state_dict *sd, const ct_metadata *meta) {
    int n = ct_state_dict_len(sd);
    ct_strbuf h = {0}, crcs = {0};
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        CT_SCOPE {
            ct_tensor *t = ct_contiguous(ct_to(ct_state_dict_value(sd, i), .device = CT_CPU));
            ok = t && ct_strbuf_put(&crcs, "%s%08lx", i ? " " : "",
                               crc32_z(0, ct_data_ptr(t), (size_t)ct_numel(t) * ct_dtype_size(ct_dtype_of(t))));
        }
    }
    ok = ok && ct_strbuf_put(&h, "{\"__metadata__\":{") && text_add_string(&h, CRC_KEY) &&
         ct_strbuf_put(&h, ":") && text_add_string(&h, crcs.s ? crcs.s : "");
    free(crcs.s);
    for (int i = 0; meta && i < meta->n && ok; i++)
        if (strcmp(meta->keys[i], CRC_KEY)) /* always ours (Note [Tensor checksums]) */
            ok = ct_strbuf_put(&h, ",") && text_add_string(&h, meta->keys[i]) && ct_strbuf_put(&h, ":") &&
                 text_add_string(&h, meta->values[i]);
    ok = ok && ct_strbuf_put(&h, "}%s", n ? "," : "");
    uint64_t offset = 0;
    for (int i = 0; i < n && ok; i++) {
        ct_tensor *t = ct_state_dict_value(sd, i);
        const char *code = dtype_code(ct_dtype_of(t));
        if (!code) {
            ct_error("%s: %s has dtype %s, which safetensors cannot store", f->op,
                     ct_state_dict_key(sd, i), ct_dtype_name(ct_dtype_of(t)));
            free(h.s);
            return false;
        }
        uint64_t bytes = (uint64_t)ct_numel(t) * ct_dtype_size(ct_dtype_of(t));
        ok = ct_strbuf_put(&h, i ? "," : "") && text_add_string(&h, ct_state_dict_key(sd, i)) &&
             ct_strbuf_put(&h, ":{\"dtype\":\"%s\",\"shape\":[", code);
        for (int d = 0; d < ct_ndim(t) && ok; d++) ok = ct_strbuf_put(&h, d ? ",%lld" : "%lld", (long long)ct_size(t, d));
        ok = ok && ct_strbuf_put(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
                            (unsigned long long)(offset + bytes));
        offset += bytes;
    }
    ok = ok && ct_strbuf_put(&h, "}");
    while (ok && h.len % 8) ok = ct_strbuf_put(&h, " "); /* data stays 8-byte aligned */
    if (!ok) {
        free(h.s);
        ct_error("%s: out of memory building the header", f->op);
        return false;
    }
    uint64_t hlen = h.len;
    ok = ct_atomic_write(f, &hlen, 8) && ct_atomic_write(f, h.s, h.len);
    free(h.s);
    for (int i = 0; i < n && ok; i++) {
        CT_SCOPE {
            ct_tensor *t = ct_contiguous(ct_to(ct_state_dict_value(sd, i), .device = CT_CPU));
            ok = t && ct_atomic_write(f, ct_data_ptr(t), (size_t)ct_numel(t) * ct_dtype_size(ct_dtype_of(t)));
        }
    }
    return ok;
}

int ct_save_safetensors(const ct_state_dict *sd, const char *path, const ct_metadata *meta) {
    if (!ct_alive("ct_save_safetensors", 1, sd)) return -1;
    if (!sd || !path) {
        ct_error("ct_save_safetensors: state dict and path must be given");
        return -1;
    }
    ct_atomic_file f;
    if (ct_atomic_open(&f, path, "ct_save_safetensors") != 0) return -1;
    return ct_atomic_commit(&f, ct_safetensors_write(&f, sd, meta));
}

/* ---- reading ---------------------------------------------------------------------- */

typedef struct {
    const char *name;
    ct_dtype dtype;
    ct_shape shape;
    uint64_t begin, end;
} entry;

static int by_begin(const void *a, const void *b) {
    const entry *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static bool bad(const char *where, const char *fmt, const char *detail) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, detail);
    ct_error("ct_load_safetensors: %s: %s", where, msg);
    return false;
}

/* Checks one header entry and fills e. */
static bool read_entry(const char *where, const char *name, const json_value *v, entry *e) {
    if (v->kind != JSON_OBJECT) return bad(where, "entry \"%s\" is not an object", name);
    const json_value *dt = json_get(v, "dtype"), *sh = json_get(v, "shape"), *off = json_get(v, "data_offsets");
    if (!dt || dt->kind != JSON_STRING) return bad(where, "entry \"%s\" has no dtype", name);
    e->name = name;
    e->dtype = dtype_of_code(dt->string);
    if (e->dtype == CT_DTYPE_UNSET) return bad(where, "unknown dtype \"%s\"", dt->string);
    if (!sh || sh->kind != JSON_ARRAY || sh->len > CT_MAX_DIMS)
        return bad(where, "entry \"%s\" has no valid shape (at most 12 dims)", name);
    e->shape.ndim = (int)sh->len;
    uint64_t numel = 1;
    for (size_t d = 0; d < sh->len; d++) {
        const json_value *x = &sh->items[d];
        if (x->kind != JSON_NUMBER || !x->is_integer || x->integer < 0 || x->integer > (1ll << 40))
            return bad(where, "entry \"%s\" has an invalid dimension", name);
        e->shape.d[d] = x->integer;
        if (numel && (uint64_t)x->integer > UINT64_MAX / 16 / numel)
            return bad(where, "entry \"%s\" is impossibly large", name);
        numel *= (uint64_t)x->integer;
    }
    if (!off || off->kind != JSON_ARRAY || off->len != 2 || off->items[0].kind != JSON_NUMBER ||
        off->items[1].kind != JSON_NUMBER || !off->items[0].is_integer || !off->items[1].is_integer ||
        off->items[0].integer < 0 || off->items[1].integer < off->items[0].integer)
        return bad(where, "entry \"%s\" has invalid data_offsets", name);
    e->begin = (uint64_t)off->items[0].integer;
    e->end = (uint64_t)off->items[1].integer;
    if (e->end - e->begin != numel * ct_dtype_size(e->dtype))
        return bad(where, "entry \"%s\": data_offsets do not match its dtype and shape", name);
    return true;
}

/* Checks the tensors' data against the checksums of Note [Tensor checksums]; sorted
 * are the entries in the order of their data offsets. */
static bool checksums_match(const char *where, const char *crcs, const entry *sorted, size_t n,
                            const unsigned char *payload) {
    const char *p = crcs;
    for (size_t i = 0; i < n; i++) {
        char *end;
        while (*p == ' ') p++;
        unsigned long want = strtoul(p, &end, 16);
        if (end - p != 8) return bad(where, "metadata \"" CRC_KEY "\" is malformed at entry \"%s\"",
                                     sorted[i].name);
        p = end;
        unsigned long got = crc32_z(0, payload + sorted[i].begin, (size_t)(sorted[i].end - sorted[i].begin));
        if (got != want)
            return bad(where, "entry \"%s\": the data does not match its checksum (the file is damaged)",
                       sorted[i].name);
    }
    while (*p == ' ') p++;
    return *p == 0 || bad(where, "%s", "metadata \"" CRC_KEY "\" lists more tensors than the file holds");
}

/* The loader; where names the source in messages (the path, or "buffer"). */
static ct_state_dict *from_buffer(const char *where, const void *data, size_t size, ct_load_file_options o) {
    const unsigned char *buf = data;
    if (data && size >= 4 && !memcmp(buf, "PK\x03\x04", 4)) {
        ct_error("ct_load_safetensors: %s is a PyTorch zip archive, not safetensors (torch.save's "
                 "format: load it in PyTorch and write it with safetensors.torch.save_file)", where);
        return NULL;
    }
    if (!data || size < 8) {
        ct_error("ct_load_safetensors: %s: file too short for a header (%zu bytes)", where, size);
        return NULL;
    }
    uint64_t hlen;
    memcpy(&hlen, buf, 8);
    if (hlen > MAX_HEADER || hlen > size - 8) {
        ct_error("ct_load_safetensors: %s: header length %llu is beyond the file (%zu bytes)", where,
                 (unsigned long long)hlen, size);
        return NULL;
    }
    char err[256];
    json_value *root = json_parse((const char *)buf + 8, (size_t)hlen, err, sizeof err);
    if (!root) {
        ct_error("ct_load_safetensors: %s: header: %s", where, err);
        return NULL;
    }
    const char *crcs = NULL;
    ct_state_dict *sd = NULL;
    entry *es = ct_calloc(root->len + 1, sizeof *es);
    size_t n = 0;
    bool ok = es && root->kind == JSON_OBJECT;
    if (!es) ct_error("ct_load_safetensors: %s: out of memory", where);
    else if (!ok) bad(where, "%s", "the header is not a JSON object");
    const uint64_t data_len = size - 8 - hlen;
    for (size_t i = 0; ok && i < root->len; i++) {
        if (!strcmp(root->keys[i], "__metadata__")) {
            const json_value *m = &root->items[i];
            ok = m->kind == JSON_OBJECT || bad(where, "%s", "__metadata__ is not an object");
            for (size_t k = 0; ok && k < m->len; k++)
                ok = m->items[k].kind == JSON_STRING || bad(where, "metadata \"%s\" is not a string", m->keys[k]);
            for (size_t k = 0; ok && k < m->len; k++)
                if (!strcmp(m->keys[k], CRC_KEY)) crcs = m->items[k].string;
            if (ok && o.metadata) {
                memset(o.metadata, 0, sizeof *o.metadata);
                for (size_t k = 0; ok && k < m->len && o.metadata->n < CT_METADATA_MAX; k++) {
                    if (!strcmp(m->keys[k], CRC_KEY)) continue;
                    char *key = ct_strdup(m->keys[k]), *value = key ? ct_strdup(m->items[k].string) : NULL;
                    if (!value) {
                        free(key);
                        ok = bad(where, "%s", "out of memory reading the metadata");
                        break;
                    }
                    o.metadata->keys[o.metadata->n] = key;
                    o.metadata->values[o.metadata->n] = value;
                    o.metadata->n++;
                }
            }
            continue;
        }
        ok = read_entry(where, root->keys[i], &root->items[i], &es[n]);
        if (ok && es[n].end > data_len) ok = bad(where, "entry \"%s\" lies beyond the end of the file", root->keys[i]);
        n++;
    }
    /* Byte ranges must tile the data exactly: no overlap, no gap. */
    if (ok) {
        entry *sorted = ct_malloc(sizeof *sorted * (n + 1));
        ok = sorted != NULL;
        if (!ok) ct_error("ct_load_safetensors: %s: out of memory", where);
        if (ok) {
            memcpy(sorted, es, sizeof *sorted * n);
            qsort(sorted, n, sizeof *sorted, by_begin);
            uint64_t at = 0;
            for (size_t i = 0; ok && i < n; i++) {
                if (sorted[i].begin != at)
                    ok = bad(where, sorted[i].begin < at ? "entry \"%s\" overlaps another"
                                                         : "gap before entry \"%s\"", sorted[i].name);
                at = sorted[i].end;
            }
            if (ok && at != data_len) ok = bad(where, "%s", "the data does not end where the last tensor does");
            if (ok && crcs) ok = checksums_match(where, crcs, sorted, n, buf + 8 + hlen);
            free(sorted);
        }
    }
    const unsigned char *payload = buf + 8 + hlen;
    for (size_t i = 0; ok && i < n; i++)
        if (es[i].dtype == CT_BOOL)
            for (uint64_t b = es[i].begin; ok && b < es[i].end; b++)
                if (payload[b] > 1) ok = bad(where, "entry \"%s\" has a bool that is neither 0 nor 1", es[i].name);
    if (ok) {
        CT_SCOPE {
            ct_state_dict *d = ct_state_dict_new();
            bool built = d != NULL;
            for (size_t i = 0; built && i < n; i++) {
                ct_tensor *t = ct_tensor_from(payload + es[i].begin, es[i].dtype, es[i].shape,
                                              .device = o.map_location);
                built = t && ct_state_dict_set(d, es[i].name, t) == 0;
            }
            sd = built ? ct_keep(d) : NULL; /* else it dies with the scope */
        }
        ok = sd != NULL;
    }
    if (!ok && o.metadata) ct_metadata_free(o.metadata);
    free(es);
    json_free(root);
    return sd;
}

ct_state_dict *ct_load_safetensors_with(const char *path, ct_load_file_options o) {
    if (!path) {
        ct_error("ct_load_safetensors: path is NULL");
        return NULL;
    }
    size_t size;
    char *data = (char *)ct_read_file("ct_load_safetensors", path, &size);
    if (!data) return NULL;
    ct_state_dict *sd = from_buffer(path, data, size, o);
    free(data);
    return sd;
}

ct_state_dict *ct_safetensors_from_buffer(const void *data, size_t size, ct_load_file_options o) {
    return from_buffer("buffer", data, size, o);
}

void ct_metadata_free(ct_metadata *m) {
    if (!m) return;
    for (int i = 0; i < m->n; i++) {
        free((char *)m->keys[i]);
        free((char *)m->values[i]);
    }
    m->n = 0;
}
