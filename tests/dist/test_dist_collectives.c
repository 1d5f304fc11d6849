/* Every collective on every dtype against the answer computed on this process from
 * the inputs every rank makes (they depend on the rank alone); every reduce op,
 * NaN in MAX and MIN, bitwise equality across ranks, groups, work handles. */
#include <stdint.h>

#include "dist_test.h"

#define N 6 /* elements per rank */
static const ct_dtype DTYPES[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I64,
                                  CT_I32, CT_I16, CT_U8,  CT_I8,   CT_BOOL};
#define NDT (int)(sizeof DTYPES / sizeof *DTYPES)

static bool is_float(ct_dtype d) {
    return d == CT_F32 || d == CT_F64 || d == CT_F16 || d == CT_BF16;
}

/* Rank r's element i, exact in every dtype: halves in [-1.5, 1.5] for floats, small
 * integers (whose products wrap in 8 bits) for the others, alternating for bool. */
static double value(ct_dtype d, int r, int i) {
    int k = (r * 7 + i * 3 + 1) % 7;
    if (d == CT_BOOL) return (r + i) % 3 != 0;
    if (is_float(d)) return (k - 3) * 0.5;
    if (d == CT_U8) return k + 2;
    return k - 2;
}

/* A tensor of dtype d from n doubles (converted as ct_to converts). */
static ct_tensor *make(ct_dtype d, const double *v, int n) {
    return ct_to(ct_tensor_f64(v, CT_SHAPE(n)), .dtype = d, .copy = true);
}
static ct_tensor *rank_tensor(ct_dtype d, int r, int n) {
    double v[64];
    for (int i = 0; i < n; i++) v[i] = value(d, r, i);
    return make(d, v, n);
}

/* The reduction over ranks 0..size-1 in rank order, as ctorch defines it. */
static double reduce_ref(ct_dtype d, ct_dist_reduce_op op, int size, int i) {
    double acc = value(d, 0, i);
    for (int r = 1; r < size; r++) {
        double x = value(d, r, i);
        switch (op) {
        case CT_DIST_SUM:
        case CT_DIST_AVG:
            acc = d == CT_BOOL ? (acc || x) : acc + x;
            break;
        case CT_DIST_PRODUCT:
            acc = d == CT_BOOL ? (acc && x) : acc * x;
            break;
        case CT_DIST_MIN:
            acc = acc < x ? acc : x;
            break;
        case CT_DIST_MAX:
            acc = acc > x ? acc : x;
            break;
        }
    }
    return op == CT_DIST_AVG ? acc / size : acc;
}

/* got equals want (doubles converted to got's dtype as ct_to converts): bitwise, or
 * within tol (relative) when tol > 0. */
static bool same_values(const ct_tensor *got, const double *want, int n, double tol) {
    double g[64], w[64];
    ct_tensor *ref =
        ct_to(ct_to(ct_tensor_f64(want, CT_SHAPE(n)), .dtype = ct_dtype_of(got)), .dtype = CT_F64);
    if (ct_numel(got) != n || ct_copy_to_buffer(got, g, CT_F64, sizeof g) != 0 ||
        ct_copy_to_buffer(ref, w, CT_F64, sizeof w) != 0)
        return false;
    for (int i = 0; i < n; i++) {
        bool ok = tol > 0 ? fabs(g[i] - w[i]) <= tol * fabs(w[i]) + 1e-6
                          : (g[i] == w[i] || (isnan(g[i]) && isnan(w[i])));
        if (!ok) {
            fprintf(stderr, "rank %d: %s element %d is %g, expected %g\n", ct_dist_rank(),
                    ct_dtype_name(ct_dtype_of(got)), i, g[i], w[i]);
            return false;
        }
    }
    return true;
}

static const ct_dist_reduce_op OPS[] = {CT_DIST_SUM, CT_DIST_AVG, CT_DIST_PRODUCT, CT_DIST_MIN,
                                        CT_DIST_MAX};

DIST_TEST(all_reduce_every_op_and_dtype) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    for (int k = 0; k < NDT; k++)
        for (int o = 0; o < 5; o++) {
            ct_dtype d = DTYPES[k];
            ct_tensor *t = rank_tensor(d, rank, N);
            if (OPS[o] == CT_DIST_AVG && !is_float(d)) {
                CHECK_ERROR(ct_dist_all_reduce(t, .op = CT_DIST_AVG),
                            "ReduceOp.AVG needs a floating point tensor");
                continue;
            }
            double want[N];
            for (int i = 0; i < N; i++) want[i] = reduce_ref(d, OPS[o], size, i);
            CHECK(ct_dist_all_reduce(t, .op = OPS[o]) == 0);
            bool ok = same_values(t, want, N, OPS[o] == CT_DIST_AVG && d != CT_F64 ? 1e-2 : 0);
            if (!ok) fprintf(stderr, "  all_reduce op %d dtype %s\n", OPS[o], ct_dtype_name(d));
            CHECK(ok);
        }
}

DIST_TEST(reduce_to_the_last_rank) {
    int size = ct_dist_world_size(), rank = ct_dist_rank(), root = size - 1;
    for (int k = 0; k < NDT; k++)
        for (int o = 0; o < 5; o++) {
            ct_dtype d = DTYPES[k];
            if (OPS[o] == CT_DIST_AVG && !is_float(d)) continue;
            ct_tensor *t = rank_tensor(d, rank, N);
            CHECK(ct_dist_reduce(t, .op = OPS[o], .root = root) == 0);
            double want[N];
            for (int i = 0; i < N; i++)
                want[i] = rank == root ? reduce_ref(d, OPS[o], size, i) : value(d, rank, i);
            CHECK(same_values(t, want, N, OPS[o] == CT_DIST_AVG && d != CT_F64 ? 1e-2 : 0));
        }
}

DIST_TEST(broadcast_every_dtype) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    for (int k = 0; k < NDT; k++) {
        ct_dtype d = DTYPES[k];
        int root = k % size;
        ct_tensor *t = rank_tensor(d, rank, N);
        CHECK(ct_dist_broadcast(t, .root = root) == 0);
        double want[N];
        for (int i = 0; i < N; i++) want[i] = value(d, root, i);
        CHECK(same_values(t, want, N, 0));
    }
}

DIST_TEST(all_gather_every_dtype) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    for (int k = 0; k < NDT; k++) {
        ct_dtype d = DTYPES[k];
        ct_tensor *t = rank_tensor(d, rank, N), *list[8];
        for (int r = 0; r < size; r++) list[r] = ct_zeros(CT_SHAPE(N), .dtype = d);
        CHECK(ct_dist_all_gather(list, t) == 0);
        ct_tensor *cat = ct_zeros(CT_SHAPE(size * N), .dtype = d);
        ct_tensor *stack = ct_zeros(CT_SHAPE(size, N), .dtype = d);
        CHECK(ct_dist_all_gather_into_tensor(cat, t) == 0);
        CHECK(ct_dist_all_gather_into_tensor(stack, t) == 0);
        double want[64];
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < N; i++) want[r * N + i] = value(d, r, i);
            CHECK(same_values(list[r], want + r * N, N, 0));
        }
        CHECK(same_values(cat, want, size * N, 0));
        CHECK(same_values(ct_reshape(stack, CT_SHAPE(-1)), want, size * N, 0));
    }
    ct_tensor *t = ct_zeros(CT_SHAPE(2, 3)), *bad = ct_zeros(CT_SHAPE(size, 3));
    CHECK_ERROR(ct_dist_all_gather_into_tensor(bad, t), "concatenated along dim 0 or stacked");
}

/* Rank r's input for rank s of a reduce_scatter: rank_tensor of r * size + s. */
DIST_TEST(reduce_scatter_every_dtype) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    for (int k = 0; k < NDT; k++)
        for (int o = 0; o < 5; o++) {
            ct_dtype d = DTYPES[k];
            if (OPS[o] == CT_DIST_AVG && !is_float(d)) continue;
            ct_tensor *in[8];
            double all[64];
            for (int s = 0; s < size; s++) {
                for (int i = 0; i < N; i++) all[s * N + i] = value(d, rank, s * N + i);
                in[s] = make(d, all + s * N, N);
            }
            ct_tensor *whole = make(d, all, size * N);
            ct_tensor *out = ct_zeros(CT_SHAPE(N), .dtype = d),
                      *out2 = ct_zeros(CT_SHAPE(N), .dtype = d);
            CHECK(ct_dist_reduce_scatter(out, in, .op = OPS[o]) == 0);
            CHECK(ct_dist_reduce_scatter_tensor(out2, whole, .op = OPS[o]) == 0);
            double want[N];
            for (int i = 0; i < N; i++) want[i] = reduce_ref(d, OPS[o], size, rank * N + i);
            double tol = OPS[o] == CT_DIST_AVG && d != CT_F64 ? 1e-2 : 0;
            CHECK(same_values(out, want, N, tol));
            CHECK(same_values(out2, want, N, tol));
            /* the inputs are left as they were */
            CHECK(same_values(whole, all, size * N, 0));
        }
}

DIST_TEST(gather_and_scatter_every_dtype) {
    int size = ct_dist_world_size(), rank = ct_dist_rank(), root = size - 1;
    for (int k = 0; k < NDT; k++) {
        ct_dtype d = DTYPES[k];
        ct_tensor *t = rank_tensor(d, rank, N), *list[8];
        for (int r = 0; r < size; r++) list[r] = ct_zeros(CT_SHAPE(N), .dtype = d);
        CHECK(ct_dist_gather(t, rank == root ? list : NULL, .root = root) == 0);
        double want[N];
        if (rank == root)
            for (int r = 0; r < size; r++) {
                for (int i = 0; i < N; i++) want[i] = value(d, r, i);
                CHECK(same_values(list[r], want, N, 0));
            }
        /* scatter from rank 0: rank r receives rank_tensor(r + 1) */
        ct_tensor *src[8];
        for (int r = 0; r < size; r++) src[r] = rank_tensor(d, r + 1, N);
        ct_tensor *got = ct_zeros(CT_SHAPE(N), .dtype = d);
        CHECK(ct_dist_scatter(got, rank == 0 ? src : NULL) == 0);
        for (int i = 0; i < N; i++) want[i] = value(d, rank + 1, i);
        CHECK(same_values(got, want, N, 0));
    }
}

DIST_TEST(nan_propagates_in_max_and_min) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    const ct_dtype floats[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
    for (int k = 0; k < 4; k++)
        for (int o = 0; o < 2; o++) {
            /* the last rank has NaN at 0, rank 0 at 1; elsewhere plain numbers */
            double v[3] = {rank == size - 1 ? NAN : rank, rank == 0 ? NAN : -rank, 2.0 * rank};
            ct_tensor *t = make(floats[k], v, 3);
            ct_dist_reduce_op op = o ? CT_DIST_MAX : CT_DIST_MIN;
            CHECK(ct_dist_all_reduce(t, .op = op) == 0);
            double want[3] = {NAN, NAN, o ? 2.0 * (size - 1) : 0};
            CHECK(same_values(t, want, 3, 0));
        }
}

/* Every rank's result, gathered on rank 0 and compared byte by byte; and a second
 * all_reduce of the same inputs repeats the first. */
DIST_TEST(all_reduce_is_bitwise_the_same_everywhere) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    enum { M = 20000 };
    ct_tensor *in = ct_empty(CT_SHAPE(M));
    float *p = ct_data_ptr(in);
    for (int i = 0; i < M; i++)
        p[i] = sinf((float)i * 0.37f + (float)rank) * (1.0f + (float)(i % 97)) / 3.0f;
    ct_tensor *a = ct_clone(in), *b = ct_clone(in);
    CHECK(ct_dist_all_reduce(a) == 0);
    CHECK(ct_dist_all_reduce(b) == 0);
    CHECK(memcmp(ct_data_ptr(a), ct_data_ptr(b), sizeof(float) * M) == 0);
    ct_tensor *list[8];
    for (int r = 0; r < size; r++) list[r] = ct_zeros(CT_SHAPE(M));
    CHECK(ct_dist_gather(a, rank == 0 ? list : NULL) == 0);
    if (rank == 0)
        for (int r = 1; r < size; r++)
            CHECK(memcmp(ct_data_ptr(list[0]), ct_data_ptr(list[r]), sizeof(float) * M) == 0);
    /* with two ranks the one association is rank 0's value plus rank 1's */
    if (size == 2) {
        ct_tensor *all[2] = {ct_zeros(CT_SHAPE(M)), ct_zeros(CT_SHAPE(M))};
        CHECK(ct_dist_all_gather(all, in) == 0);
        const float *x = ct_data_ptr(all[0]), *y = ct_data_ptr(all[1]), *s = ct_data_ptr(a);
        int bad = 0;
        for (int i = 0; i < M; i++) bad += s[i] != x[i] + y[i];
        CHECK_INT_EQ(bad, 0);
    }
}

DIST_TEST(async_work_outstanding) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    ct_tensor *a = rank_tensor(CT_F32, rank, N), *b = rank_tensor(CT_I64, rank, N);
    ct_tensor *c = rank_tensor(CT_F64, rank, N), *list[8];
    for (int r = 0; r < size; r++) list[r] = ct_zeros(CT_SHAPE(N), .dtype = CT_F64);
    ct_work *w[4];
    CHECK(ct_dist_all_reduce(a, .work = &w[0]) == 0);
    CHECK(ct_dist_broadcast(b, .root = size - 1, .work = &w[1]) == 0);
    CHECK(ct_dist_all_gather(list, c, .work = &w[2]) == 0);
    CHECK(ct_dist_barrier(.work = &w[3]) == 0);
    /* the last one finishing means all before it did: they run in order */
    CHECK(ct_work_wait(w[3]) == 0);
    for (int k = 0; k < 4; k++) CHECK(ct_work_is_completed(w[k]));
    for (int k = 0; k < 3; k++) CHECK(ct_work_wait(w[k]) == 0);
    double want[N];
    for (int i = 0; i < N; i++) want[i] = reduce_ref(CT_F32, CT_DIST_SUM, size, i);
    CHECK(same_values(a, want, N, 0));
    for (int i = 0; i < N; i++) want[i] = value(CT_I64, size - 1, i);
    CHECK(same_values(b, want, N, 0));
    for (int i = 0; i < N; i++) want[i] = value(CT_F64, size - 1, i);
    CHECK(same_values(list[size - 1], want, N, 0));
    for (int k = 0; k < 4; k++) ct_work_free(w[k]);
    /* freeing without waiting waits */
    ct_work *x;
    ct_tensor *big = ct_ones(CT_SHAPE(1 << 18));
    CHECK(ct_dist_all_reduce(big, .work = &x) == 0);
    ct_work_free(x);
    CHECK(ct_item(ct_sum(big)) == (double)size * (1 << 18));
}

DIST_TEST(barrier) { CHECK(ct_dist_barrier() == 0); }

/* A group of the last and the first rank, in that order: its rank 0 is the world's
 * last.  The ranks between are outside it. */
DIST_TEST(new_group_subset) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    int members[2] = {size - 1, 0};
    ct_process_group *g = ct_dist_new_group(members, size > 1 ? 2 : 1);
    CHECK(g != NULL);
    bool in = rank == 0 || rank == size - 1;
    int want_rank = rank == size - 1 ? 0 : rank == 0 ? 1 : -1;
    if (size == 1) want_rank = 0;
    CHECK_INT_EQ(ct_dist_group_rank(g), want_rank);
    CHECK_INT_EQ(ct_dist_group_size(g), size > 1 ? 2 : 1);
    ct_tensor *t = ct_full(CT_SHAPE(2), rank + 1);
    if (in) {
        CHECK(ct_dist_all_reduce(t, .group = g) == 0);
        CHECK(ct_item(ct_sum(t)) == 2.0 * (size > 1 ? size + 1 : 1));
        /* root 0 of the group is world rank size-1 */
        ct_tensor *b = ct_full(CT_SHAPE(1), rank);
        CHECK(ct_dist_broadcast(b, .group = g) == 0);
        CHECK(ct_item(b) == size - 1);
    } else {
        CHECK_ERROR(ct_dist_all_reduce(t, .group = g), "not a member of the group");
    }
    /* the whole world still works after */
    ct_tensor *u = ct_ones(CT_SHAPE(1));
    CHECK(ct_dist_all_reduce(u) == 0);
    CHECK(ct_item(u) == size);
    ct_process_group *all = ct_dist_new_group(NULL, 0);
    CHECK_INT_EQ(ct_dist_group_rank(all), rank);
    CHECK_INT_EQ(ct_dist_group_size(all), size);
    int dup[2] = {0, 0};
    CHECK_ERROR(ct_dist_new_group(dup, 2), "is given twice");
}

/* A ring: everyone sends to the next and receives from the previous at once. */
DIST_TEST(send_recv_ring) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    if (size < 2) return;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    ct_tensor *out = rank_tensor(CT_BF16, rank, N), *in = ct_zeros(CT_SHAPE(N), .dtype = CT_BF16);
    ct_work *ws, *wr;
    CHECK(ct_dist_send(out, next, .work = &ws) == 0);
    CHECK(ct_dist_recv(in, prev, .work = &wr) == 0);
    CHECK(ct_work_wait(wr) == 0);
    CHECK(ct_work_wait(ws) == 0);
    ct_work_free(ws);
    ct_work_free(wr);
    double want[N];
    for (int i = 0; i < N; i++) want[i] = value(CT_BF16, prev, i);
    CHECK(same_values(in, want, N, 0));
    /* blocking: even ranks send first */
    ct_tensor *x = ct_full(CT_SHAPE(3), rank, .dtype = CT_I32),
              *y = ct_zeros(CT_SHAPE(3), .dtype = CT_I32);
    if (rank % 2 == 0) {
        CHECK(ct_dist_send(x, next) == 0);
        CHECK_INT_EQ(ct_dist_recv(y, prev), prev);
    } else {
        CHECK_INT_EQ(ct_dist_recv(y, prev), prev);
        CHECK(ct_dist_send(x, next) == 0);
    }
    CHECK(ct_item(ct_sum(y)) == 3.0 * prev);
}

/* Rank 0 receives from any rank, with two tags: the sources are every other rank once
 * per tag, and each tensor says who sent it. */
DIST_TEST(recv_from_any_rank) {
    int size = ct_dist_world_size(), rank = ct_dist_rank();
    if (size < 2) return;
    if (rank != 0) {
        ct_tensor *a = ct_full(CT_SHAPE(4), rank * 10 + 1),
                  *b = ct_full(CT_SHAPE(4), rank * 10 + 2);
        /* a send completes once its receive matched it: both started before either waits */
        ct_work *wb, *wa;
        CHECK(ct_dist_send(b, 0, .tag = 2, .work = &wb) == 0);
        CHECK(ct_dist_send(a, 0, .tag = 1, .work = &wa) == 0);
        CHECK(ct_work_wait(wb) == 0 && ct_work_wait(wa) == 0);
        ct_work_free(wa);
        ct_work_free(wb);
    } else {
        int seen[2][8] = {{0}};
        for (int k = 0; k < 2 * (size - 1); k++) {
            int tag = k < size - 1 ? 1 : 2;
            ct_tensor *t = ct_zeros(CT_SHAPE(4));
            int src = ct_dist_recv(t, -1, .tag = tag);
            CHECK(src >= 1 && src < size);
            if (src < 1 || src >= size) continue;
            seen[tag - 1][src]++;
            CHECK(ct_item(ct_mean(t)) == src * 10 + tag);
        }
        for (int r = 1; r < size; r++) CHECK(seen[0][r] == 1 && seen[1][r] == 1);
    }
    CHECK(ct_dist_barrier() == 0);
}
