/* Errors users meet first: tensors on different devices given to one op, and the
 * ct_abort_on_error handler that examples install (print the message and the call
 * site, then abort). */
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct_test.h"
#include "core/tensor_impl.h"

/* ---- devices ------------------------------------------------------------------ */

/* Tensors tagged as living on cuda:0 (white-box: this build has no cuda backend, so
 * they keep their cpu memory); untagged again before they are freed. */
static ct_tensor *tagged[16];
static int n_tagged;

static ct_tensor *on_cuda(ct_tensor *t) {
    if (t && n_tagged < 16) {
        t->storage->device = CT_CUDA(0);
        tagged[n_tagged++] = t;
    }
    return t;
}

static void untag_all(void) {
    while (n_tagged) tagged[--n_tagged]->storage->device = CT_CPU;
}

/* expr fails naming both devices (in either order) and saying they must be the same. */
#define CHECK_DEVICE_ERROR(expr)                                                        \
    do {                                                                                \
        ct_clear_error();                                                               \
        void *r_ = (void *)(expr);                                                      \
        const char *e_ = ct_last_error();                                               \
        if (r_ || !e_ || !strstr(e_, "same device") || !strstr(e_, "cpu") ||            \
            !strstr(e_, "cuda:0"))                                                      \
            ct_test_fail(__FILE__, __LINE__, "%s: expected a device error naming cpu and " \
                         "cuda:0, got %s", #expr, e_ ? e_ : "no error");                \
        ct_clear_error();                                                               \
    } while (0)

TEST(device_mismatch_pointwise_and_linalg) {
    ct_tensor *a = ct_randn(CT_SHAPE(3, 3)), *c = on_cuda(ct_randn(CT_SHAPE(3, 3)));
    CHECK_DEVICE_ERROR(ct_add(a, c));
    CHECK_DEVICE_ERROR(ct_add(c, a));
    CHECK_DEVICE_ERROR(ct_mul(a, c));
    CHECK_DEVICE_ERROR(ct_sub(a, c));
    CHECK_DEVICE_ERROR(ct_div(a, c));
    CHECK_DEVICE_ERROR(ct_matmul(a, c));
    CHECK_DEVICE_ERROR(ct_matmul(c, a));
    CHECK_DEVICE_ERROR(ct_mm(a, c));
    CHECK_DEVICE_ERROR(ct_bmm(ct_unsqueeze(a, 0), ct_unsqueeze(c, 0)));
    CHECK_DEVICE_ERROR(ct_dot(ct_select(a, 0, 0), ct_select(c, 0, 0)));
    CHECK_DEVICE_ERROR(ct_linear(a, c, NULL));
    CHECK_DEVICE_ERROR(ct_linear(a, a, on_cuda(ct_zeros(CT_SHAPE(3)))));
    ct_tensor *cond = ct_gt_scalar(a, 0);
    CHECK_DEVICE_ERROR(ct_where(cond, a, c));
    CHECK_DEVICE_ERROR(ct_where(on_cuda(ct_gt_scalar(a, 0)), a, a));
    CHECK_DEVICE_ERROR(ct_copy_(ct_zeros(CT_SHAPE(3, 3)), c));
    /* The message is PyTorch's, naming the common device (the first not the cpu) first. */
    CHECK_ERROR(ct_mul(a, c), "Expected all tensors to be on the same device, but found at least "
                              "two devices, cuda:0 and cpu!");
    untag_all();
}

TEST(device_mismatch_join_and_index) {
    ct_tensor *a = ct_randn(CT_SHAPE(4, 3)), *c = on_cuda(ct_randn(CT_SHAPE(4, 3)));
    ct_tensor *pair[2] = {a, c}, *three[3] = {a, a, c};
    CHECK_DEVICE_ERROR(ct_cat(2, pair, 0));
    CHECK_DEVICE_ERROR(ct_cat(3, three, 1));
    CHECK_DEVICE_ERROR(ct_stack(2, pair, 0));
    CHECK_DEVICE_ERROR(ct_stack(3, three, -1));
    ct_tensor *idx = on_cuda(ct_tensor_i64(((int64_t[]){2, 0}), CT_SHAPE(2)));
    CHECK_DEVICE_ERROR(ct_index_select(a, 0, idx));
    CHECK_DEVICE_ERROR(ct_index_select(c, 1, ct_tensor_i64(((int64_t[]){1}), CT_SHAPE(1))));
    CHECK_DEVICE_ERROR(ct_gather(a, 0, on_cuda(ct_zeros(CT_SHAPE(2, 3), .dtype = CT_I64))));
    CHECK_DEVICE_ERROR(ct_masked_fill(a, on_cuda(ct_gt_scalar(a, 0)), 0));
    CHECK_DEVICE_ERROR(ct_embedding(idx, a));
    untag_all();
}

TEST(device_mismatch_conv_and_losses) {
    ct_tensor *x = ct_randn(CT_SHAPE(2, 1, 5, 5));
    ct_tensor *w = ct_randn(CT_SHAPE(4, 1, 3, 3)), *wc = on_cuda(ct_randn(CT_SHAPE(4, 1, 3, 3)));
    CHECK_DEVICE_ERROR(ct_conv2d(x, wc, NULL));
    CHECK_DEVICE_ERROR(ct_conv2d(x, w, on_cuda(ct_zeros(CT_SHAPE(4)))));
    /* A module whose parameters were left on another device than its input. */
    ct_module *conv = ct_nn_conv2d(1, 4, CT_DIMS(3));
    on_cuda(ct_module_get_parameter(conv, "weight"));
    on_cuda(ct_module_get_parameter(conv, "bias"));
    CHECK_DEVICE_ERROR(ct_forward(conv, x));

    ct_tensor *logits = ct_randn(CT_SHAPE(3, 5));
    ct_tensor *target = ct_tensor_i64(((int64_t[]){1, 0, 4}), CT_SHAPE(3));
    ct_tensor *target_c = on_cuda(ct_tensor_i64(((int64_t[]){1, 0, 4}), CT_SHAPE(3)));
    CHECK_DEVICE_ERROR(ct_cross_entropy(logits, target_c));
    CHECK_DEVICE_ERROR(ct_cross_entropy(logits, target, .weight = on_cuda(ct_ones(CT_SHAPE(5)))));
    CHECK_DEVICE_ERROR(ct_nll_loss(ct_log_softmax(logits, 1), target_c));
    ct_tensor *p = ct_rand(CT_SHAPE(3)), *pc = on_cuda(ct_rand(CT_SHAPE(3)));
    CHECK_DEVICE_ERROR(ct_mse_loss(p, pc));
    CHECK_DEVICE_ERROR(ct_binary_cross_entropy(p, pc));
    CHECK_DEVICE_ERROR(ct_loss(ct_nn_cross_entropy_loss(), logits, target_c));
    untag_all();
}

/* ---- ct_abort_on_error --------------------------------------------------------- */

/* Each returns the line of its failing call, written on that same line; run in the
 * parent (no handler) it fails quietly and returns; run under ct_abort_on_error it
 * never returns. */
static int bad_matmul(void) {
    ct_tensor *a = ct_ones(CT_SHAPE(2, 3)), *b = ct_ones(CT_SHAPE(2, 3));
    ct_matmul(a, b); return __LINE__;
}

static int bad_chain(void) {
    ct_tensor *x = ct_ones(CT_SHAPE(4));
    ct_sum(ct_reshape(x, CT_SHAPE(3, 2))); return __LINE__;
}

static int no_error(void) {
    CHECK_CLOSE(ct_item(ct_sum(ct_ones(CT_SHAPE(4)))), 4, 0); return __LINE__;
}

/* Runs fn in a child process with ct_abort_on_error installed and its stderr in a
 * pipe; returns the child's wait status and writes its stderr into err. */
static int run_child(int (*fn)(void), char *err, size_t size) {
    int fds[2];
    CHECK(pipe(fds) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core); /* abort without writing a core file */
        close(fds[0]);
        dup2(fds[1], 2);
        ct_set_error_handler(ct_abort_on_error);
        fn();
        _exit(0); /* reached only when nothing failed */
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < size && (r = read(fds[0], err + n, size - 1 - n)) > 0) n += (size_t)r;
    err[n] = 0;
    close(fds[0]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    return status;
}

/* fn, run under ct_abort_on_error, dies of SIGABRT after printing
 * "<file>:<line of the failing call>: error: <the message>" with a message that
 * contains fragment. */
static void check_aborts(int (*fn)(void), const char *fragment) {
    ct_clear_error();
    int line = fn(); /* here: no handler, the error is only recorded */
    char want[2048];
    snprintf(want, sizeof want, "%s:%d: error: %s\n", __FILE__, line,
             ct_last_error() ? ct_last_error() : "(no error)");
    CHECK(ct_last_error() && strstr(ct_last_error(), fragment));
    ct_clear_error();
    char err[4096];
    int status = run_child(fn, err, sizeof err);
    CHECK(WIFSIGNALED(status));
    CHECK_INT_EQ(WIFSIGNALED(status) ? WTERMSIG(status) : -1, SIGABRT);
    CHECK_STR_EQ(err, want);
}

TEST(abort_on_error_prints_call_site_and_aborts) {
    CHECK(ct_set_error_handler(NULL) == NULL); /* the default: no handler */
    check_aborts(bad_matmul, "cannot be multiplied");
    check_aborts(bad_chain, "shape '[3, 2]' is invalid for input of size 4");
    /* Without an error the handler is never called: the child exits normally. */
    char err[256];
    int status = run_child(no_error, err, sizeof err);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_STR_EQ(err, "");
    /* The parent's handler is untouched by the children. */
    CHECK(ct_set_error_handler(NULL) == NULL);
}
