/* Every allocation of a training step fails in turn, as SQLite tests itself: building
 * the model, optimizer, scheduler and a DataLoader with worker threads, an epoch of
 * forward, backward and optimizer steps, and a checkpoint saved and loaded into a
 * second model.  Each time the step either reports an error (NULL or -1 with a
 * message) or absorbs the failure and computes what an undisturbed step computes;
 * nothing aborts, crashes or leaks (LeakSanitizer checks the rest under
 * `make test-sanitize`), and the step run again right after works.
 *
 * CT_OOM_SWEEP_STRIDE=k tries every k-th allocation only (by default every 10th, and
 * every one under AddressSanitizer), from the CT_OOM_SWEEP_FIRST-th on.  With CT_FAIL_ALLOC_AFTER set, the test
 * one_training_step runs the step once under it and prints its outcome
 * (tests/oom_sweep.sh counts the outcomes of a sweep in separate processes). */
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/sanitize.h"
#include "ct_test.h"

enum { SAMPLES = 16, SIDE = 8, CLASSES = 10, BATCH = 4 };

/* Every allocation under AddressSanitizer (make test-sanitize), a sample otherwise. */
enum { DEFAULT_STRIDE = CT_ASAN ? 1 : 10 };

/* In memory where there is a tmpfs: a save syncs its file, thousands of times here. */
static const char *checkpoint_path(void) {
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "%s/ct_oom_%d.safetensors",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
    return path;
}

static ct_module *small_cnn(void) {
    return ct_sequential(CT_MODULES(ct_nn_conv2d(1, 4, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_flatten(),
                                    ct_nn_linear(4 * (SIDE / 2) * (SIDE / 2), CLASSES)));
}

/* A model with its Adam optimizer and step scheduler; false on an error. */
typedef struct {
    ct_module *model;
    ct_optim *opt;
    ct_scheduler *sched;
} trainer;

static bool trainer_new(trainer *t) {
    ct_tensor *ps[8];
    t->model = small_cnn();
    int n = t->model ? ct_parameters(t->model, ps, 8) : -1;
    t->opt = n > 0 ? ct_adam(ps, n, .lr = 0.01) : NULL;
    t->sched = t->opt ? ct_step_lr(t->opt, 1, 0.5) : NULL;
    return t->sched != NULL;
}

/* One epoch over a loader with two workers, a checkpoint round trip; 0 with the sum of
 * the reloaded model's parameters in *result, or -1. */
static int training_step(double *result) {
    int rc = -1;
    CT_SCOPE {
        ct_manual_seed(7);
        trainer a, b;
        ct_tensor *data[2] = {ct_randn(CT_SHAPE(SAMPLES, 1, SIDE, SIDE)),
                              ct_randint(0, CLASSES, CT_SHAPE(SAMPLES))};
        ct_dataset *ds = data[0] && data[1] ? ct_tensor_dataset(2, data) : NULL;
        ct_generator *g = ds ? ct_generator_new(3) : NULL;
        ct_loader *loader = g ? ct_dataloader(ds, .batch_size = BATCH, .shuffle = true,
                                              .num_workers = 2, .generator = g)
                              : NULL;
        if (!loader || !trainer_new(&a)) break;
        ct_batch batch;
        bool failed = false;
        while (!failed && ct_loader_next(loader, &batch)) {
            CT_SCOPE {
                ct_tensor *loss = ct_cross_entropy(ct_forward(a.model, batch.t[0]), batch.t[1]);
                ct_zero_grad(a.opt);
                failed = !loss || ct_backward(loss) != 0 ||
                         ct_step(a.opt) != 0;
            }
        }
        if (failed || ct_last_error() || ct_sched_step(a.sched) != 0) break;
        ct_training_state sa = {.model = a.model, .optim = a.opt, .sched = a.sched, .epoch = 1,
                                .step = SAMPLES / BATCH, .config = "{\"lr\": 0.01}"};
        if (ct_checkpoint_save(checkpoint_path(), &sa) != 0 || !trainer_new(&b)) break;
        ct_training_state sb = {.model = b.model, .optim = b.opt, .sched = b.sched};
        char *config = NULL;
        if (ct_checkpoint_load(checkpoint_path(), &sb, &config) != 0) break;
        free(config);
        ct_tensor *ps[8];
        int n = ct_parameters(b.model, ps, 8);
        double sum = 0;
        for (int i = 0; i < n; i++) {
            ct_tensor *s = ct_sum(ps[i]);
            if (!s) break;
            sum += ct_item(s);
        }
        if (ct_last_error()) break;
        *result = sum;
        rc = 0;
    }
    return rc;
}

typedef struct {
    int errors, absorbed, tried;
} sweep_counts;

/* The step with the allocation after the first `n` failing: an error with a message, or
 * the undisturbed result.  Then the step again, undisturbed. */
static void fail_one(long long n, double want, sweep_counts *c) {
    int64_t before = ct_memory_allocated(CT_CPU);
    double got = NAN;
    ct_clear_error();
    ct_test_fail_alloc_after(n);
    int rc = training_step(&got);
    bool failed = ct_test_alloc_failed();
    ct_test_fail_alloc_after(-1);
    c->tried++;
    char message[256] = "none";
    if (ct_last_error()) snprintf(message, sizeof message, "%s", ct_last_error());
    if (rc != 0) {
        const char *e = ct_last_error();
        if (!e) ct_test_fail(__FILE__, __LINE__, "allocation %lld: the step failed without a message", n + 1);
        else if (!failed) ct_test_fail(__FILE__, __LINE__, "allocation %lld: %s", n + 1, e);
        c->errors++;
    } else {
        if (got != want)
            ct_test_fail(__FILE__, __LINE__, "allocation %lld failed, the step went on and got %.17g, expected %.17g",
                         n + 1, got, want);
        c->absorbed++;
    }
    ct_clear_error();
    int64_t after = ct_memory_allocated(CT_CPU);
    if (after != before)
        ct_test_fail(__FILE__, __LINE__, "allocation %lld: %lld bytes of tensor memory leaked (error: %s)",
                     n + 1, (long long)(after - before), message);
    got = NAN;
    if (training_step(&got) != 0 || got != want)
        ct_test_fail(__FILE__, __LINE__, "allocation %lld: the retry failed: %s", n + 1,
                     ct_last_error() ? ct_last_error() : "wrong result");
    ct_clear_error();
}

TEST(every_allocation_of_a_training_step_fails_cleanly) {
    double want = NAN;
    CHECK(training_step(&want) == 0); /* warms up the one-time caches (kernel tables) */
    ct_test_fail_alloc_after(LLONG_MAX);
    CHECK(training_step(&want) == 0);
    long long total = ct_test_alloc_count();
    ct_test_fail_alloc_after(-1);
    CHECK(total > 100);
    const char *s = getenv("CT_OOM_SWEEP_STRIDE"), *f = getenv("CT_OOM_SWEEP_FIRST");
    long long stride = s ? atoll(s) : DEFAULT_STRIDE, first = f ? atoll(f) - 1 : 0;
    if (stride < 1) stride = 1;
    sweep_counts c = {0};
    for (long long n = first > 0 ? first : 0; n < total; n += stride) fail_one(n, want, &c);
    printf("%lld allocations in a training step; failing %d of them in turn: %d errors, %d absorbed\n",
           total, c.tried, c.errors, c.absorbed);
    unlink(checkpoint_path());
}

/* One step under CT_FAIL_ALLOC_AFTER (for tests/oom_sweep.sh); without it, a plain step. */
TEST(one_training_step) {
    double got = NAN;
    int rc = training_step(&got);
    const char *e = ct_last_error();
    if (getenv("CT_FAIL_ALLOC_AFTER")) {
        printf("outcome: %s%s\n", rc == 0 ? "absorbed" : e ? "error: " : "error without a message",
               rc == 0 ? "" : e ? e : "");
        printf("allocations: %lld\n", ct_test_alloc_count());
        ct_clear_error();
    } else {
        CHECK(rc == 0);
    }
    unlink(checkpoint_path());
}
