/* A program started without mpirun: before ct_dist_init the process is rank 0 of a
 * world of one and collectives refuse to run; ct_dist_init makes an MPI singleton
 * (a world of one) on which every collective works; after ct_dist_destroy MPI
 * cannot start again. */
#include "dist_test.h"

TEST(before_init) {
    CHECK(!ct_dist_is_initialized());
    CHECK_INT_EQ(ct_dist_rank(), 0);
    CHECK_INT_EQ(ct_dist_world_size(), 1);
    CHECK_INT_EQ(ct_dist_local_rank(), 0);
    CHECK(ct_dist_is_main());
    CHECK(ct_dist_is_available());
    ct_tensor *t = ct_ones(CT_SHAPE(2));
    CHECK_ERROR(ct_dist_all_reduce(t),
                "ct_dist_all_reduce: Default process group has not been initialized");
    CHECK_ERROR(ct_dist_barrier(), "has not been initialized");
    CHECK_ERROR(ct_dist_new_group(NULL, 0), "has not been initialized");
    CHECK_ERROR(ct_dist_destroy(), "has not been initialized");
    CHECK_ERROR(ct_dist_init(.backend = CT_DIST_NCCL), "NCCL backend is not available");
}

TEST(world_of_one) {
    CHECK(ct_dist_init(.backend = CT_DIST_MPI) == 0);
    CHECK(ct_dist_is_initialized());
    CHECK_INT_EQ(ct_dist_world_size(), 1);
    CHECK_INT_EQ(ct_dist_rank(), 0);
    ct_tensor *t = ct_tensor_f32(((float[]){1.5f, -2, NAN}), CT_SHAPE(3));
    CHECK(ct_dist_all_reduce(t, .op = CT_DIST_AVG) == 0);
    CHECK_VALUES(t, 0, 1.5, -2, NAN);
    CHECK(ct_dist_broadcast(t) == 0);
    ct_tensor *list[1] = {ct_zeros(CT_SHAPE(3))};
    CHECK(ct_dist_all_gather(list, t) == 0);
    CHECK_VALUES(list[0], 0, 1.5, -2, NAN);
    CHECK(ct_dist_barrier() == 0);
    /* to itself: the receive may be started after the send */
    ct_tensor *got = ct_zeros(CT_SHAPE(3));
    ct_work *w;
    CHECK(ct_dist_send(t, 0, .work = &w) == 0);
    CHECK_INT_EQ(ct_dist_recv(got, -1), 0);
    CHECK(ct_work_wait(w) == 0);
    ct_work_free(w);
    CHECK_VALUES(got, 0, 1.5, -2, NAN);
    ct_process_group *g = ct_dist_new_group((int[]){0}, 1);
    CHECK_INT_EQ(ct_dist_group_rank(g), 0);
    CHECK(ct_dist_all_reduce(t, .group = g, .op = CT_DIST_MAX) == 0);
    CHECK(ct_dist_destroy() == 0);
    CHECK(!ct_dist_is_initialized());
    CHECK_ERROR(ct_dist_init(), "cannot be initialised again");
}
