/* The elementwise iterator: its device-neutral geometry (core/iter.h), the split
 * that makes results independent of the thread count, backends' run_loop, and cpu
 * scalars (0-d cpu inputs of an op on another device, PyTorch's wrapped numbers). */
#include <stdatomic.h>
#include <stdlib.h>

#include "ct_test.h"
#include "core/backend.h"
#include "core/iter.h"

TEST(geometry_broadcasts_reorders_and_merges) {
    /* out [4, 3] = a [4, 3] transposed view + b [3] broadcast along dim 0 */
    ct_tensor *a = ct_transpose(ct_zeros(CT_SHAPE(3, 4)), 0, 1);
    ct_tensor *b = ct_zeros(CT_SHAPE(3), .dtype = CT_F64);
    ct_tensor *out = ct_empty(CT_SHAPE(4, 3));
    ct_tensor *ops[3] = {out, a, b};
    ct_iter it;
    ct_iter_init(&it, 3, ops, 2, (int64_t[]){4, 3});
    CHECK_INT_EQ(it.numel, 12);
    CHECK_INT_EQ(it.ndim, 2);
    CHECK(ct_device_eq(it.device, CT_CPU) && it.cpu_scalars == 0);
    /* dim 0 innermost: out's last dim (4-byte steps), b steps 8 bytes along it */
    CHECK_INT_EQ(it.shape[0], 3);
    CHECK_INT_EQ(it.strides[0][0], 4);
    CHECK_INT_EQ(it.strides[0][1], 16);
    CHECK_INT_EQ(it.strides[0][2], 8);
    CHECK_INT_EQ(it.shape[1], 4);
    CHECK_INT_EQ(it.strides[1][0], 12);
    CHECK_INT_EQ(it.strides[1][1], 4);
    CHECK_INT_EQ(it.strides[1][2], 0); /* broadcast */
    CHECK(it.data[1] == ct_data_ptr(a) && it.data[2] == ct_data_ptr(b));

    /* contiguous operands of one shape: one flat run */
    ct_tensor *c = ct_zeros(CT_SHAPE(2, 3, 5)), *d = ct_zeros(CT_SHAPE(2, 3, 5));
    ct_iter_init(&it, 2, (ct_tensor *[]){c, d}, 3, (int64_t[]){2, 3, 5});
    CHECK_INT_EQ(it.ndim, 1);
    CHECK_INT_EQ(it.shape[0], 30);
    /* a broadcast of a [2, 1, 5] input over dim 1 keeps three dims; size-1 dims go */
    ct_tensor *e = ct_zeros(CT_SHAPE(2, 1, 5));
    ct_iter_init(&it, 2, (ct_tensor *[]){c, e}, 3, (int64_t[]){2, 3, 5});
    CHECK_INT_EQ(it.ndim, 3);
    CHECK_INT_EQ(it.strides[1][1], 0);
    ct_tensor *f = ct_zeros(CT_SHAPE(1, 3, 1));
    ct_tensor *g = ct_zeros(CT_SHAPE(1, 3, 1));
    ct_iter_init(&it, 2, (ct_tensor *[]){g, f}, 3, (int64_t[]){1, 3, 1});
    CHECK_INT_EQ(it.ndim, 1);
    CHECK_INT_EQ(it.shape[0], 3);
}

TEST(broadcast_shapes_follow_numpy) {
    int n;
    int64_t out[CT_MAX_DIMS];
    CHECK(ct_broadcast_shapes(2, (int64_t[]){4, 1}, 3, (int64_t[]){2, 1, 3}, &n, out));
    CHECK_INT_EQ(n, 3);
    CHECK(out[0] == 2 && out[1] == 4 && out[2] == 3);
    CHECK(ct_broadcast_shapes(0, NULL, 1, (int64_t[]){0}, &n, out) && n == 1 && out[0] == 0);
    CHECK(!ct_broadcast_shapes(1, (int64_t[]){2}, 1, (int64_t[]){3}, &n, out));
}

TEST(split_depends_on_the_geometry_alone) {
    ct_iter it = {.numel = 0};
    CHECK_INT_EQ(ct_iter_num_chunks(&it), 1);
    it.numel = CT_GRAIN;
    CHECK_INT_EQ(ct_iter_num_chunks(&it), 1);
    it.numel = CT_GRAIN + 1;
    CHECK_INT_EQ(ct_iter_num_chunks(&it), 2);
    it.numel = 10 * CT_GRAIN + 7;
    int64_t n = ct_iter_num_chunks(&it), next = 0;
    CHECK_INT_EQ(n, 11);
    for (int64_t c = 0; c < n; c++) { /* the chunks tile [0, numel) in order, balanced */
        int64_t b, e;
        ct_iter_chunk(&it, c, n, &b, &e);
        CHECK_INT_EQ(b, next);
        CHECK(e - b >= CT_GRAIN * 10 / 11 && e - b <= CT_GRAIN);
        next = e;
    }
    CHECK_INT_EQ(next, it.numel);
}

/* A loop that counts visits per element of int32 operand 0 and marks (with 1000)
 * each element where a run starts. */
static void count_visits(char **data, const int64_t *strides, int64_t n, const void *ctx) {
    (void)ctx;
    for (int64_t i = 0; i < n; i++) *(int32_t *)(data[0] + i * strides[0]) += i ? 1 : 1001;
}

/* Runs count_visits over a [rows, cols] int32 view with strides (1, rows + 1) with the
 * given thread count; returns its values. */
static double *visits(int64_t rows, int64_t cols, int threads) {
    ct_tensor *wide = ct_zeros(CT_SHAPE(cols, rows + 1), .dtype = CT_I32);
    ct_tensor *t = ct_transpose(ct_narrow(wide, 1, 0, rows), 0, 1);
    ct_iter it;
    ct_iter_init(&it, 1, &t, 2, (int64_t[]){rows, cols});
    int saved = ct_get_num_threads();
    ct_set_num_threads(threads);
    ct_iter_run(&it, count_visits, NULL);
    ct_set_num_threads(saved);
    return ct_test_values(t);
}

TEST(cpu_runs_each_element_once_in_the_same_runs_for_any_thread_count) {
    /* 3 x 50001 elements in 5 chunks: runs along the dim of stride 1 (3 starts), cut
     * at the 4 chunk boundaries inside them */
    int64_t rows = 50001, cols = 3, n = rows * cols;
    double *one = visits(rows, cols, 1), *three = visits(rows, cols, 3);
    CHECK(one && three);
    int64_t starts = 0, bad = 0;
    for (int64_t i = 0; one && three && i < n; i++) {
        if (one[i] != 1 && one[i] != 1001) bad++;
        if (one[i] != three[i]) bad++;
        starts += one[i] == 1001;
    }
    CHECK_INT_EQ(bad, 0);
    CHECK_INT_EQ(starts, 3 + 4);
    free(one);
    free(three);
}

static atomic_int meta_loop_calls;
static void must_not_run(char **data, const int64_t *strides, int64_t n, const void *ctx) {
    (void)data, (void)strides, (void)n, (void)ctx;
    atomic_fetch_add(&meta_loop_calls, 1);
}

TEST(meta_runs_no_loop) {
    ct_tensor *m = ct_empty(CT_SHAPE(1000, 1000), .device = CT_META);
    ct_iter it;
    ct_iter_init(&it, 1, &m, 2, (int64_t[]){1000, 1000});
    CHECK(ct_device_eq(it.device, CT_META));
    ct_iter_run(&it, must_not_run, NULL);
    CHECK_INT_EQ(atomic_load(&meta_loop_calls), 0);
    CHECK(ct_backend_of("test", CT_META)->run_loop != NULL);
}

TEST(cpu_scalar_reaches_the_iterator_as_a_value) {
    ct_tensor *out = ct_empty(CT_SHAPE(4, 2), .device = CT_META);
    ct_tensor *x = ct_empty(CT_SHAPE(4, 2), .device = CT_META);
    ct_tensor *s = ct_scalar_tensor(2.5, .dtype = CT_F64);
    ct_iter it;
    ct_iter_init(&it, 3, (ct_tensor *[]){out, x, s}, 2, (int64_t[]){4, 2});
    CHECK_INT_EQ(it.cpu_scalars, 1u << 2);
    CHECK(it.data[2] == NULL && it.data[1] != NULL);
    double v;
    memcpy(&v, it.scalar[2], sizeof v);
    CHECK(v == 2.5);
    for (int d = 0; d < it.ndim; d++) CHECK_INT_EQ(it.strides[d][2], 0);
    /* a 0-d cpu input goes with a 0-d meta one; a 0-d cpu output does not */
    ct_tensor *m0 = ct_empty(CT_SHAPE(), .device = CT_META);
    CHECK(ct_is_meta(ct_add(ct_scalar_tensor(1), m0)));
    CHECK_ERROR(ct_add_(ct_scalar_tensor(1), m0),
                "ct_add: Expected all tensors to be on the same device, but found at least "
                "two devices, meta and cpu!");
}

/* op(meta, cpu 0-d) is on meta with the cpu op's shape and dtype. */
#define CHECK_LIKE_CPU(expr_meta, expr_cpu)                                           \
    do {                                                                              \
        ct_tensor *m_ = (expr_meta), *c_ = (expr_cpu);                                \
        CHECK(m_ && c_ && ct_is_meta(m_) && !ct_is_meta(c_));                         \
        if (m_ && c_) {                                                               \
            CHECK_INT_EQ(ct_dtype_of(m_), ct_dtype_of(c_));                           \
            CHECK_INT_EQ(ct_ndim(m_), ct_ndim(c_));                                   \
            for (int d_ = 0; d_ < ct_ndim(m_) && d_ < ct_ndim(c_); d_++)              \
                CHECK_INT_EQ(ct_size(m_, d_), ct_size(c_, d_));                       \
        }                                                                             \
    } while (0)

TEST(cpu_scalars_go_with_a_meta_tensor) {
    ct_tensor *x = ct_randn(CT_SHAPE(3, 4));
    ct_tensor *xi = ct_arange(4, .dtype = CT_I64);
    ct_tensor *m = ct_to(x, .device = CT_META), *mi = ct_to(xi, .device = CT_META);
    ct_tensor *s = ct_scalar_tensor(2, .dtype = CT_F64), *si = ct_scalar_tensor(3, .dtype = CT_I32);
    ct_tensor *sf = ct_scalar_tensor(0.5);
    CHECK_LIKE_CPU(ct_add(m, s), ct_add(x, s));
    CHECK_LIKE_CPU(ct_add(s, m), ct_add(s, x));
    CHECK_LIKE_CPU(ct_mul(m, si), ct_mul(x, si));
    CHECK_LIKE_CPU(ct_mul(mi, sf), ct_mul(xi, sf)); /* a float 0-d makes int64 float */
    CHECK_LIKE_CPU(ct_add(mi, si), ct_add(xi, si)); /* an int32 0-d keeps int64 */
    CHECK_LIKE_CPU(ct_maximum(m, s), ct_maximum(x, s));
    CHECK_LIKE_CPU(ct_lt(m, s), ct_lt(x, s));
    CHECK_LIKE_CPU(ct_eq(si, mi), ct_eq(si, xi));
    ct_tensor *mc = ct_gt(m, sf), *cc = ct_gt(x, sf);
    CHECK_LIKE_CPU(ct_where(mc, m, s), ct_where(cc, x, s));
    CHECK_LIKE_CPU(ct_where(mc, s, sf), ct_where(cc, s, sf));
    CHECK_LIKE_CPU(ct_where(ct_gt(s, sf), m, s), ct_where(ct_gt(s, sf), x, s));
    ct_tensor *acc = ct_empty(CT_SHAPE(3, 4), .device = CT_META);
    CHECK(ct_add_(acc, s) == acc && ct_is_meta(acc));
    /* all on the cpu: a cpu result */
    CHECK(!ct_is_meta(ct_add(s, sf)));

    /* a cpu tensor of one or more dims next to a meta tensor is refused, naming the op
     * and the common device first, as PyTorch does */
    ct_tensor *one = ct_ones(CT_SHAPE(1));
    CHECK_ERROR(ct_add(m, one), "ct_add: Expected all tensors to be on the same device, but "
                                "found at least two devices, meta and cpu!");
    CHECK_ERROR(ct_mul(one, m), "ct_mul: Expected all tensors to be on the same device, but "
                                "found at least two devices, meta and cpu!");
    CHECK_ERROR(ct_where(ct_gt(x, sf), m, s), "ct_where: Expected all tensors to be on the "
                                              "same device");
    CHECK_ERROR(ct_lt(x, ct_to(s, .device = CT_META)), "ct_lt: Expected all tensors");
    CHECK_ERROR(ct_add_(x, ct_to(s, .device = CT_META)), "ct_add: Expected all tensors");
    /* masked_fill's 0-d value tensor follows the same rule */
    CHECK(ct_is_meta(ct_masked_fill_tensor(m, mc, s)));
    CHECK_ERROR(ct_masked_fill_tensor(x, cc, ct_to(s, .device = CT_META)),
                "Expected all tensors to be on the same device, but found at least two "
                "devices, cpu and meta!");
}

TEST(cpu_results_with_scalars_and_broadcasts_are_unchanged) {
    float v[] = {1, 2, 3, 4, 5, 6};
    ct_tensor *x = ct_tensor_f32(v, CT_SHAPE(2, 3));
    CHECK_VALUES(ct_add(x, ct_scalar_tensor(0.5)), 0, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5);
    CHECK_VALUES(ct_mul(ct_scalar_tensor(2, .dtype = CT_I64), x), 0, 2, 4, 6, 8, 10, 12);
    CHECK_VALUES(ct_sub(ct_transpose(x, 0, 1), ct_tensor_f32(v, CT_SHAPE(1, 2))), 0,
                 0, 2, 1, 3, 2, 4);
    /* a large, transposed, broadcast sum: the same for 1 and 3 threads */
    ct_tensor *big = ct_transpose(ct_randn(CT_SHAPE(300, 700)), 0, 1);
    ct_tensor *row = ct_randn(CT_SHAPE(300));
    int saved = ct_get_num_threads();
    ct_set_num_threads(1);
    ct_tensor *r1 = ct_mul(ct_add(big, row), ct_scalar_tensor(3));
    ct_set_num_threads(3);
    ct_tensor *r3 = ct_mul(ct_add(big, row), ct_scalar_tensor(3));
    ct_set_num_threads(saved);
    CHECK(ct_test_max_diff(r1, r3) == 0);
    double *a = ct_test_values(big), *b = ct_test_values(row), *r = ct_test_values(r1);
    int64_t bad = 0;
    for (int64_t i = 0; i < 700 && a && b && r; i++)
        for (int64_t j = 0; j < 300; j++)
            bad += r[i * 300 + j] != (double)(((float)a[i * 300 + j] + (float)b[j]) * 3.0f);
    CHECK_INT_EQ(bad, 0);
    free(a);
    free(b);
    free(r);
}
