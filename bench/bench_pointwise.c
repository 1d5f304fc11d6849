/* Pointwise throughput on 16M float32 elements, in GB/s (bytes read + written, best of
 * 5 runs): "op" calls the public op (a fresh 64 MB output each time, so page faults
 * count), "kernel" runs the same op through ct_pointwise into a warm output (the
 * kernel and iterator alone); each at 1 thread and at ct_get_num_threads().
 * bench/bench_pointwise_torch.py prints PyTorch's figures for the same ops. */
#include <stdio.h>
#include <time.h>

#include "ctorch.h"
#include "ops/pointwise.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { N = 16 << 20, NOPS = 7 };

static const struct {
    const char *name;
    ct_op_id op;
    int n_in;
    ct_pw_args args;
} OPS[NOPS] = {
    {"relu", CT_OP_relu, 1, {.a = 0}},  {"add", CT_OP_add, 2, {.a = 1, .i = 1}},
    {"exp", CT_OP_exp, 1, {.a = 0}},    {"sigmoid", CT_OP_sigmoid, 1, {.a = 0}},
    {"tanh", CT_OP_tanh, 1, {.a = 0}},       {"gelu_tanh", CT_OP_gelu, 1, {.i = 1}},
    {"gelu", CT_OP_gelu, 1, {.i = 0}},
};

static ct_tensor *public_op(int k, ct_tensor *x, ct_tensor *y) {
    switch (k) {
    case 0: return ct_relu(x);
    case 1: return ct_add(x, y);
    case 2: return ct_exp(x);
    case 3: return ct_sigmoid(x);
    case 4: return ct_tanh(x);
    case 5: return ct_gelu(x, .approximate = CT_GELU_TANH);
    default: return ct_gelu(x);
    }
}

int main(void) {
    int max_threads = ct_get_num_threads();
    CT_SCOPE {
        ct_tensor *x = ct_empty(CT_SHAPE(N)), *y = ct_ones(CT_SHAPE(N)), *out = ct_zeros(CT_SHAPE(N));
        float *px = ct_data_ptr(x);
        for (int64_t i = 0; i < N; i++) px[i] = 4.0f * (float)__builtin_sin((double)i * 0.001);
        printf("%-10s %9s %9s %9s %9s   (16M float32, GB/s; threads = %d)\n", "op", "op/1", "op/all",
               "kernel/1", "kernel/all", max_threads);
        for (int k = 0; k < NOPS; k++) {
            double gbs[4];
            for (int mode = 0; mode < 4; mode++) {
                ct_set_num_threads(mode % 2 == 0 ? 1 : max_threads);
                double best = 1e30;
                for (int rep = 0; rep < 5; rep++) {
                    CT_SCOPE {
                        ct_tensor *in[2] = {x, y};
                        ct_pw_spec spec = {OPS[k].op, CT_PW_PROMOTE, 0};
                        double t0 = now();
                        if (mode < 2) public_op(k, x, y);
                        else ct_release(ct_pointwise(&spec, OPS[k].n_in, in, out, &OPS[k].args));
                        double dt = now() - t0;
                        if (dt < best) best = dt;
                    }
                }
                gbs[mode] = (double)N * 4.0 * (OPS[k].n_in + 1) / best / 1e9;
            }
            printf("%-10s %9.2f %9.2f %9.2f %9.2f\n", OPS[k].name, gbs[0], gbs[1], gbs[2], gbs[3]);
        }
        ct_set_num_threads(max_threads);
    }
    return 0;
}
