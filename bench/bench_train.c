/* Training benchmarks, the same workloads as bench/bench_train.py (PyTorch):
 *
 *     bench_train [mlp|cnn|lstm|all] [threads]      (threads default: THREADS or 2)
 *
 *   mlp   one epoch of MLP 784-256-128-10 (ReLU, cross-entropy, Adam 1e-3, batch 64) over
 *         Fashion-MNIST train through the DataLoader (ToFloat per sample, shuffle,
 *         num_workers 0): samples/s
 *   cnn   300 training steps of conv(1,32,3,p1)-relu-maxpool2-conv(32,64,3,p1)-relu-
 *         maxpool2-flatten-linear(3136,128)-relu-linear(128,10), Adam, batch 64, on one
 *         fixed random batch: samples/s
 *   lstm  forward + backward of LSTM(64 -> 256), sequence 64, batch 32, loss = sum of
 *         the outputs: ms per iteration, the mean of 10 after 2 warm-up runs
 *
 * Each case prints "name<TAB>unit<TAB>value" lines (the format of bench/run.sh):
 *   train_<case>        samples/s or ms   the speed
 *   train_<case>_rss    MB   the process's peak RSS (getrusage ru_maxrss), so run one case
 *                            per process to attribute it (bench/run.sh does)
 *   train_<case>_rss_setup  MB   the peak RSS before the workload (library, model, data)
 *   train_<case>_rss_growth MB   the difference: what the workload itself added
 *   train_<case>_alloc  MB   ct_max_memory_allocated(CT_CPU) during the workload (reset
 *                            after setup): tensor bytes only; PyTorch has no CPU equivalent
 * CT_BENCH_QUICK=1 runs a few steps only (the smoke test); its figures mean nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ctorch.h"

static bool quick;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

/* setup_rss: the peak RSS when the workload starts (library, model, data loaded). */
static void report(const char *name, const char *unit, double value, double setup_rss) {
    printf("train_%s\t%s\t%.1f\n", name, unit, value);
    printf("train_%s_rss\tMB\t%.1f\n", name, peak_rss_mb());
    printf("train_%s_rss_setup\tMB\t%.1f\n", name, setup_rss);
    printf("train_%s_rss_growth\tMB\t%.1f\n", name, peak_rss_mb() - setup_rss);
    printf("train_%s_alloc\tMB\t%.1f\n", name,
           (double)ct_max_memory_allocated(CT_CPU) / (1024.0 * 1024.0));
    fflush(stdout);
}

/* One Adam step of model on (x, y); the loss is left in the caller's scope. */
static void train_step(ct_module *model, ct_optim *opt, ct_tensor *x, ct_tensor *y) {
    ct_tensor *loss = ct_cross_entropy(ct_forward(model, x), y);
    ct_zero_grad(opt);
    ct_backward(loss);
    ct_step(opt);
}

static void bench_mlp(void) {
    CT_SCOPE {
        ct_module *model = ct_sequential(CT_MODULES(
            ct_nn_flatten(), ct_nn_linear(784, 256), ct_nn_relu(), ct_nn_linear(256, 128),
            ct_nn_relu(), ct_nn_linear(128, 10)));
        ct_tensor *params[8];
        int n = ct_parameters(model, params, 8);
        ct_optim *opt = ct_adam(params, n, .lr = 1e-3);
        ct_dataset *train = ct_fashion_mnist(.train = true, .transform = ct_tf_to_float());
        ct_loader *loader = ct_dataloader(train, .batch_size = 64, .shuffle = true,
                                          .num_workers = 0, .generator = ct_generator_new(0));
        ct_reset_peak_memory_stats(CT_CPU);
        double setup_rss = peak_rss_mb();
        int64_t seen = 0, limit = quick ? 64 * 5 : INT64_MAX;
        ct_batch b;
        double t = now();
        while (seen < limit) {
            CT_SCOPE_HERE;
            if (!ct_loader_next(loader, &b)) break;
            train_step(model, opt, b.t[0], b.t[1]);
            seen += b.size;
        }
        t = now() - t;
        if (seen < limit) ct_loader_reset(loader);
        report("mlp", "samples/s", (double)seen / t, setup_rss);
    }
}

static void bench_cnn(void) {
    CT_SCOPE {
        ct_module *model = ct_sequential(CT_MODULES(
            ct_nn_conv2d(1, 32, CT_DIMS(3), .padding = CT_DIMS(1)), ct_nn_relu(),
            ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_conv2d(32, 64, CT_DIMS(3), .padding = CT_DIMS(1)),
            ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_flatten(), ct_nn_linear(3136, 128),
            ct_nn_relu(), ct_nn_linear(128, 10)));
        ct_tensor *params[16];
        int n = ct_parameters(model, params, 16);
        ct_optim *opt = ct_adam(params, n, .lr = 1e-3);
        ct_tensor *x = ct_randn(CT_SHAPE(64, 1, 28, 28));
        ct_tensor *y = ct_randint(0, 10, CT_SHAPE(64));
        int warmup = 3, steps = quick ? 2 : 300;
        double setup_rss = peak_rss_mb();
        for (int i = 0; i < warmup; i++) CT_SCOPE { train_step(model, opt, x, y); }
        ct_reset_peak_memory_stats(CT_CPU);
        double t = now();
        for (int i = 0; i < steps; i++) CT_SCOPE { train_step(model, opt, x, y); }
        t = now() - t;
        report("cnn", "samples/s", 64.0 * steps / t, setup_rss);
    }
}

static void bench_lstm(void) {
    CT_SCOPE {
        ct_module *lstm = ct_lstm(64, 256);
        ct_tensor *x = ct_randn(CT_SHAPE(64, 32, 64)); /* [T, B, input] */
        int warmup = quick ? 1 : 2, iters = quick ? 1 : 10;
        double t = 0, setup_rss = peak_rss_mb();
        for (int i = 0; i < warmup + iters; i++) {
            if (i == warmup) ct_reset_peak_memory_stats(CT_CPU);
            double t0 = now();
            CT_SCOPE {
                ct_tensor *out[3];
                ct_forward_multi(lstm, 1, &x, out, 3);
                ct_backward(ct_sum(out[0]));
            }
            if (i >= warmup) t += now() - t0;
        }
        report("lstm", "ms", 1e3 * t / iters, setup_rss);
    }
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "all";
    const char *env = getenv("THREADS");
    int threads = argc > 2 ? atoi(argv[2]) : env && *env ? atoi(env) : 2;
    quick = getenv("CT_BENCH_QUICK") && atoi(getenv("CT_BENCH_QUICK"));
    ct_set_error_handler(ct_abort_on_error);
    ct_set_num_threads(threads > 0 ? threads : 2);
    ct_manual_seed(0);
    printf("# ctorch threads %d\n", threads);
    bool all = !strcmp(which, "all"), any = false;
    if (all || !strcmp(which, "mlp")) bench_mlp(), any = true;
    if (all || !strcmp(which, "cnn")) bench_cnn(), any = true;
    if (all || !strcmp(which, "lstm")) bench_lstm(), any = true;
    if (!any) {
        fprintf(stderr, "usage: %s [mlp|cnn|lstm|all] [threads]\n", argv[0]);
        return 2;
    }
    return 0;
}
