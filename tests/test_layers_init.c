/* nn.init and the layers' default initialization: bounds, means and standard
 * deviations against the distributions PyTorch uses, and orthogonality.
 *
 * Tolerances: with n independent draws the sample mean has standard error
 * sigma / sqrt(n) and the sample standard deviation about sigma / sqrt(2 n); the
 * checks allow 6 standard errors (a false failure about once in 10^9 runs), and
 * seeds are fixed so the outcome is deterministic anyway. */
#include <stdlib.h>

#include "ct_test.h"

typedef struct {
    double mean, std, min, max;
    int64_t n;
} stats;

static stats stats_of(ct_tensor *t) {
    stats s = {0, 0, INFINITY, -INFINITY, ct_numel(t)};
    double *v = ct_test_values(t);
    for (int64_t i = 0; i < s.n; i++) {
        s.mean += v[i];
        if (v[i] < s.min) s.min = v[i];
        if (v[i] > s.max) s.max = v[i];
    }
    s.mean /= (double)s.n;
    for (int64_t i = 0; i < s.n; i++) s.std += (v[i] - s.mean) * (v[i] - s.mean);
    s.std = sqrt(s.std / (double)(s.n - 1));
    free(v);
    return s;
}

/* Sample of a distribution with this mean and std (6 standard errors). */
static void check_moments(const char *what, stats s, double mean, double std) {
    double se_mean = std / sqrt((double)s.n), se_std = std / sqrt(2.0 * (double)s.n);
    if (fabs(s.mean - mean) > 6 * se_mean)
        ct_test_fail(__FILE__, __LINE__, "%s: mean %g, expected %g +- %g", what, s.mean, mean, 6 * se_mean);
    if (fabs(s.std - std) > 6 * se_std)
        ct_test_fail(__FILE__, __LINE__, "%s: std %g, expected %g +- %g", what, s.std, std, 6 * se_std);
}

/* U(-bound, bound): inside, reaching close to both ends, moments of the uniform. */
static void check_uniform(const char *what, ct_tensor *t, double lo, double hi) {
    stats s = stats_of(t);
    CHECK(s.min >= lo && s.max <= hi);
    CHECK(s.min < lo + (hi - lo) * 0.01 && s.max > hi - (hi - lo) * 0.01);
    check_moments(what, s, (lo + hi) / 2, (hi - lo) / sqrt(12.0));
}

TEST(uniform_normal_constant) {
    ct_manual_seed(1);
    ct_tensor *t = ct_empty(CT_SHAPE(200, 500));
    CHECK(ct_init_uniform_(t, -2, 3) == t);
    check_uniform("uniform", t, -2, 3);
    CHECK(ct_init_normal_(t, 1.5, 0.5) == t);
    check_moments("normal", stats_of(t), 1.5, 0.5);
    ct_init_constant_(t, 0.25);
    stats s = stats_of(t);
    CHECK(s.min == 0.25 && s.max == 0.25);
    ct_init_zeros_(t);
    CHECK(stats_of(t).max == 0);
    ct_init_ones_(t);
    CHECK(stats_of(t).min == 1);
}

TEST(init_runs_without_recording_and_uses_the_generator) {
    ct_tensor *w = ct_empty(CT_SHAPE(4, 5), .requires_grad = true);
    CHECK(ct_init_xavier_uniform_(w) == w); /* a leaf requiring grad: allowed, as no_grad */
    CHECK(ct_is_leaf(w));
    ct_generator *g1 = ct_generator_new(7), *g2 = ct_generator_new(7);
    ct_tensor *a = ct_empty(CT_SHAPE(6, 3)), *b = ct_empty(CT_SHAPE(6, 3));
    ct_init_kaiming_normal_(a, .generator = g1);
    ct_init_kaiming_normal_(b, .generator = g2);
    CHECK(ct_test_max_diff(a, b) == 0);
}

TEST(gains_and_fans_as_pytorch) {
    CHECK_CLOSE(ct_init_calculate_gain("linear"), 1, 0);
    CHECK_CLOSE(ct_init_calculate_gain("conv_transpose2d"), 1, 0);
    CHECK_CLOSE(ct_init_calculate_gain("sigmoid"), 1, 0);
    CHECK_CLOSE(ct_init_calculate_gain("tanh"), 5.0 / 3, 1e-15);
    CHECK_CLOSE(ct_init_calculate_gain("relu"), sqrt(2.0), 1e-15);
    CHECK_CLOSE(ct_init_calculate_gain("leaky_relu"), sqrt(2 / (1 + 0.01 * 0.01)), 1e-15);
    CHECK_CLOSE(ct_init_calculate_gain("leaky_relu", .param = CT_SOME(sqrt(5.0))), sqrt(1.0 / 3), 1e-15);
    CHECK_CLOSE(ct_init_calculate_gain("selu"), 0.75, 0);
    ct_clear_error();
    CHECK(isnan(ct_init_calculate_gain("swish")));
    CHECK(strstr(ct_last_error(), "Unsupported nonlinearity swish") != NULL);
    ct_clear_error();
    int64_t fi, fo;
    CHECK(ct_init_calculate_fan(ct_empty(CT_SHAPE(16, 4, 3, 5)), &fi, &fo) == 0);
    CHECK_INT_EQ(fi, 60);
    CHECK_INT_EQ(fo, 240);
    CHECK_ERROR(ct_init_calculate_fan(ct_empty(CT_SHAPE(5)), &fi, &fo),
                "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
    CHECK_ERROR(ct_init_xavier_uniform_(ct_empty(CT_SHAPE(5))), "fewer than 2 dimensions");
    CHECK_ERROR(ct_init_kaiming_uniform_(ct_empty(CT_SHAPE(3, 3)), .nonlinearity = "foo"),
                "Unsupported nonlinearity foo");
}

TEST(xavier_and_kaiming_distributions) {
    ct_manual_seed(2);
    ct_tensor *t = ct_empty(CT_SHAPE(300, 40, 3, 3)); /* fan_in 360, fan_out 2700 */
    double fi = 360, fo = 2700;
    ct_init_xavier_uniform_(t, .gain = 2);
    double b = 2 * sqrt(6 / (fi + fo));
    check_uniform("xavier_uniform", t, -b, b);
    ct_init_xavier_normal_(t, .gain = 0.5);
    check_moments("xavier_normal", stats_of(t), 0, 0.5 * sqrt(2 / (fi + fo)));
    ct_init_kaiming_uniform_(t); /* leaky_relu with a = 0: gain sqrt(2) */
    b = sqrt(3.0) * sqrt(2.0) / sqrt(fi);
    check_uniform("kaiming_uniform", t, -b, b);
    ct_init_kaiming_uniform_(t, .a = sqrt(5.0)); /* Linear/Conv: bound 1/sqrt(fan_in) */
    check_uniform("kaiming_uniform(a=sqrt(5))", t, -1 / sqrt(fi), 1 / sqrt(fi));
    ct_init_kaiming_normal_(t, .mode = CT_FAN_OUT, .nonlinearity = "relu");
    check_moments("kaiming_normal", stats_of(t), 0, sqrt(2.0) / sqrt(fo));
    ct_init_kaiming_normal_(t, .nonlinearity = "tanh");
    check_moments("kaiming_normal tanh", stats_of(t), 0, 5.0 / 3 / sqrt(fi));
}

TEST(trunc_normal_distribution) {
    ct_manual_seed(3);
    ct_tensor *t = ct_empty(CT_SHAPE(100000));
    CHECK(ct_init_trunc_normal_(t, 0, 1, -2, 2) == t);
    stats s = stats_of(t);
    CHECK(s.min >= -2 && s.max <= 2);
    /* N(0, 1) truncated to [-2, 2]: variance 1 - 2 * 2 phi(2) / (Phi(2) - Phi(-2)). */
    double phi2 = exp(-2.0) / sqrt(2 * M_PI), z = erf(2 / sqrt(2.0));
    check_moments("trunc_normal", s, 0, sqrt(1 - 4 * phi2 / z));
    ct_init_trunc_normal_(t, 1, 0.02, 0.99, 2); /* one-sided cut */
    s = stats_of(t);
    CHECK(s.min >= 0.99 && s.max <= 2 && s.mean > 1);
    CHECK_ERROR(ct_init_trunc_normal_(t, 0, 1, 2, -2), "a must be less than b");
}

/* The diagonal of a square matrix, as a strided view. */
static ct_tensor *diagonal_of(ct_tensor *t) {
    return ct_as_strided(t, CT_SHAPE(ct_size(t, 0)), CT_SHAPE(ct_size(t, 0) + 1), 0);
}

/* max |A A^T - gain^2 I| (wide, rows <= cols) or |A^T A - gain^2 I| (tall). */
static double orthogonality_error(ct_tensor *t, double gain) {
    ct_tensor *a = ct_reshape(ct_to(t, .dtype = CT_F64), CT_SHAPE(ct_size(t, 0), -1));
    bool wide = ct_size(a, 0) <= ct_size(a, 1);
    ct_tensor *g = wide ? ct_matmul(a, ct_t(a)) : ct_matmul(ct_t(a), a);
    ct_tensor *eye = ct_mul_scalar(ct_eye(ct_size(g, 0), .dtype = CT_F64), gain * gain);
    return ct_test_max_diff(g, eye);
}

TEST(orthogonal_is_orthogonal) {
    ct_manual_seed(4);
    ct_tensor *tall = ct_empty(CT_SHAPE(50, 30), .dtype = CT_F64);
    ct_tensor *wide = ct_empty(CT_SHAPE(20, 45), .dtype = CT_F64);
    ct_tensor *conv = ct_empty(CT_SHAPE(8, 2, 3, 3));
    CHECK(ct_init_orthogonal_(tall) == tall);
    CHECK(orthogonality_error(tall, 1) < 1e-12);
    ct_init_orthogonal_(wide, .gain = 2);
    CHECK(orthogonality_error(wide, 2) < 1e-12);
    ct_init_orthogonal_(conv);
    CHECK(orthogonality_error(conv, 1) < 1e-5); /* float32 storage */
    CHECK_ERROR(ct_init_orthogonal_(ct_empty(CT_SHAPE(4))), "2 or more dimensions");
    /* The Q of a Gaussian matrix's QR with R's diagonal made positive is Haar
     * distributed, so its diagonal entries have mean 0 and variance 1/n: their
     * average over n = 200 has standard error 1/n = 0.005 (a convention that fixed
     * Q's own signs instead would push it up to ~0.06). */
    ct_tensor *sq = ct_empty(CT_SHAPE(200, 200), .dtype = CT_F64);
    ct_init_orthogonal_(sq);
    stats d = stats_of(diagonal_of(sq));
    CHECK(fabs(d.mean) < 6 * 0.005);
    CHECK_CLOSE(d.std, 1 / sqrt(200.0), 6 / sqrt(200.0) / sqrt(400.0));
}

TEST(layer_default_init_matches_pytorch) {
    ct_manual_seed(5);
    ct_module *lin = ct_nn_linear(100, 400);
    check_uniform("Linear.weight", ct_module_get_parameter(lin, "weight"), -0.1, 0.1);
    stats s = stats_of(ct_module_get_parameter(lin, "bias"));
    CHECK(s.min >= -0.1 && s.max <= 0.1);
    ct_module *conv = ct_nn_conv2d(16, 64, CT_DIMS(3)); /* fan_in 144 */
    check_uniform("Conv2d.weight", ct_module_get_parameter(conv, "weight"), -1 / 12.0, 1 / 12.0);
    ct_module *convt = ct_nn_conv_transpose2d(64, 16, CT_DIMS(3)); /* fan_in = 16 * 9 */
    check_uniform("ConvTranspose2d.weight", ct_module_get_parameter(convt, "weight"), -1 / 12.0, 1 / 12.0);
    ct_module *emb = ct_nn_embedding(1000, 64, .padding_idx = CT_SOME(-1));
    ct_tensor *w = ct_module_get_parameter(emb, "weight");
    check_moments("Embedding.weight", stats_of(ct_narrow(w, 0, 0, 999)), 0, 1);
    stats pad = stats_of(ct_select(w, 0, 999));
    CHECK(pad.min == 0 && pad.max == 0);
    ct_module *bil = ct_nn_bilinear(25, 30, 40); /* U(-1/sqrt(in1), ..) */
    check_uniform("Bilinear.weight", ct_module_get_parameter(bil, "weight"), -0.2, 0.2);
    ct_module *bn = ct_nn_batch_norm2d(5);
    CHECK_VALUES(ct_module_get_parameter(bn, "weight"), 0, 1, 1, 1, 1, 1);
    CHECK_VALUES(ct_module_get_parameter(bn, "bias"), 0, 0, 0, 0, 0, 0);
    CHECK_VALUES(ct_module_get_buffer(bn, "running_var"), 0, 1, 1, 1, 1, 1);
    CHECK_VALUES(ct_module_get_buffer(bn, "num_batches_tracked"), 0, 0);
    ct_module *ln = ct_nn_layer_norm(CT_SHAPE(2, 2));
    CHECK_VALUES(ct_module_get_parameter(ln, "weight"), 0, 1, 1, 1, 1);
    ct_module *f64 = ct_nn_linear(3, 2, .dtype = CT_F64);
    CHECK(ct_dtype_of(ct_module_get_parameter(f64, "bias")) == CT_F64);
}

/* Every parameter of m flattened into one tensor. */
static ct_tensor *all_parameters(ct_module *m, int *count) {
    ct_tensor *ps[64];
    *count = ct_named_parameters(m, NULL, ps, 64);
    for (int i = 0; i < *count; i++) ps[i] = ct_reshape(ps[i], CT_SHAPE(-1));
    return ct_cat(*count, ps, 0);
}

/* RNN, LSTM, GRU and their cells: every weight and bias U(-1/sqrt(H), 1/sqrt(H)). */
TEST(recurrent_default_init_matches_pytorch) {
    ct_manual_seed(6);
    ct_module *mods[] = {ct_rnn(32, 64, .num_layers = 2, .bidirectional = true), ct_lstm(32, 64, .num_layers = 2),
                         ct_gru(32, 64, .bidirectional = true),       ct_rnn_cell(100, 64),
                         ct_lstm_cell(48, 64),                        ct_gru_cell(64, 64)};
    const int want[] = {16, 8, 8, 4, 4, 4};
    for (int i = 0; i < 6; i++) {
        int n;
        ct_tensor *all = all_parameters(mods[i], &n);
        CHECK_INT_EQ(n, want[i]);
        check_uniform(ct_module_type(mods[i]), all, -0.125, 0.125);
    }
}

/* MultiheadAttention: xavier_uniform in_proj_weight [3E, E], zero biases, out_proj
 * a Linear's default weight. */
TEST(multihead_attention_default_init_matches_pytorch) {
    ct_manual_seed(7);
    ct_module *mha = ct_nn_multihead_attention(64, 4);
    double b = sqrt(6.0 / (64 + 3 * 64));
    check_uniform("in_proj_weight", ct_module_get_parameter(mha, "in_proj_weight"), -b, b);
    stats s = stats_of(ct_module_get_parameter(mha, "in_proj_bias"));
    CHECK(s.n == 192 && s.min == 0 && s.max == 0);
    ct_module *out = ct_module_get_submodule(mha, "out_proj");
    check_uniform("out_proj.weight", ct_module_get_parameter(out, "weight"), -0.125, 0.125);
    s = stats_of(ct_module_get_parameter(out, "bias"));
    CHECK(s.n == 64 && s.min == 0 && s.max == 0);
}

/* Conv1d: kaiming_uniform(a=sqrt(5)) weight and U(-1/sqrt(fan_in), ..) bias; GroupNorm
 * ones and zeros. */
TEST(conv1d_and_group_norm_default_init_match_pytorch) {
    ct_manual_seed(8);
    ct_module *conv = ct_nn_conv1d(4, 3000, CT_DIMS(3)); /* fan_in 12 */
    double b = 1 / sqrt(12.0);
    check_uniform("Conv1d.weight", ct_module_get_parameter(conv, "weight"), -b, b);
    check_uniform("Conv1d.bias", ct_module_get_parameter(conv, "bias"), -b, b);
    ct_module *gn = ct_nn_group_norm(4, 12);
    stats w = stats_of(ct_module_get_parameter(gn, "weight")), bias = stats_of(ct_module_get_parameter(gn, "bias"));
    CHECK(w.n == 12 && w.min == 1 && w.max == 1);
    CHECK(bias.n == 12 && bias.min == 0 && bias.max == 0);
}
