/* A job whose rank 1 dies while rank 0 waits in a collective (expect_job_fails.sh):
 * mpirun must end the job with a non-zero status.  `dist_exit exit` calls exit(1),
 * `dist_exit kill` raises SIGKILL. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "exit";
    if (ct_dist_init() != 0) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 2;
    }
    ct_tensor *t = ct_ones(CT_SHAPE(4));
    if (ct_dist_all_reduce(t) != 0) return 2;
    if (ct_dist_rank() == 1) {
        fprintf(stderr, "rank 1: leaving with an error (%s)\n", how);
        if (strcmp(how, "kill") == 0) raise(SIGKILL);
        exit(1);
    }
    ct_dist_all_reduce(t); /* never completes: rank 1 is gone */
    fprintf(stderr, "rank 0: the all_reduce returned: %s\n", ct_last_error());
    return 3;
}
