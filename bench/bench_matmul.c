/* GFLOP/s of float32 GEMM through ct_matmul against cblas_sgemm called directly,
 * with the same thread count (ct_set_num_threads / openblas_set_num_threads); best
 * of five rounds each.  The two run in separate phases with a pause between them:
 * OpenBLAS's pthread workers and OpenMP's workers spin after their work and slow
 * the other pool down (see Note [GEMM determinism] in src/cpu/gemm.h).
 * Usage: bench_matmul [threads] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ctorch.h"

/* Wall clock; with one thread, process CPU time (robust on a loaded machine). */
static clockid_t clock_id = CLOCK_MONOTONIC;
static double now(void) {
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : ct_get_num_threads();
    ct_set_num_threads(threads);
    if (threads == 1) clock_id = CLOCK_PROCESS_CPUTIME_ID;
    int sizes[] = {256, 1024, 2048};
    printf("threads %d (%s time)\n%6s %12s %12s %7s\n", threads, threads == 1 ? "cpu" : "wall", "n",
           "ct GFLOP/s", "blas GFLOP/s", "ratio");
    for (int si = 0; si < 3; si++) {
        int n = sizes[si];
        double flop = 2.0 * n * n * n, best_ct = 1e9, best_blas = 1e9;
        int reps = n <= 256 ? 200 : n <= 1024 ? 10 : 4;
        CT_SCOPE {
            ct_tensor *a = ct_full(CT_SHAPE(n, n), 0.5), *b = ct_full(CT_SHAPE(n, n), 0.25);
            float *c = malloc(sizeof(float) * (size_t)n * n);
            for (int r = 0; r < 5 * reps; r++) CT_SCOPE {
                double t0 = now();
                ct_matmul(a, b);
                double t = now() - t0;
                if (t < best_ct) best_ct = t;
            }
            usleep(300000);
            openblas_set_num_threads(threads);
            for (int r = 0; r < 5 * reps; r++) {
                double t0 = now();
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, ct_data_ptr(a),
                            n, ct_data_ptr(b), n, 0, c, n);
                double t = now() - t0;
                if (t < best_blas) best_blas = t;
            }
            usleep(300000);
            free(c);
        }
        printf("%6d %12.1f %12.1f %6.1f%%\n", n, flop / best_ct * 1e-9, flop / best_blas * 1e-9,
               100.0 * best_blas / best_ct);
    }
    return 0;
}
