/* Per-thread block caches (see pool.h): the slow paths and the clean-up at thread exit. */
#include <pthread.h>
#include <stdbool.h>

#include "core/lifetime.h"
#include "core/pool.h"

_Thread_local ct_pool_list ct_pool_lists[CT_POOL_NCLASSES];

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static _Thread_local bool exit_hook_set;

/* Runs in the exiting thread: frees its cached blocks and closes its caches, so that
 * blocks freed later in the thread's teardown go straight back to free(). */
static void free_thread_pools(void *unused) {
    (void)unused;
    for (int c = 0; c < CT_POOL_NCLASSES; c++) {
        ct_pool_list *l = &ct_pool_lists[c];
        for (void *p = l->head, *next; p; p = next) {
            next = *(void **)p;
            free(p);
        }
        l->head = NULL;
        l->n = CT_POOL_MAX;
    }
}
static void make_exit_key(void) { pthread_key_create(&exit_key, free_thread_pools); }

void ct_pool_free_slow(ct_pool_class c, void *p) {
    ct_pool_list *l = &ct_pool_lists[c];
#ifndef CT_POOL_OFF
    if (l->n == 0 && !ct_lifetime_debug) { /* the first block this cache holds (again) */
        if (!exit_hook_set) {
            pthread_once(&exit_key_once, make_exit_key);
            pthread_setspecific(exit_key, &exit_hook_set); /* any non-NULL value */
            exit_hook_set = true;
        }
        *(void **)p = NULL;
        l->head = p;
        l->n = 1;
        return;
    }
#endif
    (void)l;
    ct_lifetime_free(p);
}
