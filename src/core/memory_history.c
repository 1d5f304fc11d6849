/* ct_memory_record_history and ct_memory_snapshot: a list of the live storages made
 * while recording, with the op and the call site that made each. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/memory.h"
#include "core/autograd_meta.h"
#include "core/error.h"
#include "core/lifetime.h"
#include "core/memory_history.h"

struct ct_alloc_record {
    ct_alloc_record *prev, *next;
    ct_memory_block block;
};

atomic_bool ct_memory_history_on;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ct_alloc_record *head; /* the newest first */
static int64_t next_seq;

void ct_memory_record_history(bool enabled) { atomic_store(&ct_memory_history_on, enabled); }

ct_alloc_record *ct_memory_history_add(const char *op, int64_t nbytes, ct_device device) {
    /* plain malloc: the record is bookkeeping, not one of ctorch's allocations that
     * ct_test_fail_alloc_after counts */
    ct_alloc_record *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    ct_memory_block *b = &r->block;
    b->bytes = nbytes;
    b->device = device;
    snprintf(b->op, sizeof b->op, "%s", op ? op : "");
    b->backward = ct_trace_backward_depth > 0;
    ct_current_site(&b->file, &b->line);
    pthread_mutex_lock(&lock);
    b->seq = next_seq++;
    r->next = head;
    if (head) head->prev = r;
    head = r;
    pthread_mutex_unlock(&lock);
    return r;
}

void ct_memory_history_describe(ct_alloc_record *r, ct_dtype dtype, int ndim, const int64_t *sizes) {
    r->block.dtype = dtype;
    r->block.ndim = ndim;
    memcpy(r->block.sizes, sizes, sizeof *sizes * (size_t)ndim);
}

void ct_memory_history_remove(ct_alloc_record *r) {
    pthread_mutex_lock(&lock);
    if (r->prev) r->prev->next = r->next;
    else head = r->next;
    if (r->next) r->next->prev = r->prev;
    pthread_mutex_unlock(&lock);
    free(r);
}

static int larger_first(const void *x, const void *y) {
    const ct_memory_block *a = x, *b = y;
    if (a->bytes != b->bytes) return a->bytes < b->bytes ? 1 : -1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int64_t ct_memory_snapshot(ct_device d, ct_memory_block *blocks, int64_t max) {
    if (max < 0 || (max > 0 && !blocks)) {
        ct_error("ct_memory_snapshot: blocks is NULL or max is negative (%lld)", (long long)max);
        return -1;
    }
    pthread_mutex_lock(&lock);
    int64_t n = 0;
    for (ct_alloc_record *r = head; r; r = r->next)
        if (ct_device_eq(r->block.device, d)) n++;
    ct_memory_block *all = malloc(sizeof *all * (size_t)(n ? n : 1));
    int64_t k = 0;
    for (ct_alloc_record *r = head; all && r; r = r->next)
        if (ct_device_eq(r->block.device, d)) all[k++] = r->block;
    pthread_mutex_unlock(&lock);
    if (!all) {
        ct_error("ct_memory_snapshot: out of memory for %lld blocks", (long long)n);
        return -1;
    }
    qsort(all, (size_t)n, sizeof *all, larger_first);
    if (n && max) memcpy(blocks, all, sizeof *all * (size_t)(n < max ? n : max));
    free(all);
    return n;
}
