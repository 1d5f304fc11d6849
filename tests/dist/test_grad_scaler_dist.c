/* The gradient scaler in a distributed run: unscale_ takes the maximum of the found-inf
 * flag over the ranks, so that ranks whose gradients differ (no DDP) skip the same
 * steps and keep the same scale.  Run by mpirun on 2 and 3 ranks. */
#include "dist/dist_test.h"

/* An SGD over one parameter whose gradient is g. */
static ct_optim *sgd_with_grad(ct_tensor **p, float g) {
    *p = ct_zeros(CT_SHAPE(3), .requires_grad = true);
    ct_set_grad(*p, ct_full(CT_SHAPE(3), g));
    return ct_sgd(p, 1, .lr = CT_SOME(1));
}

DIST_TEST(an_inf_on_one_rank_skips_the_step_on_every_rank) {
    int last = ct_dist_world_size() - 1;
    ct_grad_scaler *s = ct_grad_scaler(.growth_interval = 1);
    for (int it = 0; it < 3; it++) {
        CT_SCOPE_HERE;
        /* iteration 1: only the last rank's gradient overflowed */
        bool bad = it == 1 && ct_dist_rank() == last;
        ct_tensor *p;
        ct_optim *opt = sgd_with_grad(&p, bad ? INFINITY : 65536.0f);
        ct_grad_scaler_scale(s, p);
        int stepped = ct_grad_scaler_step(s, opt);
        CHECK_INT_EQ(stepped, it == 1 ? 0 : 1);
        CHECK(ct_item(ct_select(ct_detach(p), 0, 0)) == (it == 1 ? 0.0 : -1.0));
        CHECK(ct_grad_scaler_update(s) == 0);
    }
    /* grown, backed off, grown: the same on every rank */
    CHECK(ct_grad_scaler_get_scale(s) == 131072);
}
