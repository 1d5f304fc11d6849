/* The debug lifetime mode (see lifetime.h): its switch and the quarantine. */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/lifetime.h"
#include "core/object.h"
#include "core/sanitize.h"

#if CT_ASAN
#include <sanitizer/asan_interface.h>
#endif

#ifdef CTORCH_DEBUG_LIFETIME
#define DEFAULT_ON true
#else
#define DEFAULT_ON false
#endif

bool ct_lifetime_debug = DEFAULT_ON;

/* Before main, so that no object is pooled and then handed out again in the mode. */
__attribute__((constructor)) static void read_switch(void) {
    const char *v = getenv("CT_DEBUG_LIFETIME");
    if (v && *v) ct_lifetime_debug = strcmp(v, "0") != 0;
}

void ct_lifetime_poison(void *p, size_t n) {
#if CT_ASAN
    ASAN_POISON_MEMORY_REGION(p, n);
#else
    (void)p, (void)n;
#endif
}

void ct_lifetime_unpoison(void *p, size_t n) {
#if CT_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
    (void)p, (void)n;
#endif
}

/* A ring of the most recently released blocks; `next` is the oldest once full.  One
 * lock: the mode trades speed for finding bugs. */
static struct {
    pthread_mutex_t lock;
    void *blocks[CT_QUARANTINE_BLOCKS];
    int next;
} quarantine = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};

void ct_lifetime_free(void *block) {
    if (block) ((ct_object *)block)->magic = 0; /* Note [Liveness magic] */
    if (!ct_lifetime_debug || !block) {
        free(block);
        return;
    }
    pthread_mutex_lock(&quarantine.lock);
    void *oldest = quarantine.blocks[quarantine.next];
    quarantine.blocks[quarantine.next] = block;
    quarantine.next = (quarantine.next + 1) % CT_QUARANTINE_BLOCKS;
    pthread_mutex_unlock(&quarantine.lock);
    if (oldest) {
        ct_lifetime_unpoison(oldest, malloc_usable_size(oldest));
        free(oldest);
    }
}

__attribute__((cold)) bool ct_released_error(const char *fn, int arg) {
    ct_error("%s: argument %d was released (use after free)", fn, arg);
    return false;
}

__attribute__((cold)) bool ct_released_option_error(const char *fn, const char *option) {
    ct_error("%s: option .%s was released (use after free)", fn, option);
    return false;
}
