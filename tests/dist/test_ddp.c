/* DistributedDataParallel's behaviour on 1, 2 or 3 ranks: what construction checks
 * and sends, gradients averaged against one process on the global batch, no_sync,
 * unused parameters (PyTorch's error, and find_unused_parameters), buckets, buffers,
 * state dict keys, modules with several outputs, stats. */
#include "ddp_test_util.h"

/* The data of these tests: 32 rows of 20 features per rank and step. */
enum { BATCH = 32, N = 4 * BATCH * 3 };

typedef struct {
    ct_tensor *x, *y;
} data;

static data make_rows(void) {
    data d;
    make_data(N, CT_SHAPE(20), 5, &d.x, &d.y);
    return d;
}

/* Cross entropy of m on rows idx; the backward into .grad. */
static double loss_backward(ct_module *m, data d, ct_tensor *idx, double scale) {
    ct_tensor *loss =
        ct_cross_entropy(ct_forward(m, ct_index_select(d.x, 0, idx)), ct_index_select(d.y, 0, idx));
    CHECK(ct_backward(ct_mul_scalar(loss, scale)) == 0);
    return ct_item(loss);
}

/* The ranks' step `step` (this rank's rows / every rank's rows). */
static ct_tensor *rows(int step, bool all) {
    return batch_indices(N, (int64_t)step * BATCH, BATCH, all);
}

/* ---- construction ---------------------------------------------------------------- */

DIST_TEST(construction_sends_rank0_parameters_and_buffers) {
    ct_manual_seed(10 + (uint64_t)rank());
    ct_module *model = ct_sequential(CT_MODULES(ct_nn_linear(20, 8), ct_nn_batch_norm1d(8)));
    CT_NO_GRAD ct_fill_(ct_module_get_buffer(model, "1.running_mean"), rank() + 1.0);
    ct_tensor *mine = ct_clone(flat_params(model));
    ct_module *ddp = ct_ddp(model);
    CHECK(ddp != NULL && ct_ddp_module(ddp) == model);
    CHECK(same_on_every_rank(flat_params(model)));
    if (rank() == 0) CHECK(ct_test_max_diff(flat_params(model), mine) == 0);
    if (rank() > 0) CHECK(ct_test_max_diff(flat_params(model), mine) > 0);
    ct_tensor *rm = ct_module_get_buffer(model, "1.running_mean");
    CHECK(same_on_every_rank(rm));
    CHECK_CLOSE(ct_item(ct_amax(rm)), 1, 0);
    CHECK_STR_EQ(ct_module_type(ddp), "DistributedDataParallel");
}

/* The last rank's model differs; every rank gets the same error, and the ranks are
 * still in step for the next collective. */
DIST_TEST(mismatched_models_fail_on_every_rank) {
    if (world() == 1) return;
    bool odd = rank() == world() - 1;
    char want[160];
    snprintf(want, sizeof want,
             "ct_ddp: parameter '0.weight' has shape [10, 32] on rank %d but [10, 64] on rank 0",
             world() - 1);
    CHECK_ERROR(ct_ddp(ct_sequential(CT_MODULES(ct_nn_linear(odd ? 32 : 64, 10)))), want);
    snprintf(want, sizeof want,
             "ct_ddp: DDP expects the same model on every rank, but rank %d has parameter 1.weight "
             "where rank 0 has nothing",
             world() - 1);
    ct_module *m = odd ? ct_sequential(CT_MODULES(ct_nn_linear(4, 4), ct_nn_linear(4, 4)))
                       : ct_sequential(CT_MODULES(ct_nn_linear(4, 4)));
    CHECK_ERROR(ct_ddp(m), want);
    snprintf(want, sizeof want,
             "ct_ddp: parameter '0.weight' has dtype float64 on rank %d but float32 on rank 0",
             world() - 1);
    m = ct_sequential(CT_MODULES(ct_nn_linear(4, 4)));
    if (odd) CHECK(ct_module_to(m, .dtype = CT_F64) == 0);
    CHECK_ERROR(ct_ddp(m), want);
    snprintf(want, sizeof want,
             "ct_ddp: parameter '0.bias' has requires_grad=False on rank %d but "
             "requires_grad=True on rank 0",
             world() - 1);
    m = ct_sequential(CT_MODULES(ct_nn_linear(4, 4)));
    if (odd) CHECK(ct_set_requires_grad(ct_module_get_parameter(m, "0.bias"), false) == 0);
    CHECK_ERROR(ct_ddp(m), want);
    snprintf(want, sizeof want,
             "ct_ddp: buffer '1.running_mean' has shape [3] on rank %d but [4] on rank 0",
             world() - 1);
    m = ct_sequential(CT_MODULES(ct_nn_linear(4, 4), ct_nn_batch_norm1d(4)));
    if (odd) CHECK(ct_module_set_tensor(m, "1.running_mean", ct_zeros(CT_SHAPE(3))) == 0);
    CHECK_ERROR(ct_ddp(m), want);
    ct_tensor *one = ct_ones(CT_SHAPE(1));
    CHECK(ct_dist_all_reduce(one) == 0);
    CHECK_CLOSE(ct_item(one), world(), 0);
}

/* ---- gradients ---------------------------------------------------------------- */

/* The gradients of a DDP backward on this rank's rows equal one process's on every
 * rank's rows, and are bitwise the same on every rank. */
static void check_grads_against_reference(ct_module *ddp, ct_module *ref, data d, int step,
                                          double tol) {
    loss_backward(ddp, d, rows(step, false), 1);
    loss_backward(ref, d, rows(step, true), 1);
    ct_tensor *g = flat_grads(ddp);
    CHECK(rel_diff(g, flat_grads(ref)) <= tol);
    CHECK(same_on_every_rank(g));
}

DIST_TEST(gradients_are_averaged) {
    data d = make_rows();
    ct_module *ddp = ct_ddp(make_mlp());
    ct_module *ref = copy_model(ct_ddp_module(ddp), make_mlp);
    check_grads_against_reference(ddp, ref, d, 0, 1e-6);
    ct_ddp_stats st = ct_ddp_get_stats(ddp, true);
    CHECK_INT_EQ(st.steps, 1);
    CHECK_INT_EQ(st.buckets, 1); /* 1,002 floats: one bucket */
    CHECK_INT_EQ(st.bytes, 4 * ct_module_num_parameters(ddp, true));
    CHECK_INT_EQ(ct_ddp_get_stats(ddp, false).steps, 0); /* reset */
}

/* Parameters that do not require grad are broadcast but not reduced: no slot, no
 * hook, their .grad stays NULL. */
DIST_TEST(frozen_parameters_are_left_out) {
    data d = make_rows();
    ct_manual_seed(20 + (uint64_t)rank());
    ct_module *model = make_mlp();
    ct_module_requires_grad_(ct_module_get_submodule(model, "0"), false);
    ct_module *ddp = ct_ddp(model);
    CHECK(same_on_every_rank(flat_params(ddp)));
    ct_module *ref = copy_model(model, make_mlp);
    ct_module_requires_grad_(ct_module_get_submodule(ref, "0"), false);
    check_grads_against_reference(ddp, ref, d, 0, 1e-6);
    CHECK(ct_grad(ct_module_get_parameter(model, "0.weight")) == NULL);
    ct_ddp_stats st = ct_ddp_get_stats(ddp, false);
    CHECK_INT_EQ(st.steps, 1);
    CHECK_INT_EQ(st.bytes, 4 * (32 * 10 + 10));
}

/* DDP over ranks 0 and 1 of three: their gradients are the average of theirs; rank 2
 * is refused. */
DIST_TEST(over_a_group) {
    if (world() < 3) return;
    data d = make_rows();
    const int members[] = {0, 1};
    ct_process_group *g = ct_dist_new_group(members, 2);
    CHECK(g != NULL);
    if (rank() == 2) {
        CHECK_ERROR(ct_ddp(make_mlp(), .group = g),
                    "ct_ddp: this process is not a member of the group");
        return;
    }
    ct_module *ddp = ct_ddp(make_mlp(), .group = g);
    ct_module *ref = copy_model(ct_ddp_module(ddp), make_mlp);
    loss_backward(ddp, d, rows(0, false), 1);
    loss_backward(ref, d, ct_narrow(rows(0, true), 0, 0, 2 * BATCH), 1); /* ranks 0 and 1's rows */
    CHECK(rel_diff(flat_grads(ddp), flat_grads(ref)) <= 1e-6);
}

/* A 4-layer MLP in buckets of 2 KiB equals the same in one bucket, bit for bit. */
static ct_module *make_deep_mlp(void) {
    return ct_sequential(CT_MODULES(ct_nn_linear(20, 32), ct_nn_relu(), ct_nn_linear(32, 32),
                                    ct_nn_relu(), ct_nn_linear(32, 32), ct_nn_relu(),
                                    ct_nn_linear(32, 10)));
}

DIST_TEST(small_buckets_equal_one_bucket) {
    data d = make_rows();
    ct_module *many = ct_ddp(make_deep_mlp(), .bucket_cap_mb = 2.0 / 1024);
    ct_module *one = ct_ddp(copy_model(ct_ddp_module(many), make_deep_mlp), .bucket_cap_mb = 1000);
    ct_tensor *pm[16], *po[16];
    int n = ct_parameters(many, pm, 16);
    CHECK_INT_EQ(ct_parameters(one, po, 16), n);
    ct_optim *om = ct_sgd(pm, n, .lr = CT_SOME(0.1)), *oo = ct_sgd(po, n, .lr = CT_SOME(0.1));
    for (int step = 0; step < 3; step++) {
        CT_SCOPE {
            ct_zero_grad(om);
            ct_zero_grad(oo);
            loss_backward(many, d, rows(step, false), 1);
            loss_backward(one, d, rows(step, false), 1);
            CHECK(ct_step(om) == 0 && ct_step(oo) == 0);
        }
    }
    CHECK(ct_test_max_diff(flat_params(many), flat_params(one)) == 0);
    CHECK(same_on_every_rank(flat_params(many)));
    /* in reverse order, closed once at 2 KiB: 10+320+32+1,024 floats, 32+1,024, 32+640 */
    ct_ddp_stats sm = ct_ddp_get_stats(many, false), so = ct_ddp_get_stats(one, false);
    CHECK_INT_EQ(sm.buckets, 3 * 3);
    CHECK_INT_EQ(so.buckets, 3);
    CHECK_INT_EQ(sm.bytes, so.bytes);
}

/* Two micro-batches under no_sync (each loss halved), the second synchronised, equal
 * one synchronised step on both; the first leaves each rank its own gradient. */
DIST_TEST(no_sync_accumulates_then_synchronises) {
    data d = make_rows();
    ct_module *acc = ct_ddp(make_mlp());
    ct_module *big = ct_ddp(copy_model(ct_ddp_module(acc), make_mlp));
    CT_DDP_NO_SYNC(acc) { loss_backward(acc, d, rows(0, false), 0.5); }
    CHECK_INT_EQ(ct_ddp_get_stats(acc, false).buckets, 0);
    if (world() > 1) CHECK(!same_on_every_rank(flat_grads(acc)));
    loss_backward(acc, d, rows(1, false), 0.5);
    CHECK_INT_EQ(ct_ddp_get_stats(acc, false).steps, 1);
    /* the same rows as one batch of 64 per rank */
    ct_tensor *both = ct_cat(2, (ct_tensor *[]){rows(0, false), rows(1, false)}, 0);
    loss_backward(big, d, both, 1);
    CHECK(rel_diff(flat_grads(acc), flat_grads(big)) <= 1e-6);
    CHECK(same_on_every_rank(flat_grads(acc)));
    /* nested blocks restore the outer state */
    CT_DDP_NO_SYNC(acc) {
        CT_DDP_NO_SYNC(acc) {}
        loss_backward(acc, d, rows(2, false), 1);
    }
    CHECK_INT_EQ(ct_ddp_get_stats(acc, false).steps, 1);
}

/* ---- unused parameters ---------------------------------------------------------- */

/* Two heads on one input; head b is used on the ranks that set use_b. */
typedef struct {
    ct_module *a, *b;
    bool use_b;
} two_heads;

static ct_tensor *two_heads_forward(ct_module *m, ct_tensor *x) {
    two_heads *s = ct_module_state(m);
    ct_tensor *y = ct_forward(s->a, x);
    return s->use_b ? ct_add(y, ct_forward(s->b, x)) : y;
}
static const ct_module_class TWO_HEADS = {.name = "TwoHeads", .forward = two_heads_forward};

static ct_module *make_two_heads(void) {
    ct_module *m = ct_module_new(&TWO_HEADS, sizeof(two_heads));
    two_heads *s = ct_module_state(m);
    s->a = ct_module_add(m, "a", ct_nn_linear(20, 10));
    s->b = ct_module_add(m, "b", ct_nn_linear(20, 10));
    return m;
}

DIST_TEST(unused_parameter_fails_the_next_forward) {
    data d = make_rows();
    ct_module *ddp = ct_ddp(make_two_heads());
    ct_tensor *idx = rows(0, false);
    ct_tensor *loss = ct_cross_entropy(ct_forward(ddp, ct_index_select(d.x, 0, idx)),
                                       ct_index_select(d.y, 0, idx));
    CHECK(ct_backward(loss, .retain_graph = true) == 0); /* b got no gradient: unfinished */
    CHECK_INT_EQ(ct_ddp_get_stats(ddp, false).steps, 0);
    CHECK_ERROR(ct_backward(loss), "ct_ddp: Expected to mark a variable ready only once.");
    char want[128];
    snprintf(want, sizeof want, "Parameter indices which did not receive grad for rank %d: 2 3",
             rank());
    CHECK_ERROR(ct_forward(ddp, d.x),
                "ct_ddp: Expected to have finished reduction in the prior iteration "
                "before starting a new one. This error indicates that your module "
                "has parameters that were not used in producing loss. You can "
                "enable unused parameter detection by passing the keyword "
                "argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`");
    CHECK_ERROR(ct_forward(ddp, d.x), want);
    CHECK_ERROR(ct_forward(ddp, d.x), "Parameters which did not receive grad for rank");
    CHECK_ERROR(ct_forward(ddp, d.x), "b.weight, b.bias");
    CT_NO_GRAD CHECK(ct_forward(ddp, d.x) != NULL); /* no backward to prepare: no check */
}

/* With find_unused_parameters: b unused everywhere keeps .grad NULL; a's gradient is
 * the average, step after step. */
DIST_TEST(find_unused_parameters_skips_what_no_rank_used) {
    data d = make_rows();
    ct_module *ddp = ct_ddp(make_two_heads(), .find_unused_parameters = true);
    ct_module *ref = copy_model(ct_ddp_module(ddp), make_two_heads);
    ct_tensor *ps[4];
    ct_named_parameters(ddp, NULL, ps, 4);
    for (int step = 0; step < 2; step++) {
        CT_SCOPE {
            ct_module_zero_grad(ddp);
            ct_module_zero_grad(ref);
            loss_backward(ddp, d, rows(step, false), 1);
            loss_backward(ref, d, rows(step, true), 1);
            CHECK(ct_grad(ps[2]) == NULL && ct_grad(ps[3]) == NULL);
            ct_tensor *ra = ct_module_get_parameter(ref, "a.weight");
            CHECK(rel_diff(ct_grad(ps[0]), ct_grad(ra)) <= 1e-6);
            CHECK(same_on_every_rank(ct_grad(ps[0])));
        }
    }
    CHECK_INT_EQ(ct_ddp_get_stats(ddp, false).steps, 2);
}

/* b used on rank 0 only: every rank's b.grad is rank 0's gradient / world, rank 1's
 * (which had none) included. */
DIST_TEST(find_unused_parameters_averages_what_some_rank_used) {
    data d = make_rows();
    ct_module *model = make_two_heads();
    ((two_heads *)ct_module_state(model))->use_b = rank() == 0;
    ct_module *ddp = ct_ddp(model, .find_unused_parameters = true);
    ct_module *solo = copy_model(model, make_two_heads); /* rank 0's forward, on its rows */
    ((two_heads *)ct_module_state(solo))->use_b = true;
    loss_backward(ddp, d, rows(0, false), 1);
    ct_tensor *b = ct_module_get_parameter(model, "b.weight");
    CHECK(ct_grad(b) != NULL);
    CHECK(same_on_every_rank(ct_grad(b)));
    ct_tensor *idx0 = ct_narrow(rows(0, true), 0, 0, BATCH);
    loss_backward(solo, d, idx0, 1.0 / world());
    ct_tensor *want = ct_grad(ct_module_get_parameter(solo, "b.weight"));
    if (rank() == 0) CHECK(rel_diff(ct_grad(b), want) <= 1e-6);
}

/* ---- buffers, eval, state dict, several outputs ---------------------------------- */

static ct_module *make_bn_model(void) {
    return ct_sequential(
        CT_MODULES(ct_nn_linear(20, 8), ct_nn_batch_norm1d(8), ct_nn_linear(8, 10)));
}

DIST_TEST(buffers_are_broadcast_at_each_forward) {
    data d = make_rows();
    ct_module *ddp = ct_ddp(make_bn_model());
    ct_module *off =
        ct_ddp(copy_model(ct_ddp_module(ddp), make_bn_model), .broadcast_buffers = false);
    ct_tensor *rm = ct_module_get_buffer(ddp, "module.1.running_mean");
    ct_tensor *rm_off = ct_module_get_buffer(off, "module.1.running_mean");
    CHECK(rm && rm_off);
    /* each rank's rows move its running stats its own way */
    loss_backward(ddp, d, rows(0, false), 1);
    loss_backward(off, d, rows(0, false), 1);
    ct_tensor *rank0 = ct_clone(rm);
    if (world() > 1) CHECK(!same_on_every_rank(rm));
    ct_module_eval(ddp);
    ct_module_eval(off);
    CT_NO_GRAD {
        CHECK(ct_forward(ddp, d.x) != NULL); /* receives rank 0's first */
        CHECK(ct_forward(off, d.x) != NULL);
    }
    CHECK(same_on_every_rank(rm));
    CHECK(same_on_every_rank(ct_module_get_buffer(ddp, "module.1.num_batches_tracked")));
    if (rank() == 0) CHECK(ct_test_max_diff(rm, rank0) == 0);
    if (world() > 1) CHECK(!same_on_every_rank(rm_off));
}

DIST_TEST(eval_mode_backward_does_not_synchronise) {
    data d = make_rows();
    ct_module *ddp = ct_ddp(make_mlp());
    ct_module_eval(ddp);
    loss_backward(ddp, d, rows(0, false), 1);
    CHECK_INT_EQ(ct_ddp_get_stats(ddp, false).steps, 0);
    if (world() > 1) CHECK(!same_on_every_rank(flat_grads(ddp)));
    ct_module_train(ddp, true);
    ct_module_zero_grad(ddp);
    loss_backward(ddp, d, rows(0, false), 1);
    CHECK_INT_EQ(ct_ddp_get_stats(ddp, false).steps, 1);
    CHECK(same_on_every_rank(flat_grads(ddp)));
}

DIST_TEST(state_dict_keys_and_repr) {
    ct_module *ddp = ct_ddp(make_mlp());
    char *repr = ct_module_to_string(ddp); /* PyTorch 1.13's repr(DDP(model)) */
    CHECK_STR_EQ(repr, "DistributedDataParallel(\n"
                       "  (module): Sequential(\n"
                       "    (0): Linear(in_features=20, out_features=32, bias=True)\n"
                       "    (1): ReLU()\n"
                       "    (2): Linear(in_features=32, out_features=10, bias=True)\n"
                       "  )\n"
                       ")");
    free(repr);
    ct_state_dict *wrapped = ct_module_state_dict(ddp),
                  *plain = ct_module_state_dict(ct_ddp_module(ddp));
    CHECK_INT_EQ(ct_state_dict_len(wrapped), 4);
    CHECK_STR_EQ(ct_state_dict_key(wrapped, 0), "module.0.weight");
    CHECK_STR_EQ(ct_state_dict_key(plain, 0), "0.weight");
    CHECK_STR_EQ(ct_state_dict_key(plain, 3), "2.bias");
    ct_module *other = make_mlp();
    CHECK(ct_load_state_dict(other, plain) == 0); /* a plain model loads what ct_ddp_module saved */
    CHECK(ct_load_state_dict(ddp, wrapped) == 0);
    CHECK_ERROR(ct_load_state_dict(other, wrapped), "module.0.weight");
    CHECK_ERROR(ct_ddp_module(other), "expected a DistributedDataParallel module");
    CHECK_ERROR(ct_ddp_get_stats(other, false).steps == 0 ? -1 : 0,
                "expected a DistributedDataParallel");
}

/* A module with two outputs: ct_forward_multi through the wrapper, the loss on both. */
typedef struct {
    ct_module *trunk, *h1, *h2;
} forked;

static int forked_forward(ct_module *m, int n_in, ct_tensor *const *in, ct_tensor **out,
                          int max_out) {
    forked *s = ct_module_state(m);
    if (n_in != 1 || max_out < 2) return -1;
    ct_tensor *h = ct_relu(ct_forward(s->trunk, in[0]));
    out[0] = ct_forward(s->h1, h);
    out[1] = ct_forward(s->h2, h);
    return 2;
}
static const ct_module_class FORKED = {.name = "Forked", .forward_multi = forked_forward};

static ct_module *make_forked(void) {
    ct_module *m = ct_module_new(&FORKED, sizeof(forked));
    forked *s = ct_module_state(m);
    s->trunk = ct_module_add(m, "trunk", ct_nn_linear(20, 16));
    s->h1 = ct_module_add(m, "h1", ct_nn_linear(16, 10));
    s->h2 = ct_module_add(m, "h2", ct_nn_linear(16, 3));
    return m;
}

static void forked_backward(ct_module *m, data d, ct_tensor *idx) {
    ct_tensor *out[2];
    CHECK_INT_EQ(ct_forward_multi(m, 1, (ct_tensor *[]){ct_index_select(d.x, 0, idx)}, out, 2), 2);
    ct_tensor *loss = ct_add(ct_cross_entropy(out[0], ct_index_select(d.y, 0, idx)),
                             ct_mean(ct_mul(out[1], out[1])));
    CHECK(ct_backward(loss) == 0);
}

DIST_TEST(several_outputs) {
    data d = make_rows();
    for (int find_unused = 0; find_unused < 2; find_unused++) {
        CT_SCOPE {
            ct_module *ddp = ct_ddp(make_forked(), .find_unused_parameters = find_unused);
            ct_module *ref = copy_model(ct_ddp_module(ddp), make_forked);
            forked_backward(ddp, d, rows(0, false));
            forked_backward(ref, d, rows(0, true));
            CHECK(rel_diff(flat_grads(ddp), flat_grads(ref)) <= 1e-6);
            CHECK(same_on_every_rank(flat_grads(ddp)));
            forked_backward(ddp, d, rows(1, false)); /* the previous reduction finished */
            CHECK_INT_EQ(ct_ddp_get_stats(ddp, false).steps, 2);
        }
    }
    /* An output left out of the loss: its head is reached by the graph, so even
     * find_unused_parameters cannot tell, and the next forward says so. */
    ct_module *ddp = ct_ddp(make_forked(), .find_unused_parameters = true);
    ct_tensor *out[2], *idx = rows(0, false);
    CHECK_INT_EQ(ct_forward_multi(ddp, 1, (ct_tensor *[]){ct_index_select(d.x, 0, idx)}, out, 2),
                 2);
    CHECK(ct_backward(ct_cross_entropy(out[0], ct_index_select(d.y, 0, idx))) == 0);
    CHECK_ERROR(ct_forward_multi(ddp, 1, (ct_tensor *[]){d.x}, out, 2),
                "Since `find_unused_parameters=True` is enabled, this likely  means that not all "
                "`forward` outputs participate in computing loss. You can fix this by making sure "
                "all `forward` function outputs participate in calculating loss.");
    CHECK_ERROR(ct_forward_multi(ddp, 1, (ct_tensor *[]){d.x}, out, 2), "h2.weight, h2.bias");
}

/* Parameters of two dtypes: a bucket per dtype, each reduced in its own. */
typedef struct {
    ct_module *a, *b;
} mixed;

static ct_tensor *mixed_forward(ct_module *m, ct_tensor *x) {
    mixed *s = ct_module_state(m);
    ct_tensor *b = ct_forward(s->b, ct_to(x, .dtype = CT_F64));
    return ct_add(ct_forward(s->a, x), ct_to(b, .dtype = CT_F32));
}
static const ct_module_class MIXED = {.name = "Mixed", .forward = mixed_forward};

static ct_module *make_mixed(void) {
    ct_module *m = ct_module_new(&MIXED, sizeof(mixed));
    mixed *s = ct_module_state(m);
    s->a = ct_module_add(m, "a", ct_nn_linear(20, 10));
    s->b = ct_module_add(m, "b", ct_nn_linear(20, 10));
    CHECK(ct_module_to(s->b, .dtype = CT_F64) == 0);
    return m;
}

DIST_TEST(a_bucket_per_dtype) {
    data d = make_rows();
    ct_module *ddp = ct_ddp(make_mixed());
    ct_module *ref = copy_model(ct_ddp_module(ddp), make_mixed);
    loss_backward(ddp, d, rows(0, false), 1);
    loss_backward(ref, d, rows(0, true), 1);
    const char *names[] = {"a.weight", "a.bias", "b.weight", "b.bias"};
    for (int i = 0; i < 4; i++) {
        ct_tensor *g = ct_grad(ct_module_get_parameter(ct_ddp_module(ddp), names[i]));
        CHECK(g && ct_dtype_of(g) == (i < 2 ? CT_F32 : CT_F64));
        CHECK(rel_diff(g, ct_grad(ct_module_get_parameter(ref, names[i]))) <= 1e-6);
        CHECK(same_on_every_rank(g));
    }
    ct_ddp_stats st = ct_ddp_get_stats(ddp, false);
    CHECK_INT_EQ(st.buckets, 2);
    CHECK_INT_EQ(st.bytes, 210 * 4 + 210 * 8);
}
