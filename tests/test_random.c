/* Random numbers: the Philox core against its published answers, determinism (seeds,
 * states, thread counts, splits), the distributions' moments and ranges, dropout,
 * and the error messages.
 *
 * Statistical checks use fixed seeds, so they are deterministic; each tolerance is
 * 5 standard errors of the statistic for the sample size used, so a correct sampler
 * passes with probability > 1 - 1e-6 per check for any seed, while a wrong mean,
 * scale or shape (off by more than ~5 standard errors) fails. */
#include <stdlib.h>

#include "ct_test.h"
#include "core/philox.h"

/* ---- the generator ------------------------------------------------------ */

/* Known-answer vectors of Random123 (kat_vectors, philox4x32 with 10 rounds). */
TEST(philox_known_answers) {
    static const uint32_t ctr[3][4] = {{0, 0, 0, 0},
                                       {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                                       {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}};
    static const uint32_t key[3][2] = {{0, 0}, {0xffffffff, 0xffffffff}, {0xa4093822, 0x299f31d0}};
    static const uint32_t want[3][4] = {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
                                        {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
                                        {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}};
    for (int k = 0; k < 3; k++) {
        ct_philox_block b = ct_philox4x32_10(ctr[k], key[k]);
        for (int i = 0; i < 4; i++) CHECK_INT_EQ(b.w[i], want[k][i]);
    }
}

static bool same_bits(ct_tensor *a, ct_tensor *b) {
    return a && b && ct_numel(a) == ct_numel(b) && ct_dtype_of(a) == ct_dtype_of(b) &&
           !memcmp(ct_data_ptr(a), ct_data_ptr(b), (size_t)ct_numel(a) * ct_dtype_size(ct_dtype_of(a)));
}

TEST(seeds_reproduce) {
    ct_manual_seed(123);
    CHECK_INT_EQ(ct_initial_seed(), 123);
    ct_tensor *a = ct_randn(CT_SHAPE(50));
    ct_manual_seed(123);
    ct_tensor *b = ct_randn(CT_SHAPE(50));
    CHECK(same_bits(a, b));
    ct_manual_seed(124);
    CHECK(!same_bits(a, ct_randn(CT_SHAPE(50))));
    /* a private generator with the same seed gives the same stream, and draws from it
     * leave the default generator alone */
    ct_generator *g = ct_generator_new(123);
    CHECK_INT_EQ(ct_generator_initial_seed(g), 123);
    ct_manual_seed(5);
    ct_tensor *d1 = ct_rand(CT_SHAPE(4));
    CHECK(same_bits(a, ct_randn(CT_SHAPE(50), .generator = g)));
    ct_manual_seed(5);
    CHECK(same_bits(d1, ct_rand(CT_SHAPE(4))));
    CHECK(ct_generator_initial_seed(NULL) == 5);
}

TEST(state_save_and_restore) {
    ct_generator *g = ct_generator_new(7);
    ct_rand(CT_SHAPE(10), .generator = g);
    ct_tensor *state = ct_generator_get_state(g);
    CHECK_INT_EQ(ct_numel(state), 16);
    CHECK_INT_EQ(ct_dtype_of(state), CT_U8);
    ct_tensor *a = ct_randn(CT_SHAPE(7), .generator = g);
    CHECK(ct_generator_set_state(g, state) == 0);
    CHECK(same_bits(a, ct_randn(CT_SHAPE(7), .generator = g)));
    /* the default generator too */
    ct_tensor *ds = ct_generator_get_state(NULL);
    ct_tensor *b = ct_rand(CT_SHAPE(3));
    CHECK(ct_generator_set_state(NULL, ds) == 0);
    CHECK(same_bits(b, ct_rand(CT_SHAPE(3))));
    CHECK_ERROR(ct_generator_set_state(g, ct_zeros(CT_SHAPE(16))), "RNG state must be a torch.ByteTensor");
    CHECK_ERROR(ct_generator_set_state(g, ct_zeros(CT_SHAPE(3), .dtype = CT_U8)), "wrong size");
}

/* Element i draws from counter offset + i: two draws equal one draw of both. */
TEST(any_split_gives_the_same_numbers) {
    ct_generator *g = ct_generator_new(99);
    ct_tensor *a = ct_rand(CT_SHAPE(100), .generator = g);
    ct_tensor *b = ct_rand(CT_SHAPE(60), .generator = g);
    ct_generator_manual_seed(g, 99);
    ct_tensor *both = ct_rand(CT_SHAPE(160), .generator = g);
    CHECK(!memcmp(ct_data_ptr(a), ct_data_ptr(both), 100 * sizeof(float)));
    CHECK(!memcmp(ct_data_ptr(b), (float *)ct_data_ptr(both) + 100, 60 * sizeof(float)));
}

/* Sizes above CT_GRAIN run on several threads: the bits must not change. */
TEST(thread_count_does_not_change_results) {
    ct_tensor *r[2][6];
    for (int k = 0; k < 2; k++) {
        ct_set_num_threads(k + 1);
        ct_generator *g = ct_generator_new(2024);
        ct_shape s = CT_SHAPE(300, 700);
        r[k][0] = ct_rand(s, .generator = g);
        r[k][1] = ct_randn(s, .generator = g, .dtype = CT_F64);
        r[k][2] = ct_randint(-5, 1000, s, .generator = g);
        r[k][3] = ct_bernoulli(ct_full(s, 0.3), .generator = g);
        r[k][4] = ct_dropout(ct_ones(s), 0.5, true, .generator = g);
        r[k][5] = ct_normal_(ct_empty(s, .dtype = CT_BF16), 1, 2, .generator = g);
    }
    ct_set_num_threads(2);
    for (int i = 0; i < 6; i++) CHECK(same_bits(r[0][i], r[1][i]));
}

/* ---- distributions ------------------------------------------------------ */

typedef struct {
    double mean, var, min, max;
} moments;

static moments moments_of(ct_tensor *t) {
    double *v = ct_test_values(t), s = 0, s2 = 0;
    int64_t n = ct_numel(t);
    moments m = {0, 0, INFINITY, -INFINITY};
    for (int64_t i = 0; i < n; i++) {
        s += v[i];
        if (v[i] < m.min) m.min = v[i];
        if (v[i] > m.max) m.max = v[i];
    }
    m.mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) s2 += (v[i] - m.mean) * (v[i] - m.mean);
    m.var = s2 / (double)(n - 1);
    free(v);
    return m;
}

#define N 1000000
/* Standard error of a mean of N draws with variance var: sqrt(var / N); of a sample
 * variance: sqrt((mu4 - var^2) / N) with mu4 the fourth central moment. */
#define SE_MEAN(var) sqrt((double)(var) / N)
#define SE_VAR(mu4, var) sqrt((double)((mu4) - (var) * (var)) / N)

TEST(uniform_moments_and_range) {
    ct_manual_seed(1);
    /* U[0,1): mean 1/2, variance 1/12, mu4 1/80 */
    ct_dtype dts[] = {CT_F32, CT_F64};
    for (int k = 0; k < 2; k++) {
        moments m = moments_of(ct_rand(CT_SHAPE(N), .dtype = dts[k]));
        CHECK_CLOSE(m.mean, 0.5, 5 * SE_MEAN(1.0 / 12));
        CHECK_CLOSE(m.var, 1.0 / 12, 5 * SE_VAR(1.0 / 80, 1.0 / 12));
        CHECK(m.min >= 0 && m.max < 1);
    }
    /* uniform_(-2, 5): mean 1.5, variance 49/12, mu4 = 7^4/80 */
    moments m = moments_of(ct_uniform_(ct_empty(CT_SHAPE(N), .dtype = CT_F64), -2, 5));
    CHECK_CLOSE(m.mean, 1.5, 5 * SE_MEAN(49.0 / 12));
    CHECK_CLOSE(m.var, 49.0 / 12, 5 * SE_VAR(2401.0 / 80, 49.0 / 12));
    CHECK(m.min >= -2 && m.max < 5);
    /* Reduced precision: few mantissa bits, and rounding must never reach 1. */
    ct_dtype low[] = {CT_F16, CT_BF16};
    for (int k = 0; k < 2; k++) {
        moments r = moments_of(ct_rand(CT_SHAPE(100000), .dtype = low[k]));
        CHECK(r.min >= 0 && r.max < 1);
        CHECK_CLOSE(r.mean, 0.5, 5 * sqrt(1.0 / 12 / 100000) + 1.0 / 512); /* + grid bias */
    }
}

TEST(normal_moments) {
    ct_manual_seed(2);
    /* N(0,1): variance 1, mu4 3; fraction within one sigma 0.682689 */
    ct_tensor *x = ct_randn(CT_SHAPE(N));
    moments m = moments_of(x);
    CHECK_CLOSE(m.mean, 0, 5 * SE_MEAN(1));
    CHECK_CLOSE(m.var, 1, 5 * SE_VAR(3, 1));
    double *v = ct_test_values(x);
    int64_t inside = 0;
    for (int64_t i = 0; i < N; i++) inside += fabs(v[i]) < 1;
    free(v);
    double p = 0.6826894921370859;
    CHECK_CLOSE((double)inside / N, p, 5 * sqrt(p * (1 - p) / N));
    /* normal_(3, 2) in float64: mean 3, variance 4, mu4 3 * 16 */
    moments n = moments_of(ct_normal_(ct_empty(CT_SHAPE(N), .dtype = CT_F64), 3, 2));
    CHECK_CLOSE(n.mean, 3, 5 * SE_MEAN(4));
    CHECK_CLOSE(n.var, 4, 5 * SE_VAR(48, 4));
    /* randn_like keeps dtype and shape */
    ct_tensor *l = ct_randn_like(ct_zeros(CT_SHAPE(2, 3), .dtype = CT_F64));
    CHECK_INT_EQ(ct_dtype_of(l), CT_F64);
    CHECK_INT_EQ(ct_size(l, 1), 3);
    CHECK_INT_EQ(ct_dtype_of(ct_rand_like(ct_zeros(CT_SHAPE(2)), .dtype = CT_F16)), CT_F16);
}

TEST(randint_is_uniform_over_its_range) {
    ct_manual_seed(3);
    ct_tensor *x = ct_randint(-3, 4, CT_SHAPE(N));
    CHECK_INT_EQ(ct_dtype_of(x), CT_I64);
    const int64_t *v = ct_data_ptr(x);
    int64_t count[7] = {0};
    bool in_range = true;
    for (int64_t i = 0; i < N; i++) {
        if (v[i] < -3 || v[i] > 3) in_range = false;
        else count[v[i] + 3]++;
    }
    CHECK(in_range);
    /* each value: binomial(N, 1/7) */
    double p = 1.0 / 7;
    for (int k = 0; k < 7; k++) CHECK_CLOSE((double)count[k] / N, p, 5 * sqrt(p * (1 - p) / N));
    /* the whole int64 range and other dtypes */
    ct_tensor *w = ct_randint(INT64_MIN, INT64_MAX, CT_SHAPE(1000));
    CHECK(w != NULL);
    ct_tensor *f = ct_randint(0, 3, CT_SHAPE(1000), .dtype = CT_F32);
    moments m = moments_of(f);
    CHECK(m.min == 0 && m.max == 2);
    ct_tensor *like = ct_randint_like(ct_zeros(CT_SHAPE(5), .dtype = CT_U8), 250, 256);
    CHECK_INT_EQ(ct_dtype_of(like), CT_U8);
    CHECK(moments_of(like).min >= 250);
}

TEST(randperm_is_a_fair_shuffle) {
    ct_manual_seed(4);
    ct_tensor *p = ct_randperm(1000);
    CHECK_INT_EQ(ct_dtype_of(p), CT_I64);
    const int64_t *v = ct_data_ptr(p);
    bool seen[1000] = {0}, perm = true;
    for (int i = 0; i < 1000; i++) {
        if (v[i] < 0 || v[i] >= 1000 || seen[v[i]]) perm = false;
        else seen[v[i]] = true;
    }
    CHECK(perm);
    /* Every permutation of 4 equally likely: 24000 shuffles, each count binomial with
     * p = 1/24 (sd 30.9); also every (value, position) pair with p = 1/4. */
    enum { R = 24000 };
    int count[256] = {0}, at[4][4] = {{0}};
    ct_generator *g = ct_generator_new(11);
    for (int r = 0; r < R; r++) {
        CT_SCOPE {
            const int64_t *q = ct_data_ptr(ct_randperm(4, .generator = g));
            count[q[0] * 64 + q[1] * 16 + q[2] * 4 + q[3]]++;
            for (int k = 0; k < 4; k++) at[q[k]][k]++;
        }
    }
    int distinct = 0;
    for (int i = 0; i < 256; i++) {
        if (!count[i]) continue;
        distinct++;
        CHECK_CLOSE(count[i], R / 24.0, 5 * sqrt(R * (1 / 24.0) * (23 / 24.0)));
    }
    CHECK_INT_EQ(distinct, 24);
    for (int a = 0; a < 4; a++)
        for (int k = 0; k < 4; k++) CHECK_CLOSE(at[a][k], R / 4.0, 5 * sqrt(R * 0.25 * 0.75));
    CHECK_INT_EQ(ct_numel(ct_randperm(0)), 0);
    ct_tensor *pf = ct_randperm(5, .dtype = CT_F32);
    CHECK_CLOSE(moments_of(pf).mean, 2, 0);
}

TEST(bernoulli_frequencies) {
    ct_manual_seed(5);
    /* p = 0, 0.25, 1 in turn */
    ct_tensor *p = ct_empty(CT_SHAPE(N), .dtype = CT_F64);
    double *pv = ct_data_ptr(p);
    for (int64_t i = 0; i < N; i++) pv[i] = i % 3 == 0 ? 0 : i % 3 == 1 ? 0.25 : 1;
    ct_tensor *b = ct_bernoulli(p);
    CHECK_INT_EQ(ct_dtype_of(b), CT_F64);
    const double *bv = ct_data_ptr(b);
    int64_t ones[3] = {0}, n[3] = {0}, bad = 0;
    for (int64_t i = 0; i < N; i++) {
        ones[i % 3] += bv[i] == 1;
        bad += bv[i] != 0 && bv[i] != 1;
        n[i % 3]++;
    }
    CHECK_INT_EQ(bad, 0);
    CHECK_INT_EQ(ones[0], 0);
    CHECK_INT_EQ(ones[2], n[2]);
    CHECK_CLOSE((double)ones[1] / n[1], 0.25, 5 * sqrt(0.25 * 0.75 / n[1]));
    /* scalar p: out of place keeps t's dtype; in place too */
    ct_tensor *bp = ct_bernoulli_p(ct_zeros(CT_SHAPE(N), .dtype = CT_I32), 0.7);
    CHECK_INT_EQ(ct_dtype_of(bp), CT_I32);
    CHECK_CLOSE(moments_of(bp).mean, 0.7, 5 * sqrt(0.7 * 0.3 / N));
    ct_tensor *t = ct_zeros(CT_SHAPE(N));
    CHECK(ct_bernoulli_(t, 0.1) == t);
    CHECK_CLOSE(moments_of(t).mean, 0.1, 5 * sqrt(0.1 * 0.9 / N));
}

/* A strided target gets, in C order, the numbers a contiguous one would. */
TEST(inplace_on_a_view) {
    ct_generator *g = ct_generator_new(8);
    ct_tensor *base = ct_zeros(CT_SHAPE(3, 4));
    ct_tensor *view = ct_transpose(base, 0, 1);
    CHECK(ct_normal_(view, 0, 1, .generator = g) == view);
    ct_generator_manual_seed(g, 8);
    ct_tensor *want = ct_randn(CT_SHAPE(4, 3), .generator = g);
    CHECK_CLOSE(ct_test_max_diff(view, want), 0, 0);
}

/* ---- dropout ------------------------------------------------------------ */

TEST(dropout_masks_and_scales) {
    ct_manual_seed(6);
    ct_tensor *x = ct_ones(CT_SHAPE(N), .requires_grad = true);
    ct_tensor *y = ct_dropout(x, 0.3, true);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "MulBackward0");
    double *v = ct_test_values(y);
    int64_t zeros = 0, bad = 0;
    for (int64_t i = 0; i < N; i++) {
        zeros += v[i] == 0;
        bad += v[i] != 0 && fabs(v[i] - 1 / 0.7) > 1e-6;
    }
    CHECK_INT_EQ(bad, 0);
    CHECK_CLOSE((double)zeros / N, 0.3, 5 * sqrt(0.3 * 0.7 / N));
    /* the gradient is the mask: the same zeros, the same scale */
    CHECK(ct_backward(ct_sum(y)) == 0);
    CHECK_CLOSE(ct_test_max_diff(ct_grad(x), y), 0, 0);
    free(v);
    /* identity cases return x itself */
    CHECK(ct_dropout(x, 0.3, false) == x);
    CHECK(ct_dropout(x, 0, true) == x);
    ct_tensor *z = ct_dropout(ct_ones(CT_SHAPE(5)), 1, true);
    CHECK_VALUES(z, 0, 0, 0, 0, 0, 0);
    /* in place */
    ct_tensor *h = ct_mul_scalar(ct_ones(CT_SHAPE(4), .requires_grad = true), 2);
    CHECK(ct_dropout_(h, 0.5, true) == h);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(h)), "MulBackward0");
    CHECK_ERROR(ct_dropout_(x, 0.5, true), "leaf Variable that requires grad");
}

TEST(random_grad_fns) {
    ct_tensor *x = ct_rand(CT_SHAPE(3), .requires_grad = true);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_normal_(ct_clone(x), 0, 1))), "NormalBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_uniform_(ct_clone(x), 0, 1))), "UniformBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_bernoulli_(ct_clone(x), 0.5))), "BernoulliBackward2");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_bernoulli(x))), "BernoulliBackward0");
    CHECK(ct_grad_fn(ct_bernoulli_p(x, 0.5)) == NULL);
    CHECK(!ct_requires_grad(ct_randn(CT_SHAPE(2))));
    CHECK(ct_requires_grad(ct_randn(CT_SHAPE(2), .requires_grad = true)));
}

/* ---- errors ------------------------------------------------------------- */

TEST(random_errors) {
    CHECK_ERROR(ct_randint(5, 3, CT_SHAPE(2)),
                "random_ expects 'from' to be less than 'to', but got from=5 >= to=3");
    CHECK_ERROR(ct_randint(3, 3, CT_SHAPE(2)), "from=3 >= to=3");
    CHECK_ERROR(ct_randint(0, 300, CT_SHAPE(2), .dtype = CT_U8),
                "to - 1 is out of bounds for unsigned char");
    CHECK_ERROR(ct_randint(0, 3, CT_SHAPE(2), .dtype = CT_BOOL), "to - 1 is out of bounds for bool");
    CHECK_ERROR(ct_randint(0, 3, CT_SHAPE(2), .requires_grad = true),
                "Only Tensors of floating point");
    CHECK_ERROR(ct_bernoulli(ct_full(CT_SHAPE(2), 1.5)), "Expected p_in >= 0 && p_in <= 1");
    CHECK_ERROR(ct_bernoulli(ct_full(CT_SHAPE(2), -0.5)), "p_in >= 0");
    CHECK_ERROR(ct_bernoulli(ct_full(CT_SHAPE(2), NAN)), "p_in >= 0");
    CHECK_ERROR(ct_bernoulli(ct_zeros(CT_SHAPE(2), .dtype = CT_I64)), "floating point");
    CHECK_ERROR(ct_bernoulli_p(ct_zeros(CT_SHAPE(2)), 1.5),
                "bernoulli_ expects p to be in [0, 1], but got p=1.5");
    CHECK_ERROR(ct_bernoulli_(ct_zeros(CT_SHAPE(2)), -1), "bernoulli_ expects p to be in [0, 1]");
    CHECK_ERROR(ct_normal_(ct_zeros(CT_SHAPE(2)), 0, -1), "normal expects std >= 0.0, but found std -1");
    CHECK_ERROR(ct_uniform_(ct_zeros(CT_SHAPE(2)), 1, 0),
                "uniform_ expects to return a [from, to) range, but found from=1 > to=0");
    CHECK_ERROR(ct_normal_(ct_zeros(CT_SHAPE(2), .dtype = CT_I64), 0, 1), "floating point");
    CHECK_ERROR(ct_rand(CT_SHAPE(2), .dtype = CT_I64), "ct_rand: expected a floating point dtype");
    CHECK_ERROR(ct_randn(CT_SHAPE(2), .dtype = CT_BOOL), "floating point");
    CHECK_ERROR(ct_randperm(-1), "negative dimension");
    CHECK_ERROR(ct_randperm(300, .dtype = CT_U8), "n is too large for result tensor type");
    CHECK_ERROR(ct_dropout(ct_ones(CT_SHAPE(2)), 1.5, true),
                "dropout probability has to be between 0 and 1, but got 1.5");
    CHECK_ERROR(ct_dropout(ct_ones(CT_SHAPE(2), .dtype = CT_I64), 0.5, true), "floating point");
    ct_tensor *leaf = ct_zeros(CT_SHAPE(2), .requires_grad = true);
    CHECK_ERROR(ct_normal_(leaf, 0, 1), "a leaf Variable that requires grad");
    /* NULL in, NULL out, first error kept */
    CHECK(ct_dropout(NULL, 0.5, true) == NULL);
    CHECK(ct_normal_(NULL, 0, 1) == NULL);
    CHECK(ct_bernoulli(NULL) == NULL);
}
