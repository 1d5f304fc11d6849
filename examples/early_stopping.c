/* Early stopping with ReduceLROnPlateau: the learning rate is cut when the validation
 * loss stops improving, and training stops after a few epochs without improvement,
 * restoring the best weights (kept as a state dict). */
#include <math.h>
#include <stdio.h>

#include "ctorch.h"

int main(void) {
    ct_set_error_handler(ct_abort_on_error);
    ct_manual_seed(0);
    int rc = 1;
    CT_SCOPE {
        /* A noisy linear problem: the model can only fit the signal. */
        ct_tensor *w_true = ct_randn(CT_SHAPE(16, 1));
        ct_tensor *x = ct_randn(CT_SHAPE(256, 16)), *xv = ct_randn(CT_SHAPE(256, 16));
        ct_tensor *y = ct_add(ct_matmul(x, w_true), ct_mul_scalar(ct_randn(CT_SHAPE(256, 1)), 0.5));
        ct_tensor *yv =
            ct_add(ct_matmul(xv, w_true), ct_mul_scalar(ct_randn(CT_SHAPE(256, 1)), 0.5));
        ct_module *model =
            ct_sequential(CT_MODULES(ct_nn_linear(16, 64), ct_nn_relu(), ct_nn_linear(64, 1)));
        ct_tensor *p[4];
        int n = ct_parameters(model, p, 4);
        ct_optim *opt = ct_sgd(p, n, .lr = CT_SOME(0.05), .momentum = 0.9);
        ct_scheduler *plateau = ct_reduce_lr_on_plateau(opt, .factor = CT_SOME(0.5), .patience = CT_SOME(2));
        double best = INFINITY;
        int bad_epochs = 0, epoch;
        ct_state_dict *best_state = ct_state_dict_new(); /* lives in the outer scope */
        for (epoch = 1; epoch <= 200 && bad_epochs < 6; epoch++) {
            CT_SCOPE_HERE;
            ct_tensor *loss = ct_mse_loss(ct_forward(model, x), y);
            ct_zero_grad(opt);
            ct_backward(loss);
            ct_step(opt);
            double val = NAN;
            CT_NO_GRAD { val = ct_item(ct_mse_loss(ct_forward(model, xv), yv)); }
            ct_sched_step_metric(plateau, val);
            if (val < best - 1e-4) {
                best = val;
                bad_epochs = 0;
                /* Copies: the dict holds them past this step's scope. */
                ct_state_dict *sd = ct_module_state_dict(model);
                for (int i = 0; i < ct_state_dict_len(sd); i++)
                    ct_state_dict_set(best_state, ct_state_dict_key(sd, i),
                                      ct_clone(ct_state_dict_value(sd, i)));
            } else {
                bad_epochs++;
            }
            if (epoch % 10 == 0)
                printf("epoch %3d  val %.4f  lr %.4g\n", epoch, val, ct_optim_get_lr(opt, 0));
        }
        printf("stopped after epoch %d; best validation loss %.4f; final lr %.4g\n", epoch - 1,
               best, ct_optim_get_lr(opt, 0));
        ct_load_state_dict(model, best_state);
        double restored = NAN;
        CT_NO_GRAD { restored = ct_item(ct_mse_loss(ct_forward(model, xv), yv)); }
        rc = fabs(restored - best) < 1e-6 && epoch <= 200 && ct_optim_get_lr(opt, 0) < 0.05 ? 0 : 1;
    }
    return rc;
}
