/* SyncBatchNorm (ct_nn_sync_batch_norm_convert) through mpirun: each rank holds a
 * slice of one fixed batch, equal or not (an empty one too); the synchronised
 * module's output, running statistics and gradients (the input's slice; weight and
 * bias summed over the ranks, as DDP's averaging of the ranks' partial sums uses
 * them) equal BatchNorm's on the whole batch, computed on every rank alone.
 *
 * Bounds: float64 within 1e-12 (relative to the largest value); float32 within a few
 * float32 roundings of the reordered sums (rtol 4e-6, atol 1e-6 of the largest
 * value); bfloat16 and float16 inputs within two roundings of their dtype.  The running statistics
 * are bitwise equal across ranks.  Eval mode and a group of one rank are BatchNorm
 * itself: bitwise equal.  Runs with 1, 2 and 3 ranks. */
#include "dist_test.h"

/* Slice sizes of a batch for a world of 1, 2 or 3 ranks (unequal, one rank empty). */
static const int64_t UNEQUAL[4][3] = {{0}, {7}, {3, 5}, {2, 0, 6}};
static const int64_t EQUAL[4][3] = {{0}, {4}, {4, 4}, {4, 4, 4}};

/* This rank's first row and row count under sizes; returns the batch's rows. */
static int64_t my_slice(const int64_t (*sizes)[3], int64_t *off, int64_t *len) {
    int w = ct_dist_world_size(), r = ct_dist_rank();
    int64_t total = 0;
    *off = 0;
    for (int i = 0; i < w; i++) {
        if (i < r) *off += sizes[w][i];
        total += sizes[w][i];
    }
    *len = sizes[w][r];
    return total;
}

/* A batch with a large mean (a test of the merged variance's stability). */
static ct_tensor *batch(ct_shape s, uint64_t seed, ct_dtype dt) {
    ct_manual_seed(seed);
    return ct_to(ct_add_scalar(ct_mul_scalar(ct_randn(s, .dtype = CT_F64), 2.0), 3.0), .dtype = dt);
}

/* Non-trivial affine parameters. */
static void set_affine(ct_module *bn, int64_t c) {
    ct_tensor *w = ct_module_get_parameter(bn, "weight"), *b = ct_module_get_parameter(bn, "bias");
    if (!w) return;
    CT_NO_GRAD {
        ct_copy_(w, ct_add_scalar(ct_mul_scalar(ct_arange(c), 0.25), 0.5));
        ct_copy_(b, ct_mul_scalar(ct_arange(c), -0.3));
    }
}

/* A gradient summed over the ranks (a copy). */
static ct_tensor *summed(ct_tensor *g) {
    ct_tensor *s = ct_to(g, .dtype = CT_F64, .copy = true);
    CHECK(s && ct_dist_all_reduce(s) == 0);
    return s;
}

typedef struct {
    ct_shape shape;  /* the whole batch's */
    ct_dtype dtype;  /* input */
    ct_dtype mdtype; /* module */
    bool is2d, affine, track;
    bool momentum_none;
    const int64_t (*sizes)[3];
    ct_test_tol tol;
    int steps;
} bn_case;

static ct_module *make_bn(const bn_case *k) {
    int64_t c = k->shape.d[1];
    ct_batch_norm_layer_options o = {
        .affine = k->affine, .track_running_stats = k->track, .dtype = k->mdtype};
    if (k->momentum_none) o.momentum = CT_NONE;
    ct_module *m = k->is2d ? ct_nn_batch_norm2d_with(c, o) : ct_nn_batch_norm1d_with(c, o);
    set_affine(m, c);
    return m;
}

#define CLOSE(what, got, want)                                                                     \
    CHECK(CHECK_TENSOR_CLOSE(what, got, want, .rtol = k->tol.rtol, .atol = k->tol.atol,            \
                             .atol_of_max = true))

/* steps forward/backward passes of the synchronised module on this rank's slice and
 * of BatchNorm on the whole batch. */
static void run_case(const bn_case *k) {
    int64_t off, len;
    ct_shape whole = k->shape;
    whole.d[0] = my_slice(k->sizes, &off, &len);
    ct_module *ref = make_bn(k);
    ct_module *sync = ct_nn_sync_batch_norm_convert(make_bn(k), NULL);
    CHECK(sync && !strcmp(ct_module_type(sync), "SyncBatchNorm"));
    if (!sync) return;
    for (int step = 0; step < k->steps; step++) {
        ct_tensor *x = batch(whole, 100 + (uint64_t)step, k->dtype);
        ct_tensor *g = batch(whole, 200 + (uint64_t)step, k->dtype);
        ct_tensor *xa = ct_detach(ct_clone(x)),
                  *xr = ct_detach(ct_clone(ct_narrow(x, 0, off, len)));
        ct_set_requires_grad(xa, true);
        ct_set_requires_grad(xr, true);
        ct_tensor *ya = ct_forward(ref, xa), *yr = ct_forward(sync, xr);
        CHECK(ya && yr);
        if (!ya || !yr) return;
        CHECK_INT_EQ(ct_dtype_of(yr), k->dtype);
        CHECK(ct_dist_world_size() == 1 ||
              !strcmp(ct_node_name(ct_grad_fn(yr)), "SyncBatchNormBackward"));
        CHECK(ct_backward(ct_sum(ct_mul(ya, g))) == 0);
        CHECK(ct_backward(ct_sum(ct_mul(yr, ct_narrow(g, 0, off, len)))) == 0);
        CLOSE("output", yr, ct_narrow(ya, 0, off, len));
        CLOSE("input gradient", ct_grad(xr), ct_narrow(ct_grad(xa), 0, off, len));
        if (ct_dist_world_size() == 1) { /* BatchNorm itself */
            CHECK(ct_test_max_diff(yr, ya) == 0);
            CHECK(ct_test_max_diff(ct_grad(xr), ct_grad(xa)) == 0);
        }
        const char *names[] = {"running_mean", "running_var", "num_batches_tracked"};
        for (int i = 0; i < 3; i++) {
            ct_tensor *a = ct_module_get_buffer(ref, names[i]),
                      *b = ct_module_get_buffer(sync, names[i]);
            CHECK(!a == !b);
            if (a && b) CLOSE(names[i], b, a);
        }
        const char *params[] = {"weight", "bias"};
        for (int i = 0; i < 2; i++) {
            ct_tensor *a = ct_module_get_parameter(ref, params[i]),
                      *b = ct_module_get_parameter(sync, params[i]);
            CHECK(!a == !b);
            if (a && b) CLOSE(params[i], summed(ct_grad(b)), ct_to(ct_grad(a), .dtype = CT_F64));
        }
    }
    ct_tensor *nbt = ct_module_get_buffer(sync, "num_batches_tracked");
    if (nbt) CHECK_INT_EQ(ct_item_int(nbt), k->steps);
    /* every rank merged the same gathered statistics in the same order: its running
     * statistics are bitwise rank 0's */
    for (int i = 0; i < 2; i++) {
        ct_tensor *mine = ct_module_get_buffer(sync, i ? "running_var" : "running_mean");
        if (!mine) continue;
        ct_tensor *r0 = ct_clone(mine);
        CHECK(ct_dist_broadcast(r0) == 0);
        CHECK(ct_test_max_diff(r0, mine) == 0);
    }
}

static const ct_test_tol F64_TOL = {.rtol = 1e-12, .atol = 1e-12};
static const ct_test_tol F32_TOL = {.rtol = 4e-6, .atol = 1e-6};

DIST_TEST(sync_bn2d_float32_unequal_slices) {
    run_case(&(bn_case){.shape = CT_SHAPE(0, 3, 4, 5),
                        .dtype = CT_F32,
                        .is2d = true,
                        .affine = true,
                        .track = true,
                        .sizes = UNEQUAL,
                        .tol = F32_TOL,
                        .steps = 2});
}

DIST_TEST(sync_bn2d_float32_equal_slices) {
    run_case(&(bn_case){.shape = CT_SHAPE(0, 5, 3, 3),
                        .dtype = CT_F32,
                        .is2d = true,
                        .affine = true,
                        .track = true,
                        .sizes = EQUAL,
                        .tol = F32_TOL,
                        .steps = 2});
}

DIST_TEST(sync_bn2d_float64) {
    run_case(&(bn_case){.shape = CT_SHAPE(0, 3, 2, 5),
                        .dtype = CT_F64,
                        .mdtype = CT_F64,
                        .is2d = true,
                        .affine = true,
                        .track = true,
                        .sizes = UNEQUAL,
                        .tol = F64_TOL,
                        .steps = 2});
}

DIST_TEST(sync_bn1d_2d_input_cumulative_momentum) {
    run_case(&(bn_case){.shape = CT_SHAPE(0, 6),
                        .dtype = CT_F32,
                        .affine = true,
                        .track = true,
                        .momentum_none = true,
                        .sizes = UNEQUAL,
                        .tol = F32_TOL,
                        .steps = 3});
}

DIST_TEST(sync_bn1d_3d_input_without_affine) {
    run_case(&(bn_case){.shape = CT_SHAPE(0, 4, 9),
                        .dtype = CT_F64,
                        .mdtype = CT_F64,
                        .track = true,
                        .sizes = UNEQUAL,
                        .tol = F64_TOL,
                        .steps = 2});
}

DIST_TEST(sync_bn_without_running_stats) {
    run_case(&(bn_case){.shape = CT_SHAPE(0, 3, 4, 4),
                        .dtype = CT_F32,
                        .is2d = true,
                        .affine = true,
                        .sizes = UNEQUAL,
                        .tol = F32_TOL,
                        .steps = 1});
}

/* bfloat16 input, float32 module: statistics in float32, output in bfloat16. */
DIST_TEST(sync_bn2d_bfloat16_input) {
    run_case(&(bn_case){.shape = CT_SHAPE(0, 3, 4, 4),
                        .dtype = CT_BF16,
                        .is2d = true,
                        .affine = true,
                        .track = true,
                        .sizes = EQUAL,
                        .tol = {.rtol = 1.6e-2, .atol = 1.6e-2},
                        .steps = 1});
}

/* float16 input and module (float16 parameters and running statistics). */
DIST_TEST(sync_bn1d_float16_module) {
    run_case(&(bn_case){.shape = CT_SHAPE(0, 3, 5),
                        .dtype = CT_F16,
                        .mdtype = CT_F16,
                        .affine = true,
                        .track = true,
                        .sizes = UNEQUAL,
                        .tol = {.rtol = 2e-3, .atol = 2e-3},
                        .steps = 2});
}

/* ---- convert ---------------------------------------------------------------------- */

/* Sequential(Conv2d, BatchNorm2d, ReLU, Sequential(Flatten, BatchNorm1d(affine=False,
 * momentum=None), Linear)) */
static ct_module *nested_model(void) {
    return ct_sequential(CT_MODULES(
        ct_nn_conv2d(2, 3, CT_DIMS(3)), ct_nn_batch_norm2d(3), ct_nn_relu(),
        ct_sequential(CT_MODULES(ct_nn_flatten(),
                                 ct_nn_batch_norm1d(12, .affine = false, .momentum = CT_NONE),
                                 ct_nn_linear(12, 2)))));
}

DIST_TEST(convert_replaces_every_batch_norm_keeping_tensors_and_keys) {
    ct_module *model = nested_model();
    ct_module_requires_grad_(ct_module_get_submodule(model, "1"), false); /* frozen stays frozen */
    ct_state_dict *before = ct_module_state_dict(model);
    int n = ct_state_dict_len(before);
    ct_tensor *bn_w = ct_module_get_parameter(model, "1.weight"),
              *rv = ct_module_get_buffer(model, "3.1.running_var");
    ct_module_eval(model);
    CHECK(ct_nn_sync_batch_norm_convert(model, NULL) == model);
    CHECK_STR_EQ(ct_module_type(ct_module_get_submodule(model, "1")), "SyncBatchNorm");
    CHECK_STR_EQ(ct_module_type(ct_module_get_submodule(model, "3.1")), "SyncBatchNorm");
    CHECK_STR_EQ(ct_module_type(ct_module_get_submodule(model, "0")), "Conv2d");
    CHECK(!ct_module_is_training(ct_module_get_submodule(model, "1")));
    /* the same tensors under the same keys, in the same order */
    CHECK(ct_module_get_parameter(model, "1.weight") == bn_w);
    CHECK(ct_module_get_buffer(model, "3.1.running_var") == rv);
    CHECK(!ct_requires_grad(bn_w));
    ct_state_dict *after = ct_module_state_dict(model);
    CHECK_INT_EQ(ct_state_dict_len(after), n);
    for (int i = 0; i < n && i < ct_state_dict_len(after); i++) {
        CHECK_STR_EQ(ct_state_dict_key(after, i), ct_state_dict_key(before, i));
        CHECK(ct_data_ptr(ct_state_dict_value(after, i)) ==
              ct_data_ptr(ct_state_dict_value(before, i)));
    }
    char *s = ct_module_to_string(model);
    CHECK(s && strstr(s, "(1): SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, "
                         "track_running_stats=True)"));
    CHECK(s && strstr(s, "(1): SyncBatchNorm(12, eps=1e-05, momentum=None, affine=False, "
                         "track_running_stats=True)"));
    free(s);
}

DIST_TEST(convert_of_a_batch_norm_returns_a_new_module) {
    ct_module *bn =
        ct_nn_batch_norm1d(4, .eps = 1e-3, .momentum = CT_SOME(0.3), .track_running_stats = false);
    ct_module *sync = ct_nn_sync_batch_norm_convert(bn, NULL);
    CHECK(sync && sync != bn);
    CHECK_STR_EQ(ct_module_type(bn), "BatchNorm1d");
    CHECK_STR_EQ(ct_module_type(sync), "SyncBatchNorm");
    CHECK(ct_module_get_parameter(sync, "bias") == ct_module_get_parameter(bn, "bias"));
    CHECK(!ct_module_get_buffer(sync, "running_mean"));
    char *s = ct_module_to_string(sync);
    CHECK_STR_EQ(
        s, "SyncBatchNorm(4, eps=0.001, momentum=0.3, affine=True, track_running_stats=False)");
    free(s);
    CHECK_ERROR(ct_nn_sync_batch_norm_convert(NULL, NULL), "NULL");
}

/* A model without BatchNorm comes back unchanged. */
DIST_TEST(convert_without_batch_norm) {
    ct_module *m = ct_sequential(CT_MODULES(ct_nn_linear(3, 4), ct_nn_relu()));
    CHECK(ct_nn_sync_batch_norm_convert(m, NULL) == m);
    CHECK_STR_EQ(ct_module_type(ct_module_get_submodule(m, "0")), "Linear");
}

/* ---- modes, groups, errors -------------------------------------------------------- */

/* Eval mode is BatchNorm's eval with the same running statistics, bitwise, without
 * communication (the ranks' inputs differ). */
DIST_TEST(eval_mode_is_batch_norm) {
    ct_module *bn = ct_nn_batch_norm2d(3);
    set_affine(bn, 3);
    CT_NO_GRAD {
        ct_copy_(ct_module_get_buffer(bn, "running_mean"),
                 ct_tensor_f32(((float[]){0.5f, -1, 2}), CT_SHAPE(3)));
        ct_copy_(ct_module_get_buffer(bn, "running_var"),
                 ct_tensor_f32(((float[]){0.25f, 4, 1.5f}), CT_SHAPE(3)));
    }
    ct_module *sync = ct_nn_sync_batch_norm_convert(ct_nn_batch_norm2d(3), NULL);
    CHECK(ct_load_state_dict(sync, ct_module_state_dict(bn)) == 0);
    ct_module_eval(bn);
    ct_module_eval(sync);
    ct_tensor *x =
        batch(CT_SHAPE(1 + ct_dist_rank(), 3, 2, 2), 7 + (uint64_t)ct_dist_rank(), CT_F32);
    CHECK_INT_EQ(ct_test_max_diff(ct_forward(sync, x), ct_forward(bn, x)) == 0, 1);
    CHECK_INT_EQ(ct_item_int(ct_module_get_buffer(sync, "num_batches_tracked")), 0);
}

/* A group of one rank (and the ranks outside it) normalize their own slice: BatchNorm
 * itself, bitwise. */
DIST_TEST(group_of_one_is_batch_norm) {
    int zero = 0;
    ct_process_group *g = ct_dist_new_group(&zero, 1);
    CHECK(g != NULL);
    ct_module *bn = ct_nn_batch_norm2d(3), *ref = ct_nn_batch_norm2d(3);
    set_affine(bn, 3);
    set_affine(ref, 3);
    ct_module *sync = ct_nn_sync_batch_norm_convert(bn, g);
    ct_tensor *x =
        batch(CT_SHAPE(2 + ct_dist_rank(), 3, 3, 2), 11 + (uint64_t)ct_dist_rank(), CT_F32);
    ct_tensor *xa = ct_detach(ct_clone(x)), *xb = ct_detach(ct_clone(x));
    ct_set_requires_grad(xa, true);
    ct_set_requires_grad(xb, true);
    ct_tensor *ya = ct_forward(ref, xa), *yb = ct_forward(sync, xb);
    CHECK(ct_test_max_diff(ya, yb) == 0);
    CHECK(ct_backward(ct_sum(ct_mul(ya, x))) == 0 && ct_backward(ct_sum(ct_mul(yb, x))) == 0);
    CHECK(ct_test_max_diff(ct_grad(xa), ct_grad(xb)) == 0);
    CHECK(ct_test_max_diff(ct_grad(ct_module_get_parameter(ref, "weight")),
                           ct_grad(ct_module_get_parameter(sync, "weight"))) == 0);
    CHECK(ct_test_max_diff(ct_module_get_buffer(ref, "running_var"),
                           ct_module_get_buffer(sync, "running_var")) == 0);
}

/* With 3 ranks, group {0, 2}: ranks 0 and 2 share statistics, rank 1 is on its own. */
DIST_TEST(sub_group_synchronises_its_ranks_only) {
    if (ct_dist_world_size() < 3) return;
    int ranks[2] = {0, 2}, r = ct_dist_rank();
    ct_process_group *g = ct_dist_new_group(ranks, 2);
    CHECK(g != NULL);
    ct_tensor *x = batch(CT_SHAPE(7, 2, 3), 5, CT_F64);
    /* rank 0: rows [0, 3), rank 2: rows [3, 7); rank 1: all of them, alone */
    int64_t off = r == 2 ? 3 : 0, len = r == 0 ? 3 : r == 2 ? 4 : 7;
    ct_module *ref = ct_nn_batch_norm1d(2, .dtype = CT_F64);
    ct_module *sync = ct_nn_sync_batch_norm_convert(ct_nn_batch_norm1d(2, .dtype = CT_F64), g);
    ct_tensor *ya = ct_forward(ref, x), *yb = ct_forward(sync, ct_narrow(x, 0, off, len));
    CHECK(
        CHECK_TENSOR_CLOSE("output", yb, ct_narrow(ya, 0, off, len), .rtol = 1e-12, .atol = 1e-12));
    CHECK(CHECK_TENSOR_CLOSE("running_var", ct_module_get_buffer(sync, "running_var"),
                             ct_module_get_buffer(ref, "running_var"), .rtol = 1e-12,
                             .atol = 1e-12));
}

DIST_TEST(input_errors) {
    ct_module *sync = ct_nn_sync_batch_norm_convert(ct_nn_batch_norm1d(3), NULL);
    CHECK_ERROR(ct_forward(sync, ct_zeros(CT_SHAPE(3))),
                "expected at least 2D input (got 1D input)");
    CHECK_ERROR(ct_forward(sync, ct_zeros(CT_SHAPE(4, 0))),
                "SyncBatchNorm number of input channels should be non-zero");
    /* one value per channel over the whole group: an error on every rank */
    ct_tensor *one = ct_zeros(CT_SHAPE(ct_dist_rank() == 0 ? 1 : 0, 3));
    CHECK_ERROR(ct_forward(sync, one), "Expected more than 1 value per channel when training");
    CHECK_ERROR(ct_forward(sync, ct_zeros(CT_SHAPE(4, 2))),
                "running_mean should contain 2 elements not 3");
}

/* A non-contiguous input (a channels-last view), with frozen affine parameters: the
 * input gradient is still the whole batch's. */
DIST_TEST(non_contiguous_input_and_frozen_affine) {
    int64_t off, len;
    int64_t total = my_slice(UNEQUAL, &off, &len);
    ct_tensor *x = ct_permute(batch(CT_SHAPE(total, 4, 3, 2), 31, CT_F64),
                              CT_DIMS(0, 3, 1, 2)); /* [N, 2, 4, 3] */
    ct_module *ref = ct_nn_batch_norm2d(2, .dtype = CT_F64);
    ct_module *sync = ct_nn_sync_batch_norm_convert(ct_nn_batch_norm2d(2, .dtype = CT_F64), NULL);
    set_affine(ref, 2);
    set_affine(sync, 2);
    ct_module_requires_grad_(ref, false);
    ct_module_requires_grad_(sync, false);
    ct_tensor *xa = ct_detach(x), *xb = ct_detach(ct_narrow(x, 0, off, len));
    CHECK(!ct_is_contiguous(xb));
    ct_set_requires_grad(xa, true);
    ct_set_requires_grad(xb, true);
    ct_tensor *ya = ct_forward(ref, xa), *yb = ct_forward(sync, xb);
    ct_tensor *g = ct_sin(ct_arange(ct_numel(ya), .dtype = CT_F64));
    g = ct_reshape(g, ct_shape_of(ya));
    CHECK(ct_backward(ct_sum(ct_mul(ya, g))) == 0);
    CHECK(ct_backward(ct_sum(ct_mul(yb, ct_narrow(g, 0, off, len)))) == 0);
    CHECK(
        CHECK_TENSOR_CLOSE("output", yb, ct_narrow(ya, 0, off, len), .rtol = 1e-12, .atol = 1e-12));
    CHECK(CHECK_TENSOR_CLOSE("input gradient", ct_grad(xb), ct_narrow(ct_grad(xa), 0, off, len),
                             .rtol = 1e-12, .atol = 1e-12));
    CHECK(!ct_grad(ct_module_get_parameter(sync, "weight")));
}

DIST_TEST(double_backward_is_refused) {
    if (ct_dist_world_size() == 1) return; /* BatchNorm itself: differentiable twice */
    ct_module *sync = ct_nn_sync_batch_norm_convert(ct_nn_batch_norm1d(2), NULL);
    ct_tensor *x = ct_randn(CT_SHAPE(3, 2), .requires_grad = true);
    ct_tensor *y = ct_forward(sync, x);
    ct_tensor *gx, *go = ct_ones_like(y);
    CHECK_ERROR(ct_autograd_grad(1, &y, 1, &x, &gx, .grad_outputs = &go, .create_graph = true),
                "double backward");
}

/* Ranks whose inputs disagree in channels fail together, with the collective's error,
 * instead of hanging. */
DIST_TEST(channel_mismatch_across_ranks_fails_on_every_rank) {
    if (ct_dist_world_size() == 1) return;
    int64_t c = ct_dist_rank() == 0 ? 3 : 2;
    ct_module *sync = ct_nn_sync_batch_norm_convert(ct_nn_batch_norm1d(c), NULL);
    CHECK_ERROR(ct_forward(sync, ct_randn(CT_SHAPE(4, c))),
                "SyncBatchNorm: gathering the statistics of");
    CHECK_ERROR(ct_forward(sync, ct_randn(CT_SHAPE(4, c))), "has shape");
}

/* A data-parallel step as DDP takes it: each rank's loss is the mean over its slice
 * (equal slices), and every gradient is averaged over the ranks.  The gradients of
 * the convolution before the SyncBatchNorm (reached through the synchronised input
 * gradient), of SyncBatchNorm's affine parameters and of the linear layer after it
 * all equal those of the mean loss over the whole batch on one process. */
static ct_module *bn_net(void) {
    ct_manual_seed(42);
    return ct_sequential(CT_MODULES(ct_nn_conv2d(2, 4, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_batch_norm2d(4), ct_nn_relu(), ct_nn_flatten(),
                                    ct_nn_linear(4 * 5 * 5, 3)));
}

DIST_TEST(data_parallel_gradients_equal_the_whole_batch) {
    int64_t off, len;
    int64_t total = my_slice(EQUAL, &off, &len);
    ct_module *ref = bn_net(), *net = ct_nn_sync_batch_norm_convert(bn_net(), NULL);
    CHECK_STR_EQ(ct_module_type(ct_module_get_submodule(net, "1")), "SyncBatchNorm");
    ct_tensor *x = batch(CT_SHAPE(total, 2, 5, 5), 77, CT_F64);
    ct_tensor *target = ct_to(batch(CT_SHAPE(total, 3), 78, CT_F64), .dtype = CT_F32);
    x = ct_to(x, .dtype = CT_F32);
    CHECK(ct_backward(ct_mse_loss(ct_forward(ref, x), target)) == 0);
    CHECK(ct_backward(ct_mse_loss(ct_forward(net, ct_narrow(x, 0, off, len)),
                                  ct_narrow(target, 0, off, len))) == 0);
    const char *names[16];
    ct_tensor *pa[16], *pb[16];
    int n = ct_named_parameters(ref, names, pa, 16);
    CHECK_INT_EQ(ct_named_parameters(net, NULL, pb, 16), n);
    for (int i = 0; i < n; i++) {
        ct_tensor *g = ct_clone(ct_grad(pb[i]));
        CHECK(ct_dist_all_reduce(g, .op = CT_DIST_AVG) == 0);
        CHECK(CHECK_TENSOR_CLOSE(names[i], g, ct_grad(pa[i]), .rtol = 1e-5, .atol = 1e-6,
                                 .atol_of_max = true));
    }
}
