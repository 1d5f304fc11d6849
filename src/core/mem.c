/* ctorch's allocation functions and their failure injection.
 *
 * Injection works as SQLite's does: armed with n, the allocation counter counts every
 * allocation from then on, and the n-th fails (once; the ones after it succeed again,
 * so a retry of the failed call can work).  The counter is atomic: allocations on
 * OpenMP and loader threads count too.  CT_FAIL_ALLOC_BACKTRACE=1 prints the stack of
 * the allocation that fails. */
#include <execinfo.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/memory.h"
#include "core/mem.h"

/* Allocations counted since the switch was armed; the count at which one fails (the
 * first allocation counts 1; 0: disarmed, nothing counted); whether it has failed. */
static atomic_llong counted;
static atomic_llong fail_at;
static atomic_bool failed;
static atomic_int env_read;

/* CT_FAIL_ALLOC_AFTER=n arms the switch when the process makes its first allocation. */
static void read_environment(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&env_read, &expected, 1)) return;
    const char *v = getenv("CT_FAIL_ALLOC_AFTER");
    if (!v || !*v) return;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end == '\0' && n >= 0 && n < LLONG_MAX) (ct_test_fail_alloc_after)(n);
}

/* Whether this allocation is the one chosen to fail. */
static inline bool injected_failure(void) {
    if (__builtin_expect(!atomic_load_explicit(&env_read, memory_order_relaxed), 0))
        read_environment();
    if (__builtin_expect(atomic_load_explicit(&fail_at, memory_order_relaxed) == 0, 1))
        return false;
    long long k = atomic_fetch_add(&counted, 1) + 1;
    if (k != atomic_load(&fail_at)) return false;
    atomic_store(&failed, true);
    if (getenv("CT_FAIL_ALLOC_BACKTRACE")) { /* where it failed, for whoever debugs a sweep */
        void *frames[32];
        fprintf(stderr, "ctorch: allocation %lld made to fail, at:\n", k);
        backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    }
    return true;
}

void (ct_test_fail_alloc_after)(long long n) {
    atomic_store(&env_read, 1);
    atomic_store(&fail_at, 0);
    atomic_store(&counted, 0);
    atomic_store(&failed, false);
    /* counting with no failure: a count that is never reached */
    if (n >= 0) atomic_store(&fail_at, n < LLONG_MAX ? n + 1 : LLONG_MAX);
}

long long (ct_test_alloc_count)(void) { return atomic_load(&counted); }

bool (ct_test_alloc_failed)(void) { return atomic_load(&failed); }

void *ct_malloc(size_t size) { return injected_failure() ? NULL : malloc(size); }

void *ct_calloc(size_t count, size_t size) {
    return injected_failure() ? NULL : calloc(count, size);
}

void *ct_realloc(void *p, size_t size) { return injected_failure() ? NULL : realloc(p, size); }

char *ct_strdup(const char *s) { return injected_failure() ? NULL : strdup(s); }

char *ct_strndup(const char *s, size_t n) { return injected_failure() ? NULL : strndup(s, n); }

void *ct_aligned_alloc(size_t alignment, size_t size) {
    return injected_failure() ? NULL : aligned_alloc(alignment, size);
}
