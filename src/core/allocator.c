#include <stdatomic.h>
#include <stdlib.h>

#include "ctorch/memory.h"
#include "core/allocator.h"

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

/* 64-byte alignment suits AVX-512 loads and keeps tensors off shared cache lines. */
static void *cpu_alloc(size_t nbytes) {
    size_t rounded = (nbytes + 63) & ~(size_t)63;
    return aligned_alloc(64, rounded ? rounded : 64);
}
static void cpu_free(void *p, size_t nbytes) {
    (void)nbytes;
    free(p);
}

static const ct_allocator cpu_allocator = {cpu_alloc, cpu_free};

const ct_allocator *ct_allocator_for(ct_device d) {
    return d.type == CT_DEV_CPU ? &cpu_allocator : NULL;
}
