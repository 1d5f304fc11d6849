#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stddef.h>

#include "ctorch/memory.h"
#include "core/allocator.h"
#include "core/backend.h"
#include "core/prof.h"

#define MAX_INDEX 16 /* device indices counted */

/* Bytes in use, and the peaks, are shared counters (one atomic addition per storage
 * allocated or freed, as they always were); the counts and totals are per thread,
 * written with plain stores and summed when read, so that they add no atomic
 * read-modify-write to an op. */
typedef struct {
    atomic_llong now, peak;          /* bytes of tensor storage */
    atomic_llong cached, reserved_peak; /* the backend's cache; in use + cached */
    atomic_llong largest;            /* the largest storage since the reset */
} shared_stats;

typedef struct {
    atomic_llong allocs, frees, freed_bytes; /* one thread's, or those of exited threads */
} counts;

typedef struct thread_counts {
    struct thread_counts *prev, *next;
    counts c[CT_NUM_DEVICE_TYPES][MAX_INDEX];
} thread_counts;

static shared_stats stats[CT_NUM_DEVICE_TYPES][MAX_INDEX];
static counts exited[CT_NUM_DEVICE_TYPES][MAX_INDEX]; /* also where a thread without its own block counts */

static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static thread_counts *threads;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static _Thread_local thread_counts *mine;
static _Thread_local bool mine_tried; /* NULL after a try: exited, or calloc failed */

static bool valid(ct_device d) {
    return d.type > CT_DEV_UNSET && d.type < CT_NUM_DEVICE_TYPES && d.index >= 0 && d.index < MAX_INDEX;
}

/* Runs in an exiting thread: its counts join the exited threads'. */
static void fold_thread(void *p) {
    thread_counts *t = p;
    pthread_mutex_lock(&threads_lock);
    for (int i = 0; i < CT_NUM_DEVICE_TYPES; i++)
        for (int j = 0; j < MAX_INDEX; j++) {
            atomic_fetch_add(&exited[i][j].allocs, atomic_load(&t->c[i][j].allocs));
            atomic_fetch_add(&exited[i][j].frees, atomic_load(&t->c[i][j].frees));
            atomic_fetch_add(&exited[i][j].freed_bytes, atomic_load(&t->c[i][j].freed_bytes));
        }
    if (t->prev) t->prev->next = t->next;
    else threads = t->next;
    if (t->next) t->next->prev = t->prev;
    pthread_mutex_unlock(&threads_lock);
    free(t);
    mine = NULL;
}
static void make_exit_key(void) { pthread_key_create(&exit_key, fold_thread); }

static thread_counts *join(void) {
    mine_tried = true;
    /* plain calloc: bookkeeping, not one of the allocations ct_test_fail_alloc_after counts */
    thread_counts *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    pthread_once(&exit_key_once, make_exit_key);
    pthread_mutex_lock(&threads_lock);
    t->next = threads;
    if (threads) threads->prev = t;
    threads = t;
    pthread_mutex_unlock(&threads_lock);
    pthread_setspecific(exit_key, t);
    return mine = t;
}

/* Adds 1 (and bytes) to this thread's counters: a plain store when it has its own. */
static void count(ct_device d, size_t field, int64_t bytes) {
    thread_counts *t = mine ? mine : mine_tried ? NULL : join();
    counts *c = t ? &t->c[d.type][d.index] : &exited[d.type][d.index];
    atomic_llong *n = (atomic_llong *)((char *)c + field);
    if (t) {
        atomic_store_explicit(n, atomic_load_explicit(n, memory_order_relaxed) + 1, memory_order_relaxed);
        if (bytes)
            atomic_store_explicit(&c->freed_bytes,
                                  atomic_load_explicit(&c->freed_bytes, memory_order_relaxed) + bytes,
                                  memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
        if (bytes) atomic_fetch_add_explicit(&c->freed_bytes, bytes, memory_order_relaxed);
    }
}

static void raise_to(atomic_llong *max, long long v) {
    long long m = atomic_load_explicit(max, memory_order_relaxed);
    while (v > m && !atomic_compare_exchange_weak_explicit(max, &m, v, memory_order_relaxed,
                                                           memory_order_relaxed)) {
    }
}

void ct_alloc_stats_alloc(ct_device d, int64_t bytes) {
    if (!valid(d)) return;
    shared_stats *s = &stats[d.type][d.index];
    long long now = atomic_fetch_add_explicit(&s->now, bytes, memory_order_relaxed) + bytes;
    raise_to(&s->peak, now);
    raise_to(&s->largest, bytes);
    raise_to(&s->reserved_peak, now + atomic_load_explicit(&s->cached, memory_order_relaxed));
    count(d, offsetof(counts, allocs), 0);
    ct_prof_alloc_bytes += bytes; /* the profiler's thread counter (core/prof.h) */
}

void ct_alloc_stats_free(ct_device d, int64_t bytes) {
    if (!valid(d)) return;
    atomic_fetch_sub_explicit(&stats[d.type][d.index].now, bytes, memory_order_relaxed);
    count(d, offsetof(counts, frees), bytes);
    ct_prof_freed_bytes += bytes; /* the profiler's thread counter (core/prof.h) */
}

void ct_alloc_stats_cached(ct_device d, int64_t delta) {
    if (valid(d)) atomic_fetch_add_explicit(&stats[d.type][d.index].cached, delta, memory_order_relaxed);
}

int64_t ct_memory_allocated(ct_device d) { return valid(d) ? stats[d.type][d.index].now : 0; }
int64_t ct_max_memory_allocated(ct_device d) { return valid(d) ? stats[d.type][d.index].peak : 0; }

void ct_reset_peak_memory_stats(ct_device d) {
    if (!valid(d)) return;
    shared_stats *s = &stats[d.type][d.index];
    atomic_store(&s->peak, atomic_load(&s->now));
    atomic_store(&s->reserved_peak, atomic_load(&s->now) + atomic_load(&s->cached));
    atomic_store(&s->largest, 0);
}

/* The backend's cache, if it has one (the cpu's large-block cache). */
int64_t ct_memory_reserved(ct_device d) {
    const ct_backend *b = ct_backend_for_type(d.type);
    int64_t cached = b && b->cached_bytes ? b->cached_bytes(d) : 0;
    return ct_memory_allocated(d) + cached;
}

ct_allocator_stats ct_memory_stats(ct_device d) {
    ct_allocator_stats r = {0};
    if (!valid(d)) return r;
    shared_stats *s = &stats[d.type][d.index];
    long long allocs, frees, freed;
    pthread_mutex_lock(&threads_lock);
    frees = exited[d.type][d.index].frees; /* frees before allocs: never more frees than allocs seen */
    freed = exited[d.type][d.index].freed_bytes;
    for (thread_counts *t = threads; t; t = t->next) {
        frees += t->c[d.type][d.index].frees;
        freed += t->c[d.type][d.index].freed_bytes;
    }
    allocs = exited[d.type][d.index].allocs;
    for (thread_counts *t = threads; t; t = t->next) allocs += t->c[d.type][d.index].allocs;
    pthread_mutex_unlock(&threads_lock);
    long long now = s->now;
    r.allocated_bytes = (ct_memory_stat){now, s->peak, now + freed, freed};
    r.allocations = (ct_memory_stat){allocs - frees, 0, allocs, frees};
    r.reserved_bytes.current = ct_memory_reserved(d);
    r.reserved_bytes.peak = s->reserved_peak > r.reserved_bytes.current ? s->reserved_peak
                                                                         : r.reserved_bytes.current;
    r.largest_allocation = s->largest;
    return r;
}

void ct_empty_cache(ct_device d) {
    const ct_backend *b = ct_backend_for_type(d.type);
    if (b && b->empty_cache) b->empty_cache(d);
}

void ct_set_cache_limit(ct_device d, int64_t bytes) {
    const ct_backend *b = ct_backend_for_type(d.type);
    if (b && b->set_cache_limit) b->set_cache_limit(d, bytes);
}
