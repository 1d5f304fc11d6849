/* Gradient accumulation: four backward calls on micro-batches of 8, each loss scaled
 * by 1/4, accumulate into .grad exactly the gradient of one batch of 32 — so a large
 * effective batch fits in little memory.  Checks the two agree, then trains a step. */
#include <math.h>
#include <stdio.h>

#include "ctorch.h"

int main(void) {
    ct_set_error_handler(ct_abort_on_error);
    ct_manual_seed(0);
    double diff = 0;
    CT_SCOPE { /* everything created in here is freed at its end */
        ct_module *model =
            ct_sequential(CT_MODULES(ct_nn_linear(10, 16), ct_nn_relu(), ct_nn_linear(16, 1)));
        ct_module_to(model, .dtype = CT_F64);
        ct_tensor *params[4];
        int n = ct_parameters(model, params, 4);
        ct_optim *opt = ct_sgd(params, n, .lr = CT_SOME(0.05));
        ct_tensor *x = ct_randn(CT_SHAPE(32, 10), .dtype = CT_F64),
                  *y = ct_randn(CT_SHAPE(32, 1), .dtype = CT_F64);

        /* One batch of 32. */
        ct_zero_grad(opt, .set_to_none = true);
        CT_SCOPE { ct_backward(ct_mse_loss(ct_forward(model, x), y)); }
        ct_tensor *full = ct_clone(ct_grad(params[0]));

        /* Four micro-batches of 8, accumulated. */
        const int steps = 4;
        ct_zero_grad(opt, .set_to_none = true);
        for (int k = 0; k < steps; k++) {
            CT_SCOPE_HERE;
            ct_tensor *xb = ct_narrow(x, 0, 8 * k, 8), *yb = ct_narrow(y, 0, 8 * k, 8);
            ct_backward(ct_div_scalar(ct_mse_loss(ct_forward(model, xb), yb), steps));
        }
        CT_SCOPE { diff = ct_item(ct_amax(ct_abs(ct_sub(full, ct_grad(params[0]))))); }
        printf("max difference between accumulated and full-batch gradients: %.3g\n", diff);
        ct_step(opt); /* one update with the accumulated gradient */
    }
    return diff < 1e-12 ? 0 : 1;
}
