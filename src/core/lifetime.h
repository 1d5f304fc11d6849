/* The debug lifetime mode: finding use-after-free of ctorch's objects.
 *
 * The pools of core/pool.h reuse a released tensor's block for the next one at once,
 * so a stale pointer reads another tensor (or the same values) and neither ctorch nor
 * AddressSanitizer can tell.  In the debug mode (the environment variable
 * CT_DEBUG_LIFETIME=1, read once at start-up; the build option CTORCH_DEBUG_LIFETIME=ON
 * makes it the default, CT_DEBUG_LIFETIME=0 then turns it off):
 *   - the pools and the cpu's large-block cache are off: nothing is reused early;
 *   - a released object's block is not freed at once but held in a quarantine of the
 *     CT_QUARANTINE_BLOCKS most recently released ones (then freed, oldest first), so
 *     its liveness magic (Note [Liveness magic], core/object.h) stays readable and
 *     cleared, and every ct_ function given it reports "ct_sum: argument 1 was
 *     released (use after free)";
 *   - a storage's data is poisoned for AddressSanitizer (ASAN_POISON_MEMORY_REGION)
 *     when released, and large data is given back to malloc, so that a raw read
 *     through a stale ct_data_ptr is an ASan report.  The objects' own fields stay
 *     readable: the library checks them, and users cannot reach them.
 * Without the mode the cost is the magic's one compare per checked argument. */
#ifndef CT_CORE_LIFETIME_H
#define CT_CORE_LIFETIME_H

#include <stdbool.h>
#include <stddef.h>

#define CT_QUARANTINE_BLOCKS 65536

/* Whether the debug lifetime mode is on (fixed before main runs). */
extern bool ct_lifetime_debug;

/* Frees an object's block (from malloc, or one a pool gives back) after clearing its
 * liveness magic: in the debug mode it goes to the quarantine instead. */
void ct_lifetime_free(void *block);

/* Marks n bytes at p unreadable (readable again) for AddressSanitizer; nothing
 * without it. */
void ct_lifetime_poison(void *p, size_t n);
void ct_lifetime_unpoison(void *p, size_t n);

#endif
