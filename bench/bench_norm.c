/* Normalization timing, float32: BatchNorm2d(64) on [64, 64, 28, 28], BatchNorm1d(256)
 * on [64, 256] (both training), LayerNorm(512) on [64, 128, 512], GroupNorm(8, 64) on
 * [32, 64, 28, 28].  Prints "<case>_forward_ms F" and "<case>_fwd_bwd_ms B" (forward
 * without grad, and forward + backward with a gradient of ones; best of several runs,
 * wall clock) and the same in process CPU time (*_cpu_ms); bench_norm.py runs it next
 * to PyTorch with the same thread count and prints the ratios.
 * Usage: bench_norm [threads] */
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "ctorch.h"

typedef struct {
    const char *name;
    ct_module *m;
    ct_shape shape;
} norm_case;

static void bench(const norm_case *c, int reps) {
    ct_tensor *x = ct_randn(c->shape, .requires_grad = true);
    ct_tensor *ones = ct_ones(c->shape);
    double f = 1e9, fb = 1e9, cf = 1e9, cfb = 1e9;
    for (int r = 0; r < reps; r++) {
        /* Each result dies at once, as in the Python loop (so both reuse the memory). */
        double t0 = bench_now(), c0 = bench_cpu();
        CT_NO_GRAD {
            CT_SCOPE { ct_forward(c->m, x); }
        }
        double t1 = bench_now(), c1 = bench_cpu();
        CT_SCOPE { ct_backward(ct_forward(c->m, x), .gradient = ones); }
        double t2 = bench_now(), c2 = bench_cpu();
        ct_set_grad(x, NULL);
        ct_module_zero_grad(c->m);
        if (t1 - t0 < f) f = t1 - t0;
        if (t2 - t1 < fb) fb = t2 - t1;
        if (c1 - c0 < cf) cf = c1 - c0;
        if (c2 - c1 < cfb) cfb = c2 - c1;
    }
    printf("%s_forward_ms %.3f\n%s_fwd_bwd_ms %.3f\n%s_forward_cpu_ms %.3f\n%s_fwd_bwd_cpu_ms %.3f\n",
           c->name, f * 1e3, c->name, fb * 1e3, c->name, cf * 1e3, c->name, cfb * 1e3);
    ct_release(x);
    ct_release(ones);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : ct_get_num_threads();
    int reps = getenv("CT_BENCH_QUICK") ? 1 : 20;
    ct_set_num_threads(threads);
    ct_manual_seed(0);
    printf("threads %d\n", threads);
    norm_case cases[] = {
        {"bn2d", ct_nn_batch_norm2d(64), CT_SHAPE(64, 64, 28, 28)},
        {"bn1d", ct_nn_batch_norm1d(256), CT_SHAPE(64, 256)},
        {"ln", ct_nn_layer_norm(CT_SHAPE(512)), CT_SHAPE(64, 128, 512)},
        {"gn", ct_nn_group_norm(8, 64), CT_SHAPE(32, 64, 28, 28)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bench(&cases[i], reps);
        ct_release(cases[i].m);
    }
    return 0;
}
