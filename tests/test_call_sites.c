/* Every public function records its caller's file:line (CT_AT, ctorch/base.h): the
 * error handler, and so ct_abort_on_error, report the line of the failing call, not
 * that of an earlier call.  tests/call_sites/check_wrappers.awk checks that each
 * function of the headers has its wrapper. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct_test.h"

static const char *seen_file;
static int seen_line;
static char seen_msg[256];
static void record(const char *msg, const char *file, int line) {
    seen_file = file;
    seen_line = line;
    snprintf(seen_msg, sizeof seen_msg, "%s", msg);
}

/* An optimizer whose step fails: SGD over a non-contiguous leaf with a gradient. */
static ct_optim *failing_sgd(void) {
    ct_tensor *p = ct_detach(ct_t(ct_zeros(CT_SHAPE(2, 3))));
    ct_set_requires_grad(p, true);
    ct_set_grad(p, ct_ones(CT_SHAPE(3, 2)));
    return ct_sgd(&p, 1, .lr = CT_SOME(0.1));
}

#define EXPECT_SITE(line_)                                                         \
    do {                                                                           \
        CHECK(seen_file && !strcmp(seen_file, __FILE__));                          \
        CHECK_INT_EQ(seen_line, line_);                                            \
    } while (0)

TEST(failing_calls_report_their_own_line) {
    ct_error_handler old = ct_set_error_handler(record);
    ct_optim *opt = failing_sgd();
    ct_tensor *z = ct_zeros(CT_SHAPE(2)); /* an earlier wrapped call on another line */
    (void)z;
    int line = __LINE__ + 1;
    CHECK_INT_EQ(ct_step(opt), -1);
    EXPECT_SITE(line);
    CHECK(strstr(seen_msg, "ct_step:") != NULL);

    line = __LINE__ + 1;
    CHECK_INT_EQ(ct_checkpoint_save(NULL, NULL), -1);
    EXPECT_SITE(line);

    ct_scheduler *plateau = ct_reduce_lr_on_plateau(opt);
    line = __LINE__ + 1;
    CHECK_INT_EQ(ct_sched_step(plateau), -1);
    EXPECT_SITE(line);
    CHECK(strstr(seen_msg, "ct_sched_step:") != NULL);

    ct_set_error_handler(old);
    ct_clear_error();
}

/* ct_abort_on_error prints "file:line: error: message" for the failing call and
 * aborts: run in a child with stderr on a pipe. */
TEST(abort_on_error_prints_the_callers_line) {
    int fd[2];
    CHECK(pipe(fd) == 0);
    fflush(NULL);
    int line = 0;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        ct_optim *opt = failing_sgd();
        ct_set_error_handler(ct_abort_on_error);
        ct_zeros(CT_SHAPE(1));
        ct_step(opt); /* the line below is `line` in the parent */
        _exit(0);
    }
    line = __LINE__ - 3;
    close(fd[1]);
    char out[1024] = {0};
    size_t n = 0;
    ssize_t r;
    while (n < sizeof out - 1 && (r = read(fd[0], out + n, sizeof out - 1 - n)) > 0) n += (size_t)r;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    char want[512];
    snprintf(want, sizeof want, "%s:%d: error: ct_step: SGD needs contiguous parameters", __FILE__, line);
    if (!strstr(out, want)) fprintf(stderr, "stderr of the child: %s\nexpected: %s\n", out, want);
    CHECK(strstr(out, want) != NULL);
}
