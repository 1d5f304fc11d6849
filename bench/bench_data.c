/* DataLoader throughput: a full pass over Fashion-MNIST train (60000 samples), batch
 * 64, ToFloat + Normalize per sample, for num_workers 0, 1, 2 (and more if asked).
 * Prints "workers W samples_per_s S cpu_s C": the best of `reps` passes by wall clock,
 * and the CPU time (all threads) that pass used — on a busy machine the CPU time says
 * more than the wall clock.
 * Usage: bench_data [max_workers] [reps] [root] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ctorch.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv) {
    int max_workers = argc > 1 ? atoi(argv[1]) : 2;
    int reps = argc > 2 ? atoi(argv[2]) : 2;
    ct_set_error_handler(ct_abort_on_error);
    ct_set_num_threads(1); /* one intra-op thread: the loader's threads are what we measure */
    CT_SCOPE {
        double t0 = now(), c0 = cpu();
        ct_transform *tf = ct_tf_compose(CT_TRANSFORM_LIST(
            ct_tf_to_float(), ct_tf_normalize(1, (double[]){0.2860}, (double[]){0.3530})));
        ct_dataset *train = ct_fashion_mnist_with((ct_mnist_options){
            .train = true, .root = argc > 3 ? argv[3] : NULL, .transform = tf});
        printf("read_s %.3f cpu_s %.3f\n", now() - t0, cpu() - c0);
        for (int w = 0; w <= max_workers; w++) {
            double best = 1e30, best_cpu = 0;
            for (int r = 0; r < reps; r++) {
                CT_SCOPE {
                    ct_loader *l = ct_dataloader(train, .batch_size = 64, .shuffle = true,
                                                 .num_workers = w, .generator = ct_generator_new(0));
                    ct_batch b;
                    int64_t n = 0;
                    double t = now(), c = cpu();
                    while (ct_loader_next(l, &b)) {
                        CT_SCOPE_HERE;
                        n += b.size;
                    }
                    t = now() - t;
                    c = cpu() - c;
                    if (n != 60000) {
                        fprintf(stderr, "saw %lld samples\n", (long long)n);
                        exit(1);
                    }
                    if (t < best) best = t, best_cpu = c;
                }
            }
            printf("workers %d samples_per_s %.0f cpu_s %.3f\n", w, 60000 / best, best_cpu);
        }
    }
    return 0;
}
