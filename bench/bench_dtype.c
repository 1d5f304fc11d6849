/* Reduced precision against float32: add, exp and sum of 16M elements, softmax and
 * layer_norm (with weight and bias) over rows of [16384, 1024], batch_norm (training,
 * weight and bias) of [64, 128, 28, 28], a 1024 x 1024 matmul and a 3x3 conv2d of
 * [8, 64, 56, 56] with 64 filters (padding 1), in float32, bfloat16 and float16.
 * Medians of 5 runs (the machine may be shared), one `op.dtype ms` line each.
 * Usage: bench_dtype [threads].  bench/bench_dtype.py runs it and prints its figures
 * beside PyTorch's in one table. */
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv) {
    ct_set_num_threads(argc > 1 ? atoi(argv[1]) : 2);
    ct_set_error_handler(ct_abort_on_error);
    printf("threads %d\n", ct_get_num_threads());
    const ct_dtype dts[] = {CT_F32, CT_BF16, CT_F16};
    enum { NOPS = 8 };
    double t[NOPS][3];
    for (int k = 0; k < 3; k++) {
        CT_SCOPE {
            int64_t n = 16 << 20;
            ct_tensor *x = ct_to(ct_sub_scalar(ct_rand(CT_SHAPE(n)), 0.5), .dtype = dts[k]);
            ct_tensor *y = ct_to(ct_rand(CT_SHAPE(n)), .dtype = dts[k]);
            ct_tensor *rows = ct_view(x, CT_SHAPE(16384, 1024));
            ct_tensor *a = ct_to(ct_randn(CT_SHAPE(1024, 1024)), .dtype = dts[k]);
            ct_tensor *b = ct_to(ct_randn(CT_SHAPE(1024, 1024)), .dtype = dts[k]);
            ct_tensor *img_conv = ct_to(ct_randn(CT_SHAPE(8, 64, 56, 56)), .dtype = dts[k]);
            ct_tensor *wconv = ct_to(ct_randn(CT_SHAPE(64, 64, 3, 3)), .dtype = dts[k]);
            ct_tensor *w = ct_to(ct_rand(CT_SHAPE(1024)), .dtype = dts[k]);
            ct_tensor *img = ct_view(ct_narrow(x, 0, 0, 64 * 128 * 28 * 28), CT_SHAPE(64, 128, 28, 28));
            ct_tensor *wc = ct_narrow(w, 0, 0, 128);
            t[0][k] = MEDIAN(ct_add(x, y));
            t[1][k] = MEDIAN(ct_exp(x));
            t[2][k] = MEDIAN(ct_sum(x));
            t[3][k] = MEDIAN(ct_softmax(rows, 1));
            t[4][k] = MEDIAN(ct_matmul(a, b));
            t[5][k] = MEDIAN(ct_layer_norm(rows, CT_SHAPE(1024), .weight = w, .bias = w));
            t[6][k] = MEDIAN(ct_batch_norm(img, NULL, NULL, .weight = wc, .bias = wc, .training = true));
            t[7][k] = MEDIAN(ct_conv2d(img_conv, wconv, NULL, .padding = CT_DIMS(1)));
        }
    }
    const char *ops[NOPS] = {"add", "exp", "sum", "softmax", "matmul", "layer_norm", "batch_norm", "conv2d"};
    const char *names[] = {"float32", "bfloat16", "float16"};
    for (int i = 0; i < NOPS; i++)
        for (int k = 0; k < 3; k++) printf("%s.%s %.3f\n", ops[i], names[k], t[i][k] * 1e3);
    return 0;
}
