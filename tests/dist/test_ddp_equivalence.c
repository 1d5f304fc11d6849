/* DDP equals one process on the global batch: 20 SGD and 20 Adam steps of the MLP and
 * of the demo CNN, each rank on its DistributedSampler share (batch 32), against a
 * single-process model trained on every rank's batch at once (batch 32 x world),
 * computed on every rank from the same initial weights.  The ranks must hold
 * bitwise the same parameters after the steps.
 *
 * The bounds.  The two runs compute the same sums in another association: a rank's
 * gradient sums 32 samples, the all-reduce adds the ranks' and scales by 1/world, the
 * reference sums the 64 at once; a float32 sum of n terms is exact to about n * 2^-24
 * of the sum of their magnitudes, and each step starts from the last one's parameters.
 * Measured (2 ranks, OMP_NUM_THREADS=1; each case prints its numbers):
 *   SGD, MLP and CNN: max |ddp - ref| / max(1, max |ref|) 2.98e-8 (one float32 ulp of
 *     a parameter near 0.33), mean |ddp - ref| 2e-9: bounds 1e-6 and 1e-8;
 *   Adam, MLP: 2.98e-8 and 8e-10; Adam, CNN: 9.06e-5 and 1.1e-8 (3 ranks: 5.1e-4 and
 *     7.7e-8), from a few hundred of its 421,642 parameters: conv1 and fc1 weights whose
 *     gradients are sums that nearly cancel, so that their rounding error is large
 *     relative to them, and Adam's m / sqrt(v) divides out their scale: a step moves
 *     such a parameter by up to lr whatever the gradient's size.  How many such
 *     parameters flip depends on the kernels' rounding (with CT_CPU_CAPABILITY=avx2 or
 *     default, 3 ranks: 1.01e-2 and 2.17e-5), so the bounds are the derivable worst
 *     case, not one CPU's figures: max lr * steps = 2e-2 (the most 20 Adam steps move a
 *     parameter), mean 1e-4 (a tenth of one step of lr on every parameter).  A rank's gradient left out or not averaged moves the mean by orders
 *     of magnitude more (SGD: by lr times the gradients; Adam, scale-free, only notices
 *     the first). */
#include "ddp_test_util.h"

enum { STEPS = 20, BATCH = 32 };

typedef struct {
    const char *name;
    ct_module *(*make)(void);
    ct_shape row;
    bool adam;
    double max_bound, mean_bound;
} equivalence_case;

static ct_optim *make_optim(ct_module *m, bool adam) {
    ct_tensor *ps[64];
    int n = ct_parameters(m, ps, 64);
    return adam ? ct_adam(ps, n, .lr = 1e-3) : ct_sgd(ps, n, .lr = CT_SOME(0.05), .momentum = 0.9);
}

static double train_step(ct_module *m, ct_optim *opt, ct_tensor *x, ct_tensor *y, ct_tensor *idx) {
    ct_tensor *loss =
        ct_cross_entropy(ct_forward(m, ct_index_select(x, 0, idx)), ct_index_select(y, 0, idx));
    ct_zero_grad(opt);
    CHECK(ct_backward(loss) == 0);
    CHECK(ct_step(opt) == 0);
    return ct_item(loss);
}

static void run_case(const equivalence_case *c) {
    int64_t n = (int64_t)STEPS * BATCH * world();
    ct_tensor *x, *y;
    make_data(n, c->row, 42, &x, &y);
    ct_manual_seed(100 + (uint64_t)rank()); /* each rank its own init: ct_ddp sends rank 0's */
    ct_module *ddp = ct_ddp(c->make());
    CHECK(ddp != NULL);
    if (!ddp) return;
    ct_module *ref = copy_model(ct_ddp_module(ddp), c->make);
    ct_optim *opt = make_optim(ddp, c->adam), *ref_opt = make_optim(ref, c->adam);
    double loss = 0, ref_loss = 0;
    for (int step = 0; step < STEPS; step++) {
        CT_SCOPE {
            loss =
                train_step(ddp, opt, x, y, batch_indices(n, (int64_t)step * BATCH, BATCH, false));
            ref_loss = train_step(ref, ref_opt, x, y,
                                  batch_indices(n, (int64_t)step * BATCH, BATCH, true));
        }
    }
    double d = rel_diff(flat_params(ddp), flat_params(ref));
    double mean = ct_item(ct_mean(ct_abs(ct_sub(flat_params(ddp), flat_params(ref)))));
    if (rank() == 0)
        printf(
            "  %s: %d ranks against one process: max relative parameter difference %.3g "
            "(bound %.1g), mean absolute %.3g (bound %.1g); last losses %.5f rank 0, %.5f global\n",
            c->name, world(), d, c->max_bound, mean, c->mean_bound, loss, ref_loss);
    CHECK(d <= c->max_bound);
    CHECK(mean <= c->mean_bound);
    CHECK(same_on_every_rank(flat_params(ddp)));
    ct_ddp_stats st = ct_ddp_get_stats(ddp, false);
    CHECK_INT_EQ(st.steps, STEPS);
    CHECK(st.backward_s > 0 && st.comm_wait_s >= 0 && st.comm_wait_s <= st.backward_s);
}

DIST_TEST(mlp_sgd) {
    run_case(&(equivalence_case){"MLP, SGD", make_mlp, CT_SHAPE(20), false, 1e-6, 1e-8});
}
DIST_TEST(mlp_adam) {
    run_case(&(equivalence_case){"MLP, Adam", make_mlp, CT_SHAPE(20), true, 2e-2, 1e-4});
}
DIST_TEST(cnn_sgd) {
    run_case(
        &(equivalence_case){"CNN, SGD", ct_test_demo_cnn, CT_SHAPE(1, 28, 28), false, 1e-6, 1e-8});
}
DIST_TEST(cnn_adam) {
    run_case(
        &(equivalence_case){"CNN, Adam", ct_test_demo_cnn, CT_SHAPE(1, 28, 28), true, 2e-2, 1e-4});
}
