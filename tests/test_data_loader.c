/* The DataLoader: batching, shuffling, epochs, worker threads (order, determinism,
 * errors, timeouts, shutdown mid-epoch), custom collate and batch samplers. */
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ct_test.h"

/* x[0, 0]: the first value of a slow_ds batch. */
static double first(ct_tensor *x) { return ct_item(ct_select(ct_select(x, 0, 0), 0, 0)); }

static ct_dataset *range_ds(int64_t n) { return ct_tensor_dataset(CT_TENSORS(ct_arange(n))); }

/* All of an epoch's field-0 values, concatenated in batch order, as an int64 list. */
static int64_t epoch_values(ct_loader *l, int64_t *out, int64_t max, int64_t *batches) {
    int64_t n = 0;
    ct_batch b;
    *batches = 0;
    while (ct_loader_next(l, &b)) {
        CT_SCOPE_HERE;
        int64_t m = ct_numel(b.t[0]);
        if (n + m <= max) ct_copy_to_buffer(b.t[0], out + n, CT_I64, sizeof(int64_t) * (size_t)m);
        n += m;
        ++*batches;
    }
    return n;
}

TEST(sequential_batches_in_order) {
    ct_loader *l = ct_dataloader(range_ds(10), .batch_size = 4);
    CHECK_INT_EQ(ct_loader_len(l), 3);
    ct_batch b;
    CHECK(ct_loader_next(l, &b));
    CHECK_INT_EQ(b.n, 1);
    CHECK_INT_EQ(b.size, 4);
    CHECK_VALUES(b.t[0], 0, 0, 1, 2, 3);
    CHECK(ct_loader_next(l, &b));
    CHECK_INT_EQ(b.index, 1);
    CHECK(ct_loader_next(l, &b));
    CHECK_VALUES(b.t[0], 0, 8, 9);
    CHECK_INT_EQ(ct_loader_epoch(l), 0);
    CHECK(!ct_loader_next(l, &b)); /* the end of epoch 0 */
    CHECK(ct_last_error() == NULL);
    CHECK_INT_EQ(ct_loader_epoch(l), 1);
    CHECK(ct_loader_next(l, &b)); /* epoch 1 starts */
    CHECK_VALUES(b.t[0], 0, 0, 1, 2, 3);
    ct_loader *dl = ct_dataloader(range_ds(10), .batch_size = 4, .drop_last = true);
    CHECK_INT_EQ(ct_loader_len(dl), 2);
    int64_t v[16], nb;
    CHECK_INT_EQ(epoch_values(dl, v, 16, &nb), 8);
    CHECK_INT_EQ(nb, 2);
    /* Default batch size 1; labels of 0-d samples stack into [B]. */
    ct_loader *one = ct_dataloader(range_ds(3));
    CHECK(ct_loader_next(one, &b));
    CHECK_INT_EQ(ct_ndim(b.t[0]), 1);
    CHECK_INT_EQ(ct_loader_len(one), 3);
}

static bool is_permutation(const int64_t *v, int64_t n) {
    int seen[256] = {0};
    for (int64_t i = 0; i < n; i++)
        if (v[i] < 0 || v[i] >= n || seen[v[i]]++) return false;
    return true;
}

TEST(shuffle_permutes_each_epoch) {
    ct_loader *a = ct_dataloader(range_ds(20), .batch_size = 3, .shuffle = true,
                                 .generator = ct_generator_new(1));
    ct_loader *b = ct_dataloader(range_ds(20), .batch_size = 3, .shuffle = true,
                                 .generator = ct_generator_new(1));
    int64_t e0[20], e1[20], f0[20], f1[20], nb;
    CHECK_INT_EQ(epoch_values(a, e0, 20, &nb), 20);
    CHECK_INT_EQ(nb, 7);
    CHECK_INT_EQ(epoch_values(a, e1, 20, &nb), 20);
    CHECK(is_permutation(e0, 20) && is_permutation(e1, 20));
    CHECK(memcmp(e0, e1, sizeof e0) != 0); /* a new order every epoch */
    epoch_values(b, f0, 20, &nb);
    epoch_values(b, f1, 20, &nb);
    CHECK(memcmp(e0, f0, sizeof e0) == 0 && memcmp(e1, f1, sizeof e1) == 0); /* same seed */
    ct_loader_set_epoch(a, 0); /* replays epoch 0 */
    epoch_values(a, f0, 20, &nb);
    CHECK(memcmp(e0, f0, sizeof e0) == 0);
    ct_loader *c = ct_dataloader(range_ds(20), .batch_size = 3, .shuffle = true,
                                 .generator = ct_generator_new(2));
    epoch_values(c, f0, 20, &nb);
    CHECK(memcmp(e0, f0, sizeof e0) != 0);
}

/* 40 images [1, 6, 6] (distinct uint8 values) with labels, augmented at random. */
static ct_dataset *augmented_images(void) {
    ct_tensor *x = ct_randint(0, 256, CT_SHAPE(40, 1, 6, 6), .dtype = CT_U8,
                              .generator = ct_generator_new(9));
    ct_dataset *raw = ct_tensor_dataset(CT_TENSORS(x, ct_arange(40)));
    ct_transform *tf = ct_tf_compose(CT_TRANSFORM_LIST(
        ct_tf_random_crop(6, .padding = 2), ct_tf_random_horizontal_flip(0.5), ct_tf_to_float(),
        ct_tf_normalize(1, (double[]){0.5}, (double[]){0.25})));
    return ct_dataset_transform(raw, 0, tf);
}

/* Two epochs of the augmented dataset: all images and all labels, in batch order. */
static void two_epochs(int workers, int prefetch, bool persistent, ct_tensor **images,
                       ct_tensor **labels) {
    ct_loader *l = ct_dataloader(augmented_images(), .batch_size = 6, .shuffle = true,
                                 .num_workers = workers, .prefetch_factor = prefetch,
                                 .persistent_workers = persistent,
                                 .generator = ct_generator_new(42));
    ct_tensor *xs[16], *ys[16];
    int n = 0;
    ct_batch b;
    for (int epoch = 0; epoch < 2; epoch++)
        while (n < 16 && ct_loader_next(l, &b)) xs[n] = b.t[0], ys[n++] = b.t[1];
    CHECK_INT_EQ(n, 14);
    *images = ct_cat(n, xs, 0);
    *labels = ct_cat(n, ys, 0);
}

TEST(workers_give_bitwise_identical_batches) {
    ct_tensor *x0, *y0;
    two_epochs(0, 0, false, &x0, &y0);
    CHECK_INT_EQ(ct_dtype_of(x0), CT_F32);
    CHECK_INT_EQ(ct_size(x0, 0), 80);
    int configs[][3] = {{1, 0, 0}, {3, 0, 0}, {2, 1, 0}, {4, 5, 0}, {1, 0, 1}, {3, 2, 1}};
    for (int c = 0; c < 6; c++) {
        CT_SCOPE {
            ct_tensor *x, *y;
            two_epochs(configs[c][0], configs[c][1], configs[c][2], &x, &y);
            CHECK(ct_test_max_diff(x, x0) == 0);
            CHECK(ct_test_max_diff(y, y0) == 0);
        }
    }
    /* The augmentation differs between the two epochs of a sample. */
    ct_tensor *e0 = ct_narrow(x0, 0, 0, 40), *e1 = ct_narrow(x0, 0, 40, 40);
    CHECK(ct_test_max_diff(e0, e1) > 0);
}

/* A dataset of n samples that sleeps `delay_us` per sample and fails at index `bad`. */
typedef struct {
    int64_t n, bad;
    int delay_us;
} slow;
static int64_t slow_len(const ct_dataset *ds) { return ((slow *)ct_dataset_state(ds))->n; }
static int slow_get(ct_dataset *ds, int64_t i, ct_sample *out) {
    slow *s = ct_dataset_state(ds);
    if (s->delay_us) usleep((useconds_t)s->delay_us);
    if (i == s->bad) {
        ct_tensor_f32((float[]){1}, CT_SHAPE(1)); /* a tensor made before failing */
        ct_set_error("slow_get: bad sample %lld", (long long)i);
        return -1;
    }
    out->n = 2;
    out->t[0] = ct_full(CT_SHAPE(3), (double)i);
    out->t[1] = ct_scalar_tensor(ct_loader_worker_id(), .dtype = CT_I64);
    return 0;
}
static const ct_dataset_class SLOW = {.name = "Slow", .len = slow_len, .get = slow_get};
static ct_dataset *slow_ds(int64_t n, int64_t bad, int delay_us) {
    ct_dataset *ds = ct_dataset_new(&SLOW, sizeof(slow));
    *(slow *)ct_dataset_state(ds) = (slow){n, bad, delay_us};
    return ds;
}

TEST(worker_ids_and_order) {
    for (int workers = 0; workers <= 3; workers += 3) {
        ct_loader *l = ct_dataloader(slow_ds(30, -1, 0), .batch_size = 2, .num_workers = workers);
        ct_batch b;
        int64_t next = 0;
        while (ct_loader_next(l, &b)) {
            CT_SCOPE_HERE;
            CHECK_CLOSE(first(b.t[0]), (double)next, 0); /* in order */
            next += b.size;
            double lo = ct_item(ct_amin(b.t[1])), hi = ct_item(ct_amax(b.t[1]));
            if (workers == 0) CHECK(lo == -1 && hi == -1);
            else CHECK(lo >= 0 && hi < workers);
        }
        CHECK_INT_EQ(next, 30);
    }
    CHECK_INT_EQ(ct_loader_worker_id(), -1);
}

TEST(errors_in_get_stop_the_epoch) {
    for (int workers = 0; workers <= 2; workers += 2) {
        ct_loader *l = ct_dataloader(slow_ds(20, 13, 0), .batch_size = 4, .num_workers = workers);
        ct_batch b;
        int got = 0;
        ct_clear_error();
        while (ct_loader_next(l, &b)) got++;
        CHECK_INT_EQ(got, 3); /* batches 0, 1, 2; batch 3 holds sample 13 */
        CHECK(ct_last_error() && strstr(ct_last_error(), "slow_get: bad sample 13"));
        if (workers) CHECK(ct_last_error() && strstr(ct_last_error(), "(in loader worker"));
        ct_clear_error();
        CHECK(ct_loader_next(l, &b)); /* the epoch starts over */
        CHECK_CLOSE(first(b.t[0]), 0, 0);
        CHECK_INT_EQ(ct_loader_epoch(l), 0);
    }
}

TEST(release_mid_epoch_stops_workers) {
    for (int round = 0; round < 3; round++) {
        CT_SCOPE {
            ct_loader *l = ct_dataloader(slow_ds(200, -1, 200), .batch_size = 2,
                                         .num_workers = 3, .prefetch_factor = 3);
            ct_batch b;
            for (int i = 0; i <= round; i++) CHECK(ct_loader_next(l, &b));
        } /* the loader goes here, with workers busy and batches waiting */
    }
    /* Reset and set_epoch mid-epoch too. */
    ct_loader *l = ct_dataloader(slow_ds(50, -1, 100), .batch_size = 5, .num_workers = 2);
    ct_batch b;
    CHECK(ct_loader_next(l, &b));
    ct_loader_reset(l);
    CHECK(ct_loader_next(l, &b));
    CHECK_CLOSE(first(b.t[0]), 0, 0);
    ct_loader_set_epoch(l, 7);
    CHECK_INT_EQ(ct_loader_epoch(l), 7);
    CHECK(ct_loader_next(l, &b));
}

TEST(timeout_is_an_error) {
    ct_loader *l = ct_dataloader(slow_ds(4, -1, 300000), .batch_size = 2, .num_workers = 1,
                                 .timeout = 0.05);
    ct_batch b;
    CHECK_ERROR(ct_loader_next(l, &b), "DataLoader timed out after 0.05 seconds");
    /* Generous timeouts never fire. */
    ct_loader *ok = ct_dataloader(slow_ds(4, -1, 1000), .batch_size = 2, .num_workers = 2,
                                  .timeout = 30, .pin_memory = true);
    int64_t v[8], nb;
    CHECK_INT_EQ(epoch_values(ok, v, 8, &nb), 12);
}

TEST(option_errors) {
    ct_dataset *ds = range_ds(4);
    ct_sampler *s = ct_sequential_sampler(4);
    CHECK_ERROR(ct_dataloader(ds, .num_workers = -1), "num_workers option should be non-negative");
    CHECK_ERROR(ct_dataloader(ds, .timeout = -1), "timeout option should be non-negative");
    CHECK_ERROR(ct_dataloader(ds, .prefetch_factor = 4),
                "prefetch_factor option could only be specified in multiprocessing");
    CHECK_ERROR(ct_dataloader(ds, .sampler = s, .shuffle = true),
                "sampler option is mutually exclusive with shuffle");
    ct_batch_sampler *bs = ct_batch_sampler_from(s, 2, false);
    CHECK_ERROR(ct_dataloader(ds, .batch_sampler = bs, .batch_size = 2),
                "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last");
    CHECK_ERROR(ct_dataloader(ds, .batch_size = -2), "batch_size should be a positive integer value, but got batch_size=-2");
    CHECK_ERROR(ct_dataloader(range_ds(0), .shuffle = true), "num_samples should be a positive integer value");
    /* An empty dataset gives an empty epoch. */
    ct_batch b;
    ct_loader *empty = ct_dataloader(range_ds(0), .num_workers = 2);
    CHECK(!ct_loader_next(empty, &b) && ct_last_error() == NULL);
    CHECK_INT_EQ(ct_loader_len(empty), 0);
    /* A sampler beyond the dataset: the error names the index. */
    ct_loader *far = ct_dataloader(ds, .sampler = ct_sequential_sampler(6), .batch_size = 3, .num_workers = 1);
    CHECK(ct_loader_next(far, &b));
    CHECK_ERROR(ct_loader_next(far, &b), "index 4 is out of range for TensorDataset of length 4");
}

/* Variable-length sequences: sample i is 1 + i % 4 values (i, i, ...). */
static int64_t seq_len(const ct_dataset *ds) { (void)ds; return 10; }
static int seq_get(ct_dataset *ds, int64_t i, ct_sample *out) {
    (void)ds;
    out->n = 1;
    out->t[0] = ct_full(CT_SHAPE(1 + i % 4), (double)i);
    return 0;
}
static const ct_dataset_class SEQS = {.name = "Seqs", .len = seq_len, .get = seq_get};

/* Pads to the longest sequence: t[0] padded [B, L] (pad value in ctx), t[1] lengths
 * int64 [B], t[2] mask bool [B, L] (true on real values). */
static int pad_collate(int n, const ct_sample *samples, ct_batch *out, void *ctx) {
    double pad = *(double *)ctx;
    int64_t longest = 0, lengths[64];
    for (int i = 0; i < n; i++) {
        lengths[i] = ct_size(samples[i].t[0], 0);
        if (lengths[i] > longest) longest = lengths[i];
    }
    ct_tensor *rows[64];
    for (int i = 0; i < n; i++)
        rows[i] = ct_pad(samples[i].t[0], CT_DIMS(0, longest - lengths[i]), .value = pad);
    ct_tensor *len = ct_tensor_i64(lengths, CT_SHAPE(n));
    out->n = 3;
    out->t[0] = ct_stack(n, rows, 0);
    out->t[1] = len;
    out->t[2] = ct_lt(ct_unsqueeze(ct_arange(longest), 0), ct_unsqueeze(len, 1));
    return out->t[0] && out->t[2] ? 0 : -1;
}

TEST(custom_collate_pads_sequences) {
    double pad = -1;
    for (int workers = 0; workers <= 2; workers += 2) {
        ct_loader *l = ct_dataloader(ct_dataset_new(&SEQS, 0), .batch_size = 3, .num_workers = workers,
                                     .collate = pad_collate, .collate_ctx = &pad);
        ct_batch b;
        CHECK(ct_loader_next(l, &b));
        CHECK_INT_EQ(b.n, 3);
        CHECK_VALUES(b.t[0], 0, 0, -1, -1, 1, 1, -1, 2, 2, 2); /* lengths 1, 2, 3 */
        CHECK_VALUES(b.t[1], 0, 1, 2, 3);
        CHECK_INT_EQ(ct_dtype_of(b.t[2]), CT_BOOL);
        CHECK_VALUES(b.t[2], 0, 1, 0, 0, 1, 1, 0, 1, 1, 1);
    }
    /* The default collate refuses unequal sizes. */
    ct_loader *l = ct_dataloader(ct_dataset_new(&SEQS, 0), .batch_size = 3);
    ct_batch b;
    CHECK_ERROR(ct_loader_next(l, &b), "stack expects each tensor to be equal size");
}

/* A batch sampler: batches of 1, 2, 3, ... indices counting down from the end. */
static int64_t growing_len(const ct_batch_sampler *bs) { (void)bs; return 3; }
static int growing_plan(ct_batch_sampler *bs, uint64_t epoch, ct_batch_plan *out) {
    (void)bs, (void)epoch;
    int64_t idx[] = {5, 4, 3, 2, 1, 0};
    return ct_batch_plan_add(out, 1, idx) || ct_batch_plan_add(out, 2, idx + 1) ||
                   ct_batch_plan_add(out, 3, idx + 3) ? -1 : 0;
}
static const ct_batch_sampler_class GROWING = {.name = "Growing", .len = growing_len, .plan = growing_plan};

TEST(custom_batch_sampler) {
    ct_loader *l = ct_dataloader(range_ds(6), .batch_sampler = ct_batch_sampler_new(&GROWING, 0),
                                 .num_workers = 2);
    CHECK_INT_EQ(ct_loader_len(l), 3);
    ct_batch b;
    CHECK(ct_loader_next(l, &b) && b.size == 1);
    CHECK(ct_loader_next(l, &b) && b.size == 2);
    CHECK(ct_loader_next(l, &b) && b.size == 3);
    CHECK_VALUES(b.t[0], 0, 2, 1, 0);
    CHECK(!ct_loader_next(l, &b));
    CHECK_ERROR(ct_batch_sampler_new(NULL, 0), "needs len and plan");
}

/* A dataset of n samples recording the kernel thread id (never reused soon, unlike
 * pthread_t) of every thread that loads one. */
#define MAX_TIDS 64
typedef struct {
    int64_t n;
    pthread_mutex_t mu;
    long tids[MAX_TIDS];
    int n_tids;
} tid_ds;
static int64_t tid_len(const ct_dataset *ds) { return ((tid_ds *)ct_dataset_state(ds))->n; }
static int tid_get(ct_dataset *ds, int64_t i, ct_sample *out) {
    tid_ds *s = ct_dataset_state(ds);
    long tid = (long)syscall(SYS_gettid);
    pthread_mutex_lock(&s->mu);
    bool seen = false;
    for (int k = 0; k < s->n_tids; k++) seen |= s->tids[k] == tid;
    if (!seen && s->n_tids < MAX_TIDS) s->tids[s->n_tids++] = tid;
    pthread_mutex_unlock(&s->mu);
    usleep(500); /* so that every worker gets batches */
    out->n = 1;
    out->t[0] = ct_scalar_tensor((double)i, .dtype = CT_I64);
    return 0;
}
static void tid_destroy(ct_dataset *ds) { pthread_mutex_destroy(&((tid_ds *)ct_dataset_state(ds))->mu); }
static const ct_dataset_class TIDS = {.name = "Tids", .len = tid_len, .get = tid_get,
                                      .destroy = tid_destroy};

/* persistent_workers: the same worker threads load every epoch (a new set per epoch
 * without it), the batches and their order are unchanged, and an epoch abandoned
 * midway (set_epoch) leaves the workers ready for the next. */
TEST(persistent_workers_are_reused) {
    for (int persistent = 0; persistent <= 1; persistent++) CT_SCOPE {
        ct_dataset *ds = ct_dataset_new(&TIDS, sizeof(tid_ds));
        tid_ds *s = ct_dataset_state(ds);
        s->n = 24;
        pthread_mutex_init(&s->mu, NULL);
        ct_loader *l = ct_dataloader(ds, .batch_size = 2, .num_workers = 3, .shuffle = true,
                                     .persistent_workers = persistent,
                                     .generator = ct_generator_new(5));
        int64_t v[3][24], nb;
        for (int e = 0; e < 3; e++) CHECK_INT_EQ(epoch_values(l, v[e], 24, &nb), 24);
        if (persistent) CHECK(s->n_tids <= 3);
        else CHECK(s->n_tids > 3);
        /* The same values as a loader without workers. */
        ct_loader *ref = ct_dataloader(range_ds(24), .batch_size = 2, .shuffle = true,
                                       .generator = ct_generator_new(5));
        for (int e = 0; e < 3; e++) {
            int64_t w[24];
            CHECK_INT_EQ(epoch_values(ref, w, 24, &nb), 24);
            CHECK(memcmp(v[e], w, sizeof w) == 0);
        }
        ct_batch b;
        CHECK(ct_loader_next(l, &b));
        ct_loader_set_epoch(l, 0);
        int64_t w[24];
        CHECK_INT_EQ(epoch_values(l, w, 24, &nb), 24);
        CHECK(memcmp(v[0], w, sizeof w) == 0);
        if (persistent) CHECK(s->n_tids <= 3);
    }
    CHECK_ERROR(ct_dataloader(range_ds(4), .persistent_workers = true),
                "persistent_workers option needs num_workers > 0");
}

/* ct_set_error from user code run by the loader: a Dataset's get() in a worker and a
 * custom collate.  The message reaches ct_loader_next on the main thread, and the
 * installed handler is called there, once, with it. */
static int handler_calls;
static bool handler_on_worker;
static char handler_msg[256];
static void count_handler(const char *message, const char *file, int line) {
    (void)file;
    (void)line;
    handler_calls++;
    handler_on_worker |= ct_loader_worker_id() >= 0;
    snprintf(handler_msg, sizeof handler_msg, "%s", message);
}
static int failing_collate(int n, const ct_sample *samples, ct_batch *out, void *ctx) {
    (void)ctx;
    if (ct_item(samples[0].t[0]) >= 4) {
        ct_set_error("my_collate: cannot pad %d samples from %g", n, ct_item(samples[0].t[0]));
        return -1;
    }
    return ct_default_collate(n, samples, out, NULL);
}

TEST(user_errors_reach_the_main_thread) {
    ct_error_handler old = ct_set_error_handler(count_handler);
    for (int workers = 0; workers <= 2; workers += 2) {
        handler_calls = 0;
        handler_on_worker = false;
        ct_clear_error();
        ct_loader *l = ct_dataloader(slow_ds(20, 9, 0), .batch_size = 4, .num_workers = workers,
                                     .persistent_workers = workers > 0);
        ct_batch b;
        int got = 0;
        while (ct_loader_next(l, &b)) got++;
        CHECK_INT_EQ(got, 2);
        CHECK(ct_last_error() && strstr(ct_last_error(), "slow_get: bad sample 9"));
        CHECK_INT_EQ(handler_calls, 1);
        CHECK(!handler_on_worker);
        CHECK(strstr(handler_msg, "slow_get: bad sample 9") != NULL);
        if (workers) CHECK(strstr(handler_msg, "(in loader worker") != NULL);
        ct_clear_error();
        ct_loader *c = ct_dataloader(range_ds(8), .batch_size = 4, .num_workers = workers,
                                     .collate = failing_collate);
        CHECK(ct_loader_next(c, &b));
        CHECK(!ct_loader_next(c, &b));
        CHECK(ct_last_error() && strstr(ct_last_error(), "my_collate: cannot pad 4 samples from 4"));
        CHECK(!handler_on_worker);
    }
    ct_set_error_handler(old);
    ct_clear_error();
}
