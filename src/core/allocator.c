#include <stdatomic.h>
#include <stdlib.h>

#include "ctorch/memory.h"
#include "core/allocator.h"
#include "core/backend.h"
#include "core/prof.h"

typedef struct {
    atomic_llong now, peak;
} alloc_stats;

static alloc_stats stats[CT_NUM_DEVICE_TYPES][16];

static alloc_stats *stats_for(ct_device d) {
    if (d.type <= CT_DEV_UNSET || d.type >= CT_NUM_DEVICE_TYPES || d.index < 0 || d.index >= 16)
        return NULL;
    return &stats[d.type][d.index];
}

void ct_alloc_stats_add(ct_device d, int64_t delta) {
    alloc_stats *s = stats_for(d);
    if (!s) return;
    if (delta > 0) ct_prof_alloc_bytes += delta; /* the profiler's thread counters */
    else ct_prof_freed_bytes -= delta;
    long long now = atomic_fetch_add_explicit(&s->now, delta, memory_order_relaxed) + delta;
    long long peak = atomic_load_explicit(&s->peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak(&s->peak, &peak, now)) {
    }
}

int64_t ct_memory_allocated(ct_device d) {
    alloc_stats *s = stats_for(d);
    return s ? s->now : 0;
}
int64_t ct_max_memory_allocated(ct_device d) {
    alloc_stats *s = stats_for(d);
    return s ? s->peak : 0;
}
void ct_reset_peak_memory_stats(ct_device d) {
    alloc_stats *s = stats_for(d);
    if (s) atomic_store(&s->peak, atomic_load(&s->now));
}

/* The backend's cache, if it has one (the cpu's large-block cache). */
int64_t ct_memory_reserved(ct_device d) {
    const ct_backend *b = ct_backend_for_type(d.type);
    int64_t cached = b && b->cached_bytes ? b->cached_bytes(d) : 0;
    return ct_memory_allocated(d) + cached;
}

void ct_empty_cache(ct_device d) {
    const ct_backend *b = ct_backend_for_type(d.type);
    if (b && b->empty_cache) b->empty_cache(d);
}

void ct_set_cache_limit(ct_device d, int64_t bytes) {
    const ct_backend *b = ct_backend_for_type(d.type);
    if (b && b->set_cache_limit) b->set_cache_limit(d, bytes);
}
