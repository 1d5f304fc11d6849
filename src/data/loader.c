/* The DataLoader.
 *
 * An epoch starts with a plan (the batch sampler's batches of dataset indices).  With
 * num_workers = 0 the calling thread loads batch after batch.  Otherwise worker
 * threads take batch numbers in order from a shared counter and put each finished
 * batch into slot (b % cap) of a ring of cap = prefetch_factor * num_workers slots; a
 * worker may only take batch b once b < consumed + cap, so at most cap batches are in
 * flight or waiting, and slots never collide.  The consumer takes the slots in batch
 * order, so batches come out in the plan's order whatever thread loaded them.
 *
 * Each batch is loaded inside its own scope; the batch's tensors are retained by the
 * slot and handed to the consumer's scope.  Stopping an epoch (the end, an error,
 * reset, set_epoch, release) clears `active`, waits until no worker is loading (a
 * worker finishes the batch in hand first, then drops it) and releases the batches
 * nobody took.  Workers are started with the epoch and joined when it stops, or with
 * persistent_workers started once and kept, idle between epochs, until the loader is
 * released (`shutdown`); either way the batches are the same. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/threads.h"
#include "core/lifetime.h"
#include "data/data_impl.h"
#include "core/mem.h"
#include "core/prof.h"

typedef struct {
    bool ready;
    ct_batch batch;
    char *error; /* the worker's message when the batch failed */
} slot;

typedef struct worker worker;

struct ct_loader {
    ct_object obj;
    ct_dataset *ds;
    ct_batch_sampler *bs;
    ct_collate_fn collate;
    void *collate_ctx;
    int num_workers, cap;
    bool persistent;
    double timeout;
    uint64_t seed, epoch;
    /* the epoch in progress */
    bool running;
    ct_batch_plan plan;
    int64_t consumed; /* batches handed out */
    /* shared with the workers, under mu */
    pthread_mutex_t mu;
    pthread_cond_t ready_cv, space_cv;
    pthread_cond_t idle_cv;
    int64_t taken; /* the next batch a worker takes */
    bool active;   /* an epoch is in progress: workers may take batches */
    bool shutdown; /* workers exit */
    int busy;      /* workers loading a batch */
    slot *slots;
    worker *workers;
    int n_workers; /* running */
};

struct worker {
    ct_loader *l;
    int id;
    pthread_t thread;
};

static _Thread_local int current_worker = -1;
int ct_loader_worker_id(void) { return current_worker; }

/* Loads batch b of the plan into out (retained tensors).  On failure in a worker, the
 * message goes to *err (the error state is thread-local). */
static int load_batch(ct_loader *l, int64_t b, ct_batch *out, char **err) {
    int64_t start = l->plan.off[b], n = l->plan.off[b + 1] - start;
    ct_sample *samples = ct_calloc((size_t)n, sizeof *samples);
    int rc = samples ? 0 : -1;
    if (rc) ct_error("ct_loader_next: out of memory");
    memset(out, 0, sizeof *out);
    CT_SCOPE {
        for (int64_t i = 0; i < n && rc == 0; i++) {
            int64_t index = l->plan.idx[start + i];
            rc = ct_dataset_get_seeded(l->ds, index, ct_data_seed(l->seed, l->epoch, (uint64_t)index),
                                       &samples[i]);
        }
        ct_batch got = {0};
        if (rc == 0 && l->collate((int)n, samples, &got, l->collate_ctx) != 0) {
            if (!ct_last_error()) ct_error("ct_loader_next: collate failed on batch %lld", (long long)b);
            rc = -1;
        }
        if (rc == 0 && (got.n < 1 || got.n > CT_SAMPLE_MAX)) {
            ct_error("ct_loader_next: collate returned %d tensors (expected 1 to %d)", got.n, CT_SAMPLE_MAX);
            rc = -1;
        }
        for (int k = 0; rc == 0 && k < got.n; k++) {
            if (got.t[k]) continue;
            ct_error("ct_loader_next: collate left tensor %d of batch %lld NULL", k, (long long)b);
            rc = -1;
        }
        if (rc == 0) {
            out->n = got.n;
            for (int k = 0; k < got.n; k++) out->t[k] = ct_retain(got.t[k]);
            out->size = n;
            out->index = b;
        }
    }
    if (rc && err) {
        const char *m = ct_last_error();
        size_t size = (m ? strlen(m) : 16) + 64;
        if ((*err = ct_malloc(size)))
            snprintf(*err, size, "%s (in loader worker %d, batch %lld)", m ? m : "unknown error",
                     current_worker, (long long)b);
        ct_clear_error();
    }
    free(samples);
    return rc;
}

static void batch_release(ct_batch *b) {
    for (int k = 0; k < b->n; k++) ct_release(b->t[k]);
    b->n = 0;
}

/* Under mu: a batch of the epoch in progress is there to take and has a free slot. */
static bool can_take(const ct_loader *l) {
    return l->active && l->taken < l->plan.n_batches && l->taken < l->consumed + l->cap;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    ct_loader *l = w->l;
    current_worker = w->id;
    ct_set_thread_num_threads(1); /* see core/threads.h */
    ct_error_defer_handler(true); /* errors reach the handler from ct_loader_next */
    pthread_mutex_lock(&l->mu);
    for (;;) {
        /* Without persistent_workers a worker is done when its epoch has no batch left. */
        while (!l->shutdown && !can_take(l) && (l->persistent || l->taken < l->plan.n_batches))
            pthread_cond_wait(&l->space_cv, &l->mu);
        if (!can_take(l)) break; /* shutdown, or all batches taken */
        int64_t b = l->taken++;
        l->busy++;
        pthread_mutex_unlock(&l->mu);

        ct_batch batch;
        char *err = NULL;
        ct_prof_thread_sync("loader worker", w->id); /* joins a profiler (core/prof.h) */
        if (load_batch(l, b, &batch, &err) != 0 && !err) err = ct_strdup("ct_loader_next: out of memory");

        pthread_mutex_lock(&l->mu);
        if (l->active) { /* else the epoch was stopped meanwhile: drop the batch */
            l->slots[b % l->cap] = (slot){.ready = true, .batch = batch, .error = err};
            pthread_cond_broadcast(&l->ready_cv);
        } else {
            batch_release(&batch);
            free(err);
        }
        if (--l->busy == 0) pthread_cond_broadcast(&l->idle_cv);
    }
    pthread_mutex_unlock(&l->mu);
    current_worker = -1;
    return NULL;
}

/* Makes the workers exit and joins them. */
static void join_workers(ct_loader *l) {
    pthread_mutex_lock(&l->mu);
    l->shutdown = true;
    pthread_cond_broadcast(&l->space_cv);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < l->n_workers; i++) pthread_join(l->workers[i].thread, NULL);
    free(l->workers);
    l->workers = NULL;
    l->n_workers = 0;
    l->shutdown = false;
}

/* Stops the epoch in progress (joining its workers, or with persistent workers
 * waiting until none is loading) and frees what it left. */
static void stop_epoch(ct_loader *l) {
    if (!l->running) return;
    pthread_mutex_lock(&l->mu);
    l->active = false;
    while (l->busy > 0) pthread_cond_wait(&l->idle_cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
    if (!l->persistent) join_workers(l);
    for (int i = 0; l->slots && i < l->cap; i++) {
        batch_release(&l->slots[i].batch);
        free(l->slots[i].error);
        l->slots[i] = (slot){0};
    }
    data_plan_free(&l->plan);
    l->running = false;
}

static int start_epoch(ct_loader *l) {
    int rc = -1;
    CT_SCOPE { rc = l->bs->cls->plan(l->bs, l->epoch, &l->plan); }
    if (rc != 0) {
        data_plan_free(&l->plan);
        return -1;
    }
    l->running = true;
    pthread_mutex_lock(&l->mu);
    l->consumed = l->taken = 0;
    l->active = true;
    pthread_cond_broadcast(&l->space_cv); /* idle persistent workers */
    pthread_mutex_unlock(&l->mu);
    if (l->n_workers) return 0; /* persistent, already running */
    int n = l->num_workers;
    if (!l->persistent && n > l->plan.n_batches) n = (int)l->plan.n_batches;
    if (n == 0) return 0;
    if (!(l->workers = ct_calloc((size_t)n, sizeof *l->workers))) {
        ct_error("ct_loader_next: out of memory");
        stop_epoch(l);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        l->workers[i] = (worker){.l = l, .id = i};
        if ((rc = pthread_create(&l->workers[i].thread, NULL, worker_main, &l->workers[i])) != 0) {
            ct_error("ct_loader_next: cannot start loader worker %d: %s", i, strerror(rc));
            stop_epoch(l);
            return -1;
        }
        l->n_workers = i + 1;
    }
    return 0;
}

/* Takes the next batch from its slot, waiting up to the timeout. */
static int wait_batch(ct_loader *l, ct_batch *out, char **err) {
    struct timespec deadline;
    if (l->timeout > 0) {
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        double t = (double)deadline.tv_sec + 1e-9 * (double)deadline.tv_nsec + l->timeout;
        deadline.tv_sec = (time_t)t;
        deadline.tv_nsec = (long)((t - (double)deadline.tv_sec) * 1e9);
    }
    pthread_mutex_lock(&l->mu);
    slot *s = &l->slots[l->consumed % l->cap];
    while (!s->ready) {
        if (l->timeout <= 0) {
            pthread_cond_wait(&l->ready_cv, &l->mu);
        } else if (pthread_cond_timedwait(&l->ready_cv, &l->mu, &deadline) == ETIMEDOUT && !s->ready) {
            pthread_mutex_unlock(&l->mu);
            char msg[128];
            snprintf(msg, sizeof msg, "ct_loader_next: DataLoader timed out after %g seconds "
                     "(waiting for batch %lld)", l->timeout, (long long)l->consumed);
            *err = ct_strdup(msg);
            return -1;
        }
    }
    *out = s->batch;
    *err = s->error;
    *s = (slot){0};
    l->consumed++;
    pthread_cond_broadcast(&l->space_cv);
    pthread_mutex_unlock(&l->mu);
    return *err || out->n == 0 ? -1 : 0; /* a loaded batch has at least one tensor */
}

bool (ct_loader_next)(ct_loader *l, ct_batch *out) {
    if (!ct_alive("ct_loader_next", 1, l)) return false;
    if (out) memset(out, 0, sizeof *out);
    if (!l || !out) return false;
    if (!l->running && start_epoch(l) != 0) return false;
    if (l->consumed == l->plan.n_batches) {
        stop_epoch(l);
        l->epoch++;
        return false;
    }
    ct_batch b = {0};
    char *err = NULL;
    int rc;
    bool in_workers = l->n_workers != 0;
    if (!in_workers) {
        rc = load_batch(l, l->consumed, &b, NULL); /* the error stays set in this thread */
        l->consumed += rc == 0;
    } else {
        rc = wait_batch(l, &b, &err);
    }
    if (rc != 0) {
        batch_release(&b);
        stop_epoch(l);
        /* a worker that could not even copy its message left none */
        if (err) ct_error("%s", err);
        else if (in_workers) ct_error("ct_loader_next: out of memory (in a loader worker)");
        free(err);
        return false;
    }
    bool registered = true; /* a failed registration releases its tensor */
    for (int k = 0; k < b.n; k++) registered &= (b.t[k] = ct_scope_register(b.t[k])) != NULL;
    if (!registered) {
        stop_epoch(l);
        return false;
    }
    *out = b;
    return true;
}

int64_t ct_loader_len(const ct_loader *l) {
    if (!ct_alive("ct_loader_len", 1, l)) return -1;
    return l ? ct_batch_sampler_len(l->bs) : -1;
}
uint64_t ct_loader_epoch(const ct_loader *l) {
    return l && ct_alive("ct_loader_epoch", 1, l) ? l->epoch : 0;
}

void ct_loader_set_epoch(ct_loader *l, uint64_t epoch) {
    if (!ct_alive("ct_loader_set_epoch", 1, l)) return;
    if (!l) return;
    stop_epoch(l);
    l->epoch = epoch;
}

void ct_loader_reset(ct_loader *l) {
    if (!ct_alive("ct_loader_reset", 1, l)) return;
    if (l) stop_epoch(l);
}

static void loader_destroy(ct_object *o) {
    ct_loader *l = (ct_loader *)o;
    stop_epoch(l);
    if (l->n_workers) join_workers(l);
    ct_release(l->ds);
    ct_release(l->bs);
    free(l->slots);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->ready_cv);
    pthread_cond_destroy(&l->space_cv);
    pthread_cond_destroy(&l->idle_cv);
    ct_lifetime_free(l);
}

/* PyTorch's checks of DataLoader's arguments; 0 or -1. */
static int check_options(const ct_loader_options *o) {
    const char *op = "ct_dataloader";
    if (o->num_workers < 0) {
        ct_error("%s: num_workers option should be non-negative; use num_workers=0 to disable "
                 "multiprocessing.", op);
    } else if (o->timeout < 0) {
        ct_error("%s: timeout option should be non-negative", op);
    } else if (o->prefetch_factor < 0 || (o->num_workers == 0 && o->prefetch_factor &&
                                          o->prefetch_factor != 2)) {
        ct_error("%s: prefetch_factor option could only be specified in multiprocessing.let "
                 "num_workers > 0 to enable multiprocessing.", op);
    } else if (o->persistent_workers && o->num_workers == 0) {
        ct_error("%s: persistent_workers option needs num_workers > 0", op);
    } else if (o->sampler && o->shuffle) {
        ct_error("%s: sampler option is mutually exclusive with shuffle", op);
    } else if (o->batch_sampler && (o->batch_size || o->shuffle || o->sampler || o->drop_last)) {
        ct_error("%s: batch_sampler option is mutually exclusive with batch_size, shuffle, "
                 "sampler, and drop_last", op);
    } else {
        return 0;
    }
    return -1;
}

ct_loader *ct_dataloader_with(ct_dataset *ds, ct_loader_options o) {
    if (!ct_alive("ct_dataloader", 1, ds) || !ct_option_alive("ct_dataloader", "sampler", o.sampler) ||
        !ct_option_alive("ct_dataloader", "batch_sampler", o.batch_sampler) ||
        !ct_option_alive("ct_dataloader", "generator", o.generator))
        return NULL;
    if (!ds || check_options(&o) != 0) return NULL;
    ct_loader *l = ct_calloc(1, sizeof *l);
    if (!l) {
        ct_error("ct_dataloader: out of memory");
        return NULL;
    }
    ct_object_init(&l->obj, loader_destroy);
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&l->ready_cv, &attr);
    pthread_cond_init(&l->space_cv, &attr);
    pthread_cond_init(&l->idle_cv, &attr);
    pthread_condattr_destroy(&attr);
    l->ds = ct_retain(ds);
    l->collate = o.collate ? o.collate : ct_default_collate;
    l->collate_ctx = o.collate_ctx;
    l->num_workers = o.num_workers;
    l->persistent = o.persistent_workers;
    l->cap = o.num_workers * (o.prefetch_factor ? o.prefetch_factor : 2);
    l->timeout = o.timeout;
    l->seed = data_draw_seed(o.generator);
    CT_SCOPE {
        ct_batch_sampler *bs = o.batch_sampler;
        if (!bs) {
            int64_t n = ct_dataset_len(ds);
            ct_sampler *s = o.sampler ? o.sampler
                            : o.shuffle ? ct_random_sampler(n, .generator = o.generator)
                                        : ct_sequential_sampler(n);
            bs = ct_batch_sampler_from(s, o.batch_size ? o.batch_size : 1, o.drop_last);
        }
        l->bs = ct_retain(bs);
    }
    if (l->cap && !(l->slots = ct_calloc((size_t)l->cap, sizeof *l->slots)))
        ct_error("ct_dataloader: out of memory");
    if (!l->bs || (l->cap && !l->slots)) {
        loader_destroy(&l->obj);
        return NULL;
    }
    return ct_scope_register(l);
}
