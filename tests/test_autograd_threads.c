/* Four threads build and differentiate independent graphs at once.  Grad mode, scopes
 * and error messages are per thread: a thread in no_grad does not affect the others,
 * and one thread's errors never show up in another.  Run it under ThreadSanitizer
 * with `make test-tsan` (and under helgrind: see the Makefile). */
#include <pthread.h>
#include <stdlib.h>

#include "ct_test.h"

enum { THREADS = 4, ITERS = 1000 };

typedef struct {
    int id;
    ct_tensor *shared; /* read by every thread (reference counts are atomic) */
    int failures;
    char first[512];
} worker;

static pthread_barrier_t start;

static void fail(worker *w, int it, const char *what) {
    if (!w->failures++)
        snprintf(w->first, sizeof w->first, "thread %d, iteration %d: %s (last error: %s)", w->id,
                 it, what, ct_last_error() ? ct_last_error() : "none");
}

/* sum(exp(x) * x + x * c) for x = [0.1 k + 0.01 id]: gradient exp(x)(1 + x) + c. */
static void grad_step(worker *w, int it, int kind) {
    double xv[8], c = 0.5;
    for (int k = 0; k < 8; k++) xv[k] = 0.1 * k + 0.01 * w->id;
    ct_tensor *x = ct_tensor_f64(xv, CT_SHAPE(8), .requires_grad = true);
    ct_tensor *y = kind == 0 ? ct_mul(ct_exp(x), x) : ct_mul(x, ct_exp(x));
    ct_tensor *loss = ct_sum(ct_add(y, ct_mul(x, w->shared)));
    if (!ct_requires_grad(loss)) fail(w, it, "grad mode off in a thread that never disabled it");
    if (ct_backward(loss) != 0) {
        fail(w, it, "backward failed");
        return;
    }
    double *g = ct_test_values(ct_grad(x));
    for (int k = 0; g && k < 8; k++)
        if (fabs(g[k] - (exp(xv[k]) * (1 + xv[k]) + c)) > 1e-12) {
            fail(w, it, "wrong gradient");
            break;
        }
    free(g);
}

static void *run(void *arg) {
    worker *w = arg;
    if (w->id == 2) ct_set_grad_enabled(false); /* for this thread's whole life */
    pthread_barrier_wait(&start);
    for (int it = 0; it < ITERS; it++) {
        CT_SCOPE {
            switch (w->id) {
            case 0:
            case 1:
                grad_step(w, it, w->id);
                break;
            case 2: {
                ct_tensor *x = ct_ones(CT_SHAPE(8), .requires_grad = true);
                ct_tensor *y = ct_exp(ct_mul(x, w->shared));
                if (ct_is_grad_enabled() || ct_requires_grad(y) || ct_grad_fn(y))
                    fail(w, it, "no_grad thread recorded a graph");
                CT_ENABLE_GRAD { grad_step(w, it, 0); }
                break;
            }
            case 3: {
                ct_tensor *t = ct_ones(CT_SHAPE(6));
                if (ct_view(t, CT_SHAPE(4)) != NULL) fail(w, it, "invalid view succeeded");
                if (!ct_last_error() || !strstr(ct_last_error(), "shape '[4]' is invalid"))
                    fail(w, it, "own error message missing");
                ct_clear_error();
                grad_step(w, it, 1);
                ct_view(t, CT_SHAPE(5)); /* leave an error pending between iterations */
                break;
            }
            }
            if (w->id != 3 && ct_last_error()) fail(w, it, "an error leaked into this thread");
        }
        if (ct_scope_depth() != 0) fail(w, it, "scope depth not restored");
    }
    return NULL;
}

TEST(independent_graphs_on_four_threads) {
    int prev_threads = ct_get_num_threads();
    ct_set_num_threads(1); /* libgomp is not instrumented for ThreadSanitizer */
    worker w[THREADS];
    pthread_t th[THREADS];
    ct_tensor *shared = ct_full(CT_SHAPE(8), 0.5);
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.id = i, .shared = shared};
        CHECK(pthread_create(&th[i], NULL, run, &w[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    ct_set_num_threads(prev_threads);
    for (int i = 0; i < THREADS; i++)
        if (w[i].failures) ct_test_fail(__FILE__, __LINE__, "%d failures; first: %s", w[i].failures, w[i].first);
    CHECK(ct_is_grad_enabled());
    CHECK(ct_last_error() == NULL);
}
