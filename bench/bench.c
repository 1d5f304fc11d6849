/* ctorch benchmarks: one line per case, "name<TAB>unit<TAB>value" ("n/a" when the op is
 * not in this build), read by bench/run.sh next to bench/torch_ref.py's same lines.
 *
 *     bench [name-substring]        (threads: OMP_NUM_THREADS)
 *
 * Each case is a function running its op `iters` times; time_case() calibrates iters to
 * about min_seconds and keeps the best of `repeats` runs.  Cases of ops that are not in
 * the library yet are compiled once the op's macro exists (#ifdef ct_matmul ...): their
 * rows print "n/a" until then.  Add a case: a function and a row in `cases` below. */
#include <cblas.h>
#include <ctorch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CT_BENCH_QUICK=1 (the smoke test): every case once, the figures meaningless. */
static int repeats = 5;
static double min_seconds = 0.2;
enum { BIG = 16 << 20 }; /* elements of the elementwise and reduction cases */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Deterministic values in [-1, 1] of both signs (no denormals, relu-like ops branch). */
static ct_tensor *filled(ct_shape shape, bool requires_grad) {
    int64_t n = 1;
    for (int i = 0; i < shape.ndim; i++) n *= shape.d[i];
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
    ct_tensor *t = ct_tensor_f32(v, shape, .requires_grad = requires_grad);
    free(v);
    return t;
}

/* ---- per-op overhead: one-element tensors ------------------------------- */

static ct_tensor *s_a, *s_b; /* inputs of the current case, made by its setup */

static void setup_scalar_nograd(void) {
    s_a = ct_scalar_tensor(1.5);
    s_b = ct_scalar_tensor(2.5);
}
static void setup_scalar_grad(void) {
    s_a = ct_scalar_tensor(1.5, .requires_grad = true);
    s_b = ct_scalar_tensor(2.5);
}
/* Results go to a scope closed every 256 ops: the cost of freeing them is counted,
 * as Python's refcounting frees each result. */
static void add_small(long iters) {
    for (long i = 0; i < iters;) CT_SCOPE {
        for (long j = 0; j < 256 && i < iters; j++, i++) ct_add(s_a, s_b);
    }
}

/* mm of 1x1 matrices: an op with an autocast row (ops.def), outside and inside a
 * bfloat16 autocast region (where each call casts both inputs). */
static void setup_mm_1x1(void) {
    s_a = ct_ones(CT_SHAPE(1, 1));
    s_b = ct_ones(CT_SHAPE(1, 1));
}
static void mm_small(long iters) {
    for (long i = 0; i < iters;) CT_SCOPE {
        for (long j = 0; j < 256 && i < iters; j++, i++) ct_mm(s_a, s_b);
    }
}
#ifdef CT_AUTOCAST
static void mm_small_autocast(long iters) {
    CT_AUTOCAST(.dtype = CT_BF16) { mm_small(iters); }
}
#else
#define mm_small_autocast NULL
#endif

/* As a training step holds them: a thousand results (and their graph nodes) alive
 * in one scope before they are all freed. */
static void add_small_alive(long iters) {
    for (long i = 0; i < iters;) CT_SCOPE {
        for (long j = 0; j < 1000 && i < iters; j++, i++) ct_add(s_a, s_b);
    }
}

/* Backward through a chain of CHAIN adds: y = (((x + b) + b) + ...); the time of the
 * backward alone divided by CHAIN.  The graph is built untimed before each backward. */
enum { CHAIN = 1000 };
static double backward_per_node(void) {
    double best = INFINITY;
    for (int r = 0; r < 4 * repeats; r++) CT_SCOPE {
        ct_tensor *y = s_a;
        for (int i = 0; i < CHAIN; i++) y = ct_add(y, s_b);
        double t0 = now();
        ct_backward(y);
        double dt = now() - t0;
        if (dt < best) best = dt;
        ct_set_grad(s_a, NULL);
    }
    return best / CHAIN * 1e9;
}

/* ---- bandwidth: 16M float32 ---------------------------------------------- */

static void setup_big2(void) {
    s_a = filled(CT_SHAPE(BIG), false);
    s_b = filled(CT_SHAPE(BIG), false);
}
static void add_big(long iters) {
    for (long i = 0; i < iters; i++) CT_SCOPE { ct_add(s_a, s_b); }
}
static void neg_big(long iters) {
    for (long i = 0; i < iters; i++) CT_SCOPE { ct_neg(s_a); }
}
static void exp_big(long iters) {
    for (long i = 0; i < iters; i++) CT_SCOPE { ct_exp(s_a); }
}
static void sum_big(long iters) {
    for (long i = 0; i < iters; i++) CT_SCOPE { ct_sum(s_a); }
}
#ifdef ct_relu
static void relu_big(long iters) {
    for (long i = 0; i < iters; i++) CT_SCOPE { ct_relu(s_a); }
}
#else
#define relu_big NULL /* not in this build: n/a */
#endif

/* ---- GEMM: [n, n] @ [n, n] float32 --------------------------------------- */

static int s_n;
static void setup_square(int n) {
    s_n = n;
    s_a = filled(CT_SHAPE(n, n), false);
    s_b = filled(CT_SHAPE(n, n), false);
}
static void setup_256(void) { setup_square(256); }
static void setup_1024(void) { setup_square(1024); }
static void setup_2048(void) { setup_square(2048); }
/* The reference: OpenBLAS called directly, into a preallocated output. */
static void cblas_gemm(long iters) {
    float *c = malloc((size_t)s_n * (size_t)s_n * sizeof *c);
    for (long i = 0; i < iters; i++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s_n, s_n, s_n, 1.0f,
                    ct_data_ptr(s_a), s_n, ct_data_ptr(s_b), s_n, 0.0f, c, s_n);
    free(c);
}
#ifdef ct_matmul
static void matmul(long iters) {
    for (long i = 0; i < iters; i++) CT_SCOPE { ct_matmul(s_a, s_b); }
}
#else
#define matmul NULL
#endif

/* ---- conv2d: batch 64, 32 -> 64 channels, 28x28, 3x3, padding 1 ------------ */

#ifdef ct_conv2d
static ct_tensor *s_w, *s_bias;
static void setup_conv(void) {
    s_a = filled(CT_SHAPE(64, 32, 28, 28), true);
    s_w = filled(CT_SHAPE(64, 32, 3, 3), true);
    s_bias = filled(CT_SHAPE(64), true);
}
static void conv_fwd(long iters) {
    CT_NO_GRAD for (long i = 0; i < iters; i++) CT_SCOPE {
        ct_conv2d(s_a, s_w, s_bias, .padding = CT_DIMS(1));
    }
}
static void conv_fwd_bwd(long iters) {
    for (long i = 0; i < iters; i++) CT_SCOPE {
        ct_backward(ct_sum(ct_conv2d(s_a, s_w, s_bias, .padding = CT_DIMS(1))));
    }
}
#else
#define setup_conv NULL
#define conv_fwd NULL
#define conv_fwd_bwd NULL
#endif

/* ---- softmax: [4096, 1024] float32 over the last dim --------------------- */

#ifdef ct_softmax
static void setup_softmax(void) { s_a = filled(CT_SHAPE(4096, 1024), false); }
static void softmax(long iters) {
    for (long i = 0; i < iters; i++) CT_SCOPE { ct_softmax(s_a, -1); }
}
#else
#define setup_softmax NULL
#define softmax NULL
#endif

/* ---- the table ------------------------------------------------------------ */

typedef enum { PER_CALL_NS, PER_CALL_MS, GBPS, GFLOPS, DIRECT } measure;
typedef struct {
    const char *name;    /* the same name in torch_ref.py */
    const char *unit;
    void (*setup)(void); /* makes s_a, s_b, ... (released after the case) */
    void (*run)(long iters); /* NULL: the op is not in this build ("n/a") */
    measure how;
    double work;         /* bytes (GBPS) or flops (GFLOPS) per call */
    double (*direct)(void); /* how == DIRECT: computes the figure itself */
} bench_case;

#define GEMM_FLOP(n) (2.0 * (n) * (n) * (n))
#define CONV_FLOP (2.0 * 64 * 64 * 28 * 28 * 32 * 9)
static const bench_case cases[] = {
    {"add_1elem_nograd", "ns/op", setup_scalar_nograd, add_small, PER_CALL_NS, 0, NULL},
    {"add_1elem_grad", "ns/op", setup_scalar_grad, add_small, PER_CALL_NS, 0, NULL},
    {"add_1elem_grad_1000alive", "ns/op", setup_scalar_grad, add_small_alive, PER_CALL_NS, 0, NULL},
    {"mm_1x1_nograd", "ns/op", setup_mm_1x1, mm_small, PER_CALL_NS, 0, NULL},
    {"mm_1x1_autocast_bf16", "ns/op", setup_mm_1x1, mm_small_autocast, PER_CALL_NS, 0, NULL},
    {"backward_per_node", "ns/node", setup_scalar_grad, NULL, DIRECT, 0, backward_per_node},
    {"add_16M", "GB/s", setup_big2, add_big, GBPS, 3.0 * 4 * BIG, NULL},
    {"neg_16M", "GB/s", setup_big2, neg_big, GBPS, 2.0 * 4 * BIG, NULL},
    {"relu_16M", "GB/s", setup_big2, relu_big, GBPS, 2.0 * 4 * BIG, NULL},
    {"exp_16M", "GB/s", setup_big2, exp_big, GBPS, 2.0 * 4 * BIG, NULL},
    {"sum_16M", "GB/s", setup_big2, sum_big, GBPS, 4.0 * BIG, NULL},
    {"softmax_4096x1024", "GB/s", setup_softmax, softmax, GBPS, 2.0 * 4 * 4096 * 1024, NULL},
    {"gemm_256", "GFLOP/s", setup_256, matmul, GFLOPS, GEMM_FLOP(256), NULL},
    {"gemm_1024", "GFLOP/s", setup_1024, matmul, GFLOPS, GEMM_FLOP(1024), NULL},
    {"gemm_2048", "GFLOP/s", setup_2048, matmul, GFLOPS, GEMM_FLOP(2048), NULL},
    {"cblas_sgemm_256", "GFLOP/s", setup_256, cblas_gemm, GFLOPS, GEMM_FLOP(256), NULL},
    {"cblas_sgemm_1024", "GFLOP/s", setup_1024, cblas_gemm, GFLOPS, GEMM_FLOP(1024), NULL},
    {"cblas_sgemm_2048", "GFLOP/s", setup_2048, cblas_gemm, GFLOPS, GEMM_FLOP(2048), NULL},
    {"conv2d_fwd", "ms", setup_conv, conv_fwd, PER_CALL_MS, CONV_FLOP, NULL},
    {"conv2d_fwd_bwd", "ms", setup_conv, conv_fwd_bwd, PER_CALL_MS, 3 * CONV_FLOP, NULL},
};

/* Seconds per call: iters grown until one run takes min_seconds, best of `repeats`. */
static double time_case(void (*run)(long)) {
    long iters = 1;
    double t;
    run(1); /* warm-up: first-touch page faults, thread pool start */
    for (;;) {
        double t0 = now();
        run(iters);
        t = now() - t0;
        if (t >= min_seconds || iters >= (1L << 30)) break;
        iters *= t > 0 ? (min_seconds / t > 8 ? 8 : 2) : 8;
    }
    double best = t / (double)iters;
    for (int r = 1; r < repeats; r++) {
        double t0 = now();
        run(iters);
        double per = (now() - t0) / (double)iters;
        if (per < best) best = per;
    }
    return best;
}

static void release_inputs(void) {
    ct_release(s_a);
    ct_release(s_b);
    s_a = s_b = NULL;
#ifdef ct_conv2d
    ct_release(s_w);
    ct_release(s_bias);
    s_w = s_bias = NULL;
#endif
}

int main(int argc, char **argv) {
    ct_set_error_handler(ct_abort_on_error);
    if (getenv("CT_BENCH_QUICK")) {
        repeats = 1;
        min_seconds = 0;
    }
    printf("# ctorch bench, threads %d\n", ct_get_num_threads());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bench_case *c = &cases[i];
        if (argc > 1 && !strstr(c->name, argv[1])) continue;
        if (!c->run && !c->direct) {
            printf("%s\t%s\tn/a\n", c->name, c->unit);
            fflush(stdout);
            continue;
        }
        if (c->setup) c->setup();
        double v = 0;
        if (c->how == DIRECT) {
            v = c->direct();
        } else {
            double s = time_case(c->run);
            v = c->how == PER_CALL_NS ? s * 1e9
              : c->how == PER_CALL_MS ? s * 1e3
                                      : c->work / s * 1e-9; /* GB/s and GFLOP/s */
        }
        release_inputs();
        printf("%s\t%s\t%.4g\n", c->name, c->unit, v);
        fflush(stdout);
    }
    return 0;
}
