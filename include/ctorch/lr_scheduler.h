/* ctorch/lr_scheduler.h — learning-rate schedules (torch.optim.lr_scheduler).
 *
 * A scheduler changes the lr of every group of its optimizer on each ct_sched_step,
 * following PyTorch 1.13's (chainable) formulas, and remembers each group's initial
 * lr.  Create it after the optimizer; step it after ct_step, once per epoch (or per
 * batch for OneCycleLR).  ReduceLROnPlateau steps with a metric.
 *
 *     ct_tensor *w = ct_zeros(CT_SHAPE(3), .requires_grad = true);
 *     ct_optim *opt = ct_sgd(&w, 1, .lr = CT_SOME(0.1));
 *     ct_scheduler *sched = ct_step_lr(opt, 2, 0.5);   // halve the lr every 2 epochs
 *     for (int epoch = 0; epoch < 4; epoch++) {
 *         ct_step(opt);
 *         ct_sched_step(sched);
 *     }
 *     total = ct_sched_get_last_lr(sched, 0);          // 0.025
 */
#ifndef CTORCH_LR_SCHEDULER_H
#define CTORCH_LR_SCHEDULER_H

#include "optim.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_scheduler ct_scheduler; /* a learning-rate scheduler of one optimizer */

/* StepLR: lr x gamma every step_size epochs. */
ct_scheduler *ct_step_lr(ct_optim *opt, int64_t step_size, double gamma);
#define ct_step_lr(opt, step_size, gamma) CT_AT(ct_step_lr(opt, step_size, gamma))
/* MultiStepLR: lr x gamma at each of the n milestones (increasing epochs). */
ct_scheduler *ct_multistep_lr(ct_optim *opt, const int64_t *milestones, int n, double gamma);
#define ct_multistep_lr(opt, milestones, n, gamma) CT_AT(ct_multistep_lr(opt, milestones, n, gamma))
/* ExponentialLR: lr x gamma every epoch. */
ct_scheduler *ct_exponential_lr(ct_optim *opt, double gamma);
#define ct_exponential_lr(opt, gamma) CT_AT(ct_exponential_lr(opt, gamma))
/* CosineAnnealingLR: from the initial lr down to eta_min over t_max epochs, on a cosine. */
ct_scheduler *ct_cosine_annealing_lr(ct_optim *opt, int64_t t_max, double eta_min);
#define ct_cosine_annealing_lr(opt, t_max, eta_min) \
    CT_AT(ct_cosine_annealing_lr(opt, t_max, eta_min))
/* CosineAnnealingWarmRestarts: cosine annealing restarted after t_0 epochs, each
 * period t_mult times the one before. */
ct_scheduler *ct_cosine_annealing_warm_restarts(ct_optim *opt, int64_t t_0, int64_t t_mult,
                                                double eta_min);
#define ct_cosine_annealing_warm_restarts(opt, t_0, t_mult, eta_min) \
    CT_AT(ct_cosine_annealing_warm_restarts(opt, t_0, t_mult, eta_min))
/* LinearLR: the lr's factor goes linearly from start_factor to end_factor over
 * total_iters epochs. */
ct_scheduler *ct_linear_lr(ct_optim *opt, double start_factor, double end_factor,
                           int64_t total_iters);
#define ct_linear_lr(opt, start_factor, end_factor, total_iters) \
    CT_AT(ct_linear_lr(opt, start_factor, end_factor, total_iters))
/* lr = initial_lr * fn(epoch, ctx) for every group.  fn may report a failure with
 * ct_set_error: the step (or ct_lambda_lr's initial one) then fails (-1 / NULL)
 * and leaves the lrs unchanged. */
ct_scheduler *ct_lambda_lr(ct_optim *opt, double (*fn)(int64_t epoch, void *ctx), void *ctx);
#define ct_lambda_lr(...) CT_AT(ct_lambda_lr(__VA_ARGS__))
/* Runs schedulers[i] from milestones[i - 1] on (n schedulers, n - 1 milestones); the
 * SequentialLR adopts the schedulers' references. */
ct_scheduler *ct_sequential_lr(ct_optim *opt, ct_scheduler *const *schedulers, int n,
                               const int64_t *milestones);
#define ct_sequential_lr(opt, schedulers, n, milestones) \
    CT_AT(ct_sequential_lr(opt, schedulers, n, milestones))

/* Options of ct_one_cycle_lr. */
typedef struct {
    double max_lr;             /* the peak lr of every group */
    const double *max_lrs;     /* or one max_lr per group */
    int64_t total_steps;       /* or epochs * steps_per_epoch */
    int64_t epochs;            /* with steps_per_epoch, instead of total_steps */
    int64_t steps_per_epoch;   /* with epochs */
    ct_opt_f64 pct_start;      /* default 0.3 */
    bool anneal_linear;        /* default: cosine annealing */
    bool no_cycle_momentum;    /* default: momentum (or Adam's beta1) cycles too */
    ct_opt_f64 base_momentum;  /* default 0.85 */
    ct_opt_f64 max_momentum;   /* default 0.95 */
    double div_factor;         /* 0: default 25 */
    double final_div_factor;   /* 0: default 1e4 */
    bool three_phase;          /* a third phase annihilates the lr after the cycle */
} ct_one_cycle_options;
ct_scheduler *ct_one_cycle_lr_with(ct_optim *opt, ct_one_cycle_options o);
#define ct_one_cycle_lr_with(...) CT_AT(ct_one_cycle_lr_with(__VA_ARGS__))
#define ct_one_cycle_lr(opt, ...) \
    ct_one_cycle_lr_with(opt, CT_OPTIONS(ct_one_cycle_options, __VA_ARGS__))

/* Options of ct_reduce_lr_on_plateau. */
typedef struct {
    bool mode_max;          /* default "min": lower metrics are better */
    ct_opt_f64 factor;      /* default 0.1 */
    ct_opt_f64 patience;    /* default 10 (an integer) */
    ct_opt_f64 threshold;   /* default 1e-4 */
    bool threshold_abs;     /* default "rel" */
    int64_t cooldown;       /* default 0 */
    double min_lr;          /* default 0 (for every group) */
    double eps;             /* 0: default 1e-8 */
} ct_plateau_options;
ct_scheduler *ct_reduce_lr_on_plateau_with(ct_optim *opt, ct_plateau_options o);
#define ct_reduce_lr_on_plateau_with(...) CT_AT(ct_reduce_lr_on_plateau_with(__VA_ARGS__))
#define ct_reduce_lr_on_plateau(opt, ...) \
    ct_reduce_lr_on_plateau_with(opt, CT_OPTIONS(ct_plateau_options, __VA_ARGS__))

/* Advances one epoch (or batch).  Returns 0 or -1. */
int ct_sched_step(ct_scheduler *s);
#define ct_sched_step(s) CT_AT(ct_sched_step(s))
/* ReduceLROnPlateau's step, given the monitored metric. */
int ct_sched_step_metric(ct_scheduler *s, double metric);
#define ct_sched_step_metric(s, metric) CT_AT(ct_sched_step_metric(s, metric))
/* The lr of group i after the last step (get_last_lr()[i]). */
double ct_sched_get_last_lr(const ct_scheduler *s, int group);
#define ct_sched_get_last_lr(s, group) CT_AT(ct_sched_get_last_lr(s, group))
int64_t ct_sched_last_epoch(const ct_scheduler *s); /* last_epoch: 0 after construction, +1 a step */
#define ct_sched_last_epoch(s) CT_AT(ct_sched_last_epoch(s))
/* Counters and internal values under "last_epoch", "best", ...: enough to resume. */
ct_state_dict *ct_sched_state_dict(ct_scheduler *s);
#define ct_sched_state_dict(s) CT_AT(ct_sched_state_dict(s))
int ct_sched_load_state_dict(ct_scheduler *s, const ct_state_dict *sd);
#define ct_sched_load_state_dict(s, sd) CT_AT(ct_sched_load_state_dict(s, sd))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
