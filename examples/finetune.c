/* Fine-tuning: a backbone trained on one task is frozen (requires_grad false, left out
 * of the optimizer), and a new head is trained for a second task; then the last
 * backbone layer is unfrozen with its own, lower learning rate (a second parameter
 * group).  Checks that frozen weights did not move and the head learned. */
#include <math.h>
#include <stdio.h>

#include "ctorch.h"

/* Task data: y = sum of x's features (task A) or its sign (task B, 2 classes). */
static void batch(ct_tensor **x, ct_tensor **ya, ct_tensor **yb) {
    *x = ct_randn(CT_SHAPE(64, 8));
    ct_tensor *s = ct_sum(*x, .dims = CT_DIMS(1), .keepdim = true);
    *ya = s;
    *yb = ct_to(ct_gt_scalar(ct_squeeze_dim(s, 1), 0), .dtype = CT_I64);
}

/* Trains model on task B for `steps` steps; returns the last loss. */
static double classify(ct_module *model, ct_optim *opt, int steps) {
    double loss_value = 0;
    for (int step = 0; step < steps; step++) {
        CT_SCOPE_HERE;
        ct_tensor *x, *ya, *yb;
        batch(&x, &ya, &yb);
        ct_tensor *loss = ct_cross_entropy(ct_forward(model, x), yb);
        ct_zero_grad(opt);
        ct_backward(loss);
        ct_step(opt);
        loss_value = ct_item(loss);
    }
    return loss_value;
}

int main(void) {
    ct_set_error_handler(ct_abort_on_error);
    ct_manual_seed(0);
    int rc = 1;
    CT_SCOPE {
        ct_module *backbone = ct_sequential(
            CT_MODULES(ct_nn_linear(8, 32), ct_nn_relu(), ct_nn_linear(32, 32), ct_nn_relu()));
        /* 1. Pretrain the backbone with a regression head on task A. */
        ct_module *pre = ct_sequential(CT_MODULES(backbone, ct_nn_linear(32, 1))); /* adopts backbone */
        ct_tensor *p[8];
        int n = ct_parameters(pre, p, 8);
        ct_optim *opt = ct_adam(p, n, .lr = 1e-2);
        for (int step = 0; step < 200; step++) {
            CT_SCOPE_HERE;
            ct_tensor *x, *ya, *yb;
            batch(&x, &ya, &yb);
            ct_tensor *loss = ct_mse_loss(ct_forward(pre, x), ya);
            ct_zero_grad(opt);
            ct_backward(loss);
            ct_step(opt);
        }
        /* 2. Freeze it; train only a classification head on task B. */
        ct_module_requires_grad_(backbone, false);
        ct_module *head = ct_nn_linear(32, 2);
        /* A second owner of the backbone takes a reference of its own. */
        ct_module *model = ct_sequential(CT_MODULES(ct_retain(backbone), head));
        ct_tensor *frozen = ct_clone(ct_module_get_parameter(backbone, "0.weight"));
        ct_tensor *hp[2];
        ct_parameters(head, hp, 2);
        ct_optim *head_opt = ct_sgd(hp, 2, .lr = CT_SOME(0.1), .momentum = 0.9);
        printf("trainable parameters: %lld of %lld\n",
               (long long)ct_module_num_parameters(model, true),
               (long long)ct_module_num_parameters(model, false));
        double loss_value = classify(model, head_opt, 150);
        printf("head only: loss %.4f\n", loss_value);
        double moved =
            ct_item(ct_amax(ct_abs(ct_sub(frozen, ct_module_get_parameter(backbone, "0.weight")))));
        /* 3. Unfreeze the last backbone layer at a 10x lower learning rate. */
        ct_module *last = ct_sequential_get(backbone, 2);
        ct_module_requires_grad_(last, true);
        ct_tensor *lp[2];
        ct_parameters(last, lp, 2);
        ct_optim_add_param_group(head_opt, lp, 2, .lr = CT_SOME(0.01));
        loss_value = classify(model, head_opt, 50);
        printf("with the last layer unfrozen (lr %.3g): loss %.4f; frozen layer moved by %g\n",
               ct_optim_get_lr(head_opt, 1), loss_value, moved);
        rc = moved == 0 && loss_value < 0.3 ? 0 : 1;
    }
    return rc;
}
