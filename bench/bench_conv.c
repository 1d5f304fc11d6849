/* conv2d timing: batch 64, 32 -> 64 channels, 28x28, 3x3, padding 1, float32.
 * Prints "forward_ms F" and "fwd_bwd_ms B" (best of several runs, wall clock) and the
 * same in process CPU time (*_cpu_ms); bench_conv.py runs
 * it next to PyTorch with the same thread count and prints the ratios.
 * Usage: bench_conv [threads] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ctorch.h"

static double clock_s(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
/* Wall time, or process CPU time (robust on a loaded machine; meaningful for one
 * thread only, since waiting threads may spin). */
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : ct_get_num_threads();
    ct_set_num_threads(threads);
    ct_tensor *x = ct_full(CT_SHAPE(64, 32, 28, 28), 0.5, .requires_grad = true);
    ct_tensor *w = ct_full(CT_SHAPE(64, 32, 3, 3), 0.01, .requires_grad = true);
    ct_tensor *b = ct_zeros(CT_SHAPE(64), .requires_grad = true);
    double best_f = 1e9, best_fb = 1e9, cpu_f = 1e9, cpu_fb = 1e9;
    for (int r = 0; r < 12; r++) {
        CT_SCOPE {
            double t0 = now(), c0 = cpu();
            CT_NO_GRAD { ct_conv2d(x, w, b, .padding = CT_DIMS(1)); }
            double t1 = now(), c1 = cpu();
            ct_tensor *y = ct_conv2d(x, w, b, .padding = CT_DIMS(1));
            ct_backward(y, .gradient = ct_ones_like(y));
            double t2 = now(), c2 = cpu();
            if (c1 - c0 < cpu_f) cpu_f = c1 - c0;
            if (c2 - c1 < cpu_fb) cpu_fb = c2 - c1;
            ct_set_grad(x, NULL);
            ct_set_grad(w, NULL);
            ct_set_grad(b, NULL);
            if (t1 - t0 < best_f) best_f = t1 - t0;
            if (t2 - t1 < best_fb) best_fb = t2 - t1;
        }
    }
    printf("threads %d\nforward_ms %.3f\nfwd_bwd_ms %.3f\nforward_cpu_ms %.3f\nfwd_bwd_cpu_ms %.3f\n",
           threads, best_f * 1e3, best_fb * 1e3, cpu_f * 1e3, cpu_fb * 1e3);
    ct_release(x);
    ct_release(w);
    ct_release(b);
    return 0;
}
