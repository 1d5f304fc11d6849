/* LR schedulers against PyTorch 1.13 (tests/fixtures/gen_sched.py). */
#include <math.h>
#include <stdlib.h>

#include "ct_test.h"
#include "fixtures.h"

#define STEPS 40

typedef struct {
    ct_tensor *a, *b;
    ct_optim *opt;
} setup;

static setup make(void) {
    setup s;
    s.a = ct_zeros(CT_SHAPE(1), .requires_grad = true);
    s.b = ct_zeros(CT_SHAPE(1), .requires_grad = true);
    s.opt = ct_sgd(&s.a, 1, .lr = CT_SOME(0.1), .momentum = 0.9);
    ct_optim_add_param_group(s.opt, &s.b, 1, .lr = CT_SOME(0.01));
    return s;
}

static double metric(int t) { return fmax(1.0 - 0.1 * t, 0.3) + 0.01 * sin(t); }

/* Steps `sched` and compares every group's lr (and momentum) with the fixture. */
static void follow(fx_file *f, const char *name, setup s, ct_scheduler *sched, int steps) {
    CHECK(sched != NULL);
    if (!sched) return;
    ct_tensor *want = fx_get(f, name);
    char mkey[64];
    snprintf(mkey, sizeof mkey, "%s_momentum", name);
    bool cycle = !strncmp(name, "one_cycle", 9);
    ct_tensor *want_m = cycle ? fx_get(f, mkey) : NULL;
    double *w = ct_test_values(want), *wm = cycle ? ct_test_values(want_m) : NULL;
    for (int t = 0; t <= steps && w; t++) {
        if (t > 0) {
            if (!strncmp(name, "plateau", 7)) /* mode max sees 2 - metric */
                CHECK(ct_sched_step_metric(sched, strstr(name, "max") ? 2 - metric(t - 1) : metric(t - 1)) == 0);
            else
                CHECK(ct_sched_step(sched) == 0);
        }
        for (int g = 0; g < 2; g++) {
            double lr = ct_optim_get_lr(s.opt, g);
            if (fabs(lr - w[2 * t + g]) > 1e-12 * fmax(1, fabs(w[2 * t + g]))) {
                ct_test_fail(__FILE__, __LINE__, "%s: step %d group %d lr %.17g, PyTorch %.17g", name,
                             t, g, lr, w[2 * t + g]);
                t = steps + 1;
                break;
            }
            if (t > 0 && ct_sched_get_last_lr(sched, g) != lr)
                ct_test_fail(__FILE__, __LINE__, "%s: get_last_lr differs from the group's lr", name);
            if (cycle && fabs(ct_optim_get(s.opt, g, "momentum") - wm[2 * t + g]) > 1e-12)
                ct_test_fail(__FILE__, __LINE__, "%s: step %d momentum %.17g, PyTorch %.17g", name, t,
                             ct_optim_get(s.opt, g, "momentum"), wm[2 * t + g]);
        }
    }
    free(w);
    free(wm);
}

static double lambda(int64_t e, void *ctx) {
    (void)ctx;
    return pow(0.95, (double)e) + 0.01 * (double)e;
}

TEST(schedulers_follow_pytorch) {
    fx_file *f = fx_load("sched");
    setup s;
    s = make(); follow(f, "step", s, ct_step_lr(s.opt, 7, 0.5), STEPS);
    int64_t ms[] = {5, 12, 12, 30};
    s = make(); follow(f, "multistep", s, ct_multistep_lr(s.opt, ms, 4, 0.3), STEPS);
    s = make(); follow(f, "exponential", s, ct_exponential_lr(s.opt, 0.9), STEPS);
    s = make(); follow(f, "cosine", s, ct_cosine_annealing_lr(s.opt, 10, 0.001), STEPS);
    s = make(); follow(f, "warm_restarts", s, ct_cosine_annealing_warm_restarts(s.opt, 5, 2, 0.0005), STEPS);
    s = make(); follow(f, "linear", s, ct_linear_lr(s.opt, 0.25, 1.0, 8), STEPS);
    s = make(); follow(f, "lambda", s, ct_lambda_lr(s.opt, lambda, NULL), STEPS);
    s = make();
    {
        ct_scheduler *parts[] = {ct_linear_lr(s.opt, 0.1, 1.0, 5), ct_exponential_lr(s.opt, 0.9)};
        int64_t at[] = {5};
        follow(f, "sequential", s, ct_sequential_lr(s.opt, parts, 2, at), STEPS);
    }
    double max_lrs[] = {1.0, 0.1};
    s = make();
    follow(f, "one_cycle", s, ct_one_cycle_lr(s.opt, .max_lrs = max_lrs, .total_steps = STEPS), STEPS - 1);
    s = make();
    follow(f, "one_cycle_3", s, ct_one_cycle_lr(s.opt, .max_lrs = max_lrs, .total_steps = STEPS,
                                                .three_phase = true, .anneal_linear = true), STEPS - 1);
    s = make(); follow(f, "plateau", s,
                       ct_reduce_lr_on_plateau(s.opt, .factor = CT_SOME(0.5), .patience = CT_SOME(2), .cooldown = 1,
                                               .threshold = CT_SOME(0.05), .min_lr = 0.004), STEPS);
    s = make(); follow(f, "plateau_max", s,
                       ct_reduce_lr_on_plateau(s.opt, .mode_max = true, .factor = CT_SOME(0.5), .patience = CT_SOME(2),
                                               .threshold = CT_SOME(0.05)), STEPS);
    s = make(); follow(f, "plateau_abs", s,
                       ct_reduce_lr_on_plateau(s.opt, .factor = CT_SOME(0.3), .patience = CT_SOME(1), .threshold = CT_SOME(0.015),
                                               .threshold_abs = true), STEPS);
    s = make(); follow(f, "plateau_max_abs", s,
                       ct_reduce_lr_on_plateau(s.opt, .mode_max = true, .factor = CT_SOME(0.5), .patience = CT_SOME(0),
                                               .cooldown = 2, .threshold = CT_SOME(0.005), .threshold_abs = true), STEPS);
    fx_free(f);
}

static ct_scheduler *make_sequential(ct_optim *o) {
    ct_scheduler *parts[] = {ct_linear_lr(o, 0.1, 1.0, 5), ct_exponential_lr(o, 0.9)};
    int64_t at[] = {5};
    return ct_sequential_lr(o, parts, 2, at);
}
static ct_scheduler *make_plateau(ct_optim *o) {
    return ct_reduce_lr_on_plateau(o, .factor = CT_SOME(0.5), .patience = CT_SOME(2), .cooldown = 1, .threshold = CT_SOME(0.05));
}
static ct_scheduler *make_one_cycle(ct_optim *o) {
    double max_lrs[] = {1.0, 0.1};
    return ct_one_cycle_lr(o, .max_lrs = max_lrs, .total_steps = STEPS);
}
static ct_scheduler *make_multistep(ct_optim *o) {
    int64_t ms[] = {5, 12, 12, 30};
    return ct_multistep_lr(o, ms, 4, 0.3);
}
static ct_scheduler *make_cosine(ct_optim *o) { return ct_cosine_annealing_lr(o, 10, 0.001); }
static ct_scheduler *make_linear(ct_optim *o) { return ct_linear_lr(o, 0.25, 1.0, 8); }
static ct_scheduler *make_exponential(ct_optim *o) { return ct_exponential_lr(o, 0.9); }

/* Saved mid-run (the optimizer's and the scheduler's state dicts) and loaded into a
 * fresh optimizer and scheduler, the run continues with the same lrs (and momentum). */
TEST(scheduler_state_dict_round_trip) {
    static const struct {
        const char *name;
        ct_scheduler *(*make)(ct_optim *);
        int save_at;
    } kinds[] = {
        {"sequential", make_sequential, 3}, {"plateau", make_plateau, 13},  {"one_cycle", make_one_cycle, 14},
        {"multistep", make_multistep, 11},  {"cosine", make_cosine, 7},     {"linear", make_linear, 4},
        {"exponential", make_exponential, 9},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) CT_SCOPE {
        bool plateau = !strcmp(kinds[k].name, "plateau");
        setup u = make(), v = make();
        ct_scheduler *su = kinds[k].make(u.opt);
        int t = 1;
        for (; t <= kinds[k].save_at; t++)
            CHECK((plateau ? ct_sched_step_metric(su, metric(t - 1)) : ct_sched_step(su)) == 0);
        ct_state_dict *osd = ct_optim_state_dict(u.opt), *ssd = ct_sched_state_dict(su);
        ct_scheduler *sv = kinds[k].make(v.opt);
        CHECK(ct_optim_load_state_dict(v.opt, osd) == 0);
        CHECK(ct_sched_load_state_dict(sv, ssd) == 0);
        for (; t < STEPS; t++) {
            CHECK((plateau ? ct_sched_step_metric(su, metric(t - 1)) : ct_sched_step(su)) == 0);
            CHECK((plateau ? ct_sched_step_metric(sv, metric(t - 1)) : ct_sched_step(sv)) == 0);
            for (int g = 0; g < 2; g++)
                if (ct_optim_get_lr(u.opt, g) != ct_optim_get_lr(v.opt, g) ||
                    ct_optim_get(u.opt, g, "momentum") != ct_optim_get(v.opt, g, "momentum") ||
                    ct_sched_get_last_lr(sv, g) != ct_optim_get_lr(v.opt, g)) {
                    ct_test_fail(__FILE__, __LINE__, "%s: step %d group %d: lr %.17g resumed %.17g", kinds[k].name,
                                 t, g, ct_optim_get_lr(u.opt, g), ct_optim_get_lr(v.opt, g));
                    t = STEPS;
                    break;
                }
        }
    }
}

TEST(scheduler_errors_and_state) {
    setup s = make();
    CHECK_ERROR(ct_step_lr(s.opt, 0, 0.1), "step_size must be a positive integer");
    CHECK_ERROR(ct_reduce_lr_on_plateau(s.opt, .factor = CT_SOME(2)), "Factor should be < 1.0.");
    ct_scheduler *p = ct_reduce_lr_on_plateau(s.opt);
    CHECK_ERROR(ct_sched_step(p), "needs the metric");
    ct_scheduler *c = ct_one_cycle_lr(s.opt, .max_lr = 1, .total_steps = 3);
    for (int i = 0; i < 3; i++) ct_sched_step(c);
    CHECK_ERROR(ct_sched_step(c), "Tried to step 4 times. The specified number of total steps is 3");
    setup u = make(), v = make();
    ct_scheduler *su = ct_cosine_annealing_warm_restarts(u.opt, 3, 2, 0);
    for (int i = 0; i < 7; i++) ct_sched_step(su);
    ct_scheduler *sv = ct_cosine_annealing_warm_restarts(v.opt, 3, 2, 0);
    CHECK(ct_sched_load_state_dict(sv, ct_sched_state_dict(su)) == 0);
    ct_optim_set_lr(v.opt, 0, ct_optim_get_lr(u.opt, 0));
    ct_sched_step(su);
    ct_sched_step(sv);
    CHECK_CLOSE(ct_optim_get_lr(v.opt, 0), ct_optim_get_lr(u.opt, 0), 0);
}

/* A LambdaLR function reports a failure with ct_set_error: the step fails and the
 * lrs stay. */
static double picky_lambda(int64_t e, void *ctx) {
    (void)ctx;
    if (e == 2) ct_set_error("my_lambda: no schedule for epoch %lld", (long long)e);
    return 1.0 / (double)(e + 1);
}

TEST(lambda_lr_reports_errors) {
    setup s = make();
    ct_scheduler *sch = ct_lambda_lr(s.opt, picky_lambda, NULL);
    CHECK_INT_EQ(ct_sched_step(sch), 0);
    CHECK_CLOSE(ct_optim_get_lr(s.opt, 0), 0.05, 1e-15);
    CHECK_ERROR(ct_sched_step(sch), "my_lambda: no schedule for epoch 2");
    CHECK_CLOSE(ct_optim_get_lr(s.opt, 0), 0.05, 1e-15);
}
