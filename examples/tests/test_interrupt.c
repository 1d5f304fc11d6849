/* Ctrl-C handling: the first SIGINT is only noted, a second one ends the process with
 * status 130 at once. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/interrupt.h"

int main(void) {
    interrupt_install();
    if (interrupt_requested()) {
        fprintf(stderr, "FAIL: interrupted before any SIGINT\n");
        return 1;
    }
    raise(SIGINT);
    if (!interrupt_requested()) {
        fprintf(stderr, "FAIL: the first SIGINT was not noted\n");
        return 1;
    }
    pid_t child = fork();
    if (child == 0) {
        raise(SIGINT); /* the second, counting the one before the fork */
        _exit(0);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != INTERRUPT_EXIT_STATUS) {
        fprintf(stderr, "FAIL: a second SIGINT did not exit with %d\n", INTERRUPT_EXIT_STATUS);
        return 1;
    }
    printf("ok: the first SIGINT is noted, the second exits with %d\n", INTERRUPT_EXIT_STATUS);
    return 0;
}
