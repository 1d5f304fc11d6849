/* Reduction and softmax throughput: sum of 16M float32 (all, over rows, over the
 * leading dim), softmax / log_softmax forward and backward on rows x 1000.
 * Usage: bench_reduce [threads].  Compare with bench/bench_reduce.py (PyTorch). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ctorch.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best of `reps` runs of fn, in seconds. */
#define BEST(reps, stmt)                                                           \
    ({                                                                             \
        double best_ = 1e30;                                                       \
        for (int r_ = 0; r_ < (reps); r_++) {                                      \
            CT_SCOPE_HERE;                                                         \
            double t0_ = now();                                                    \
            stmt;                                                                  \
            double dt_ = now() - t0_;                                              \
            if (dt_ < best_) best_ = dt_;                                          \
        }                                                                          \
        best_;                                                                     \
    })

int main(int argc, char **argv) {
    if (argc > 1) ct_set_num_threads(atoi(argv[1]));
    ct_set_error_handler(ct_abort_on_error);
    printf("threads: %d\n", ct_get_num_threads());
    CT_SCOPE {
        int64_t n = 16 << 20;
        ct_tensor *x = ct_empty(CT_SHAPE(n));
        float *p = ct_data_ptr(x);
        for (int64_t i = 0; i < n; i++) p[i] = (float)((i * 7919) % 1000) * 1e-3f;
        double gb = (double)n * 4 / 1e9;
        double t = BEST(10, ct_sum(x));
        printf("sum 16M float32 (all):        %7.2f ms  %6.1f GB/s\n", t * 1e3, gb / t);
        ct_tensor *rows = ct_view(x, CT_SHAPE(16384, 1024));
        t = BEST(10, ct_sum(rows, .dims = CT_DIMS(1)));
        printf("sum [16384, 1024] dim 1:      %7.2f ms  %6.1f GB/s\n", t * 1e3, gb / t);
        t = BEST(10, ct_sum(rows, .dims = CT_DIMS(0)));
        printf("sum [16384, 1024] dim 0:      %7.2f ms  %6.1f GB/s\n", t * 1e3, gb / t);
        ct_tensor *narrow = ct_view(x, CT_SHAPE(-1, 4));
        t = BEST(10, ct_sum(narrow, .dims = CT_DIMS(0)));
        printf("sum [4M, 4] dim 0:            %7.2f ms  %6.1f GB/s\n", t * 1e3, gb / t);
        t = BEST(10, ct_amax(x));
        printf("amax 16M float32:             %7.2f ms  %6.1f GB/s\n", t * 1e3, gb / t);

        int64_t R = 8192, C = 1000;
        ct_tensor *a = ct_empty(CT_SHAPE(R, C));
        float *ap = ct_data_ptr(a);
        for (int64_t i = 0; i < R * C; i++) ap[i] = (float)((i * 104729) % 2001 - 1000) * 1e-2f;
        double rows_s;
        t = BEST(10, ct_softmax(a, 1));
        rows_s = (double)R / t;
        printf("softmax [%lld, %lld] dim 1:    %7.2f ms  %6.2f Mrows/s  %6.1f GB/s\n",
               (long long)R, (long long)C, t * 1e3, rows_s / 1e6, 2.0 * R * C * 4 / 1e9 / t);
        t = BEST(10, ct_log_softmax(a, 1));
        printf("log_softmax [%lld, %lld] dim 1:%7.2f ms  %6.2f Mrows/s\n", (long long)R,
               (long long)C, t * 1e3, (double)R / t / 1e6);
        ct_tensor *at = ct_empty(CT_SHAPE(C, R));
        t = BEST(10, ct_softmax(at, 0));
        printf("softmax [%lld, %lld] dim 0:    %7.2f ms  %6.2f Mrows/s\n", (long long)C,
               (long long)R, t * 1e3, (double)R / t / 1e6);
        ct_set_requires_grad(a, true);
        ct_tensor *go = ct_ones(CT_SHAPE(R, C));
        t = BEST(10, {
            ct_tensor *y = ct_softmax(a, 1);
            ct_backward(y, .gradient = go);
        });
        printf("softmax fwd+bwd [%lld, %lld]:  %7.2f ms  %6.2f Mrows/s\n", (long long)R,
               (long long)C, t * 1e3, (double)R / t / 1e6);
    }
    return 0;
}
