/* Work handles: what a queued operation holds, how its caller waits for it, and how
 * the communication thread reports its end (Note [The communication thread]). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "dist/dist_impl.h"
#include "core/error.h"
#include "core/mem.h"

ct_work *ct_work_new(ct_work_kind kind, const char *fn, ct_process_group *g) {
    ct_work *w = ct_calloc(1, sizeof *w);
    if (!w) {
        ct_error("%s: out of memory", fn);
        return NULL;
    }
    w->kind = kind;
    w->fn = fn;
    w->g = g;
    w->desc.kind = kind;
    w->desc.op = -1;
    w->desc.root = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    return w;
}

void ct_work_finish(ct_work *w, const char *fmt, ...) {
    pthread_mutex_lock(&w->mu);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err, sizeof w->err, fmt, ap);
        va_end(ap);
        w->failed = true;
    }
    w->done = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void wait_done(ct_work *w) {
    pthread_mutex_lock(&w->mu);
    if (!w->done) {
        atomic_fetch_add(&ct_dist_waiters, 1);
        while (!w->done) pthread_cond_wait(&w->cv, &w->mu);
        atomic_fetch_sub(&ct_dist_waiters, 1);
    }
    pthread_mutex_unlock(&w->mu);
}

int(ct_work_wait)(ct_work *w) {
    if (!w) {
        ct_error("ct_work_wait: work is NULL");
        return -1;
    }
    wait_done(w);
    if (w->failed) {
        ct_error("%s", w->err);
        return -1;
    }
    return 0;
}

bool(ct_work_is_completed)(ct_work *w) {
    if (!w) return false;
    pthread_mutex_lock(&w->mu);
    bool done = w->done;
    pthread_mutex_unlock(&w->mu);
    return done;
}

void(ct_work_free)(ct_work *w) {
    if (!w) return;
    wait_done(w);
    for (int i = 0; i < CT_WORK_MAX_TENSORS; i++) ct_release(w->held[i]);
    for (int i = 0; i < w->nlist; i++) ct_release(w->list[i]);
    free(w->list);
    free(w->tmp);
    free(w->descs);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}

int ct_work_submit(ct_work *w, ct_work **out) {
    ct_dist_enqueue(w);
    if (out) {
        *out = w;
        return 0;
    }
    int rc = (ct_work_wait)(w);
    (ct_work_free)(w);
    return rc;
}
