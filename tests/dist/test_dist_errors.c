/* Calls that disagree across ranks fail on every rank with the same message naming
 * the first difference, instead of hanging (Note [Mismatch checks]); the group keeps
 * working after them.  Run on 2 and 3 ranks: rank 1 is the odd one out. */
#include "dist_test.h"

/* After an expected failure, the next collective still works on every rank. */
static void still_works(void) {
    ct_tensor *t = ct_ones(CT_SHAPE(2));
    CHECK(ct_dist_all_reduce(t) == 0);
    CHECK(ct_item(ct_sum(t)) == 2.0 * ct_dist_world_size());
}

DIST_TEST(shape_mismatch_fails_everywhere) {
    if (ct_dist_world_size() < 2) return;
    ct_tensor *t = ct_dist_rank() == 1 ? ct_zeros(CT_SHAPE(3, 4)) : ct_zeros(CT_SHAPE(4, 4));
    CHECK_ERROR(
        ct_dist_all_reduce(t),
        "ct_dist_all_reduce: rank 1 has shape [3, 4] (float32) but rank 0 has [4, 4] (float32)");
    still_works();
}

DIST_TEST(dtype_mismatch_fails_everywhere) {
    if (ct_dist_world_size() < 2) return;
    ct_tensor *t = ct_zeros(CT_SHAPE(4), .dtype = ct_dist_rank() == 1 ? CT_F64 : CT_F32);
    CHECK_ERROR(ct_dist_broadcast(t),
                "rank 1 has shape [4] (float64) but rank 0 has [4] (float32)");
    still_works();
}

DIST_TEST(op_and_root_mismatch_fail_everywhere) {
    if (ct_dist_world_size() < 2) return;
    bool odd = ct_dist_rank() == 1;
    ct_tensor *t = ct_zeros(CT_SHAPE(4));
    CHECK_ERROR(ct_dist_all_reduce(t, .op = odd ? CT_DIST_MAX : CT_DIST_SUM),
                "rank 1 uses op MAX but rank 0 uses SUM");
    CHECK_ERROR(ct_dist_broadcast(t, .root = odd ? 1 : 0),
                "rank 1 gives root 1 but rank 0 gives root 0");
    still_works();
}

DIST_TEST(different_collectives_fail_everywhere) {
    if (ct_dist_world_size() < 2) return;
    ct_tensor *t = ct_zeros(CT_SHAPE(4));
    CHECK_ERROR(ct_dist_rank() == 1 ? ct_dist_broadcast(t) : ct_dist_all_reduce(t),
                "rank 1 called ct_dist_broadcast but rank 0 called ct_dist_all_reduce");
    still_works();
}

/* A rank whose own arguments are wrong says why; the others that it failed. */
DIST_TEST(local_error_fails_the_others) {
    if (ct_dist_world_size() < 2) return;
    ct_tensor *t = ct_zeros(CT_SHAPE(3, 3));
    if (ct_dist_rank() == 1)
        CHECK_ERROR(ct_dist_all_reduce(ct_transpose(t, 0, 1)),
                    "ct_dist_all_reduce: Tensors must be contiguous");
    else
        CHECK_ERROR(ct_dist_all_reduce(t),
                    "ct_dist_all_reduce: rank 1's call failed its own checks");
    still_works();
}

DIST_TEST(async_mismatch_reported_by_wait) {
    if (ct_dist_world_size() < 2) return;
    ct_tensor *t = ct_zeros(CT_SHAPE(ct_dist_rank() == 1 ? 5 : 4));
    ct_work *w = NULL;
    CHECK(ct_dist_all_reduce(t, .work = &w) == 0);
    CHECK_ERROR(ct_work_wait(w), "rank 1 has shape [5] (float32) but rank 0 has [4] (float32)");
    CHECK(ct_work_is_completed(w));
    ct_work_free(w);
    still_works();
}

DIST_TEST(send_recv_mismatch_fails_both_sides) {
    if (ct_dist_world_size() < 2) return;
    if (ct_dist_rank() == 0)
        CHECK_ERROR(ct_dist_send(ct_zeros(CT_SHAPE(3)), 1),
                    "ct_dist_send: rank 1 receives into shape [4] (float32) but this rank (0) "
                    "sends [3] (float32)");
    if (ct_dist_rank() == 1)
        CHECK_ERROR(ct_dist_recv(ct_zeros(CT_SHAPE(4)), 0),
                    "ct_dist_recv: rank 0 sent shape [3] (float32) but this rank (1) receives into "
                    "[4] (float32)");
    still_works();
}

DIST_TEST(argument_errors) {
    int size = ct_dist_world_size();
    ct_tensor *t = ct_zeros(CT_SHAPE(2), .dtype = CT_I32);
    CHECK_ERROR(ct_dist_all_reduce(t, .op = CT_DIST_AVG),
                "ReduceOp.AVG needs a floating point tensor (got int32)");
    CHECK_ERROR(ct_dist_broadcast(t, .root = size), "Invalid rootRank");
    CHECK_ERROR(ct_dist_all_reduce(NULL), "the tensor is NULL");
    CHECK_ERROR(ct_dist_send(t, size), "Invalid destination rank");
    CHECK_ERROR(ct_dist_recv(t, -2), "Invalid source rank");
    ct_tensor *list[8] = {0};
    CHECK_ERROR(ct_dist_all_gather(list, t), "out_list[0] is NULL");
    CHECK_ERROR(ct_work_wait(NULL), "work is NULL");
    still_works();
}
