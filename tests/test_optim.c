/* Optimizers against PyTorch 1.13 trajectories (tests/fixtures/gen_optim.py). */
#include <math.h>

#include "ct_test.h"
#include "fixtures.h"

#define STEPS 25

/* The gradient of step t, as the fixture script computes it (libm, then float32). */
static ct_tensor *grad_at(int t) {
    float g[12];
    for (int i = 0; i < 12; i++) g[i] = (float)(sin(0.7 * t + 0.3 * i) * 0.5 + 0.1 * cos(i));
    return ct_tensor_f32(g, CT_SHAPE(3, 4));
}

static ct_tensor *start(double scale) {
    float v[12];
    for (int i = 0; i < 12; i++) v[i] = (float)(0.1 * i - 0.5);
    ct_tensor *p = ct_tensor_f32(v, CT_SHAPE(3, 4));
    if (scale != 1) CT_NO_GRAD { p = ct_mul_scalar(p, scale); }
    ct_set_requires_grad(p, true);
    return p;
}

/* Runs opt on p for STEPS steps and compares with the fixture at steps 1, 10, 25. */
static void run(fx_file *f, const char *name, ct_optim *opt, ct_tensor *p) {
    CHECK(opt != NULL);
    if (!opt) return;
    char key[64];
    for (int t = 1; t <= STEPS; t++) {
        CT_SCOPE {
            ct_set_grad(p, grad_at(t));
            CHECK(ct_step(opt) == 0);
            if (t == 1 || t == 10 || t == STEPS) {
                snprintf(key, sizeof key, "%s_step%d", name, t);
                double d = ct_test_max_diff(p, fx_get(f, key));
                if (!(d <= 2e-6)) ct_test_fail(__FILE__, __LINE__, "%s differs from PyTorch by %g", key, d);
            }
        }
    }
}

TEST(optimizers_follow_pytorch) {
    fx_file *f = fx_load("optim");
    ct_tensor *p;
    p = start(1); run(f, "sgd", ct_sgd(&p, 1, .lr = 0.1), p);
    p = start(1); run(f, "sgd_momentum", ct_sgd(&p, 1, .lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01), p);
    p = start(1); run(f, "sgd_nesterov", ct_sgd(&p, 1, .lr = 0.05, .momentum = 0.9, .nesterov = true, .weight_decay = 0.01), p);
    p = start(1); run(f, "sgd_maximize", ct_sgd(&p, 1, .lr = 0.05, .momentum = 0.5, .maximize = true), p);
    p = start(1); run(f, "adam", ct_adam(&p, 1, .lr = 1e-2), p);
    p = start(1); run(f, "adam_amsgrad", ct_adam(&p, 1, .lr = 1e-2, .amsgrad = true, .weight_decay = CT_SOME(0.1), .beta1 = CT_SOME(0.8), .beta2 = CT_SOME(0.99)), p);
    p = start(1); run(f, "adam_maximize", ct_adam(&p, 1, .lr = 1e-2, .maximize = true, .eps = 1e-6), p);
    p = start(1); run(f, "adamw", ct_adamw(&p, 1, .lr = 1e-2, .weight_decay = CT_SOME(0.1)), p);
    p = start(1); run(f, "rmsprop", ct_rmsprop(&p, 1, .lr = 1e-2), p);
    p = start(1); run(f, "rmsprop_centered", ct_rmsprop(&p, 1, .lr = 1e-2, .centered = true, .momentum = 0.9, .weight_decay = 0.01), p);
    p = start(1); run(f, "adagrad", ct_adagrad(&p, 1, .lr = 0.1, .lr_decay = 0.01, .weight_decay = 0.01, .initial_accumulator_value = 0.1), p);
    p = start(1); run(f, "adamw_amsgrad", ct_adamw(&p, 1, .lr = 1e-2, .amsgrad = true, .weight_decay = CT_SOME(0.05), .beta1 = CT_SOME(0.8), .beta2 = CT_SOME(0.99)), p);
    p = start(1); run(f, "adamw_maximize", ct_adamw(&p, 1, .lr = 1e-2, .maximize = true, .eps = 1e-6), p);
    p = start(1); run(f, "rmsprop_maximize", ct_rmsprop(&p, 1, .lr = 1e-2, .maximize = true, .alpha = CT_SOME(0.9), .eps = 1e-4), p);
    p = start(1); run(f, "rmsprop_momentum", ct_rmsprop(&p, 1, .lr = 1e-2, .momentum = 0.5, .alpha = CT_SOME(0.95)), p);
    p = start(1); run(f, "rmsprop_centered_max", ct_rmsprop(&p, 1, .lr = 1e-2, .centered = true, .maximize = true, .eps = 1e-3), p);
    p = start(1); run(f, "adagrad_maximize", ct_adagrad(&p, 1, .lr = 0.1, .maximize = true, .eps = 1e-3, .lr_decay = 0.05), p);
    fx_free(f);
}

/* Two groups, a and b, stepped STEPS times (b with the gradients of t + 100) and
 * compared with <name>_a and <name>_b. */
static void run_groups(fx_file *f, const char *name, ct_optim *opt, ct_tensor *a, ct_tensor *b) {
    char key[64];
    for (int t = 1; t <= STEPS; t++) CT_SCOPE {
        ct_set_grad(a, grad_at(t));
        ct_set_grad(b, grad_at(t + 100));
        CHECK(ct_step(opt) == 0);
    }
    snprintf(key, sizeof key, "%s_a", name);
    CHECK(ct_test_max_diff(a, fx_get(f, key)) <= 2e-6);
    snprintf(key, sizeof key, "%s_b", name);
    CHECK(ct_test_max_diff(b, fx_get(f, key)) <= 2e-6);
}

TEST(param_groups_override_the_defaults) {
    fx_file *f = fx_load("optim");
    ct_tensor *a = start(1), *b = start(2);
    ct_optim *opt = ct_sgd(&a, 1, .lr = 0.1, .momentum = 0.9);
    CHECK(ct_optim_add_param_group(opt, &b, 1, .lr = CT_SOME(0.01), .momentum = CT_SOME(0.5)) == 0);
    CHECK_CLOSE(ct_optim_get(opt, 1, "dampening"), 0, 0);
    run_groups(f, "groups", opt, a, b);
    CHECK_ERROR(ct_optim_add_param_group(opt, &a, 1), "more than one parameter group");
    /* Adam whose second group turns weight decay off. */
    ct_tensor *wa = start(1), *wb = start(2);
    ct_optim *adam = ct_adam(&wa, 1, .lr = 1e-2, .weight_decay = CT_SOME(0.1));
    CHECK(ct_optim_add_param_group(adam, &wb, 1, .weight_decay = CT_SOME(0)) == 0);
    run_groups(f, "groups_wd", adam, wa, wb);
    ct_tensor *c = start(1);
    CHECK_ERROR(ct_optim_add_param_group(opt, &c, 1, .beta1 = CT_SOME(0.5)), "has no hyperparameter 'beta1'");
    fx_free(f);
}

/* optimizer.param_groups[g]: its params and every option, as PyTorch lists them. */
TEST(param_groups_are_inspectable) {
    ct_tensor *a = start(1), *b = start(2), *c = start(3);
    ct_tensor *ab[] = {a, b};
    ct_optim *opt = ct_sgd(ab, 2, .lr = 0.1, .momentum = 0.9, .nesterov = true);
    CHECK(ct_optim_add_param_group(opt, &c, 1, .lr = CT_SOME(0.01), .weight_decay = CT_SOME(1e-4)) == 0);
    CHECK_INT_EQ(ct_optim_num_groups(opt), 2);
    ct_param_group_info g0 = ct_optim_param_group(opt, 0), g1 = ct_optim_param_group(opt, 1);
    CHECK_INT_EQ(g0.num_params, 2);
    CHECK(g0.params[0] == a && g0.params[1] == b);
    CHECK_INT_EQ(g1.num_params, 1);
    CHECK(g1.params[0] == c);
    CHECK_CLOSE(g0.lr, 0.1, 0);
    CHECK_CLOSE(g0.momentum, 0.9, 0);
    CHECK_CLOSE(g0.dampening, 0, 0);
    CHECK_CLOSE(g0.weight_decay, 0, 0);
    CHECK(g0.nesterov && !g0.maximize);
    CHECK(isnan(g0.beta1) && isnan(g0.eps) && isnan(g0.initial_lr));
    CHECK_CLOSE(g1.lr, 0.01, 0);
    CHECK_CLOSE(g1.momentum, 0.9, 0); /* not overridden: the constructor's */
    CHECK_CLOSE(g1.weight_decay, 1e-4, 0);
    /* A scheduler records initial_lr; setting a group's lr shows and takes effect. */
    ct_scheduler *sched = ct_step_lr(opt, 10, 0.1);
    CHECK_CLOSE(ct_optim_param_group(opt, 1).initial_lr, 0.01, 0);
    ct_optim_set_lr(opt, 1, 0.5);
    CHECK_CLOSE(ct_optim_param_group(opt, 1).lr, 0.5, 0);
    CHECK_CLOSE(ct_optim_param_group(opt, 0).lr, 0.1, 0);
    ct_set_grad(c, ct_ones(CT_SHAPE(3, 4)));
    ct_tensor *c0 = ct_clone(c);
    CHECK_INT_EQ(ct_step(opt), 0);
    /* Nesterov's first step: buf = g, update g + 0.9 * buf = 1.9 g, plus 1e-4 c. */
    ct_tensor *want = ct_sub(c0, ct_mul_scalar(ct_add(ct_full(CT_SHAPE(3, 4), 1.9),
                                                      ct_mul_scalar(c0, 1.9e-4)), 0.5));
    CHECK(ct_test_max_diff(c, want) <= 1e-6);
    (void)sched;
    /* Adam, RMSprop, Adagrad: their own options; the others are NAN. */
    ct_tensor *w = start(1), *v = start(1), *u = start(1);
    ct_param_group_info ga = ct_optim_param_group(ct_adamw(&w, 1, .beta2 = CT_SOME(0.98), .amsgrad = true), 0);
    CHECK_CLOSE(ga.lr, 1e-3, 0);
    CHECK_CLOSE(ga.beta1, 0.9, 0);
    CHECK_CLOSE(ga.beta2, 0.98, 0);
    CHECK_CLOSE(ga.eps, 1e-8, 0);
    CHECK_CLOSE(ga.weight_decay, 1e-2, 0);
    CHECK(ga.amsgrad && !ga.maximize && isnan(ga.momentum) && isnan(ga.alpha));
    ct_param_group_info gr = ct_optim_param_group(ct_rmsprop(&v, 1, .centered = true, .momentum = 0.3), 0);
    CHECK_CLOSE(gr.alpha, 0.99, 0);
    CHECK_CLOSE(gr.momentum, 0.3, 0);
    CHECK(gr.centered && isnan(gr.beta1));
    ct_param_group_info gd = ct_optim_param_group(ct_adagrad(&u, 1, .lr_decay = 0.01,
                                                             .initial_accumulator_value = 0.2), 0);
    CHECK_CLOSE(gd.lr_decay, 0.01, 0);
    CHECK_CLOSE(gd.initial_accumulator_value, 0.2, 0);
    CHECK_CLOSE(gd.eps, 1e-10, 0);
    /* Bad groups. */
    ct_clear_error();
    ct_param_group_info bad = ct_optim_param_group(opt, 2);
    CHECK(bad.params == NULL && bad.num_params == -1 && isnan(bad.lr));
    CHECK(ct_last_error() && strstr(ct_last_error(), "ct_optim_param_group: group 2 out of range (2 groups)"));
    ct_clear_error();
    CHECK(isnan(ct_optim_get_lr(opt, -1)));
    CHECK(ct_last_error() && strstr(ct_last_error(), "ct_optim_get: group -1 out of range"));
    ct_clear_error();
    CHECK(ct_optim_param_group(NULL, 0).num_params == -1);
    CHECK(ct_last_error() && strstr(ct_last_error(), "the optimizer is NULL"));
    ct_clear_error();
}

TEST(parameters_without_grad_are_skipped) {
    ct_tensor *a = start(1), *b = start(1);
    ct_tensor *ps[] = {a, b};
    ct_optim *opt = ct_adam(ps, 2);
    ct_set_grad(a, grad_at(1));
    CHECK(ct_step(opt) == 0);
    CHECK_CLOSE(ct_test_max_diff(b, start(1)), 0, 0);
    CHECK(ct_test_max_diff(a, start(1)) > 0);
    ct_zero_grad(opt);
    CHECK_VALUES(ct_sum(ct_grad(a)), 0, 0);
    ct_zero_grad(opt, .set_to_none = true);
    CHECK(ct_grad(a) == NULL);
}

TEST(optimizer_errors) {
    ct_tensor *p = start(1);
    CHECK_ERROR(ct_sgd(&p, 1, .momentum = 0.9), "required argument lr is missing");
    CHECK_ERROR(ct_adam(&p, 1, .lr = -1), "Invalid learning rate");
    CHECK_ERROR(ct_adam(&p, 1, .beta1 = CT_SOME(1.5)), "Invalid beta parameter");
    CHECK_ERROR(ct_sgd(&p, 1, .lr = 0.1, .nesterov = true), "Nesterov momentum requires");
    ct_tensor *x = ct_exp(p);
    CHECK_ERROR(ct_sgd(&x, 1, .lr = 0.1), "can't optimize a non-leaf Tensor");
}

TEST(optimizer_state_dict_resumes_exactly) {
    ct_tensor *a = start(1), *b = start(1);
    ct_optim *oa = ct_adam(&a, 1, .lr = 1e-2, .amsgrad = true);
    ct_optim *ob = ct_adam(&b, 1, .lr = 5);
    for (int t = 1; t <= 5; t++) CT_SCOPE {
        ct_set_grad(a, grad_at(t));
        ct_step(oa);
    }
    CT_NO_GRAD { ct_copy_(b, a); }
    CHECK(ct_optim_load_state_dict(ob, ct_optim_state_dict(oa)) == 0);
    CHECK_CLOSE(ct_optim_get_lr(ob, 0), 1e-2, 0);
    for (int t = 6; t <= 10; t++) CT_SCOPE {
        ct_set_grad(a, grad_at(t));
        ct_set_grad(b, grad_at(t));
        ct_step(oa);
        ct_step(ob);
    }
    CHECK_CLOSE(ct_test_max_diff(a, b), 0, 0);
    ct_state_dict *sd = ct_optim_state_dict(oa);
    CHECK(ct_state_dict_get(sd, "state.0.exp_avg") != NULL);
    CHECK(ct_state_dict_get(sd, "param_groups.0.beta2") != NULL);
    ct_optim *sgd = ct_sgd(&b, 1, .lr = 0.1);
    CHECK_ERROR(ct_optim_load_state_dict(sgd, sd), "does not fit SGD");
}

TEST(clip_grad_norm_and_value) {
    ct_tensor *a = ct_zeros(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *b = ct_zeros(CT_SHAPE(1), .requires_grad = true);
    ct_tensor *c = ct_zeros(CT_SHAPE(1), .requires_grad = true); /* no grad: skipped */
    ct_set_grad(a, ct_tensor_f32(((float[]){3, 4}), CT_SHAPE(2)));
    ct_set_grad(b, ct_tensor_f32((float[]){12}, CT_SHAPE(1)));
    ct_tensor *ps[] = {a, b, c};
    CHECK_CLOSE(ct_clip_grad_norm_(ps, 3, 1.3), 13, 1e-5);
    CHECK_VALUES(ct_grad(a), 1e-6, 0.3, 0.4);
    CHECK_VALUES(ct_grad(b), 1e-6, 1.2);
    ct_set_grad(a, ct_tensor_f32(((float[]){3, -4}), CT_SHAPE(2)));
    CHECK_CLOSE(ct_clip_grad_norm_(ps, 2, 100, .norm_type = INFINITY), 4, 1e-6);
    CHECK_VALUES(ct_grad(a), 1e-6, 3, -4); /* coefficient clamped to 1 */
    CHECK(ct_clip_grad_value_(ps, 3, 2) == 0);
    CHECK_VALUES(ct_grad(a), 0, 2, -2);
    ct_set_grad(a, ct_tensor_f32(((float[]){NAN, 1}), CT_SHAPE(2)));
    ct_clear_error();
    CHECK(isnan(ct_clip_grad_norm_(ps, 2, 1, .error_if_nonfinite = true)));
    CHECK(ct_last_error() && strstr(ct_last_error(), "is non-finite, so it cannot be clipped"));
    ct_clear_error();
}
