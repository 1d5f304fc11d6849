/* cross_entropy timing: logits [512, 1000] float32, int64 targets.  Prints
 * "forward_ms F" and "fwd_bwd_ms B" (best of several runs); bench_loss.py runs it
 * next to PyTorch with the same thread count and prints the ratios.
 * Usage: bench_loss [threads] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ctorch.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : ct_get_num_threads();
    ct_set_num_threads(threads);
    ct_tensor *x = ct_randn(CT_SHAPE(512, 1000), .requires_grad = true);
    ct_tensor *t = ct_randint(0, 1000, CT_SHAPE(512));
    double best_f = 1e9, best_fb = 1e9;
    for (int r = 0; r < 20; r++) {
        CT_SCOPE {
            double t0 = now();
            CT_NO_GRAD { ct_cross_entropy(x, t); }
            double t1 = now();
            ct_backward(ct_cross_entropy(x, t));
            double t2 = now();
            ct_set_grad(x, NULL);
            if (t1 - t0 < best_f) best_f = t1 - t0;
            if (t2 - t1 < best_fb) best_fb = t2 - t1;
        }
    }
    printf("threads %d\nforward_ms %.3f\nfwd_bwd_ms %.3f\n", threads, best_f * 1e3, best_fb * 1e3);
    ct_release(x);
    ct_release(t);
    return 0;
}
