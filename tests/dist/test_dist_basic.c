/* The process group's first uses, on float32: ranks, all_reduce (sync and with a
 * work handle), broadcast and all_gather, against values computed here. */
#include "dist_test.h"

/* Rank r's input: element i is r * 10 + i + 0.25. */
static ct_tensor *rank_input(int r, int n) {
    ct_tensor *t = ct_empty(CT_SHAPE(n));
    float *p = ct_data_ptr(t);
    for (int i = 0; i < n; i++) p[i] = (float)(r * 10 + i) + 0.25f;
    return t;
}

DIST_TEST(ranks) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    CHECK(ct_dist_is_initialized());
    CHECK(size >= 1);
    CHECK(rank >= 0 && rank < size);
    CHECK(ct_dist_local_rank() >= 0 && ct_dist_local_rank() < size);
    CHECK(ct_dist_is_main() == (rank == 0));
    CHECK_ERROR(ct_dist_init(), "twice");
}

DIST_TEST(all_reduce_sum_and_avg) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    ct_tensor *t = rank_input(rank, 5);
    CHECK(ct_dist_all_reduce(t) == 0);
    const float *p = ct_data_ptr(t);
    for (int i = 0; i < 5; i++) {
        float want = 0;
        for (int r = 0; r < size; r++) want += (float)(r * 10 + i) + 0.25f;
        CHECK(p[i] == want);
    }
    ct_tensor *a = rank_input(rank, 5);
    CHECK(ct_dist_all_reduce(a, .op = CT_DIST_AVG) == 0);
    for (int i = 0; i < 5; i++) CHECK(((float *)ct_data_ptr(a))[i] == p[i] / (float)size);
}

DIST_TEST(all_reduce_async) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    enum { N = 4 };
    ct_tensor *t[N];
    ct_work *w[N];
    for (int k = 0; k < N; k++) {
        t[k] = rank_input(rank + k, 1000);
        CHECK(ct_dist_all_reduce(t[k], .op = k % 2 ? CT_DIST_MAX : CT_DIST_SUM, .work = &w[k]) ==
              0);
    }
    for (int k = N - 1; k >= 0; k--) {
        CHECK(ct_work_wait(w[k]) == 0);
        CHECK(ct_work_is_completed(w[k]));
        const float *p = ct_data_ptr(t[k]);
        for (int i = 0; i < 1000; i += 97) {
            float want = 0;
            for (int r = 0; r < size; r++) {
                float v = (float)((r + k) * 10 + i) + 0.25f;
                want = k % 2 ? (r == 0 || v > want ? v : want) : want + v;
            }
            CHECK(p[i] == want);
        }
        ct_work_free(w[k]);
    }
    ct_work_free(NULL);
}

DIST_TEST(broadcast_from_each_root) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    for (int root = 0; root < size; root++) {
        ct_tensor *t = rank_input(rank, 7);
        CHECK(ct_dist_broadcast(t, .root = root) == 0);
        for (int i = 0; i < 7; i++)
            CHECK(((float *)ct_data_ptr(t))[i] == (float)(root * 10 + i) + 0.25f);
    }
}

DIST_TEST(all_gather_list) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    ct_tensor *t = rank_input(rank, 3);
    ct_tensor *out[8];
    for (int r = 0; r < size; r++) out[r] = ct_zeros(CT_SHAPE(3));
    CHECK(ct_dist_all_gather(out, t) == 0);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 3; i++)
            CHECK(((float *)ct_data_ptr(out[r]))[i] == (float)(r * 10 + i) + 0.25f);
}

/* DistributedSampler without num_replicas takes the world size and rank of the group. */
DIST_TEST(distributed_sampler_defaults_to_the_group) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    ct_sampler *s = ct_distributed_sampler(10, .shuffle = false);
    int64_t per = (10 + size - 1) / size, v[16];
    CHECK_INT_EQ(ct_sampler_len(s), per);
    CHECK_INT_EQ(ct_sampler_indices(s, v, 16), per);
    for (int64_t k = 0; k < per; k++) CHECK_INT_EQ(v[k], (rank + k * size) % 10);
    /* given, it is used as it is */
    ct_sampler *one = ct_distributed_sampler(10, .num_replicas = 1, .shuffle = false);
    CHECK_INT_EQ(ct_sampler_len(one), 10);
}
