/* SyncBatchNorm in a program that never joins a process group: BatchNorm itself,
 * bitwise (forward, running statistics and gradients), with no MPI loaded. */
#include "ct_test.h"

TEST(without_a_process_group_sync_batch_norm_is_batch_norm) {
    CHECK(!ct_dist_is_initialized());
    ct_manual_seed(3);
    ct_module *ref = ct_nn_batch_norm2d(3, .momentum = CT_NONE);
    ct_module *sync =
        ct_nn_sync_batch_norm_convert(ct_nn_batch_norm2d(3, .momentum = CT_NONE), NULL);
    CHECK_STR_EQ(ct_module_type(sync), "SyncBatchNorm");
    for (int step = 0; step < 2; step++) {
        ct_tensor *x = ct_add_scalar(ct_randn(CT_SHAPE(5, 3, 4, 2)), 2.0);
        ct_tensor *xa = ct_detach(ct_clone(x)), *xb = ct_detach(ct_clone(x));
        ct_set_requires_grad(xa, true);
        ct_set_requires_grad(xb, true);
        ct_tensor *ya = ct_forward(ref, xa), *yb = ct_forward(sync, xb);
        CHECK(ya && yb && ct_test_max_diff(ya, yb) == 0);
        CHECK_STR_EQ(ct_node_name(ct_grad_fn(yb)), "NativeBatchNormBackward0");
        CHECK(ct_backward(ct_sum(ct_mul(ya, x))) == 0 && ct_backward(ct_sum(ct_mul(yb, x))) == 0);
        CHECK(ct_test_max_diff(ct_grad(xa), ct_grad(xb)) == 0);
        CHECK(ct_test_max_diff(ct_grad(ct_module_get_parameter(ref, "bias")),
                               ct_grad(ct_module_get_parameter(sync, "bias"))) == 0);
        CHECK(ct_test_max_diff(ct_module_get_buffer(ref, "running_var"),
                               ct_module_get_buffer(sync, "running_var")) == 0);
    }
    CHECK_INT_EQ(ct_item_int(ct_module_get_buffer(sync, "num_batches_tracked")), 2);
}
