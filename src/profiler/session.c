/* A profiler's life (ctorch/profiler.h): start, the schedule's steps, stop, and the
 * collection of the threads' events into the last recording.
 *
 * Without a schedule every step records.  With one, each step has the action
 * torch.profiler.schedule gives it (none, warmup, record, record-and-save); a window
 * starts when a recording step follows a non-recording or saving one (the threads'
 * events so far are dropped) and ends after the record-and-save step, when the events
 * are collected and on_trace_ready runs.  Stopping ends a window in progress the same
 * way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profiler/profiler_impl.h"
#include "core/error.h"
#include "core/lifetime.h"
#include "core/mem.h"

pthread_mutex_t ct_prof_mu = PTHREAD_MUTEX_INITIALIZER;

static bool has_schedule(const ct_profiler_schedule *s) {
    return s->wait || s->warmup || s->active || s->repeat || s->skip_first;
}

/* torch.profiler.schedule's action of step. */
static prof_action action_at(const ct_profiler_schedule *s, int step) {
    if (!has_schedule(s)) return ACT_RECORD;
    if (step < s->skip_first) return ACT_NONE;
    step -= s->skip_first;
    int num = s->wait + s->warmup + s->active;
    if (s->repeat > 0 && step / num >= s->repeat) return ACT_NONE;
    int mod = step % num;
    if (mod < s->wait) return ACT_NONE;
    if (mod < s->wait + s->warmup) return ACT_WARMUP;
    return mod < num - 1 ? ACT_RECORD : ACT_RECORD_AND_SAVE;
}

static bool records(prof_action a) { return a == ACT_RECORD || a == ACT_RECORD_AND_SAVE; }

static void profiler_destroy(ct_object *o) {
    ct_profiler *p = (ct_profiler *)o;
    if (p->active) ct_profiler_stop(p);
    prof_free_results(p);
    pthread_mutex_destroy(&p->mu);
    ct_lifetime_free(p);
}

static void open_step_range(ct_profiler *p) {
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", p->step);
    p->step_range_open = prof_range_open(name, PROF_CAT_USER, -1, NULL, 0);
}

static void close_step_range(ct_profiler *p) {
    if (p->step_range_open) prof_range_close();
    p->step_range_open = false;
}

ct_profiler *(ct_profiler_start)(ct_profiler_options o) {
    const ct_profiler_schedule *s = &o.schedule;
    if (s->wait < 0 || s->warmup < 0 || s->active < 0 || s->repeat < 0 || s->skip_first < 0) {
        ct_error("ct_profiler_start: schedule fields must be >= 0 (got wait=%d, warmup=%d, "
                 "active=%d, repeat=%d, skip_first=%d)",
                 s->wait, s->warmup, s->active, s->repeat, s->skip_first);
        return NULL;
    }
    if (has_schedule(s) && s->active < 1) {
        ct_error("ct_profiler_start: a schedule needs active >= 1 (got %d)", s->active);
        return NULL;
    }
    ct_profiler *p = ct_calloc(1, sizeof *p);
    if (!p) {
        ct_error("ct_profiler_start: out of memory");
        return NULL;
    }
    ct_object_init(&p->obj, profiler_destroy);
    pthread_mutex_init(&p->mu, NULL);
    p->o = o;
    p->pid = (int64_t)getpid();
    p->owner = pthread_self();
    p->action = action_at(s, 0);
    atomic_store(&ct_prof_sink_fns, &ct_prof_sink_impl);
    pthread_mutex_lock(&ct_prof_mu);
    if (atomic_load(&ct_prof_active)) {
        pthread_mutex_unlock(&ct_prof_mu);
        ct_error("ct_profiler_start: a profiler is already active in this process (profilers "
                 "do not nest: stop the first one)");
        pthread_mutex_destroy(&p->mu);
        ct_lifetime_free(p);
        return NULL;
    }
    if (prof_attach(p, "main thread") != 0) {
        pthread_mutex_unlock(&ct_prof_mu);
        pthread_mutex_destroy(&p->mu);
        ct_lifetime_free(p);
        return NULL;
    }
    p->active = true;
    p->window_start_ns = ct_prof_now_ns();
    atomic_store(&ct_prof_recording, records(p->action));
    atomic_store(&ct_prof_active, p);
    atomic_fetch_add(&ct_prof_generation, 1);
    ct_prof_seen_generation = atomic_load(&ct_prof_generation);
    pthread_mutex_unlock(&ct_prof_mu);
    if (has_schedule(s) && records(p->action)) open_step_range(p);
    return ct_scope_register(p);
}

static bool check_owner(ct_profiler *p, const char *fn) {
    if (!p) {
        ct_error("%s: the profiler is NULL", fn);
        return false;
    }
    if (!ct_alive(fn, 1, p)) return false;
    if (!p->active) {
        ct_error("%s: the profiler is not active (it was stopped)", fn);
        return false;
    }
    if (!pthread_equal(p->owner, pthread_self())) {
        ct_error("%s: the profiler was started by another thread", fn);
        return false;
    }
    return true;
}

/* Ends the window in progress: collects, then runs on_trace_ready with this thread's
 * recording paused (its ops are not the profile's). */
static void trace_ready(ct_profiler *p) {
    bool was = atomic_exchange(&ct_prof_recording, false);
    prof_collect(p);
    if (p->o.on_trace_ready) {
        bool on = ct_prof_on;
        ct_prof_on = false;
        p->o.on_trace_ready(p, p->o.on_trace_ready_ctx);
        ct_prof_on = on;
    }
    atomic_store(&ct_prof_recording, was);
}

int(ct_profiler_stop)(ct_profiler *p) {
    if (!check_owner(p, "ct_profiler_stop")) return -1;
    close_step_range(p);
    pthread_mutex_lock(&ct_prof_mu);
    atomic_store(&ct_prof_active, NULL);
    atomic_store(&ct_prof_recording, false);
    atomic_fetch_add(&ct_prof_generation, 1);
    pthread_mutex_unlock(&ct_prof_mu);
    bool ready = records(p->action);
    if (ready) prof_collect(p);
    /* Close every thread buffer and drop the profiler's references. */
    pthread_mutex_lock(&p->mu);
    prof_thread *t = p->threads;
    p->threads = NULL;
    pthread_mutex_unlock(&p->mu);
    prof_detach();
    while (t) {
        prof_thread *next = t->next;
        pthread_mutex_lock(&t->mu);
        atomic_store(&t->closed, true);
        pthread_mutex_unlock(&t->mu);
        prof_thread_release(t);
        t = next;
    }
    p->active = false;
    if (ready && p->o.on_trace_ready) p->o.on_trace_ready(p, p->o.on_trace_ready_ctx);
    return 0;
}

int(ct_profiler_step)(ct_profiler *p) {
    if (!check_owner(p, "ct_profiler_step")) return -1;
    close_step_range(p);
    prof_action prev = p->action;
    p->step++;
    p->action = action_at(&p->o.schedule, p->step);
    if (prev == ACT_RECORD_AND_SAVE) trace_ready(p);
    if (records(p->action) && (!records(prev) || prev == ACT_RECORD_AND_SAVE)) {
        prof_clear_threads(p);
        p->window_start_ns = ct_prof_now_ns();
    }
    atomic_store(&ct_prof_recording, records(p->action));
    if (has_schedule(&p->o.schedule) && records(p->action)) open_step_range(p);
    return 0;
}

ct_profile_guard(ct_profile_begin)(ct_profiler **prof, ct_profiler_options o) {
    ct_profiler *p = (ct_profiler_start)(o);
    if (prof) *prof = p;
    return (ct_profile_guard){p, 1};
}

void(ct_profile_end)(ct_profile_guard *g) {
    if (!g || !g->prof) return;
    ct_profiler *p = g->prof;
    if (!ct_object_dead(p) && p->active) (ct_profiler_stop)(p);
    g->prof = NULL;
}
