/* What the tests run under mpirun share (tests/dist/CMakeLists.txt, ct_mpi_test): the
 * harness of ct_test.h, with the process group joined before the first test and
 * destroyed after the last.  Every rank runs every test in the same order, so a test
 * may call collectives freely; its checks are per rank, and mpirun fails when any rank
 * does. */
#ifndef CT_DIST_TEST_H
#define CT_DIST_TEST_H

#include <stdlib.h>

#include "ct_test.h"

/* Joins the default group on the first call (every test begins with it). */
static inline void dist_up(void) {
    if (!ct_dist_is_initialized() && ct_dist_init() != 0) {
        fprintf(stderr, "ct_dist_init failed: %s\n", ct_last_error());
        exit(1);
    }
}
#define DIST_TEST(name)                                                                            \
    static void name##_body(void);                                                                 \
    TEST(name) {                                                                                   \
        dist_up();                                                                                 \
        name##_body();                                                                             \
    }                                                                                              \
    static void name##_body(void)

/* After the last test (ct_test.c's hook): leaves the group. */
int ct_test_finish(void) { return ct_dist_is_initialized() ? ct_dist_destroy() : 0; }

#endif
