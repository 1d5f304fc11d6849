/* The training state the checkpoint and state-dict harnesses load into: a model
 * (Sequential(Linear(3, 2))), Adam and StepLR, built once; and one training step, so
 * that loaded values are used (a step count in the update, an epoch in the lr). */
#ifndef CT_FUZZ_TRAIN_H
#define CT_FUZZ_TRAIN_H

#include "fuzz.h"

typedef struct {
    ct_module *model;
    ct_optim *opt;
    ct_scheduler *sched;
} fuzz_run;

static fuzz_run fuzz_run_get(void) {
    static fuzz_run r;
    if (!r.model) {
        ct_manual_seed(0);
        r.model = ct_sequential(CT_MODULES(ct_nn_linear(3, 2)));
        ct_tensor *ps[2];
        ct_parameters(r.model, ps, 2);
        r.opt = ct_adam(ps, 2, .lr = 0.1);
        r.sched = ct_step_lr(r.opt, 2, 0.5);
    }
    return r;
}

static void fuzz_train_step(fuzz_run r) {
    CT_SCOPE {
        ct_zero_grad(r.opt);
        ct_backward(ct_sum(ct_forward(r.model, ct_ones(CT_SHAPE(2, 3)))));
        ct_step(r.opt);
        ct_sched_step(r.sched);
    }
}

#endif
