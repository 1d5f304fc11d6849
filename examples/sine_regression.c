/* Regression of sin(x) on [-pi, pi] with an MLP (1 -> 64 -> 1), MSELoss and Adam.
 * Prints the loss as it falls; exits non-zero if it does not fall below 0.01. */
#include <math.h>
#include <stdio.h>

#include "ctorch.h"

int main(void) {
    ct_set_error_handler(ct_abort_on_error);
    ct_manual_seed(0);
    double loss_value = INFINITY;
    CT_SCOPE { /* everything created in here is freed at its end */
        ct_module *model =
            ct_sequential(CT_MODULES(ct_nn_linear(1, 64), ct_nn_tanh(), ct_nn_linear(64, 1)));
        ct_tensor *params[4];
        int n = ct_parameters(model, params, 4);
        ct_optim *opt = ct_adam(params, n, .lr = 1e-2);
        ct_tensor *x = ct_linspace(-M_PI, M_PI, 256);
        ct_tensor *inputs = ct_unsqueeze(x, 1), *targets = ct_unsqueeze(ct_sin(x), 1);
        for (int step = 1; step <= 1000; step++) {
            CT_SCOPE_HERE;
            ct_tensor *loss = ct_mse_loss(ct_forward(model, inputs), targets);
            ct_zero_grad(opt);
            ct_backward(loss);
            ct_step(opt);
            loss_value = ct_item(loss);
            if (step % 200 == 0) printf("step %4d  loss %.6f\n", step, loss_value);
        }
    }
    return loss_value < 0.01 ? 0 : 1;
}
