/* Optimizers against PyTorch 1.13 trajectories (tests/fixtures/gen_optim.py). */
#include <math.h>
#include <string.h>

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

/* The configurations of tests/fixtures/gen_optim.py, by name. */
static const char *const CONFIGS[] = {
    "sgd", "sgd_momentum", "sgd_nesterov", "sgd_maximize", "adam", "adam_amsgrad",
    "adam_maximize", "adamw", "rmsprop", "rmsprop_centered", "adagrad", "adamw_amsgrad",
    "adamw_maximize", "rmsprop_maximize", "rmsprop_momentum", "rmsprop_centered_max",
    "adagrad_maximize",
};
enum { N_CONFIGS = sizeof CONFIGS / sizeof CONFIGS[0], N_SGD = 4 /* the first four */ };

static ct_optim *config(int i, ct_tensor **p) {
    switch (i) {
    case 0: return ct_sgd(p, 1, .lr = CT_SOME(0.1));
    case 1: return ct_sgd(p, 1, .lr = CT_SOME(0.05), .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01);
    case 2: return ct_sgd(p, 1, .lr = CT_SOME(0.05), .momentum = 0.9, .nesterov = true, .weight_decay = 0.01);
    case 3: return ct_sgd(p, 1, .lr = CT_SOME(0.05), .momentum = 0.5, .maximize = true);
    case 4: return ct_adam(p, 1, .lr = 1e-2);
    case 5: return ct_adam(p, 1, .lr = 1e-2, .amsgrad = true, .weight_decay = CT_SOME(0.1), .beta1 = CT_SOME(0.8), .beta2 = CT_SOME(0.99));
    case 6: return ct_adam(p, 1, .lr = 1e-2, .maximize = true, .eps = 1e-6);
    case 7: return ct_adamw(p, 1, .lr = 1e-2, .weight_decay = CT_SOME(0.1));
    case 8: return ct_rmsprop(p, 1, .lr = 1e-2);
    case 9: return ct_rmsprop(p, 1, .lr = 1e-2, .centered = true, .momentum = 0.9, .weight_decay = 0.01);
    case 10: return ct_adagrad(p, 1, .lr = 0.1, .lr_decay = 0.01, .weight_decay = 0.01, .initial_accumulator_value = 0.1);
    case 11: return ct_adamw(p, 1, .lr = 1e-2, .amsgrad = true, .weight_decay = CT_SOME(0.05), .beta1 = CT_SOME(0.8), .beta2 = CT_SOME(0.99));
    case 12: return ct_adamw(p, 1, .lr = 1e-2, .maximize = true, .eps = 1e-6);
    case 13: return ct_rmsprop(p, 1, .lr = 1e-2, .maximize = true, .alpha = CT_SOME(0.9), .eps = 1e-4);
    case 14: return ct_rmsprop(p, 1, .lr = 1e-2, .momentum = 0.5, .alpha = CT_SOME(0.95));
    case 15: return ct_rmsprop(p, 1, .lr = 1e-2, .centered = true, .maximize = true, .eps = 1e-3);
    case 16: return ct_adagrad(p, 1, .lr = 0.1, .maximize = true, .eps = 1e-3, .lr_decay = 0.05);
    }
    return NULL;
}

TEST(optimizers_follow_pytorch) {
    fx_file *f = fx_load("optim");
    for (int i = 0; i < N_CONFIGS; i++) {
        ct_tensor *p = start(1);
        run(f, CONFIGS[i], config(i, &p), p);
    }
    fx_free(f);
}

/* bfloat16 parameters (all configurations) and float16 ones (SGD's: PyTorch 1.13 has
 * no float16 cpu addcmul, so its other optimizers refuse them) against PyTorch's own
 * reduced trajectories, state kept in the parameter's dtype by both.  PyTorch rounds
 * after each tensor op of its formulas (and its scalars to the dtype); ours rounds the
 * float32 update once per stored value.  Over 10 steps the two stay within 2.5 units
 * in the last place of the dtype at the parameter's magnitude (measured: up to 2.4,
 * centered RMSprop), except AdamW with weight decay: PyTorch multiplies by 1 - lr wd
 * rounded to bfloat16, and 0.999 rounds to 1, so its decay is lost while ours
 * applies it (measured 3.9 units after 10 steps of decay 0.1, lr 1e-2: 4 allowed). */
TEST(reduced_optimizers_follow_pytorch) {
    fx_file *f = fx_load("optim");
    const char *pre[] = {"bf16", "f16"};
    const ct_dtype dts[] = {CT_BF16, CT_F16};
    const double ulp[] = {1.0 / 128, 1.0 / 1024}; /* at magnitudes in [0.5, 1) */
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < (d == 0 ? N_CONFIGS : N_SGD); i++) {
            ct_tensor *p = ct_detach(ct_to(start(1), .dtype = dts[d]));
            ct_set_requires_grad(p, true);
            ct_optim *opt = config(i, &p);
            CHECK(opt != NULL);
            for (int t = 1; t <= 10; t++) CT_SCOPE {
                ct_set_grad(p, ct_to(grad_at(t), .dtype = dts[d]));
                CHECK(ct_step(opt) == 0);
                if (t != 1 && t != 10) continue;
                char key[64];
                snprintf(key, sizeof key, "%s_%s_step%d", pre[d], CONFIGS[i], t);
                ct_tensor *want = fx_get(f, key);
                CHECK(ct_dtype_of(p) == dts[d]);
                /* units of the dtype at max(|want|, 0.5) */
                double units = i == 7 || i == 11 ? 4 : 2.5; /* adamw, adamw_amsgrad */
                ct_tensor *tol = ct_mul_scalar(ct_clamp(ct_abs(want), .min = CT_SOME(0.5)), units * ulp[d]);
                double worst = ct_item(ct_max(ct_sub(ct_abs(ct_sub(ct_to(p, .dtype = CT_F64), want)), tol)));
                if (!(worst <= 0))
                    ct_test_fail(__FILE__, __LINE__, "%s: beyond %g units of %s by %g", key,
                                 units, ct_dtype_name(dts[d]), worst);
            }
        }
    fx_free(f);
}

/* t rounded to dt and back, in place (t float32). */
static void round_through(ct_tensor *t, ct_dtype dt) {
    CT_NO_GRAD { ct_copy_(t, ct_to(ct_to(t, .dtype = dt), .dtype = CT_F32)); }
}

/* A reduced step is the float32 step on the widened parameter, gradient and state,
 * each stored value rounded once: a float32 optimizer whose parameter and state are
 * rounded to the dtype after each step gives the same bits, for every configuration
 * (Adagrad's accumulator starts at 0.1, which the reduced state holds rounded, so here
 * it starts at 0.125, exact in both). */
TEST(reduced_optimizer_steps_round_the_float32_step_once) {
    const ct_dtype dts[] = {CT_BF16, CT_F16};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < N_CONFIGS; i++) {
            ct_tensor *p = ct_detach(ct_to(start(1), .dtype = dts[d]));
            ct_tensor *p32 = ct_to(p, .dtype = CT_F32);
            ct_set_requires_grad(p, true);
            ct_set_requires_grad(p32, true);
            ct_optim *opt = i == 10 ? ct_adagrad(&p, 1, .lr = 0.1, .lr_decay = 0.01, .weight_decay = 0.01, .initial_accumulator_value = 0.125)
                                    : config(i, &p);
            ct_optim *opt32 = i == 10 ? ct_adagrad(&p32, 1, .lr = 0.1, .lr_decay = 0.01, .weight_decay = 0.01, .initial_accumulator_value = 0.125)
                                      : config(i, &p32);
            for (int t = 1; t <= 10; t++) CT_SCOPE {
                ct_tensor *g = ct_to(grad_at(t), .dtype = dts[d]);
                ct_set_grad(p, g);
                ct_set_grad(p32, ct_to(g, .dtype = CT_F32));
                CHECK(ct_step(opt) == 0 && ct_step(opt32) == 0);
                round_through(p32, dts[d]);
                ct_state_dict *sd = ct_optim_state_dict(opt32), *sdr = ct_optim_state_dict(opt);
                for (int k = 0; k < ct_state_dict_len(sd); k++) {
                    const char *key = ct_state_dict_key(sd, k);
                    if (strncmp(key, "state.", 6) || strstr(key, ".step")) continue;
                    round_through(ct_state_dict_value(sd, k), dts[d]); /* shares the state */
                    double ds = ct_test_max_diff(ct_state_dict_get(sdr, key), ct_state_dict_value(sd, k));
                    if (!(ds == 0))
                        ct_test_fail(__FILE__, __LINE__, "%s %s step %d: %s off by %g",
                                     CONFIGS[i], ct_dtype_name(dts[d]), t, key, ds);
                }
                double dp = ct_test_max_diff(p, p32);
                if (!(dp == 0))
                    ct_test_fail(__FILE__, __LINE__, "%s %s step %d: parameter off by %g",
                                 CONFIGS[i], ct_dtype_name(dts[d]), t, dp);
            }
        }
}

/* Elementwise updates split across threads: a large reduced parameter steps to the
 * same bits with 1 and 3 threads (tiles and chunk ends at odd offsets). */
TEST(reduced_optimizer_steps_equal_across_threads) {
    int threads = ct_get_num_threads();
    const ct_dtype dts[] = {CT_BF16, CT_F16};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < N_CONFIGS; i++) {
            ct_tensor *res[2];
            for (int r = 0; r < 2; r++) CT_SCOPE {
                ct_set_num_threads(r == 0 ? 1 : 3);
                ct_manual_seed(5);
                ct_tensor *p = ct_randn(CT_SHAPE(70007), .dtype = dts[d], .requires_grad = true);
                ct_optim *opt = config(i, &p);
                for (int t = 0; t < 3; t++) {
                    ct_set_grad(p, ct_randn(CT_SHAPE(70007), .dtype = dts[d]));
                    CHECK(ct_step(opt) == 0);
                }
                res[r] = ct_keep(ct_detach(p));
            }
            double diff = ct_test_max_diff(res[0], res[1]);
            if (!(diff == 0))
                ct_test_fail(__FILE__, __LINE__, "%s %s differs with 3 threads by %g", CONFIGS[i],
                             ct_dtype_name(dts[d]), diff);
        }
    ct_set_num_threads(threads);
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
    ct_optim *opt = ct_sgd(&a, 1, .lr = CT_SOME(0.1), .momentum = 0.9);
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
    ct_optim *opt = ct_sgd(ab, 2, .lr = CT_SOME(0.1), .momentum = 0.9, .nesterov = true);
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
    CHECK_ERROR(ct_sgd(&p, 1, .lr = CT_SOME(0.1), .nesterov = true), "Nesterov momentum requires");
    ct_tensor *x = ct_exp(p);
    CHECK_ERROR(ct_sgd(&x, 1, .lr = CT_SOME(0.1)), "can't optimize a non-leaf Tensor");
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
    ct_optim *sgd = ct_sgd(&b, 1, .lr = CT_SOME(0.1));
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
    CHECK_CLOSE(ct_clip_grad_norm_(ps, 2, 100, .norm_type = CT_SOME(INFINITY)), 4, 1e-6);
    CHECK_VALUES(ct_grad(a), 1e-6, 3, -4); /* coefficient clamped to 1 */
    CHECK(ct_clip_grad_value_(ps, 3, 2) == 0);
    CHECK_VALUES(ct_grad(a), 0, 2, -2);
    ct_set_grad(a, ct_tensor_f32(((float[]){NAN, 1}), CT_SHAPE(2)));
    ct_clear_error();
    CHECK(isnan(ct_clip_grad_norm_(ps, 2, 1, .error_if_nonfinite = true)));
    CHECK(ct_last_error() && strstr(ct_last_error(), "is non-finite, so it cannot be clipped"));
    ct_clear_error();
    /* order 0, as torch.nn.utils.clip_grad_norm_(norm_type=0): the per-parameter counts
     * of nonzeros are [2, 1], their own count of nonzeros 2, so every grad is halved */
    ct_set_grad(a, ct_tensor_f32(((float[]){0, 2}), CT_SHAPE(2)));
    ct_set_grad(b, ct_tensor_f32((float[]){3}, CT_SHAPE(1)));
    CHECK_CLOSE(ct_clip_grad_norm_(ps, 3, 1.0, .norm_type = CT_SOME(0)), 2, 0);
    CHECK_VALUES(ct_grad(a), 1e-6, 0, 1);
    CHECK_VALUES(ct_grad(b), 1e-6, 1.5);
}

/* On meta the norm has no value: NAN without an error, the grads keep their shapes,
 * and nothing is read from the host (ct_item would fail). */
TEST(clip_grad_norm_on_meta) {
    ct_tensor *a = ct_empty(CT_SHAPE(3, 2), .device = CT_META, .requires_grad = true);
    ct_set_grad(a, ct_empty(CT_SHAPE(3, 2), .device = CT_META));
    ct_clear_error();
    CHECK(isnan(ct_clip_grad_norm_(&a, 1, 1.0, .error_if_nonfinite = true)));
    CHECK(ct_last_error() == NULL);
    CHECK(ct_is_meta(ct_grad(a)) && ct_numel(ct_grad(a)) == 6);
}

/* torch.optim.SGD(params, lr=0) is a valid optimizer whose steps change nothing
 * (momentum buffers still fill); lr left out is the error. */
TEST(sgd_accepts_zero_lr) {
    ct_tensor *p = ct_ones(CT_SHAPE(3), .requires_grad = true);
    ct_optim *opt = ct_sgd(&p, 1, .lr = CT_SOME(0), .momentum = 0.9);
    CHECK(opt != NULL);
    CHECK_CLOSE(ct_optim_get_lr(opt, 0), 0, 0);
    ct_set_grad(p, ct_full(CT_SHAPE(3), 2.0));
    CHECK(ct_step(opt) == 0);
    CHECK_VALUES(p, 0, 1, 1, 1);
    ct_state_dict *sd = ct_optim_state_dict(opt);
    CHECK_VALUES(ct_state_dict_get(sd, "state.0.momentum_buffer"), 0, 2, 2, 2);
}

/* A reduced step after the first (which allocates the state) allocates nothing: no
 * float32 copy of the parameter, its gradient or its state. */
TEST(reduced_optimizer_steps_allocate_nothing) {
    const ct_dtype dts[] = {CT_BF16, CT_F16};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < N_CONFIGS; i++) CT_SCOPE {
            ct_tensor *p = ct_full(CT_SHAPE(64, 1000), 0.5, .dtype = dts[d], .requires_grad = true);
            ct_set_grad(p, ct_full(CT_SHAPE(64, 1000), 0.25, .dtype = dts[d]));
            ct_optim *opt = config(i, &p);
            CHECK(ct_step(opt) == 0);
            int64_t base = ct_memory_allocated(CT_CPU);
            ct_reset_peak_memory_stats(CT_CPU);
            CHECK(ct_step(opt) == 0);
            int64_t peak = ct_max_memory_allocated(CT_CPU) - base;
            if (peak != 0)
                ct_test_fail(__FILE__, __LINE__, "%s %s: a step allocated %lld bytes", CONFIGS[i],
                             ct_dtype_name(dts[d]), (long long)peak);
        }
}
