/* Recording, per thread (profiler_impl.h): the thread buffers, the op hook and the
 * ranges.  An op's event runs from the thread's last boundary to its report
 * (core/prof.h); a range's from its open to its close.  Both are appended to the
 * thread's buffer under its mutex, which only the profiler's collection contends for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "profiler/profiler_impl.h"
#include "autograd/node.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/strbuf.h"
#include "core/tensor_impl.h"
#include "ops/trace.h"

atomic_bool ct_prof_recording;
ct_profiler *_Atomic ct_prof_active;

static _Thread_local prof_thread *tls;
static _Thread_local bool tls_shapes, tls_stack;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* Frees the strings of the thread's finished events and forgets them. */
static void drop_events(prof_thread *t) {
    for (int i = 0; i < t->n; i++) {
        if (t->ev[i].owns_name) free((char *)t->ev[i].name);
        free(t->ev[i].shapes);
    }
    t->n = 0;
}

void prof_thread_release(prof_thread *t) {
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    drop_events(t);
    free(t->ev);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* A thread that exits attached drops its reference (the profiler keeps its events). */
static void thread_exit(void *v) { prof_thread_release(v); }
static void make_key(void) { pthread_key_create(&exit_key, thread_exit); }

static void hook(const ct_op_call *call, void *ctx);

int prof_attach(ct_profiler *p, const char *label) {
    pthread_once(&exit_once, make_key);
    prof_thread *t = ct_calloc(1, sizeof *t);
    if (!t) {
        ct_error("ct_profiler_start: out of memory");
        return -1;
    }
    atomic_init(&t->refs, 2); /* the thread's and the profiler's */
    pthread_mutex_init(&t->mu, NULL);
    t->tid = (int64_t)syscall(SYS_gettid);
    snprintf(t->label, sizeof t->label, "%s", label);
    if (ct_trace_push(hook, t) != 0) {
        pthread_mutex_destroy(&t->mu);
        free(t);
        return -1;
    }
    pthread_mutex_lock(&p->mu);
    t->next = p->threads;
    p->threads = t;
    pthread_mutex_unlock(&p->mu);
    tls = t;
    tls_shapes = p->o.record_shapes;
    tls_stack = p->o.with_stack;
    pthread_setspecific(exit_key, t);
    ct_prof_on = true;
    ct_prof_boundary();
    return 0;
}

void prof_detach(void) {
    prof_thread *t = tls;
    if (!t) return;
    ct_prof_on = false;
    tls = NULL;
    pthread_setspecific(exit_key, NULL);
    for (int i = 0; i < t->depth && i < 64; i++) free(t->open[i].name);
    t->depth = 0;
    /* A hook pushed after ours and left on the stack keeps ours below it: the buffer
     * then stays (closed, its events dropped) for as long as the thread lives. */
    if (ct_trace_is_top(hook, t)) {
        ct_trace_pop();
        prof_thread_release(t);
    }
}

static bool append(prof_thread *t, const prof_rec *r) {
    bool ok = false;
    pthread_mutex_lock(&t->mu);
    if (!atomic_load_explicit(&t->closed, memory_order_relaxed)) {
        if (t->n == t->cap) {
            int cap = t->cap ? 2 * t->cap : 256;
            prof_rec *ev = ct_realloc(t->ev, (size_t)cap * sizeof *ev);
            if (ev) {
                t->ev = ev;
                t->cap = cap;
            }
        }
        if (t->n < t->cap) {
            t->ev[t->n++] = *r;
            ok = true;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return ok;
}

static bool recording(const prof_thread *t) {
    return atomic_load_explicit(&ct_prof_recording, memory_order_relaxed) &&
           !atomic_load_explicit(&t->closed, memory_order_relaxed);
}

static const prof_open *innermost(const prof_thread *t) {
    return t->depth && t->depth <= 64 ? &t->open[t->depth - 1] : NULL;
}

/* The innermost open backward node of the thread, or NULL. */
static const prof_open *open_node(const prof_thread *t) {
    for (int i = (t->depth < 64 ? t->depth : 64) - 1; i >= 0; i--)
        if (t->open[i].cat == PROF_CAT_AUTOGRAD) return &t->open[i];
    return NULL;
}

/* "[[64, 784], [10, 784], []]": each input's sizes, then [] for each attribute. */
static char *shapes_of(const ct_op_call *call) {
    ct_strbuf b = {0};
    int items = call->n_inputs + call->schema->n_attrs;
    ct_strbuf_put(&b, "[");
    for (int i = 0; i < items; i++) {
        const ct_tensor *x = i < call->n_inputs ? call->inputs[i] : NULL;
        ct_strbuf_put(&b, i ? ", [" : "[");
        for (int d = 0; x && d < x->ndim; d++) ct_strbuf_put(&b, d ? ", %lld" : "%lld", (long long)x->sizes[d]);
        ct_strbuf_put(&b, "]");
    }
    ct_strbuf_put(&b, "]");
    return b.s; /* NULL when memory was short */
}

static void hook(const ct_op_call *call, void *ctx) {
    prof_thread *t = ctx;
    if (!recording(t)) {
        ct_prof_boundary();
        return;
    }
    ct_prof_mark end = ct_prof_mark_now(), begin = ct_prof_last;
    const prof_open *in = innermost(t);
    prof_rec r = {
        .name = call->schema->name,
        .start_ns = begin.t_ns,
        .dur_ns = end.t_ns - begin.t_ns,
        .mem = (end.alloc - begin.alloc) - (end.freed - begin.freed),
        .seq = -1,
        .id = -1,
        .parent = in ? in->id : -1,
        .cat = PROF_CAT_OP,
        .in_backward = call->in_backward,
    };
    const prof_open *node = call->in_backward ? open_node(t) : NULL;
    if (node) {
        r.seq = node->seq;
        if (tls_stack) {
            r.file = node->file;
            r.line = node->line;
        }
    } else {
        for (int i = 0; i < call->n_outputs && r.seq < 0; i++)
            if (call->outputs[i] && call->outputs[i]->grad_fn)
                r.seq = (int64_t)call->outputs[i]->grad_fn->seq;
        if (tls_stack) ct_current_site(&r.file, &r.line);
    }
    if (tls_shapes) r.shapes = shapes_of(call);
    if (!append(t, &r)) free(r.shapes);
    ct_prof_boundary(); /* the hook's own time is nobody's */
}

bool prof_range_open(const char *name, uint8_t cat, int64_t seq, const char *file, int line) {
    prof_thread *t = tls;
    if (!t) return false;
    ct_prof_boundary();
    if (t->depth < 64) {
        prof_open *o = &t->open[t->depth];
        *o = (prof_open){ct_strdup(name ? name : "(null)"), file, line, ct_prof_last, seq,
                         t->next_id++, cat};
        if (!tls_stack) o->file = NULL;
    }
    t->depth++;
    return true;
}

void prof_range_close(void) {
    prof_thread *t = tls;
    if (!t || !t->depth) return;
    ct_prof_mark end = ct_prof_mark_now();
    ct_prof_last = end;
    t->depth--;
    if (t->depth >= 64) return;
    prof_open *o = &t->open[t->depth];
    const prof_open *in = innermost(t);
    prof_rec r = {
        .name = o->name,
        .owns_name = true,
        .file = o->file,
        .line = o->line,
        .start_ns = o->begin.t_ns,
        .dur_ns = end.t_ns - o->begin.t_ns,
        .mem = (end.alloc - o->begin.alloc) - (end.freed - o->begin.freed),
        .seq = o->seq,
        .id = o->id,
        .parent = in ? in->id : -1,
        .cat = o->cat,
        .in_backward = o->cat == PROF_CAT_AUTOGRAD,
    };
    o->name = NULL;
    if (!r.name || !recording(t) || !append(t, &r)) free((char *)r.name);
}

void prof_clear_threads(ct_profiler *p) {
    pthread_mutex_lock(&p->mu);
    for (prof_thread *t = p->threads; t; t = t->next) {
        pthread_mutex_lock(&t->mu);
        drop_events(t);
        pthread_mutex_unlock(&t->mu);
    }
    pthread_mutex_unlock(&p->mu);
}

/* ---- what code below the profiler calls (core/prof.h) ---- */

static void node_begin(const char *name, int64_t seq, const char *file, int line) {
    prof_range_open(name, PROF_CAT_AUTOGRAD, seq, file, line);
}

static void thread_sync(const char *kind, int index) {
    pthread_mutex_lock(&ct_prof_mu);
    ct_prof_seen_generation = atomic_load(&ct_prof_generation);
    ct_profiler *p = atomic_load(&ct_prof_active);
    if (tls && (!p || atomic_load(&tls->closed))) prof_detach();
    if (!tls && p) {
        char label[48];
        snprintf(label, sizeof label, "%s %d", kind, index);
        if (prof_attach(p, label) != 0) ct_clear_error(); /* the worker goes unprofiled */
    }
    pthread_mutex_unlock(&ct_prof_mu);
    if (tls) ct_prof_boundary(); /* the wait for work is nobody's */
}

const ct_prof_sink ct_prof_sink_impl = {node_begin, prof_range_close, thread_sync};

/* ---- ct_record_function ---- */

ct_record_guard(ct_record_function_begin)(const char *name) {
    if (__builtin_expect(!ct_prof_on, 1)) return (ct_record_guard){false, 1};
    const char *file = NULL;
    int line = 0;
    ct_current_site(&file, &line);
    return (ct_record_guard){prof_range_open(name, PROF_CAT_USER, -1, file, line), 1};
}

void(ct_record_function_end)(ct_record_guard *g) {
    if (g && g->open) prof_range_close();
    if (g) g->open = false;
}
