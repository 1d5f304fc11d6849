/* Data-parallel training throughput, the workloads of bench/bench_ddp.py (PyTorch DDP
 * over gloo):
 *
 *     bench_ddp [mlp|cnn|all] 1x2                     one process, 2 threads, no DDP
 *     mpirun -np 2 -x OMP_NUM_THREADS=1 bench_ddp [mlp|cnn|all] 2x1    DDP, 1 thread each
 *
 *   mlp  MLP 784-256-128-10 (ReLU), cross-entropy, Adam 1e-3 (bench_train's)
 *   cnn  the CNN of examples/fashion_mnist.c, Adam 1e-3
 *
 * The global batch is 64: 64 in one process, 32 per rank on two.  Each step trains on
 * one fixed random Fashion-MNIST-shaped batch per rank (float [B, 1, 28, 28], labels
 * in [0, 10)), so that the figure is the model's and DDP's, not the data pipeline's.
 * After 5 warm-up steps, STEPS steps (mlp 1000, cnn 150) are timed between two
 * barriers, REPS times (env, default 3), the fastest kept.  Rank 0 prints, in the
 * "name<TAB>unit<TAB>value" format of bench/run.sh:
 *   ddp_<case>_<config>              samples/s  every rank's samples over rank 0's time
 *   ddp_<case>_<config>_backward     ms         backward per step (DDP: ct_ddp_get_stats)
 *   ddp_<case>_<config>_comm_wait    ms         of which waiting for the all-reduces
 *   ddp_<case>_<config>_comm_share   %          comm_wait / backward
 * (for the fastest repetition; the last three for DDP only).  CT_BENCH_QUICK=1: a few
 * steps only (the smoke test; its figures mean nothing). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "ctorch.h"

static bool quick;

static ct_module *make_model(const char *name) {
    if (!strcmp(name, "mlp"))
        return ct_sequential(CT_MODULES(ct_nn_flatten(), ct_nn_linear(784, 256), ct_nn_relu(),
                                        ct_nn_linear(256, 128), ct_nn_relu(), ct_nn_linear(128, 10)));
    return ct_sequential(CT_MODULES(
        ct_nn_conv2d(1, 32, CT_DIMS(3), .padding = CT_DIMS(1)), ct_nn_relu(),
        ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_conv2d(32, 64, CT_DIMS(3), .padding = CT_DIMS(1)),
        ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_flatten(), ct_nn_linear(3136, 128),
        ct_nn_relu(), ct_nn_linear(128, 10)));
}

/* One Adam step of model on (x, y), in its own scope. */
static void train_step(ct_module *model, ct_optim *opt, ct_tensor *x, ct_tensor *y) {
    CT_SCOPE {
        ct_tensor *loss = ct_cross_entropy(ct_forward(model, x), y);
        ct_zero_grad(opt);
        ct_backward(loss);
        ct_step(opt);
    }
}

static void barrier(bool ddp) {
    if (ddp) ct_dist_barrier();
}

static void bench(const char *name, const char *config, bool ddp) {
    const int world = ct_dist_world_size(), batch = 64 / world;
    const int steps = quick ? 2 : !strcmp(name, "mlp") ? 1000 : 150;
    const char *env = getenv("REPS");
    const int reps = quick ? 1 : env && atoi(env) > 0 ? atoi(env) : 3;
    CT_SCOPE {
        ct_manual_seed(0);
        ct_module *model = make_model(name);
        ct_module *net = model;
        if (ddp) model = ct_ddp(model), net = ct_ddp_module(model);
        ct_tensor *params[16];
        int n = ct_parameters(net, params, 16);
        ct_optim *opt = ct_adam(params, n, .lr = 1e-3);
        ct_generator *g = ct_generator_new(1 + (uint64_t)ct_dist_rank());
        ct_tensor *x = ct_randn(CT_SHAPE(batch, 1, 28, 28), .generator = g);
        ct_tensor *y = ct_randint(0, 10, CT_SHAPE(batch), .generator = g);
        for (int i = 0; i < 5; i++) train_step(model, opt, x, y);
        double best = 1e300;
        ct_ddp_stats best_stats = {0};
        for (int r = 0; r < reps; r++) {
            if (ddp) ct_ddp_get_stats(model, true);
            barrier(ddp);
            double t = bench_now();
            for (int i = 0; i < steps; i++) train_step(model, opt, x, y);
            barrier(ddp);
            t = bench_now() - t;
            if (t < best) {
                best = t;
                if (ddp) best_stats = ct_ddp_get_stats(model, false);
            }
        }
        if (ct_dist_is_main()) {
            printf("ddp_%s_%s\tsamples/s\t%.1f\n", name, config, 64.0 * steps / best);
            if (ddp && best_stats.steps > 0) {
                double per = 1e3 / (double)best_stats.steps;
                printf("ddp_%s_%s_backward\tms\t%.3f\n", name, config, best_stats.backward_s * per);
                printf("ddp_%s_%s_comm_wait\tms\t%.3f\n", name, config, best_stats.comm_wait_s * per);
                printf("ddp_%s_%s_comm_share\t%%\t%.1f\n", name, config,
                       best_stats.backward_s > 0 ? 100 * best_stats.comm_wait_s / best_stats.backward_s : 0);
            }
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "all", *config = argc > 2 ? argv[2] : "1x2";
    int procs = 0, threads = 0;
    if (sscanf(config, "%dx%d", &procs, &threads) != 2 || procs < 1 || threads < 1 ||
        (strcmp(which, "all") && strcmp(which, "mlp") && strcmp(which, "cnn"))) {
        fprintf(stderr, "usage: %s [mlp|cnn|all] PROCSxTHREADS   (1x2; 2x1 under mpirun -np 2)\n",
                argv[0]);
        return 2;
    }
    quick = getenv("CT_BENCH_QUICK") && atoi(getenv("CT_BENCH_QUICK"));
    ct_set_error_handler(ct_abort_on_error);
    bool ddp = procs > 1;
    if (ddp) {
        ct_dist_init();
        if (ct_dist_world_size() != procs || 64 % procs) {
            fprintf(stderr, "%s: %s needs mpirun -np %d (a divisor of 64), got %d processes\n",
                    argv[0], config, procs, ct_dist_world_size());
            return 2;
        }
    }
    ct_set_num_threads(threads);
    if (ct_dist_is_main()) printf("# ctorch %s, %d thread(s) per process\n", config, threads);
    if (!strcmp(which, "all") || !strcmp(which, "mlp")) bench("mlp", config, ddp);
    if (!strcmp(which, "all") || !strcmp(which, "cnn")) bench("cnn", config, ddp);
    if (ddp) ct_dist_destroy();
    return 0;
}
