/* Random-op timing, float32 (int64 for randint), 10M elements: rand, randn, randint,
 * bernoulli_ and dropout (training).  Prints "<op>_ms T" (best of several runs);
 * bench_random.py runs it next to PyTorch with the same thread count and prints the
 * ratios.  Usage: bench_random [threads] */
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "ctorch.h"

#define N 10000000
#define RUNS 7

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : ct_get_num_threads();
    ct_set_num_threads(threads);
    ct_tensor *x = ct_ones(CT_SHAPE(N));
    const char *names[] = {"rand", "randn", "randint", "bernoulli_", "dropout"};
    double best[5] = {1e9, 1e9, 1e9, 1e9, 1e9};
    for (int r = 0; r < RUNS; r++) {
        for (int k = 0; k < 5; k++) {
            CT_SCOPE {
                double t0 = bench_now();
                switch (k) {
                case 0: ct_rand(CT_SHAPE(N)); break;
                case 1: ct_randn(CT_SHAPE(N)); break;
                case 2: ct_randint(0, 100, CT_SHAPE(N)); break;
                case 3: ct_bernoulli_(x, 0.5); break;
                default: ct_dropout(x, 0.5, true); break;
                }
                double t = bench_now() - t0;
                if (t < best[k]) best[k] = t;
            }
        }
    }
    printf("threads %d\n", threads);
    for (int k = 0; k < 5; k++) printf("%s_ms %.3f\n", names[k], best[k] * 1e3);
    ct_release(x);
    return 0;
}
