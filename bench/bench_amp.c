/* Mixed-precision training benchmarks, the same workloads as bench/bench_amp.py
 * (PyTorch 1.13, torch.autocast("cpu", dtype=torch.bfloat16)):
 *
 *     bench_amp [mlp|cnn|lstm|all] [fp32|bf16|both]      (threads: OMP_NUM_THREADS)
 *
 *   mlp   MLP 784-256-128-10 (ReLU), cross-entropy, Adam 1e-3, batch 64
 *   cnn   the demo CNN (examples/fashion_mnist), cross-entropy, Adam 1e-3, batch 64
 *   lstm  LSTM(64 -> 256), sequence 64, batch 32, MSE against zeros, Adam 1e-3
 *
 * Each trains on one fixed random batch; in bf16 the forward and the loss run in a
 * CT_AUTOCAST(.dtype = CT_BF16) region.  Lines "name<TAB>unit<TAB>value":
 *   amp_<case>_<mode>       samples/s   training throughput over the timed steps
 *   amp_<case>_<mode>_peak  MB          the tensor bytes a step adds at its peak above
 *                                       what it starts with (weights, Adam's state, the
 *                                       batch, the previous step's gradients):
 *                                       ct_max_memory_allocated - ct_memory_allocated,
 *                                       over one step after the timed ones
 *   amp_<case>_<mode>_act   MB          what the forward and the loss leave allocated
 *                                       (the activations backward reads, the loss and
 *                                       the scope's temporaries): the allocated bytes
 *                                       after the autocast region minus before it
 * CT_BENCH_QUICK=1 runs a few steps only (the smoke test); its figures mean nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "ctorch.h"

static bool quick;

typedef struct {
    const char *name;
    ct_module *(*make)(void);
    ct_tensor *(*loss)(ct_module *m, ct_tensor *x, ct_tensor *y);
    ct_shape x, y; /* the batch's input and target shapes */
    int64_t batch;
    bool class_target; /* y: class indices (else zeros, the regression's target) */
    int steps;
} workload;

static ct_module *make_mlp(void) {
    return ct_sequential(CT_MODULES(ct_nn_flatten(), ct_nn_linear(784, 256), ct_nn_relu(),
                                    ct_nn_linear(256, 128), ct_nn_relu(), ct_nn_linear(128, 10)));
}

static ct_module *make_cnn(void) {
    return ct_sequential(CT_MODULES(ct_nn_conv2d(1, 32, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)),
                                    ct_nn_conv2d(32, 64, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_flatten(),
                                    ct_nn_linear(3136, 128), ct_nn_relu(), ct_nn_linear(128, 10)));
}

static ct_module *make_lstm(void) { return ct_lstm(64, 256); }

static ct_tensor *classify(ct_module *m, ct_tensor *x, ct_tensor *y) {
    return ct_cross_entropy(ct_forward(m, x), y);
}

static ct_tensor *regress(ct_module *m, ct_tensor *x, ct_tensor *y) {
    ct_tensor *out[3];
    if (ct_forward_multi(m, 1, &x, out, 3) < 0) return NULL;
    return ct_mse_loss(out[0], y);
}

static void train_step(const workload *w, ct_module *m, ct_optim *opt, ct_tensor *x,
                       ct_tensor *y, bool bf16) {
    ct_tensor *loss = NULL;
    CT_AUTOCAST(.dtype = CT_BF16, .enabled = bf16) { loss = w->loss(m, x, y); }
    ct_zero_grad(opt);
    ct_backward(loss);
    ct_step(opt);
}

static void run(const workload *w, bool bf16) {
    const char *mode = bf16 ? "bf16" : "fp32";
    CT_SCOPE {
        ct_manual_seed(0);
        ct_module *m = w->make();
        ct_tensor *params[16];
        int n = ct_parameters(m, params, 16);
        ct_optim *opt = ct_adam(params, n, .lr = 1e-3);
        ct_tensor *x = ct_randn(w->x);
        ct_tensor *y = w->class_target ? ct_randint(0, 10, w->y) : ct_zeros(w->y);
        int warmup = quick ? 1 : 3, steps = quick ? 2 : w->steps;
        for (int i = 0; i < warmup; i++) CT_SCOPE { train_step(w, m, opt, x, y, bf16); }
        double t = bench_now();
        for (int i = 0; i < steps; i++) CT_SCOPE { train_step(w, m, opt, x, y, bf16); }
        t = bench_now() - t;
        int64_t before = ct_memory_allocated(CT_CPU);
        ct_reset_peak_memory_stats(CT_CPU);
        CT_SCOPE { train_step(w, m, opt, x, y, bf16); }
        double peak = (double)(ct_max_memory_allocated(CT_CPU) - before) / (1024.0 * 1024.0);
        double act = 0;
        CT_SCOPE {
            before = ct_memory_allocated(CT_CPU);
            ct_tensor *loss = NULL;
            CT_AUTOCAST(.dtype = CT_BF16, .enabled = bf16) { loss = w->loss(m, x, y); }
            act = (double)(ct_memory_allocated(CT_CPU) - before) / (1024.0 * 1024.0);
            ct_zero_grad(opt);
            ct_backward(loss);
            ct_step(opt);
        }
        printf("amp_%s_%s\tsamples/s\t%.1f\n", w->name, mode, (double)(w->batch * steps) / t);
        printf("amp_%s_%s_peak\tMB\t%.2f\n", w->name, mode, peak);
        printf("amp_%s_%s_act\tMB\t%.2f\n", w->name, mode, act);
        fflush(stdout);
    }
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "all", *modes = argc > 2 ? argv[2] : "both";
    quick = getenv("CT_BENCH_QUICK") && atoi(getenv("CT_BENCH_QUICK"));
    ct_set_error_handler(ct_abort_on_error);
    const workload cases[] = {
        {"mlp", make_mlp, classify, CT_SHAPE(64, 1, 28, 28), CT_SHAPE(64), 64, true, 300},
        {"cnn", make_cnn, classify, CT_SHAPE(64, 1, 28, 28), CT_SHAPE(64), 64, true, 40},
        /* [T, B, input] -> [T, B, hidden] */
        {"lstm", make_lstm, regress, CT_SHAPE(64, 32, 64), CT_SHAPE(64, 32, 256), 32, false, 10},
    };
    bool fp32 = strcmp(modes, "bf16") != 0, bf16 = strcmp(modes, "fp32") != 0, any = false;
    if (!strcmp(modes, "fp32") + !strcmp(modes, "bf16") + !strcmp(modes, "both") != 1) which = "?";
    printf("# ctorch threads %d\n", ct_get_num_threads());
    for (int i = 0; i < 3; i++) {
        if (strcmp(which, "all") && strcmp(which, cases[i].name)) continue;
        if (fp32) run(&cases[i], false);
        if (bf16) run(&cases[i], true);
        any = true;
    }
    if (!any) {
        fprintf(stderr, "usage: %s [mlp|cnn|lstm|all] [fp32|bf16|both]\n", argv[0]);
        return 2;
    }
    return 0;
}
