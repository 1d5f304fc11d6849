/* Under an address-space limit (ulimit -v) matrix products and convolutions either
 * work or fail with an out-of-memory error, never hang in OpenBLAS's allocator (Note
 * [OpenBLAS buffers] in cpu/gemm.c).  The sweep runs this program again in a child per
 * limit, set before it starts as `ulimit -v` sets it (and OPENBLAS_NUM_THREADS=1, see
 * the Note), waits for it with a deadline and reads how many of its ops worked. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/sanitize.h"
#include "ct_test.h"

/* The child's ops that worked, and that ran out of memory. */
static int worked, out_of_memory;

/* One op's outcome: a result, or an out-of-memory error and nothing else. */
static bool worked_or_out_of_memory(const ct_tensor *t) {
    if (t) {
        worked++;
        return true;
    }
    const char *e = ct_last_error();
    bool oom = e && strstr(e, "out of memory");
    if (!oom) printf("unexpected error: %s\n", e ? e : "none");
    out_of_memory += oom;
    ct_clear_error();
    return oom;
}

/* Products of every BLAS path (float32, float64, float16 and a linear layer's
 * backward); each either works (then its value is right) or runs out of memory. */
static void products(void) {
    const ct_dtype dtypes[] = {CT_F32, CT_F64, CT_F16};
    for (int i = 0; i < 3; i++) CT_SCOPE {
        ct_tensor *a = ct_full(CT_SHAPE(300, 200), 0.5, .dtype = dtypes[i]);
        ct_tensor *b = ct_full(CT_SHAPE(200, 300), 2, .dtype = dtypes[i]);
        ct_tensor *c = a && b ? ct_mm(a, b) : NULL;
        CHECK(worked_or_out_of_memory(c));
        if (c) CHECK_CLOSE(ct_item(ct_select(ct_select(c, 0, 7), 0, 299)), 200, 0);
    }
    CT_SCOPE {
        ct_tensor *x = ct_ones(CT_SHAPE(64, 128), .requires_grad = true);
        ct_tensor *w = ct_full(CT_SHAPE(32, 128), 0.25, .requires_grad = true);
        ct_tensor *y = ct_linear(x, w, NULL);
        CHECK(worked_or_out_of_memory(y));
        if (y && ct_backward(ct_sum(y)) == 0) CHECK_CLOSE(ct_item(ct_sum(ct_grad(w))), 64 * 32 * 128, 0);
        else ct_clear_error();
    }
}

/* Element [i, j, k, l] of a 4-d tensor. */
static double at4(ct_tensor *t, int64_t i, int64_t j, int64_t k, int64_t l) {
    return ct_item(ct_select(ct_select(ct_select(ct_select(t, 0, i), 0, j), 0, k), 0, l));
}

/* conv2d forward and backward of ones [2, 8, 20, 20] with weights 0.25 [16, 8, 3, 3]
 * through every convolution path that calls BLAS: float32 at stride 2 (at stride 1 it
 * may take the direct kernel, which needs none, also run), float64 and float16. */
static void convolutions(void) {
    const struct {
        ct_dtype dtype;
        int stride;
    } cases[] = {{CT_F32, 1}, {CT_F32, 2}, {CT_F64, 1}, {CT_F64, 2}, {CT_F16, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) CT_SCOPE {
        int s = cases[i].stride, out = s == 1 ? 18 : 9;
        ct_tensor *x = ct_ones(CT_SHAPE(2, 8, 20, 20), .dtype = cases[i].dtype, .requires_grad = true);
        ct_tensor *w = ct_full(CT_SHAPE(16, 8, 3, 3), 0.25, .dtype = cases[i].dtype,
                               .requires_grad = true);
        ct_tensor *y = x && w ? ct_conv2d(x, w, NULL, .stride = CT_DIMS(s)) : NULL;
        CHECK(worked_or_out_of_memory(y));
        if (!y) continue;
        CHECK_CLOSE(at4(y, 1, 15, out - 1, 3), 8 * 9 * 0.25, 0);
        if (ct_backward(ct_sum(y)) != 0) {
            CHECK(worked_or_out_of_memory(NULL));
            continue;
        }
        /* each weight saw every output position; x[1, 7, 10, 10] every output channel
         * through the taps that reach it (9 at stride 1, 4 at stride 2) */
        CHECK_CLOSE(at4(ct_grad(w), 15, 7, 2, 1), 2 * out * out, 0);
        CHECK_CLOSE(at4(ct_grad(x), 1, 7, 10, 10), 16 * (s == 1 ? 9 : 4) * 0.25, 0);
    }
}

/* One training step of the demo CNN (examples/fashion_mnist.c: convolutions, pooling,
 * linear layers, Adam) on a batch of 8 in dtype; 0 with the loss and the sum of the
 * parameters after the step in r[0], r[1], or -1. */
static int demo_cnn_step(ct_dtype dtype, double r[2]) {
    int rc = -1;
    CT_SCOPE {
        ct_manual_seed(11);
        ct_module *net = ct_test_demo_cnn();
        if (!net || ct_module_to(net, .dtype = dtype) != 0) break;
        ct_tensor *ps[16];
        int n = ct_parameters(net, ps, 16);
        ct_optim *opt = n > 0 ? ct_adam(ps, n, .lr = 0.01) : NULL;
        ct_tensor *x = ct_randn(CT_SHAPE(8, 1, 28, 28), .dtype = dtype);
        ct_tensor *y = ct_randint(0, 10, CT_SHAPE(8));
        ct_tensor *loss = opt ? ct_cross_entropy(ct_forward(net, x), y) : NULL;
        if (!loss || ct_backward(loss) != 0 || ct_step(opt) != 0) break;
        r[0] = ct_item(loss);
        r[1] = 0;
        for (int i = 0; i < n; i++) r[1] += ct_item(ct_sum(ps[i]));
        if (!ct_last_error()) rc = 0;
    }
    return rc;
}

/* The demo CNN's step in float32 (convolutions on the direct kernel where the CPU has
 * it) and float64 (on BLAS): out of memory, or the values it has without a limit
 * (CT_TEST_CNN_STEP, computed by the sweep; results do not depend on the thread
 * count, Note [GEMM determinism]). */
static void demo_cnn_steps(void) {
    double want[4];
    const char *env = getenv("CT_TEST_CNN_STEP");
    CHECK(env && sscanf(env, "%la %la %la %la", &want[0], &want[1], &want[2], &want[3]) == 4);
    const ct_dtype dtypes[] = {CT_F32, CT_F64};
    for (int i = 0; i < 2; i++) {
        double got[2];
        if (demo_cnn_step(dtypes[i], got) != 0) {
            CHECK(worked_or_out_of_memory(NULL));
            continue;
        }
        CHECK(got[0] == want[2 * i] && got[1] == want[2 * i + 1]);
        worked++;
    }
}

TEST(products_work_or_report_out_of_memory) {
    bool child = getenv("CT_TEST_ADDRESS_SPACE_MIB") != NULL;
    products();
    convolutions();
    if (child) {
        demo_cnn_steps();
        printf("outcomes: %d worked, %d out of memory\n", worked, out_of_memory);
    }
}

/* Runs this program's first test under a limit of mib MiB, its output into out (size
 * n); its exit status, or -1 when it had to be killed after two minutes (a hang). */
static int run_limited(int mib, char *out, size_t n) {
    int fd[2];
    if (pipe(fd) != 0) return 126;
    pid_t pid = fork();
    if (pid == 0) {
        char value[16];
        snprintf(value, sizeof value, "%d", mib);
        setenv("CT_TEST_ADDRESS_SPACE_MIB", value, 1);
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        setenv("OMP_NUM_THREADS", "2", 1); /* the sizes below count two threads */
        rlim_t bytes = (rlim_t)mib << 20;
        struct rlimit r = {bytes, bytes};
        dup2(fd[1], 1);
        if (setrlimit(RLIMIT_AS, &r) == 0)
            execl("/proc/self/exe", "test_blas_address_space", "products_work", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    fcntl(fd[0], F_SETFL, O_NONBLOCK);
    size_t len = 0;
    int rc = -1;
    for (int waited_ms = 0; rc == -1 && waited_ms < 120000; waited_ms += 50) {
        ssize_t got;
        while (len + 1 < n && (got = read(fd[0], out + len, n - 1 - len)) > 0) len += (size_t)got;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        else nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
    if (rc == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    ssize_t got;
    while (len + 1 < n && (got = read(fd[0], out + len, n - 1 - len)) > 0) len += (size_t)got;
    out[len] = 0;
    close(fd[0]);
    return rc;
}

/* Each limit's run passes: its ops work with the right values or run out of memory.
 * The process needs about 50 MiB, and each of its two threads 129 MiB for OpenBLAS's
 * buffer, 8 MiB of stack and glibc's 64 MiB malloc arena: the smallest limit leaves
 * OpenBLAS no buffer at all, 250 MiB one (products run on one thread), the largest,
 * 600 MiB, room for everything (whether a second buffer is mapped at 400 depends on
 * the threads' timing), so the sweep sees both ends.  Linked with oneDNN (its library
 * maps 40 MiB, with the libraries it needs more) every limit is 64 MiB higher. */
#ifdef CT_HAVE_ONEDNN
enum { LIBRARIES_MIB = 64 };
#else
enum { LIBRARIES_MIB = 0 };
#endif
TEST(sweep_of_address_space_limits) {
    if (getenv("CT_TEST_ADDRESS_SPACE_MIB")) return;
    if (CT_ASAN) { /* its shadow memory needs terabytes of address space */
        printf("skipped: no address-space limits under AddressSanitizer\n");
        return;
    }
    double cnn[4];
    CHECK(demo_cnn_step(CT_F32, cnn) == 0 && demo_cnn_step(CT_F64, cnn + 2) == 0);
    char step[128];
    snprintf(step, sizeof step, "%a %a %a %a", cnn[0], cnn[1], cnn[2], cnn[3]);
    setenv("CT_TEST_CNN_STEP", step, 1);
    const int limits[] = {60, 80, 100, 120, 140, 160, 180, 200, 250, 300, 400, 600};
    enum { NL = sizeof limits / sizeof *limits };
    int ok[NL], oom[NL];
    for (int i = 0; i < NL; i++) {
        static char out[1 << 16];
        int rc = run_limited(limits[i] + LIBRARIES_MIB, out, sizeof out);
        const char *line = strstr(out, "outcomes: ");
        bool read = line && sscanf(line, "outcomes: %d worked, %d out of memory", &ok[i], &oom[i]) == 2;
        printf("ulimit -v %d MiB: ", limits[i] + LIBRARIES_MIB);
        if (rc == 0 && read) printf("%d worked, %d out of memory\n", ok[i], oom[i]);
        else printf("%s (%d)\n%s", rc < 0 ? "hung" : "failed", rc, out);
        CHECK(rc == 0 && read);
    }
    CHECK(oom[0] > 0 && ok[NL - 1] > 0 && oom[NL - 1] == 0);
}
