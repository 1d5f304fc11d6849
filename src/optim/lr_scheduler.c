/* Learning-rate schedulers after PyTorch 1.13's lr_scheduler.py: each get_lr below is
 * the chainable formula PyTorch uses in step(); closed_form is what step(epoch) uses
 * (SequentialLR needs it at its milestones). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/lr_scheduler.h"
#include "core/lifetime.h"
#include "ops/options.h"
#include "optim/optim_impl.h"
#include "core/mem.h"

typedef enum { STEP, MULTISTEP, EXPONENTIAL, COSINE, WARM_RESTARTS, LINEAR, LAMBDA, SEQUENTIAL,
               ONE_CYCLE, PLATEAU } sched_kind;

#define MAX_GROUPS 16
#define MAX_CHILDREN 8
#define MAX_MILESTONES 32

struct ct_scheduler {
    ct_object obj;
    sched_kind kind;
    ct_optim *opt; /* owned reference */
    int64_t last_epoch;
    double base_lrs[MAX_GROUPS], last_lrs[MAX_GROUPS];
    /* parameters, by kind */
    int64_t step_size, t_max, t_0, t_mult, t_i, t_cur, total_iters, total_steps;
    double gamma, eta_min, start_factor, end_factor;
    int64_t milestones[MAX_MILESTONES];
    int n_milestones;
    double (*lambda)(int64_t epoch, void *ctx);
    void *lambda_ctx;
    ct_scheduler *children[MAX_CHILDREN];
    int n_children;
    ct_one_cycle_options cycle;
    double max_lrs[MAX_GROUPS];
    const char *momentum_key; /* OneCycle: "momentum" or "beta1"; NULL: no cycling */
    ct_plateau_options plateau;
    double best, min_lr;
    int64_t num_bad_epochs, cooldown_counter;
};

static void sched_destroy(ct_object *o) {
    ct_scheduler *s = (ct_scheduler *)o;
    for (int i = 0; i < s->n_children; i++) ct_release(s->children[i]);
    ct_release(s->opt);
    ct_lifetime_free(s);
}

static int ngroups(const ct_scheduler *s) { return ct_optim_num_groups(s->opt); }
static double group_lr(const ct_scheduler *s, int g) { return ct_optim_get_lr(s->opt, g); }

static double py_mod(int64_t a, int64_t m) { return (double)(((a % m) + m) % m); }

/* The lr of group g at s->last_epoch (chainable form). */
static double get_lr(ct_scheduler *s, int g) {
    double lr = group_lr(s, g), base = s->base_lrs[g];
    int64_t e = s->last_epoch;
    switch (s->kind) {
    case STEP: return (e == 0 || e % s->step_size != 0) ? lr : lr * s->gamma;
    case MULTISTEP: {
        int hits = 0;
        for (int i = 0; i < s->n_milestones; i++) hits += s->milestones[i] == e;
        return hits ? lr * pow(s->gamma, hits) : lr;
    }
    case EXPONENTIAL: return e == 0 ? lr : lr * s->gamma;
    case COSINE:
        if (e == 0) return lr;
        if (py_mod(e - 1 - s->t_max, 2 * s->t_max) == 0)
            return lr + (base - s->eta_min) * (1 - cos(M_PI / (double)s->t_max)) / 2;
        return (1 + cos(M_PI * (double)e / (double)s->t_max)) /
                   (1 + cos(M_PI * (double)(e - 1) / (double)s->t_max)) * (lr - s->eta_min) +
               s->eta_min;
    case WARM_RESTARTS:
        return s->eta_min + (base - s->eta_min) * (1 + cos(M_PI * (double)s->t_cur / (double)s->t_i)) / 2;
    case LINEAR:
        if (e == 0) return lr * s->start_factor;
        if (e > s->total_iters) return lr;
        return lr * (1. + (s->end_factor - s->start_factor) /
                              ((double)s->total_iters * s->start_factor +
                               (double)(e - 1) * (s->end_factor - s->start_factor)));
    case LAMBDA: return base * s->lambda(e, s->lambda_ctx);
    default: return lr;
    }
}

/* step(epoch): the closed form where PyTorch has one. */
static double closed_form(ct_scheduler *s, int g) {
    double base = s->base_lrs[g];
    int64_t e = s->last_epoch;
    switch (s->kind) {
    case STEP: return base * pow(s->gamma, (double)(e / s->step_size));
    case MULTISTEP: {
        int passed = 0;
        for (int i = 0; i < s->n_milestones; i++) passed += s->milestones[i] <= e;
        return base * pow(s->gamma, passed);
    }
    case EXPONENTIAL: return base * pow(s->gamma, (double)e);
    case COSINE: return s->eta_min + (base - s->eta_min) * (1 + cos(M_PI * (double)e / (double)s->t_max)) / 2;
    case LINEAR:
        return base * (s->start_factor + (s->end_factor - s->start_factor) *
                                             (double)(e < s->total_iters ? e : s->total_iters) /
                                             (double)s->total_iters);
    default: return get_lr(s, g);
    }
}

/* Sets the groups' lrs; 0, or -1 (nothing changed) when a LambdaLR function
 * reported an error with ct_set_error. */
static int apply_lrs(ct_scheduler *s, bool closed) {
    double lrs[MAX_GROUPS];
    unsigned errors = ct_error_count();
    for (int g = 0; g < ngroups(s); g++) lrs[g] = closed ? closed_form(s, g) : get_lr(s, g);
    if (ct_error_count() != errors) return -1;
    for (int g = 0; g < ngroups(s); g++) {
        ct_optim_set_lr(s->opt, g, lrs[g]);
        s->last_lrs[g] = lrs[g];
    }
    return 0;
}

static int one_cycle_update(ct_scheduler *s);

/* step() for the plain schedulers; `epoch` >= 0 is step(epoch). */
static int step_plain(ct_scheduler *s, int64_t epoch) {
    if (s->kind == WARM_RESTARTS) {
        if (epoch < 0 && s->last_epoch < 0) epoch = 0;
        if (epoch < 0) {
            epoch = s->last_epoch + 1;
            s->t_cur++;
            if (s->t_cur >= s->t_i) {
                s->t_cur -= s->t_i;
                s->t_i *= s->t_mult;
            }
        } else if (epoch >= s->t_0) {
            if (s->t_mult == 1) {
                s->t_cur = epoch % s->t_0;
            } else {
                int64_t n = (int64_t)(log((double)epoch / (double)s->t_0 * (double)(s->t_mult - 1) + 1) /
                                      log((double)s->t_mult));
                int64_t p = (int64_t)pow((double)s->t_mult, (double)n);
                s->t_cur = epoch - s->t_0 * (p - 1) / (s->t_mult - 1);
                s->t_i = s->t_0 * p;
            }
        } else {
            s->t_i = s->t_0;
            s->t_cur = epoch;
        }
        s->last_epoch = epoch;
        return apply_lrs(s, false);
    }
    s->last_epoch = epoch >= 0 ? epoch : s->last_epoch + 1;
    if (s->kind == ONE_CYCLE) return one_cycle_update(s);
    return apply_lrs(s, epoch >= 0);
}

/* ---- construction ----------------------------------------------------------- */

static ct_scheduler *create(ct_optim *opt, sched_kind kind) {
    if (!opt) return NULL;
    if (ct_optim_num_groups(opt) > MAX_GROUPS) {
        ct_error("ct_scheduler: at most %d parameter groups are supported", MAX_GROUPS);
        return NULL;
    }
    ct_scheduler *s = ct_calloc(1, sizeof *s);
    if (!s) {
        ct_error("ct_scheduler: out of memory");
        return NULL;
    }
    ct_object_init(&s->obj, sched_destroy);
    s->kind = kind;
    s->opt = ct_retain(opt);
    s->last_epoch = -1;
    for (int g = 0; g < ngroups(s); g++) {
        if (isnan(ct_optim_get(opt, g, "initial_lr"))) ct_optim_set(opt, g, "initial_lr", group_lr(s, g));
        s->base_lrs[g] = ct_optim_get(opt, g, "initial_lr");
        s->last_lrs[g] = group_lr(s, g);
    }
    return s;
}

/* The initial step every PyTorch scheduler takes in its constructor. */
static ct_scheduler *start(ct_scheduler *s) {
    if (!s) return NULL;
    if (step_plain(s, -1) != 0) {
        ct_release(s);
        return NULL;
    }
    return ct_scope_register(s);
}

static bool positive(const char *op, int64_t v, const char *what) {
    if (v > 0) return true;
    ct_error("%s: %s must be a positive integer (got %lld)", op, what, (long long)v);
    return false;
}

ct_scheduler *ct_step_lr(ct_optim *opt, int64_t step_size, double gamma) {
    if (!ct_alive("ct_step_lr", 1, opt)) return NULL;
    if (!opt || !positive("ct_step_lr", step_size, "step_size")) return NULL;
    ct_scheduler *s = create(opt, STEP);
    if (s) {
        s->step_size = step_size;
        s->gamma = gamma;
    }
    return start(s);
}

ct_scheduler *ct_multistep_lr(ct_optim *opt, const int64_t *milestones, int n, double gamma) {
    if (!ct_alive("ct_multistep_lr", 1, opt)) return NULL;
    if (!opt) return NULL;
    if (n < 0 || n > MAX_MILESTONES || (n && !milestones)) {
        ct_error("ct_multistep_lr: between 0 and %d milestones are supported (got %d)", MAX_MILESTONES, n);
        return NULL;
    }
    ct_scheduler *s = create(opt, MULTISTEP);
    if (s) {
        memcpy(s->milestones, milestones, sizeof(int64_t) * (size_t)n);
        s->n_milestones = n;
        s->gamma = gamma;
    }
    return start(s);
}

ct_scheduler *ct_exponential_lr(ct_optim *opt, double gamma) {
    if (!ct_alive("ct_exponential_lr", 1, opt)) return NULL;
    ct_scheduler *s = create(opt, EXPONENTIAL);
    if (s) s->gamma = gamma;
    return start(s);
}

ct_scheduler *ct_cosine_annealing_lr(ct_optim *opt, int64_t t_max, double eta_min) {
    if (!ct_alive("ct_cosine_annealing_lr", 1, opt)) return NULL;
    if (!opt || !positive("ct_cosine_annealing_lr", t_max, "T_max")) return NULL;
    ct_scheduler *s = create(opt, COSINE);
    if (s) {
        s->t_max = t_max;
        s->eta_min = eta_min;
    }
    return start(s);
}

ct_scheduler *ct_cosine_annealing_warm_restarts(ct_optim *opt, int64_t t_0, int64_t t_mult, double eta_min) {
    if (!ct_alive("ct_cosine_annealing_warm_restarts", 1, opt)) return NULL;
    if (!opt || !positive("ct_cosine_annealing_warm_restarts", t_0, "T_0") ||
        !positive("ct_cosine_annealing_warm_restarts", t_mult, "T_mult"))
        return NULL;
    ct_scheduler *s = create(opt, WARM_RESTARTS);
    if (s) {
        s->t_0 = s->t_i = t_0;
        s->t_mult = t_mult;
        s->eta_min = eta_min;
        s->t_cur = -1;
    }
    return start(s);
}

ct_scheduler *ct_linear_lr(ct_optim *opt, double start_factor, double end_factor, int64_t total_iters) {
    if (!ct_alive("ct_linear_lr", 1, opt)) return NULL;
    if (!opt) return NULL;
    if (!(start_factor > 0 && start_factor <= 1) || !(end_factor >= 0 && end_factor <= 1)) {
        ct_error("ct_linear_lr: Starting multiplicative factor expected to be greater than 0 and less "
                 "or equal to 1, ending factor between 0 and 1 (got %g and %g)", start_factor, end_factor);
        return NULL;
    }
    ct_scheduler *s = create(opt, LINEAR);
    if (s) {
        s->start_factor = start_factor;
        s->end_factor = end_factor;
        s->total_iters = total_iters;
    }
    return start(s);
}

ct_scheduler *ct_lambda_lr(ct_optim *opt, double (*fn)(int64_t, void *), void *ctx) {
    if (!ct_alive("ct_lambda_lr", 1, opt)) return NULL;
    if (!opt) return NULL;
    if (!fn) {
        ct_error("ct_lambda_lr: lr_lambda is NULL");
        return NULL;
    }
    ct_scheduler *s = create(opt, LAMBDA);
    if (s) {
        s->lambda = fn;
        s->lambda_ctx = ctx;
    }
    return start(s);
}

ct_scheduler *ct_sequential_lr(ct_optim *opt, ct_scheduler *const *schedulers, int n,
                               const int64_t *milestones) {
    if (!ct_alive("ct_sequential_lr", 1, opt) ||
        !ct_all_alive("ct_sequential_lr", 2, schedulers, schedulers ? n : 0))
        return NULL;
    if (!opt || !schedulers) return NULL;
    if (n < 1 || n > MAX_CHILDREN) {
        ct_error("ct_sequential_lr: expects between 1 and %d schedulers (got %d)", MAX_CHILDREN, n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!schedulers[i]) return NULL;
        if (schedulers[i]->opt != opt) {
            ct_error("ct_sequential_lr: Sequential Schedulers expects all schedulers to belong to the "
                     "same optimizer, but got schedulers at index 0 and %d to be different", i);
            return NULL;
        }
    }
    ct_scheduler *s = create(opt, SEQUENTIAL);
    if (!s) return NULL;
    for (int i = 0; i < n; i++) {
        ct_scope_unregister(schedulers[i]); /* adopted, as documented */
        s->children[i] = schedulers[i];
    }
    s->n_children = n;
    memcpy(s->milestones, milestones, sizeof(int64_t) * (size_t)(n - 1));
    s->n_milestones = n - 1;
    /* As PyTorch: back to the initial lrs, undo the children's initial steps, then the
     * first child's initial step. */
    for (int g = 0; g < ngroups(s); g++) ct_optim_set_lr(opt, g, s->base_lrs[g]);
    for (int i = 0; i < n; i++) s->children[i]->last_epoch--;
    s->last_epoch = 0;
    step_plain(s->children[0], -1);
    memcpy(s->last_lrs, s->children[0]->last_lrs, sizeof s->last_lrs);
    return ct_scope_register(s);
}

/* ---- OneCycleLR ------------------------------------------------------------------ */

static double anneal(const ct_scheduler *s, double start, double end, double pct) {
    if (s->cycle.anneal_linear) return (end - start) * pct + start;
    return end + (start - end) / 2.0 * (cos(M_PI * pct) + 1);
}

static int one_cycle_update(ct_scheduler *s) {
    int64_t step = s->last_epoch;
    if (step > s->total_steps) {
        ct_error("ct_sched_step: Tried to step %lld times. The specified number of total steps is %lld",
                 (long long)step, (long long)s->total_steps);
        return -1;
    }
    const ct_one_cycle_options *c = &s->cycle;
    double total = (double)s->total_steps;
    for (int g = 0; g < ngroups(s); g++) {
        double initial = ct_optim_get(s->opt, g, "initial_lr");
        double max_lr = c->max_lrs ? c->max_lrs[g] : c->max_lr;
        double min_lr = initial / c->final_div_factor;
        /* Phases: (end step, start lr, end lr, start momentum, end momentum). */
        double ph[3][5];
        int nph;
        if (!c->three_phase) {
            double p0[5] = {c->pct_start.v * total - 1, initial, max_lr, c->max_momentum.v, c->base_momentum.v};
            double p1[5] = {total - 1, max_lr, min_lr, c->base_momentum.v, c->max_momentum.v};
            memcpy(ph[0], p0, sizeof p0);
            memcpy(ph[1], p1, sizeof p1);
            nph = 2;
        } else {
            double p0[5] = {c->pct_start.v * total - 1, initial, max_lr, c->max_momentum.v, c->base_momentum.v};
            double p1[5] = {2 * c->pct_start.v * total - 2, max_lr, initial, c->base_momentum.v, c->max_momentum.v};
            double p2[5] = {total - 1, initial, min_lr, c->max_momentum.v, c->max_momentum.v};
            memcpy(ph[0], p0, sizeof p0);
            memcpy(ph[1], p1, sizeof p1);
            memcpy(ph[2], p2, sizeof p2);
            nph = 3;
        }
        double start_step = 0, lr = 0, mom = 0;
        for (int i = 0; i < nph; i++) {
            if ((double)step <= ph[i][0] || i == nph - 1) {
                double pct = ((double)step - start_step) / (ph[i][0] - start_step);
                lr = anneal(s, ph[i][1], ph[i][2], pct);
                mom = anneal(s, ph[i][3], ph[i][4], pct);
                break;
            }
            start_step = ph[i][0];
        }
        ct_optim_set_lr(s->opt, g, lr);
        s->last_lrs[g] = lr;
        if (s->momentum_key) ct_optim_set(s->opt, g, s->momentum_key, mom);
    }
    return 0;
}

ct_scheduler *ct_one_cycle_lr_with(ct_optim *opt, ct_one_cycle_options o) {
    if (!ct_alive("ct_one_cycle_lr", 1, opt)) return NULL;
    if (!opt) return NULL;
    int64_t total = o.total_steps;
    if (total <= 0) {
        if (o.epochs <= 0 || o.steps_per_epoch <= 0) {
            ct_error("ct_one_cycle_lr: You must define either total_steps OR (epochs AND "
                     "steps_per_epoch), as positive integers");
            return NULL;
        }
        total = o.epochs * o.steps_per_epoch;
    }
    o.pct_start = CT_SOME(ct_opt_or(o.pct_start, 0.3));
    o.base_momentum = CT_SOME(ct_opt_or(o.base_momentum, 0.85));
    o.max_momentum = CT_SOME(ct_opt_or(o.max_momentum, 0.95));
    o.div_factor = ct_zero_or(o.div_factor, 25);
    o.final_div_factor = ct_zero_or(o.final_div_factor, 1e4);
    if (!(o.pct_start.v >= 0 && o.pct_start.v <= 1)) {
        ct_error("ct_one_cycle_lr: Expected float between 0 and 1 pct_start, but got %g", o.pct_start.v);
        return NULL;
    }
    ct_scheduler *s = create(opt, ONE_CYCLE);
    if (!s) return NULL;
    s->cycle = o;
    s->cycle.max_lrs = NULL; /* the caller's array need not outlive this call */
    for (int g = 0; g < ngroups(s) && o.max_lrs; g++) s->max_lrs[g] = o.max_lrs[g];
    if (o.max_lrs) s->cycle.max_lrs = s->max_lrs;
    s->total_steps = total;
    if (!o.no_cycle_momentum) {
        if (!isnan(ct_optim_get(opt, 0, "beta1")))
            s->momentum_key = "beta1";
        else if (!isnan(ct_optim_get(opt, 0, "momentum")))
            s->momentum_key = "momentum";
        else {
            ct_error("ct_one_cycle_lr: optimizer must support momentum with `cycle_momentum` option enabled");
            ct_release(s);
            return NULL;
        }
    }
    for (int g = 0; g < ngroups(s); g++) {
        double max_lr = o.max_lrs ? o.max_lrs[g] : o.max_lr;
        ct_optim_set(opt, g, "initial_lr", max_lr / o.div_factor);
        s->base_lrs[g] = max_lr / o.div_factor;
        if (s->momentum_key) ct_optim_set(opt, g, s->momentum_key, o.max_momentum.v);
    }
    return start(s);
}

/* ---- ReduceLROnPlateau -------------------------------------------------------------- */

ct_scheduler *ct_reduce_lr_on_plateau_with(ct_optim *opt, ct_plateau_options o) {
    if (!ct_alive("ct_reduce_lr_on_plateau", 1, opt)) return NULL;
    if (!opt) return NULL;
    int64_t patience;
    if (!ct_opt_int("ct_reduce_lr_on_plateau", "patience", o.patience, 10, &patience)) return NULL;
    o.patience = CT_SOME(patience);
    o.factor = CT_SOME(ct_opt_or(o.factor, 0.1));
    o.threshold = CT_SOME(ct_opt_or(o.threshold, 1e-4));
    o.eps = ct_zero_or(o.eps, 1e-8);
    if (o.factor.v >= 1.0) {
        ct_error("ct_reduce_lr_on_plateau: Factor should be < 1.0.");
        return NULL;
    }
    ct_scheduler *s = create(opt, PLATEAU);
    if (!s) return NULL;
    s->plateau = o;
    s->last_epoch = 0;
    s->best = o.mode_max ? -INFINITY : INFINITY;
    return ct_scope_register(s);
}

static bool is_better(const ct_scheduler *s, double a) {
    const ct_plateau_options *p = &s->plateau;
    if (!p->mode_max)
        return p->threshold_abs ? a < s->best - p->threshold.v : a < s->best * (1 - p->threshold.v);
    return p->threshold_abs ? a > s->best + p->threshold.v : a > s->best * (p->threshold.v + 1);
}

int ct_sched_step_metric(ct_scheduler *s, double metric) {
    if (!ct_alive("ct_sched_step_metric", 1, s)) return -1;
    if (!s) return -1;
    if (s->kind != PLATEAU) {
        ct_error("ct_sched_step_metric: only ReduceLROnPlateau steps with a metric; use ct_sched_step");
        return -1;
    }
    s->last_epoch++;
    if (is_better(s, metric)) {
        s->best = metric;
        s->num_bad_epochs = 0;
    } else {
        s->num_bad_epochs++;
    }
    if (s->cooldown_counter > 0) {
        s->cooldown_counter--;
        s->num_bad_epochs = 0;
    }
    if (s->num_bad_epochs > s->plateau.patience.v) {
        for (int g = 0; g < ngroups(s); g++) {
            double old = group_lr(s, g), lr = fmax(old * s->plateau.factor.v, s->plateau.min_lr);
            if (old - lr > s->plateau.eps) ct_optim_set_lr(s->opt, g, lr);
        }
        s->cooldown_counter = s->plateau.cooldown;
        s->num_bad_epochs = 0;
    }
    for (int g = 0; g < ngroups(s); g++) s->last_lrs[g] = group_lr(s, g);
    return 0;
}

/* ---- stepping and state ---------------------------------------------------------- */

int ct_sched_step(ct_scheduler *s) {
    if (!ct_alive("ct_sched_step", 1, s)) return -1;
    if (!s) return -1;
    if (s->kind == PLATEAU) {
        ct_error("ct_sched_step: ReduceLROnPlateau needs the metric: use ct_sched_step_metric");
        return -1;
    }
    if (s->kind != SEQUENTIAL) return step_plain(s, -1);
    s->last_epoch++;
    int idx = 0;
    while (idx < s->n_milestones && s->milestones[idx] <= s->last_epoch) idx++;
    ct_scheduler *child = s->children[idx];
    int rc = step_plain(child, idx > 0 && s->milestones[idx - 1] == s->last_epoch ? 0 : -1);
    memcpy(s->last_lrs, child->last_lrs, sizeof s->last_lrs);
    return rc;
}

double ct_sched_get_last_lr(const ct_scheduler *s, int group) {
    if (!ct_alive("ct_sched_get_last_lr", 1, s)) return NAN;
    if (!s || group < 0 || group >= ngroups(s)) return NAN;
    return s->last_lrs[group];
}

int64_t ct_sched_last_epoch(const ct_scheduler *s) {
    if (!ct_alive("ct_sched_last_epoch", 1, s)) return -1;
    return s ? s->last_epoch : -1;
}

/* Scalar fields saved by state dicts, by name. */
#define SCHED_FIELDS(X) \
    X(last_epoch) X(t_i) X(t_cur) X(num_bad_epochs) X(cooldown_counter)

ct_state_dict *ct_sched_state_dict(ct_scheduler *s) {
    if (!ct_alive("ct_sched_state_dict", 1, s)) return NULL;
    if (!s) return NULL;
    ct_state_dict *sd = NULL;
    CT_SCOPE {
        sd = ct_keep(ct_state_dict_new());
#define SAVE(f) ct_state_dict_set(sd, #f, ct_scalar_tensor((double)s->f, .dtype = CT_F64));
        SCHED_FIELDS(SAVE)
#undef SAVE
        ct_state_dict_set(sd, "best", ct_scalar_tensor(s->best, .dtype = CT_F64));
        char key[64];
        for (int g = 0; g < ngroups(s); g++) {
            snprintf(key, sizeof key, "base_lrs.%d", g);
            ct_state_dict_set(sd, key, ct_scalar_tensor(s->base_lrs[g], .dtype = CT_F64));
            snprintf(key, sizeof key, "last_lrs.%d", g);
            ct_state_dict_set(sd, key, ct_scalar_tensor(s->last_lrs[g], .dtype = CT_F64));
        }
        for (int i = 0; i < s->n_children; i++) {
            ct_state_dict *child = ct_sched_state_dict(s->children[i]);
            for (int k = 0; k < ct_state_dict_len(child); k++) {
                snprintf(key, sizeof key, "_schedulers.%d.%s", i, ct_state_dict_key(child, k));
                ct_state_dict_set(sd, key, ct_state_dict_value(child, k));
            }
        }
    }
    return sd;
}

static bool load_value(const ct_state_dict *sd, const char *key, double *out) {
    ct_tensor *t = ct_state_dict_get(sd, key);
    if (!t) return false;
    *out = ct_numel(t) == 1 ? ct_item(t) : NAN;
    return true;
}

/* A counter (last_epoch, t_cur, ...) is an integer that int64 arithmetic on it cannot
 * overflow (Note [Float to integer]); a learning rate is finite; best may be infinite
 * (its start) but not NaN.  False with an error naming the key (prefix: the child's). */
static bool loaded_in_range(const char *prefix, const char *key, double v, char kind) {
    bool ok = kind == 'i' ? v >= -1 && v <= 0x1p53 && v == floor(v) : kind == 'f' ? isfinite(v) : !isnan(v);
    if (!ok)
        ct_error("ct_sched_load_state_dict: '%s%s' is %g, not %s", prefix, key, v,
                 kind == 'i' ? "an epoch count (an integer from -1 to 2^53)" : "a finite number");
    return ok;
}

/* Checks sd against s (and its children), and loads it when commit is set. */
static int sched_load(ct_scheduler *s, const ct_state_dict *sd, const char *prefix, bool commit) {
    double v;
    if (!load_value(sd, "last_epoch", &v)) {
        ct_error("ct_sched_load_state_dict: the state dict has no '%slast_epoch': not a scheduler's",
                 prefix);
        return -1;
    }
#define LOAD(f)                                                                          \
    if (load_value(sd, #f, &v)) {                                                        \
        if (!loaded_in_range(prefix, #f, v, 'i')) return -1;                             \
        if (commit) s->f = (int64_t)v;                                                   \
    }
    SCHED_FIELDS(LOAD)
#undef LOAD
    if (load_value(sd, "best", &v)) {
        if (!loaded_in_range(prefix, "best", v, 'b')) return -1;
        if (commit) s->best = v;
    }
    char key[64];
    for (int g = 0; g < ngroups(s); g++)
        for (int which = 0; which < 2; which++) {
            snprintf(key, sizeof key, which ? "last_lrs.%d" : "base_lrs.%d", g);
            if (!load_value(sd, key, &v)) continue;
            if (!loaded_in_range(prefix, key, v, 'f')) return -1;
            if (commit) (which ? s->last_lrs : s->base_lrs)[g] = v;
        }
    int rc = 0;
    for (int i = 0; i < s->n_children && rc == 0; i++) {
        CT_SCOPE {
            ct_state_dict *child = ct_state_dict_new();
            char child_prefix[96];
            int n = snprintf(key, sizeof key, "_schedulers.%d.", i);
            snprintf(child_prefix, sizeof child_prefix, "%s%s", prefix, key);
            for (int k = 0; k < ct_state_dict_len(sd); k++)
                if (!strncmp(ct_state_dict_key(sd, k), key, (size_t)n))
                    ct_state_dict_set(child, ct_state_dict_key(sd, k) + n, ct_state_dict_value(sd, k));
            rc = child ? sched_load(s->children[i], child, child_prefix, commit) : -1;
        }
    }
    return rc;
}

int ct_sched_check_state_dict(ct_scheduler *s, const ct_state_dict *sd) {
    return s && sd ? sched_load(s, sd, "", false) : -1;
}

int ct_sched_load_state_dict(ct_scheduler *s, const ct_state_dict *sd) {
    if (!ct_alive("ct_sched_load_state_dict", 1, s) || !ct_alive("ct_sched_load_state_dict", 2, sd))
        return -1;
    /* Everything is checked first, so that a failed load changes nothing. */
    if (ct_sched_check_state_dict(s, sd) != 0) return -1;
    return sched_load(s, sd, "", true);
}
