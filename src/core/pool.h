/* Per-thread caches of fixed-size blocks for the objects every op makes and frees:
 * tensor structs, small storages and graph nodes.  Taking a block is a pop from a
 * thread-local list, giving it back a push: no malloc, no lock, no atomic.
 *
 * A block freed on another thread than the one that took it joins the freeing
 * thread's cache (blocks are interchangeable within a class).  A cache holds at most
 * CT_POOL_MAX blocks, beyond that blocks go back to free(); a thread's caches are
 * freed when it exits.  CT_POOL_MAX covers what a training step holds alive at once
 * (thousands of small results and their nodes), so that a step's objects come back
 * from the cache rather than from malloc; it bounds a thread's cached memory to
 * about 5 MiB (tensor, small storage and node blocks together).  Each class has one block size, which its callers pass (the
 * same every time).  Under AddressSanitizer the caches are off: every block is then
 * a malloc/free that ASan and LeakSanitizer see.  In the debug lifetime mode
 * (core/lifetime.h) they are off too, and a block given back goes to the quarantine:
 * a cache never starts, so the fast paths below never apply. */
#ifndef CT_CORE_POOL_H
#define CT_CORE_POOL_H

#include <stddef.h>
#include <stdlib.h>

#include "core/mem.h"
#include "core/sanitize.h"

#if CT_ASAN
#define CT_POOL_OFF 1
#endif

typedef enum { CT_POOL_TENSOR, CT_POOL_STORAGE, CT_POOL_NODE, CT_POOL_NCLASSES } ct_pool_class;

#define CT_POOL_MAX 4096

typedef struct {
    void *head; /* blocks linked through their first word */
    int n;      /* blocks in the list; CT_POOL_MAX once the thread is exiting */
} ct_pool_list;

extern _Thread_local ct_pool_list ct_pool_lists[CT_POOL_NCLASSES];
/* ct_pool_free when the fast path does not apply (first block, full or closed cache,
 * or no cache: under ASan and in the debug lifetime mode). */
void ct_pool_free_slow(ct_pool_class c, void *p);

/* An uninitialised block of `size` bytes (malloc's alignment); NULL when out of memory. */
static inline void *ct_pool_alloc(ct_pool_class c, size_t size) {
#ifndef CT_POOL_OFF
    ct_pool_list *l = &ct_pool_lists[c];
    void *p = l->head;
    if (p) {
        l->head = *(void **)p;
        l->n--;
        return p;
    }
#else
    (void)c;
#endif
    return ct_malloc(size);
}

/* Gives back a block taken with ct_pool_alloc(c, ...). */
static inline void ct_pool_free(ct_pool_class c, void *p) {
#ifndef CT_POOL_OFF
    ct_pool_list *l = &ct_pool_lists[c];
    if (l->n > 0 && l->n < CT_POOL_MAX) {
        *(void **)p = l->head;
        l->head = p;
        l->n++;
        return;
    }
#endif
    ct_pool_free_slow(c, p);
}

#endif
