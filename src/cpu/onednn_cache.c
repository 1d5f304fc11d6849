/* The oneDNN primitive cache: making a primitive descriptor and primitive costs far
 * more than a small product, so each is made once per key (cpu/onednn_prim.h) and
 * kept, at most CAPACITY of them, the least recently used one dropped first.  Keys
 * oneDNN has no kernel for are cached too (prim NULL), so that an unsupported shape
 * costs one attempt, not one per call.  One lock; a dropped primitive lives on until
 * its last user releases it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "cpu/onednn_prim.h"

enum { CAPACITY = 64 };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ct_onednn_prim *entries[CAPACITY];
static int count;
static uint64_t clock_now;

static void destroy(ct_onednn_prim *p) {
    if (p->prim) dnnl_primitive_destroy(p->prim);
    if (p->pd) dnnl_primitive_desc_destroy(p->pd);
    free(p);
}

static void unref_locked(ct_onednn_prim *p) {
    if (--p->refs == 0) destroy(p);
}

/* A new entry for key: its primitive, or none when oneDNN has no kernel for it (also
 * NULL, with *failed, when there was no memory for it). */
static ct_onednn_prim *make(const ct_onednn_key *key, ct_onednn_make_pd make_pd,
                            dnnl_status_t (*attr_of)(const void *, dnnl_primitive_attr_t),
                            const void *ctx, const char *op, bool *failed) {
    ct_onednn_prim *p = ct_calloc(1, sizeof *p);
    if (!p) {
        ct_error_fail_result("out of memory in %s (a oneDNN primitive)", op);
        *failed = true;
        return NULL;
    }
    p->key = *key;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success && attr_of) st = attr_of(ctx, attr);
    if (st == dnnl_success && make_pd(ctx, attr, &p->pd) != dnnl_success) p->pd = NULL;
    if (st == dnnl_success && p->pd && dnnl_primitive_create(&p->prim, p->pd) != dnnl_success) {
        p->prim = NULL;
        st = dnnl_out_of_memory; /* the descriptor was made: only memory can be missing */
    }
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (st == dnnl_out_of_memory) {
        ct_error_fail_result("out of memory in %s (a oneDNN primitive)", op);
        *failed = true;
        destroy(p);
        return NULL;
    }
    if (!p->prim && p->pd) {
        dnnl_primitive_desc_destroy(p->pd);
        p->pd = NULL;
    }
    return p;
}

ct_onednn_prim *ct_onednn_lookup(const ct_onednn_key *key, ct_onednn_make_pd make_pd,
                                 dnnl_status_t (*attr_of)(const void *, dnnl_primitive_attr_t),
                                 const void *ctx, const char *op, bool *failed) {
    *failed = false;
    if (!ct_onednn_engine()) return NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < count; i++)
        if (memcmp(&entries[i]->key, key, sizeof *key) == 0) {
            ct_onednn_prim *p = entries[i];
            p->used = ++clock_now;
            if (!p->prim) {
                pthread_mutex_unlock(&lock);
                return NULL;
            }
            p->refs++;
            pthread_mutex_unlock(&lock);
            return p;
        }
    pthread_mutex_unlock(&lock);
    /* Made outside the lock: two threads missing the same key both make one, and the
     * second to finish keeps the first's. */
    ct_onednn_prim *p = make(key, make_pd, attr_of, ctx, op, failed);
    if (!p) return NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < count; i++)
        if (memcmp(&entries[i]->key, key, sizeof *key) == 0) {
            destroy(p);
            p = entries[i];
            goto found;
        }
    if (count == CAPACITY) {
        int old = 0;
        for (int i = 1; i < count; i++)
            if (entries[i]->used < entries[old]->used) old = i;
        unref_locked(entries[old]);
        entries[old] = entries[--count];
    }
    p->refs = 1;
    entries[count++] = p;
found:
    p->used = ++clock_now;
    if (p->prim) p->refs++;
    else p = NULL;
    pthread_mutex_unlock(&lock);
    return p;
}

void ct_onednn_release(ct_onednn_prim *p) {
    if (!p) return;
    pthread_mutex_lock(&lock);
    unref_locked(p);
    pthread_mutex_unlock(&lock);
}
