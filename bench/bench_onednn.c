/* bfloat16 against float32 on this CPU (src/cpu/onednn.h):
 *
 *     bench_onednn [threads]          (default: THREADS or all cores)
 *
 *   gemm_bf16_ctorch     GFLOP/s of a 1024x1024x1024 bf16 ct_matmul (oneDNN's matmul
 *                        where it runs, else the reduced kernel; CT_ONEDNN=0: always it)
 *   gemm_bf16_onednn     the same product through oneDNN's matmul called directly
 *                        (one primitive made once, executed again and again)
 *   gemm_f32_ctorch      the float32 ct_matmul (OpenBLAS tiles)
 *   cnn_step_f32/_bf16   ms per training step of the demo CNN (examples/fashion_mnist.c's
 *                        model, batch 64, SGD), its parameters and input in float32 or
 *                        converted to bfloat16 (ct_module_to)
 * Prints lscpu's model name and the CPU's AVX-512 / AMX flags first, and the
 * instruction set oneDNN runs, so the figures say which case they measured.
 * Lines: "name<TAB>unit<TAB>value" (bench/run.sh's format).  CT_BENCH_QUICK=1: one run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/onednn.h"
#include "ctorch.h"
#ifdef CT_HAVE_ONEDNN
#include <dnnl.h>
#include <omp.h>
#endif

static bool quick;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_cpu(void) {
    FILE *f = popen("lscpu 2>/dev/null | sed -n 's/^Model name: *//p'", "r");
    char line[4096];
    if (f && fgets(line, sizeof line, f)) printf("# cpu: %s", line);
    if (f) pclose(f);
    f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        printf("# flags:");
        for (char *t = strtok(strchr(line, ':') + 1, " \n"); t; t = strtok(NULL, " \n"))
            if (!strncmp(t, "avx512", 6) || !strncmp(t, "amx", 3) || !strcmp(t, "avx2") ||
                !strcmp(t, "fma"))
                printf(" %s", t);
        printf("\n");
        break;
    }
    if (f) fclose(f);
    printf("# oneDNN: %s, isa %s\n", ct_onednn_enabled() ? "on" : "off", ct_onednn_isa());
}

/* The best of reps timings of fn (seconds). */
#define BEST(reps, stmt)                                                                 \
    ({                                                                                   \
        double best_ = 1e30;                                                             \
        for (int r_ = 0; r_ < (reps); r_++) {                                            \
            double t_ = now();                                                           \
            stmt;                                                                        \
            t_ = now() - t_;                                                             \
            if (t_ < best_) best_ = t_;                                                  \
        }                                                                                \
        best_;                                                                           \
    })

static void bench_gemm(void) {
    enum { N = 1024 };
    double flops = 2.0 * N * N * N;
    int reps = quick ? 1 : 20;
    CT_SCOPE {
        ct_tensor *a = ct_randn(CT_SHAPE(N, N)), *b = ct_randn(CT_SHAPE(N, N));
        ct_tensor *ab = ct_to(a, .dtype = CT_BF16), *bb = ct_to(b, .dtype = CT_BF16);
        CT_SCOPE { ct_matmul(ab, bb); } /* warm-up: the primitive is made once */
        double t = BEST(reps, CT_SCOPE { ct_matmul(ab, bb); });
        printf("gemm_bf16_ctorch\tGFLOP/s\t%.1f\n", flops / t * 1e-9);
        CT_SCOPE { ct_matmul(a, b); }
        t = BEST(reps, CT_SCOPE { ct_matmul(a, b); });
        printf("gemm_f32_ctorch\tGFLOP/s\t%.1f\n", flops / t * 1e-9);
#ifdef CT_HAVE_ONEDNN
        dnnl_engine_t e;
        dnnl_stream_t s;
        dnnl_memory_desc_t md;
        dnnl_dims_t dims = {N, N};
        dnnl_matmul_desc_t desc;
        dnnl_primitive_desc_t pd;
        dnnl_primitive_t p;
        dnnl_memory_t ma, mb, mc;
        ct_tensor *c = ct_empty(CT_SHAPE(N, N), .dtype = CT_BF16);
        omp_set_num_threads(ct_get_num_threads());
        if (dnnl_engine_create(&e, dnnl_cpu, 0) == dnnl_success &&
            dnnl_stream_create(&s, e, dnnl_stream_default_flags) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_bf16, dnnl_ab) == dnnl_success &&
            dnnl_matmul_desc_init(&desc, &md, &md, NULL, &md) == dnnl_success &&
            dnnl_primitive_desc_create(&pd, &desc, NULL, e, NULL) == dnnl_success &&
            dnnl_primitive_create(&p, pd) == dnnl_success) {
            dnnl_memory_create(&ma, &md, e, ct_data_ptr(ab));
            dnnl_memory_create(&mb, &md, e, ct_data_ptr(bb));
            dnnl_memory_create(&mc, &md, e, ct_data_ptr(c));
            dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
            const char *impl = "?";
            dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
            dnnl_primitive_execute(p, s, 3, args);
            dnnl_stream_wait(s);
            t = BEST(reps, {
                dnnl_primitive_execute(p, s, 3, args);
                dnnl_stream_wait(s);
            });
            printf("# oneDNN's own matmul: %s\n", impl);
            printf("gemm_bf16_onednn\tGFLOP/s\t%.1f\n", flops / t * 1e-9);
            dnnl_memory_destroy(ma);
            dnnl_memory_destroy(mb);
            dnnl_memory_destroy(mc);
            dnnl_primitive_destroy(p);
            dnnl_primitive_desc_destroy(pd);
            dnnl_stream_destroy(s);
            dnnl_engine_destroy(e);
        } else {
            printf("# oneDNN has no bf16 matmul on this CPU\n");
        }
#endif
    }
}

/* ms per SGD training step of the demo CNN in dtype dt */
static void bench_cnn(ct_dtype dt, const char *name) {
    CT_SCOPE {
        ct_manual_seed(1);
        ct_module *model = ct_sequential(CT_MODULES(
            ct_nn_conv2d(1, 32, CT_DIMS(3), .padding = CT_DIMS(1)), ct_nn_relu(),
            ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_conv2d(32, 64, CT_DIMS(3), .padding = CT_DIMS(1)),
            ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_flatten(), ct_nn_linear(3136, 128),
            ct_nn_relu(), ct_nn_linear(128, 10)));
        ct_module_to(model, .dtype = dt);
        ct_tensor *params[16];
        int n = ct_parameters(model, params, 16);
        ct_optim *opt = ct_sgd(params, n, .lr = CT_SOME(1e-2));
        ct_tensor *x = ct_to(ct_randn(CT_SHAPE(64, 1, 28, 28)), .dtype = dt);
        ct_tensor *y = ct_randint(0, 10, CT_SHAPE(64));
        int steps = quick ? 1 : 30;
        double t = BEST(steps + 2, CT_SCOPE {
            ct_tensor *loss = ct_cross_entropy(ct_forward(model, x), y);
            ct_zero_grad(opt);
            ct_backward(loss);
            ct_step(opt);
        });
        printf("%s\tms\t%.2f\n", name, t * 1e3);
    }
}

int main(int argc, char **argv) {
    quick = getenv("CT_BENCH_QUICK") && strcmp(getenv("CT_BENCH_QUICK"), "0") != 0;
    const char *th = argc > 1 ? argv[1] : getenv("THREADS");
    if (th) ct_set_num_threads(atoi(th));
    print_cpu();
    printf("# threads %d\n", ct_get_num_threads());
    bench_gemm();
    bench_cnn(CT_F32, "cnn_step_f32");
    bench_cnn(CT_BF16, "cnn_step_bf16");
    return 0;
}
