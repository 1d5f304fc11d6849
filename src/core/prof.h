/* The profiler's seams in core (the profiler itself is src/profiler/, above
 * everything it observes).
 *
 * Op events are timed without a mark at each op's entry: a thread that records
 * (ct_prof_on) keeps the time of its last *boundary*, and an op reported by the record
 * hook (ops/trace.h) ran from the last boundary to its report.  Boundaries are
 * every public call made from user code (ct__site, which the CT_AT wrappers call
 * before the function), every op report, and the begin and end of every range
 * (record_function, a backward node, a loader batch).  So `ct_relu(ct_matmul(a, b))`
 * times matmul from the matmul call and relu from matmul's end; user code between
 * ctorch calls is never counted, and an op inside a range starts after the range.
 * Bytes allocated and freed are thread counters (ct_alloc_stats_alloc, ct_alloc_stats_free) read at the same
 * points.  With no profiler, each of those places pays one predictable branch on
 * ct_prof_on. */
#ifndef CT_CORE_PROF_H
#define CT_CORE_PROF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* A point of the thread's timeline: monotonic nanoseconds and the thread's
 * allocation counters then. */
typedef struct {
    int64_t t_ns;
    int64_t alloc, freed; /* bytes this thread allocated / freed so far */
} ct_prof_mark;

/* This thread is attached to an active profiler (its events are recorded). */
extern _Thread_local bool ct_prof_on;
/* The last boundary of this thread. */
extern _Thread_local ct_prof_mark ct_prof_last;
/* Bytes of tensor storage this thread allocated and freed (ct_alloc_stats_alloc, ct_alloc_stats_free). */
extern _Thread_local int64_t ct_prof_alloc_bytes, ct_prof_freed_bytes;

int64_t ct_prof_now_ns(void); /* CLOCK_MONOTONIC in nanoseconds */
/* The thread's point now. */
static inline ct_prof_mark ct_prof_mark_now(void) {
    return (ct_prof_mark){ct_prof_now_ns(), ct_prof_alloc_bytes, ct_prof_freed_bytes};
}
/* Makes now a boundary of this thread. */
static inline void ct_prof_boundary(void) { ct_prof_last = ct_prof_mark_now(); }

/* What the profiler does for code below it: ranges that are not ops (a backward
 * node: its grad_fn name, the forward's sequence number and call site) and threads
 * that join a profiler started elsewhere (loader workers).  Set once by the profiler. */
typedef struct {
    void (*range_begin)(const char *name, int64_t seq, const char *file, int line);
    void (*range_end)(void);
    void (*thread_sync)(const char *kind, int index);
} ct_prof_sink;
extern const ct_prof_sink *_Atomic ct_prof_sink_fns;
/* Bumped by the profiler when one starts or stops: a thread that saw another value
 * calls thread_sync. */
extern atomic_uint ct_prof_generation;

/* A worker thread (kind "loader worker", index its number) calls this before each
 * unit of work: it joins a profiler active in the process, or leaves one that stopped. */
void ct_prof_thread_sync_slow(const char *kind, int index);
extern _Thread_local unsigned ct_prof_seen_generation;
static inline void ct_prof_thread_sync(const char *kind, int index) {
    if (__builtin_expect(atomic_load_explicit(&ct_prof_generation, memory_order_relaxed) !=
                             ct_prof_seen_generation, 0))
        ct_prof_thread_sync_slow(kind, index);
}

/* A range below the profiler (the autograd engine's nodes): no-ops unless ct_prof_on. */
static inline void ct_prof_range_begin(const char *name, int64_t seq, const char *file, int line) {
    if (__builtin_expect(ct_prof_on, 0)) ct_prof_sink_fns->range_begin(name, seq, file, line);
}
static inline void ct_prof_range_end(void) {
    if (__builtin_expect(ct_prof_on, 0)) ct_prof_sink_fns->range_end();
}

#endif
