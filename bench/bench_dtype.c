/* Reduced precision against float32: add, exp and sum of 16M elements, softmax over
 * rows of [16384, 1024] and a 1024 x 1024 matmul, in float32, bfloat16 and float16.
 * Medians of 5 runs (the machine may be shared).  Usage: bench_dtype [threads].
 * Compare with bench/bench_dtype.py (PyTorch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "ctorch.h"

enum { REPS = 5 };

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of REPS runs of stmt, in seconds; each run in a scope of its own. */
#define MEDIAN(stmt)                                                               \
    ({                                                                             \
        double t_[REPS];                                                           \
        for (int r_ = 0; r_ < REPS; r_++) {                                        \
            CT_SCOPE_HERE;                                                         \
            double t0_ = bench_now();                                              \
            stmt;                                                                  \
            t_[r_] = bench_now() - t0_;                                            \
        }                                                                          \
        qsort(t_, REPS, sizeof(double), cmp);                                      \
        t_[REPS / 2];                                                              \
    })

static void cpu_model(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            printf("cpu: %s", strchr(line, ':') + 2);
            break;
        }
    if (f) fclose(f);
}

int main(int argc, char **argv) {
    ct_set_num_threads(argc > 1 ? atoi(argv[1]) : 2);
    ct_set_error_handler(ct_abort_on_error);
    cpu_model();
    printf("threads: %d (median of %d runs, ms)\n", ct_get_num_threads(), REPS);
    printf("%-28s %9s %9s %9s\n", "", "float32", "bfloat16", "float16");
    const ct_dtype dts[] = {CT_F32, CT_BF16, CT_F16};
    double t[5][3];
    for (int k = 0; k < 3; k++) {
        CT_SCOPE {
            int64_t n = 16 << 20;
            ct_tensor *x = ct_to(ct_sub_scalar(ct_rand(CT_SHAPE(n)), 0.5), .dtype = dts[k]);
            ct_tensor *y = ct_to(ct_rand(CT_SHAPE(n)), .dtype = dts[k]);
            ct_tensor *rows = ct_view(x, CT_SHAPE(16384, 1024));
            ct_tensor *a = ct_to(ct_randn(CT_SHAPE(1024, 1024)), .dtype = dts[k]);
            ct_tensor *b = ct_to(ct_randn(CT_SHAPE(1024, 1024)), .dtype = dts[k]);
            t[0][k] = MEDIAN(ct_add(x, y));
            t[1][k] = MEDIAN(ct_exp(x));
            t[2][k] = MEDIAN(ct_sum(x));
            t[3][k] = MEDIAN(ct_softmax(rows, 1));
            t[4][k] = MEDIAN(ct_matmul(a, b));
        }
    }
    const char *names[] = {"add 16M", "exp 16M", "sum 16M", "softmax [16384, 1024] dim 1",
                           "matmul 1024 x 1024"};
    for (int i = 0; i < 5; i++)
        printf("%-28s %9.2f %9.2f %9.2f\n", names[i], t[i][0] * 1e3, t[i][1] * 1e3, t[i][2] * 1e3);
    return 0;
}
