/* The large-block cache (see block_cache.h).  One lock: large allocations are rare
 * next to the work done on them. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/allocator.h"
#include "core/lifetime.h"
#include "cpu/block_cache.h"
#include "core/mem.h"
#include "core/sanitize.h"

#if CT_ASAN
#define CACHE_OFF 1
#endif

#define SUBCLASSES 8 /* size classes per power of two */
#define NCLASSES (64 * SUBCLASSES)

static struct {
    pthread_mutex_t lock;
    void *head[NCLASSES]; /* cached blocks, linked through their first word */
    size_t held;          /* bytes in the cache */
    size_t limit;
} cache = {PTHREAD_MUTEX_INITIALIZER, {0}, 0, (size_t)256 << 20};

static int floor_log2(size_t n) { return 63 - __builtin_clzll((unsigned long long)n); }

/* `size` rounded up to its class (at most 1/8 more), and the class's index. */
static size_t class_size(size_t size, int *index) {
    int k = floor_log2(size);
    size_t step = (size_t)1 << (k - 3);
    size_t rounded = (size + step - 1) & ~(step - 1);
    k = floor_log2(rounded);
    *index = k * SUBCLASSES + (int)((rounded >> (k - 3)) - SUBCLASSES);
    return rounded;
}

static void *take_cached(int c, size_t rounded) {
    pthread_mutex_lock(&cache.lock);
    void *p = cache.head[c];
    if (p) {
        cache.head[c] = *(void **)p;
        cache.held -= rounded;
        ct_alloc_stats_cached(CT_CPU, -(int64_t)rounded);
    }
    pthread_mutex_unlock(&cache.lock);
    return p;
}

void *ct_block_alloc(size_t size) {
#ifndef CACHE_OFF
    if (size >= CT_BLOCK_CACHE_MIN) {
        int c;
        size_t rounded = class_size(size, &c);
        void *p = take_cached(c, rounded);
        if (p) return p;
        if ((p = ct_aligned_alloc(64, rounded))) return p;
        ct_block_cache_trim(0);
        return ct_aligned_alloc(64, rounded);
    }
#endif
    return ct_aligned_alloc(64, (size + 63) & ~(size_t)63);
}

void ct_block_free(void *p, size_t size) {
#ifndef CACHE_OFF
    if (p && size >= CT_BLOCK_CACHE_MIN) {
        int c;
        size_t rounded = class_size(size, &c);
        pthread_mutex_lock(&cache.lock);
        /* the debug lifetime mode gives every block back (core/lifetime.h) */
        bool keep = cache.held + rounded <= cache.limit && !ct_lifetime_debug;
        if (keep) {
            *(void **)p = cache.head[c];
            cache.head[c] = p;
            cache.held += rounded;
            ct_alloc_stats_cached(CT_CPU, (int64_t)rounded);
        }
        pthread_mutex_unlock(&cache.lock);
        if (keep) return;
    }
#else
    (void)size;
#endif
    free(p);
}

void ct_block_cache_trim(size_t keep) {
    pthread_mutex_lock(&cache.lock);
    /* from the class of the smallest cached size: below it the class formula is no size */
    int first = floor_log2(CT_BLOCK_CACHE_MIN) * SUBCLASSES;
    for (int c = first; c < NCLASSES && cache.held > keep; c++) {
        size_t rounded = ((size_t)(SUBCLASSES + c % SUBCLASSES)) << (c / SUBCLASSES - 3);
        while (cache.head[c] && cache.held > keep) {
            void *p = cache.head[c];
            cache.head[c] = *(void **)p;
            cache.held -= rounded;
            ct_alloc_stats_cached(CT_CPU, -(int64_t)rounded);
            free(p);
        }
    }
    pthread_mutex_unlock(&cache.lock);
}

size_t ct_block_cache_held(void) {
    pthread_mutex_lock(&cache.lock);
    size_t held = cache.held;
    pthread_mutex_unlock(&cache.lock);
    return held;
}

void ct_block_cache_set_limit(size_t limit) {
    pthread_mutex_lock(&cache.lock);
    cache.limit = limit;
    pthread_mutex_unlock(&cache.lock);
    ct_block_cache_trim(limit);
}
