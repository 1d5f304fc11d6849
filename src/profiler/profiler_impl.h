/* The profiler's insides (ctorch/profiler.h).
 *
 * Each thread a profiler records has a thread buffer (prof_thread): the events it
 * finished and its open ranges.  Only its thread writes it, under its mutex; the
 * profiler takes the finished events under the same mutex when a recording ends.  A
 * buffer has two references, its thread's and the profiler's, and is freed by the
 * last one dropped: a worker thread may exit before the profiler stops, and the
 * profiler may stop while a worker is in the middle of a batch (the buffer is then
 * `closed`, and what the worker still reports is dropped).  Times come from the
 * boundaries of core/prof.h. */
#ifndef CT_PROFILER_IMPL_H
#define CT_PROFILER_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "ctorch/profiler.h"
#include "core/object.h"
#include "core/prof.h"

/* An event as a thread records it. */
typedef struct {
    const char *name; /* static (an op's) or owned (owns_name) */
    char *shapes;     /* owned; NULL without record_shapes */
    const char *file;
    int line;
    int64_t start_ns, dur_ns;
    int64_t mem;      /* bytes allocated less bytes freed, children included */
    int64_t seq;      /* -1: none */
    int id;           /* a range's number on its thread; -1 for ops */
    int parent;       /* the enclosing range's id; -1: none */
    uint8_t cat;      /* PROF_CAT_* */
    bool owns_name, in_backward;
} prof_rec;

enum { PROF_CAT_OP, PROF_CAT_USER, PROF_CAT_AUTOGRAD };

/* An open range. */
typedef struct {
    char *name;
    const char *file;
    int line;
    ct_prof_mark begin;
    int64_t seq;
    int id;
    uint8_t cat;
} prof_open;

typedef struct prof_thread prof_thread;
struct prof_thread {
    atomic_int refs;
    pthread_mutex_t mu;
    atomic_bool closed; /* the profiler stopped: drop what comes */
    int64_t tid;
    char label[48];    /* "main thread", "loader worker 0" */
    prof_rec *ev;      /* finished events */
    int n, cap;
    prof_open open[64]; /* open ranges (deeper ones are not recorded) */
    int depth, next_id;
    prof_thread *next; /* in the profiler's list */
};

typedef enum { ACT_NONE, ACT_WARMUP, ACT_RECORD, ACT_RECORD_AND_SAVE } prof_action;

struct ct_profiler {
    ct_object obj;
    ct_profiler_options o;
    bool active;                /* between start and stop */
    pthread_t owner;            /* the thread that started it */
    pthread_mutex_t mu;         /* guards threads */
    prof_thread *threads;       /* every thread buffer of the current recording */
    int step;                   /* steps ended so far */
    prof_action action;         /* of the current step */
    int64_t window_start_ns;    /* the current recording began */
    bool step_range_open;       /* a "ProfilerStep#N" range is open */
    /* the last finished recording */
    ct_profiler_event *events;
    char **strings;             /* strings the events point at (owned) */
    int n_events, n_strings;
    int64_t pid;
    int n_threads;              /* threads of the last recording: */
    int64_t *tids;              /* their ids */
    char (*labels)[48];         /* and names */
};

/* Whether the process's profiler records now (not in a schedule's wait or warmup). */
extern atomic_bool ct_prof_recording;
/* The active profiler, or NULL. */
extern ct_profiler *_Atomic ct_prof_active;

/* record.c: attaching threads, ranges, the op hook. */
int prof_attach(ct_profiler *p, const char *label); /* this thread; 0 or -1 */
void prof_detach(void);                              /* this thread, if attached */
void prof_thread_release(prof_thread *t);
/* Opens / closes a range on this thread (no-ops when it records nothing). */
bool prof_range_open(const char *name, uint8_t cat, int64_t seq, const char *file, int line);
void prof_range_close(void);
/* Drops this process's recorded events so far (a window starts): every thread's. */
void prof_clear_threads(ct_profiler *p);

/* What code below the profiler calls (record.c), and the lock of starting and
 * stopping (session.c). */
extern const ct_prof_sink ct_prof_sink_impl;
extern pthread_mutex_t ct_prof_mu;

/* session.c */
void prof_collect(ct_profiler *p); /* the threads' events become p's last recording */
void prof_free_results(ct_profiler *p); /* drops p's last recording */
/* A recording of p with events, or NULL with an error naming fn. */
bool prof_has_events(const ct_profiler *p, const char *fn);

#endif
