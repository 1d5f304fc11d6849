/* Under an address-space limit (ulimit -v) matrix products either work or fail with
 * an out-of-memory error, never hang in OpenBLAS's allocator (Note [OpenBLAS
 * buffers] in cpu/gemm.c).  The sweep runs this program again in a child per limit
 * (OPENBLAS_NUM_THREADS=1, see the Note) and waits for it with a deadline. */
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ct_test.h"

/* One op's outcome: a result, or an out-of-memory error and nothing else. */
static bool worked_or_out_of_memory(const ct_tensor *t) {
    if (t) return true;
    const char *e = ct_last_error();
    bool oom = e && strstr(e, "out of memory");
    if (!oom) printf("unexpected error: %s\n", e ? e : "none");
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

TEST(products_work_or_report_out_of_memory) {
    const char *limit = getenv("CT_TEST_ADDRESS_SPACE_MIB");
    if (limit) {
        /* OpenMP's threads exist before the limit (their creation under it is libgomp's) */
        ct_tensor *warm = ct_mm(ct_ones(CT_SHAPE(2, 2)), ct_ones(CT_SHAPE(2, 2)));
        ct_release(warm);
        rlim_t bytes = (rlim_t)atoi(limit) << 20;
        struct rlimit r = {bytes, bytes};
        CHECK(setrlimit(RLIMIT_AS, &r) == 0);
    }
    products();
}

/* Runs this program's first test under a limit of mib MiB; its exit status, or -1
 * when it had to be killed after two minutes (a hang). */
static int run_limited(int mib) {
    pid_t pid = fork();
    if (pid == 0) {
        char value[16];
        snprintf(value, sizeof value, "%d", mib);
        setenv("CT_TEST_ADDRESS_SPACE_MIB", value, 1);
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        execl("/proc/self/exe", "test_blas_address_space", "products_work", (char *)NULL);
        _exit(127);
    }
    for (int waited_ms = 0; waited_ms < 120000; waited_ms += 50) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

/* AddressSanitizer's shadow memory needs terabytes of address space: no sweep there. */
#if defined(__SANITIZE_ADDRESS__)
#define CT_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CT_ADDRESS_SANITIZER 1
#endif
#endif

TEST(sweep_of_address_space_limits) {
    if (getenv("CT_TEST_ADDRESS_SPACE_MIB")) return;
#ifdef CT_ADDRESS_SANITIZER
    printf("skipped: no address-space limits under AddressSanitizer\n");
    return;
#endif
    const int limits[] = {60, 80, 100, 120, 140, 160, 180, 250, 400};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        int rc = run_limited(limits[i]);
        if (rc != 0) printf("under ulimit -v %d MiB: %s (%d)\n", limits[i], rc < 0 ? "hung" : "failed", rc);
        CHECK(rc == 0);
    }
}
