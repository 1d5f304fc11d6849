/* The communication thread (Note [The communication thread], dist/dist_impl.h): the
 * queue the callers fill, and the loop that starts and polls the work on it. */
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#include "dist/dist_impl.h"
#include "dist/steps.h"
#include "core/error.h"
#include "core/mem.h"

static pthread_t thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static ct_work *head, *tail; /* queued, not yet taken by the thread */
static bool running;
atomic_int ct_dist_waiters;

static bool is_p2p(const ct_work *w) { return w->kind == CT_WORK_SEND || w->kind == CT_WORK_RECV; }

void ct_dist_enqueue(ct_work *w) {
    pthread_mutex_lock(&mu);
    /* A collective's number in its group is its place in the queue, also when
     * several threads start collectives; so is a send's (dist/p2p.c). */
    if (w->g && !is_p2p(w) && w->kind != CT_WORK_NEW_GROUP) w->desc.seq = w->g->seq++;
    if (w->kind == CT_WORK_SEND) w->desc.seq = w->p2p_tag = w->g->p2p_seq++ % (w->g->tag_ub / 2);
    w->next = NULL;
    if (tail)
        tail->next = w;
    else
        head = w;
    tail = w;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

/* Advances w: tests its request, and when that is done (or there is none) runs its
 * next step.  True when w has finished (its waiter may free it now). */
static bool advance(ct_work *w) {
    if (w->req) {
        int rc = ct_dist_be->test(w->req, &w->source);
        if (rc == 0) return false;
        w->req = NULL;
        if (rc < 0) {
            ct_work_finish(w, "%s: %s", w->fn, ct_dist_be->error());
            return true;
        }
    }
    return ct_dist_step(w);
}

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void *comm_main(void *arg) {
    (void)arg;
    long last_progress = now_ns();
    prctl(PR_SET_TIMERSLACK, 1000UL);
    long max_sleep_ns = getenv("CTORCH_DIST_MAX_SLEEP_US")
                            ? atol(getenv("CTORCH_DIST_MAX_SLEEP_US")) * 1000
                            : 64000;
    ct_work *current = NULL; /* the collective in progress */
    ct_work **p2p = NULL;    /* point-to-point operations in progress */
    int np = 0, cap = 0;
    ct_work *later = NULL, **later_end = &later; /* taken, waiting for the collective before */
    long idle_ns = 0;
    bool stop = false;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (!head && !current && !later && np == 0 && !stop) pthread_cond_wait(&cv, &mu);
        ct_work *taken = head;
        head = tail = NULL;
        pthread_mutex_unlock(&mu);
        /* Point-to-point work starts when taken; collectives wait their turn. */
        for (ct_work *w = taken, *next; w; w = next) {
            next = w->next;
            w->next = NULL;
            if (is_p2p(w)) {
                if (np == cap) {
                    ct_work **more = ct_realloc(p2p, sizeof *p2p * (size_t)(cap ? 2 * cap : 16));
                    if (!more) {
                        ct_work_finish(w, "%s: out of memory", w->fn);
                        continue;
                    }
                    p2p = more;
                    cap = cap ? 2 * cap : 16;
                }
                p2p[np++] = w;
            } else {
                *later_end = w;
                later_end = &w->next;
            }
        }
        bool progressed = taken != NULL;
        if (!current && later) {
            current = later;
            later = later->next;
            if (!later) later_end = &later;
            current->next = NULL;
            if (current->kind == CT_WORK_STOP) {
                ct_work_finish(current, NULL);
                current = NULL;
                stop = true;
            }
        }
        if (stop && !later && np == 0) break;
        if (current) {
            int stage = current->stage;
            bool had_req = current->req != NULL;
            if (advance(current)) {
                current = NULL;
                progressed = true;
            } else if (current->stage != stage || (had_req && !current->req)) {
                progressed = true;
            }
        }
        for (int i = 0; i < np;) {
            int stage = p2p[i]->stage;
            if (advance(p2p[i])) {
                p2p[i] = p2p[--np];
                progressed = true;
            } else {
                if (p2p[i]->stage != stage) progressed = true;
                i++;
            }
        }
        /* Note [Polling]: Open MPI moves a non-blocking collective on only inside
         * MPI_Test, so the thread polls without pause while a caller waits for work
         * (its core is idle then), for up to 5 ms without progress (longer, the
         * other ranks are busy elsewhere: a checkpoint, an evaluation); otherwise
         * (work overlapping computation) it sleeps a little longer each time, up
         * to 64 us, to leave the core to the computation. */
        long t = now_ns();
        if (progressed) last_progress = t;
        if (progressed || (atomic_load_explicit(&ct_dist_waiters, memory_order_relaxed) > 0 &&
                           t - last_progress < 5000000)) {
            idle_ns = 0;
        } else if (current || np) {
            idle_ns = idle_ns ? (idle_ns * 2 > max_sleep_ns ? max_sleep_ns : idle_ns * 2) : 1000;
            struct timespec ts = {0, idle_ns};
            nanosleep(&ts, NULL);
        }
    }
    free(p2p);
    return NULL;
}

int ct_dist_comm_start(void) {
    if (pthread_create(&thread, NULL, comm_main, NULL) != 0) {
        ct_error("ct_dist_init: cannot start the communication thread");
        return -1;
    }
    running = true;
    return 0;
}

void ct_dist_comm_stop(void) {
    if (!running) return;
    ct_work *w = ct_work_new(CT_WORK_STOP, "ct_dist_destroy", NULL);
    if (!w) {
        ct_fatal("ct_dist_destroy: out of memory stopping the communication thread");
    }
    ct_dist_enqueue(w);
    pthread_join(thread, NULL);
    (ct_work_free)(w);
    running = false;
}
