/* Samplers: sequential, random (with and without replacement, num_samples), weighted,
 * distributed (PyTorch's index lists), batch samplers, and a loader over them. */
#include "ct_test.h"

static int64_t count_of(const int64_t *v, int64_t n, int64_t x) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += v[i] == x;
    return c;
}

TEST(sequential_sampler) {
    ct_sampler *s = ct_sequential_sampler(4);
    int64_t v[4];
    CHECK_INT_EQ(ct_sampler_len(s), 4);
    CHECK_INT_EQ(ct_sampler_indices(s, v, 4), 4);
    for (int i = 0; i < 4; i++) CHECK_INT_EQ(v[i], i);
    CHECK_INT_EQ(ct_sampler_indices(s, v, 2), 4); /* writes 2, says 4 */
    CHECK_ERROR(ct_sequential_sampler(-1), "n must be >= 0");
}

TEST(random_sampler_permutations) {
    ct_sampler *s = ct_random_sampler(10, .generator = ct_generator_new(3));
    int64_t a[10], b[10];
    CHECK_INT_EQ(ct_sampler_indices(s, a, 10), 10);
    for (int i = 0; i < 10; i++) CHECK_INT_EQ(count_of(a, 10, i), 1);
    CHECK_INT_EQ(ct_sampler_indices(s, b, 10), 10);
    CHECK(memcmp(a, b, sizeof a) == 0); /* the same epoch */
    ct_sampler_set_epoch(s, 1);
    ct_sampler_indices(s, b, 10);
    CHECK(memcmp(a, b, sizeof a) != 0); /* another epoch */
    /* num_samples beyond n: whole permutations, then the head of another. */
    ct_sampler *more = ct_random_sampler(10, .num_samples = 25, .generator = ct_generator_new(3));
    int64_t m[25];
    CHECK_INT_EQ(ct_sampler_indices(more, m, 25), 25);
    for (int i = 0; i < 10; i++) {
        CHECK_INT_EQ(count_of(m, 10, i), 1);
        CHECK_INT_EQ(count_of(m + 10, 10, i), 1);
        CHECK(count_of(m + 20, 5, i) <= 1);
    }
    CHECK_ERROR(ct_random_sampler(0), "num_samples should be a positive integer value, but got num_samples=0");
    CHECK_ERROR(ct_random_sampler(5, .num_samples = -1), "num_samples=-1");
}

TEST(random_sampler_with_replacement) {
    ct_sampler *s = ct_random_sampler(5, .replacement = true, .num_samples = 1000,
                                      .generator = ct_generator_new(0));
    int64_t v[1000];
    CHECK_INT_EQ(ct_sampler_indices(s, v, 1000), 1000);
    for (int i = 0; i < 5; i++) {
        int64_t c = count_of(v, 1000, i);
        CHECK(c > 140 && c < 260);
    }
}

TEST(weighted_random_sampler) {
    ct_tensor *w = ct_tensor_f64(((double[]){0, 1, 3}), CT_SHAPE(3));
    ct_sampler *s = ct_weighted_random_sampler(w, 4000, .generator = ct_generator_new(5));
    int64_t v[4000];
    CHECK_INT_EQ(ct_sampler_indices(s, v, 4000), 4000);
    CHECK_INT_EQ(count_of(v, 4000, 0), 0); /* zero weight: never */
    double ratio = (double)count_of(v, 4000, 2) / (double)count_of(v, 4000, 1);
    CHECK(ratio > 2.6 && ratio < 3.4);
    /* Without replacement: distinct, zero weights excluded. */
    ct_tensor *w5 = ct_tensor_f32(((float[]){1, 0, 5, 2, 1}), CT_SHAPE(5));
    ct_sampler *nr = ct_weighted_random_sampler(w5, 4, .replacement = false, .generator = ct_generator_new(1));
    int64_t d[4];
    CHECK_INT_EQ(ct_sampler_indices(nr, d, 4), 4);
    CHECK_INT_EQ(count_of(d, 4, 1), 0);
    for (int i = 0; i < 5; i++) CHECK(count_of(d, 4, i) <= 1);
    /* Heavier weights come first more often. */
    int first_is_2 = 0;
    for (uint64_t e = 0; e < 100; e++) {
        ct_sampler_set_epoch(nr, e);
        ct_sampler_indices(nr, d, 4);
        first_is_2 += d[0] == 2;
    }
    CHECK(first_is_2 > 40);
    CHECK_ERROR(ct_weighted_random_sampler(w5, 5, .replacement = false),
                "not enough non-negative category to sample");
    CHECK_ERROR(ct_weighted_random_sampler(w5, 6, .replacement = false),
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
    CHECK_ERROR(ct_weighted_random_sampler(w5, 0), "num_samples should be a positive integer value");
    CHECK_ERROR(ct_weighted_random_sampler(ct_tensor_f64(((double[]){1, -1}), CT_SHAPE(2)), 3),
                "probability tensor contains either `inf`, `nan` or element < 0");
    CHECK_ERROR(ct_weighted_random_sampler(ct_zeros(CT_SHAPE(2)), 3), "sum of probabilities <= 0");
    CHECK_ERROR(ct_weighted_random_sampler(ct_ones(CT_SHAPE(2, 2)), 3), "weights should be a 1d sequence");
}

TEST(distributed_sampler_matches_pytorch) {
    /* PyTorch 1.13, DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False). */
    int64_t want[3][4] = {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
    int64_t want_drop[3][3] = {{0, 3, 6}, {1, 4, 7}, {2, 5, 8}};
    for (int r = 0; r < 3; r++) {
        int64_t v[4];
        ct_sampler *s = ct_distributed_sampler(10, .num_replicas = 3, .rank = r, .shuffle = false);
        CHECK_INT_EQ(ct_sampler_indices(s, v, 4), 4);
        for (int i = 0; i < 4; i++) CHECK_INT_EQ(v[i], want[r][i]);
        ct_sampler *d = ct_distributed_sampler(10, .num_replicas = 3, .rank = r, .shuffle = false,
                                               .drop_last = true);
        CHECK_INT_EQ(ct_sampler_indices(d, v, 4), 3);
        for (int i = 0; i < 3; i++) CHECK_INT_EQ(v[i], want_drop[r][i]);
    }
    /* Padding longer than the data repeats it cyclically. */
    int64_t v[4];
    ct_sampler *tiny = ct_distributed_sampler(2, .num_replicas = 4, .rank = 3, .shuffle = false);
    CHECK_INT_EQ(ct_sampler_indices(tiny, v, 4), 1);
    CHECK_INT_EQ(v[0], 1);
    CHECK_ERROR(ct_distributed_sampler(10, .num_replicas = 2, .rank = 2),
                "Invalid rank 2, rank should be in the interval [0, 1]");
}

TEST(distributed_sampler_shuffles_by_epoch) {
    int64_t all[2][12], again[6];
    for (int r = 0; r < 2; r++) {
        ct_sampler *s = ct_distributed_sampler(12, .num_replicas = 2, .rank = r, .seed = 9);
        ct_sampler_set_epoch(s, 4);
        CHECK_INT_EQ(ct_sampler_indices(s, all[r], 6), 6);
        ct_sampler_set_epoch(s, 5);
        ct_sampler_indices(s, all[r] + 6, 6);
        ct_sampler_set_epoch(s, 4);
        ct_sampler_indices(s, again, 6);
        CHECK(memcmp(again, all[r], sizeof again) == 0);
    }
    for (int e = 0; e < 2; e++) /* the ranks split each epoch's permutation */
        for (int i = 0; i < 12; i++)
            CHECK_INT_EQ(count_of(all[0] + 6 * e, 6, i) + count_of(all[1] + 6 * e, 6, i), 1);
    CHECK(memcmp(all[0], all[0] + 6, 6 * sizeof(int64_t)) != 0);
}

TEST(loader_over_a_distributed_sampler) {
    ct_dataset *ds = ct_tensor_dataset(CT_TENSORS(ct_arange(10)));
    ct_loader *l = ct_dataloader(ds, .batch_size = 2, .num_workers = 2,
                                 .sampler = ct_distributed_sampler(10, .num_replicas = 2, .rank = 1));
    CHECK_INT_EQ(ct_loader_len(l), 3);
    ct_batch b;
    int64_t seen = 0;
    for (int epoch = 0; epoch < 2; epoch++) {
        ct_loader_set_epoch(l, (uint64_t)epoch);
        while (ct_loader_next(l, &b)) seen += b.size;
    }
    CHECK_INT_EQ(seen, 10);
    /* A weighted sampler drives a loader too. */
    ct_loader *w = ct_dataloader(ds, .batch_size = 4,
                                 .sampler = ct_weighted_random_sampler(ct_ones(CT_SHAPE(10)), 8));
    CHECK_INT_EQ(ct_loader_len(w), 2);
}

TEST(batch_sampler_from_a_sampler) {
    ct_batch_sampler *bs = ct_batch_sampler_from(ct_sequential_sampler(10), 3, false);
    CHECK_INT_EQ(ct_batch_sampler_len(bs), 4);
    CHECK_INT_EQ(ct_batch_sampler_len(ct_batch_sampler_from(ct_sequential_sampler(10), 3, true)), 3);
    ct_loader *l = ct_dataloader(ct_tensor_dataset(CT_TENSORS(ct_arange(10))), .batch_sampler = bs);
    ct_batch b;
    int64_t sizes[4] = {0}, k = 0;
    while (ct_loader_next(l, &b)) sizes[k++ & 3] = b.size;
    CHECK(k == 4 && sizes[0] == 3 && sizes[3] == 1);
    CHECK_ERROR(ct_batch_sampler_from(ct_sequential_sampler(10), 0, false),
                "batch_size should be a positive integer value, but got batch_size=0");
}
