/* The dataset base (creation, len, get), sample seeds and the random draws the data
 * objects share. */
#include <stdlib.h>
#include <string.h>

#include "core/lifetime.h"
#include "data/data_impl.h"
#include "core/mem.h"

void *data_object_new(const char *op, size_t header_size, size_t state_size, ct_destroy_fn destroy) {
    ct_object *o = ct_calloc(1, header_size + state_size);
    if (!o) {
        ct_error("%s: out of memory", op);
        return NULL;
    }
    ct_object_init(o, destroy);
    return ct_scope_register(o);
}

static void dataset_destroy(ct_object *o) {
    ct_dataset *ds = (ct_dataset *)o;
    if (ds->cls->destroy) ds->cls->destroy(ds);
    ct_lifetime_free(ds);
}

ct_dataset *ct_dataset_new(const ct_dataset_class *cls, size_t state_size) {
    if (!cls || !cls->len || !cls->get) {
        ct_error("ct_dataset_new: the class needs len and get");
        return NULL;
    }
    ct_dataset *ds = data_object_new("ct_dataset_new", sizeof *ds, state_size, dataset_destroy);
    if (ds) ds->cls = cls;
    return ds;
}

void *ct_dataset_state(const ct_dataset *ds) {
    if (!ct_alive("ct_dataset_state", 1, ds)) return NULL;
    return ds ? (void *)ds->state : NULL;
}
const char *ct_dataset_name(const ct_dataset *ds) {
    if (!ct_alive("ct_dataset_name", 1, ds)) return NULL;
    return ds ? ds->cls->name : NULL;
}
int64_t ct_dataset_len(const ct_dataset *ds) {
    if (!ct_alive("ct_dataset_len", 1, ds)) return -1;
    return ds ? ds->cls->len(ds) : -1;
}

int ct_dataset_get_seeded(ct_dataset *ds, int64_t index, uint64_t seed, ct_sample *out) {
    if (!ct_alive("ct_dataset_get_seeded", 1, ds)) return -1;
    if (!out) return -1;
    memset(out, 0, sizeof *out);
    out->seed = seed;
    if (!ds) return -1;
    int64_t len = ds->cls->len(ds);
    if (index < -len || index >= len) {
        ct_error("ct_dataset_get: index %lld is out of range for %s of length %lld",
                 (long long)index, ds->cls->name, (long long)len);
        return -1;
    }
    if (index < 0) index += len;
    if (ds->cls->get(ds, index, out) != 0) {
        if (!ct_last_error())
            ct_error("ct_dataset_get: %s failed to load sample %lld", ds->cls->name, (long long)index);
        return -1;
    }
    if (out->n < 1 || out->n > CT_SAMPLE_MAX) {
        ct_error("ct_dataset_get: %s returned a sample of %d tensors (expected 1 to %d)",
                 ds->cls->name, out->n, CT_SAMPLE_MAX);
        return -1;
    }
    for (int k = 0; k < out->n; k++) {
        if (!out->t[k]) {
            ct_error("ct_dataset_get: %s left tensor %d of sample %lld NULL", ds->cls->name, k,
                     (long long)index);
            return -1;
        }
    }
    return 0;
}

int ct_dataset_get(ct_dataset *ds, int64_t index, ct_sample *out) {
    if (!ct_alive("ct_dataset_get", 1, ds)) return -1;
    return ct_dataset_get_seeded(ds, index, ct_data_seed(0, 0, (uint64_t)index), out);
}

int data_select_fields(int n, ct_tensor *const *t, int64_t index, ct_sample *out) {
    out->n = n;
    for (int k = 0; k < n; k++)
        if (!(out->t[k] = ct_select(t[k], 0, index))) return -1;
    return 0;
}

/* ---- seeds and draws ------------------------------------------------------ */

/* splitmix64's finaliser: every input bit affects every output bit. */
static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t ct_data_seed(uint64_t seed, uint64_t epoch, uint64_t index) {
    return mix64(mix64(mix64(seed) ^ epoch) ^ index);
}

int64_t data_randint(ct_generator *g, int64_t lo, int64_t hi) {
    int64_t v = lo;
    CT_SCOPE { v = ct_item_int(ct_randint(lo, hi, CT_SHAPE(1), .generator = g)); }
    return v;
}

double data_rand(ct_generator *g) {
    double v = 0;
    CT_SCOPE { v = ct_item(ct_rand(CT_SHAPE(1), .dtype = CT_F64, .generator = g)); }
    return v;
}

uint64_t data_draw_seed(ct_generator *g) {
    /* Two 32-bit halves: randint's range is below 2^63. */
    uint64_t hi = (uint64_t)data_randint(g, 0, INT64_C(1) << 32);
    return hi << 32 | (uint64_t)data_randint(g, 0, INT64_C(1) << 32);
}

int data_randperm(ct_generator *g, int64_t n, int64_t *out) {
    int rc = -1;
    CT_SCOPE {
        ct_tensor *p = ct_randperm(n, .generator = g);
        if (p) rc = ct_copy_to_buffer(p, out, CT_I64, sizeof(int64_t) * (size_t)n);
    }
    return rc;
}
