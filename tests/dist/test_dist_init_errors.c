/* ct_dist_init's failures, one per process (a failed init ends MPI): the test's
 * environment sets up the failure and CT_EXPECT_ERROR the message it must give. */
#include <stdlib.h>

#include "dist_test.h"

TEST(init_fails_clearly) {
    const char *want = getenv("CT_EXPECT_ERROR");
    CHECK(want != NULL);
    if (getenv("CT_EXPECT_UNAVAILABLE")) CHECK(!ct_dist_is_available());
    CHECK_ERROR(ct_dist_init(), want ? want : "?");
    CHECK(!ct_dist_is_initialized());
    CHECK_INT_EQ(ct_dist_world_size(), 1);
}
