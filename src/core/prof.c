/* The profiler's seams in core (core/prof.h). */
#include <time.h>

#include "core/prof.h"

_Thread_local bool ct_prof_on;
_Thread_local ct_prof_mark ct_prof_last;
_Thread_local int64_t ct_prof_alloc_bytes, ct_prof_freed_bytes;
const ct_prof_sink *_Atomic ct_prof_sink_fns;
atomic_uint ct_prof_generation;
_Thread_local unsigned ct_prof_seen_generation;

int64_t ct_prof_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ct_prof_thread_sync_slow(const char *kind, int index) {
    unsigned g = atomic_load(&ct_prof_generation);
    const ct_prof_sink *s = atomic_load(&ct_prof_sink_fns);
    if (s) s->thread_sync(kind, index); /* sets ct_prof_seen_generation */
    else ct_prof_seen_generation = g;
}
