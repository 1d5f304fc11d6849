/* Collection: the thread buffers' events of the window that ended become the
 * profiler's last recording (ct_profiler_event), ordered by start time and then by
 * end time, latest first (as PyTorch orders its function events), each with its
 * parent's index and its self time and memory. */
#include <stdlib.h>
#include <string.h>

#include "profiler/profiler_impl.h"
#include "core/error.h"
#include "core/mem.h"

typedef struct {
    prof_rec r;
    int thread; /* index among the collected threads */
} item;

static int by_time(const void *a, const void *b) {
    const prof_rec *x = &((const item *)a)->r, *y = &((const item *)b)->r;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    int64_t ex = x->start_ns + x->dur_ns, ey = y->start_ns + y->dur_ns;
    if (ex != ey) return ex > ey ? -1 : 1;
    /* the same span: the range encloses the op, an outer range an inner one */
    if ((x->id < 0) != (y->id < 0)) return x->id < 0 ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static const char *category(uint8_t cat) {
    return cat == PROF_CAT_OP ? "cpu_op" : cat == PROF_CAT_USER ? "user_annotation" : "autograd";
}

static void free_items(item *it, int n) {
    for (int i = 0; i < n; i++) {
        if (it[i].r.owns_name) free((char *)it[i].r.name);
        free(it[i].r.shapes);
    }
    free(it);
}

void prof_free_results(ct_profiler *p) {
    for (int i = 0; i < p->n_strings; i++) free(p->strings[i]);
    free(p->strings);
    free(p->events);
    free(p->tids);
    free(p->labels);
    p->strings = NULL;
    p->events = NULL;
    p->tids = NULL;
    p->labels = NULL;
    p->n_strings = p->n_events = p->n_threads = 0;
}

void prof_collect(ct_profiler *p) {
    /* Take every thread's events. */
    item *it = NULL;
    int n = 0, cap = 0, n_threads = 0;
    int64_t *tids = NULL;
    char(*labels)[48] = NULL;
    int *id_base = NULL; /* per thread: where its range ids start in one id space */
    int ids = 0;
    bool oom = false;
    pthread_mutex_lock(&p->mu);
    for (prof_thread *t = p->threads; t; t = t->next) n_threads++;
    tids = ct_calloc((size_t)n_threads + 1, sizeof *tids);
    labels = ct_calloc((size_t)n_threads + 1, sizeof *labels);
    id_base = ct_calloc((size_t)n_threads + 1, sizeof *id_base);
    oom = !tids || !labels || !id_base;
    int k = 0;
    for (prof_thread *t = p->threads; t && !oom; t = t->next, k++) {
        pthread_mutex_lock(&t->mu);
        tids[k] = t->tid;
        memcpy(labels[k], t->label, sizeof labels[k]);
        id_base[k] = ids;
        int span = 0; /* this thread's range ids (its own counter is not ours to read) */
        for (int i = 0; i < t->n; i++) {
            if (t->ev[i].id >= span) span = t->ev[i].id + 1;
            if (t->ev[i].parent >= span) span = t->ev[i].parent + 1;
        }
        ids += span;
        if (n + t->n > cap) {
            int c = cap ? cap : 1024;
            while (c < n + t->n) c *= 2;
            item *g = ct_realloc(it, (size_t)c * sizeof *g);
            if (g) {
                it = g;
                cap = c;
            } else {
                oom = true;
            }
        }
        for (int i = 0; i < t->n; i++) {
            prof_rec *r = &t->ev[i];
            if (!oom && r->start_ns >= p->window_start_ns) {
                it[n++] = (item){*r, k};
            } else {
                if (r->owns_name) free((char *)r->name);
                free(r->shapes);
            }
        }
        t->n = 0;
        pthread_mutex_unlock(&t->mu);
    }
    pthread_mutex_unlock(&p->mu);

    ct_profiler_event *ev = NULL;
    char **strings = NULL;
    int *index_of_id = NULL;
    if (!oom) {
        ev = ct_calloc((size_t)n + 1, sizeof *ev);
        strings = ct_calloc(2 * (size_t)n + 1, sizeof *strings);
        index_of_id = ct_malloc(((size_t)ids + 1) * sizeof *index_of_id);
        oom = !ev || !strings || !index_of_id;
    }
    if (oom) {
        ct_error("ct_profiler: out of memory collecting %d events", n);
        free_items(it, n);
        free(ev);
        free(strings);
        free(index_of_id);
        free(tids);
        free(labels);
        free(id_base);
        return;
    }
    if (n) qsort(it, (size_t)n, sizeof *it, by_time); /* it is NULL when there are none */
    for (int i = 0; i < ids; i++) index_of_id[i] = -1;
    int n_strings = 0;
    for (int i = 0; i < n; i++) {
        prof_rec *r = &it[i].r;
        if (r->id >= 0) index_of_id[id_base[it[i].thread] + r->id] = i;
        if (r->owns_name) strings[n_strings++] = (char *)r->name;
        if (r->shapes) strings[n_strings++] = r->shapes;
        ev[i] = (ct_profiler_event){
            .name = r->name,
            .category = category(r->cat),
            .tid = tids[it[i].thread],
            .start_us = (double)r->start_ns / 1e3,
            .dur_us = (double)r->dur_ns / 1e3,
            .self_us = (double)r->dur_ns / 1e3,
            .parent = -1,
            .seq = r->seq,
            .in_backward = r->in_backward,
            .input_shapes = r->shapes,
            .cpu_memory = p->o.profile_memory ? r->mem : 0,
            .self_cpu_memory = p->o.profile_memory ? r->mem : 0,
            .file = r->file,
            .line = r->line,
        };
    }
    /* Parents, and self time and memory. */
    for (int i = 0; i < n; i++) {
        prof_rec *r = &it[i].r;
        if (r->parent < 0) continue;
        int q = index_of_id[id_base[it[i].thread] + r->parent];
        if (q < 0) continue; /* its range was not recorded (opened before the window) */
        ev[i].parent = q;
        ev[q].self_us -= ev[i].dur_us;
        ev[q].self_cpu_memory -= ev[i].cpu_memory;
    }
    free(it);
    free(index_of_id);
    free(id_base);
    prof_free_results(p); /* the previous recording gives way */
    p->events = ev;
    p->n_events = n;
    p->strings = strings;
    p->n_strings = n_strings;
    p->tids = tids;
    p->labels = labels;
    p->n_threads = n_threads;
}

bool prof_has_events(const ct_profiler *p, const char *fn) {
    if (!p) {
        ct_error("%s: the profiler is NULL", fn);
        return false;
    }
    if (!ct_alive(fn, 1, p)) return false;
    if (!p->n_events) {
        ct_error("%s: the profiler recorded no events%s", fn,
                 p->active ? " yet (it is still recording: stop it, or wait for on_trace_ready)"
                           : "");
        return false;
    }
    return true;
}

const ct_profiler_event *(ct_profiler_events)(ct_profiler *p, int *n) {
    if (n) *n = 0;
    if (!p) {
        ct_error("ct_profiler_events: the profiler is NULL");
        return NULL;
    }
    if (!ct_alive("ct_profiler_events", 1, p)) return NULL;
    if (n) *n = p->n_events;
    return p->n_events ? p->events : NULL;
}
