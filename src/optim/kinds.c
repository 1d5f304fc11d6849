/* SGD, Adam, AdamW, RMSprop, Adagrad: constructors, state layout and the scalar
 * arguments of their fused kernels (src/cpu/optim.c), after PyTorch 1.13. */
#include <math.h>
#include <string.h>

#include "ops/options.h"
#include "ops/trace.h"
#include "optim/optim_impl.h"

/* Kernel argument slots shared by all kinds (args[15] is set by ct_step). */
enum { A_LR, A_MOMENTUM, A_DAMPENING, A_WD, A_NESTEROV, A_MAXIMIZE, A_BETA1, A_BETA2, A_EPS,
       A_STEP_SIZE, A_BC2_SQRT, A_AMSGRAD, A_DECOUPLED, A_ALPHA, A_CENTERED };

static void common_args(const ct_param_group *g, double *a) {
    memset(a, 0, sizeof(double) * 16);
    a[A_LR] = g->h[H_LR];
    a[A_WD] = g->h[H_WEIGHT_DECAY];
    a[A_MAXIMIZE] = g->h[H_MAXIMIZE];
}

static void no_h(double *h) {
    for (int k = 0; k < H_COUNT; k++) h[k] = NAN;
}

static bool valid(const char *op, double v, const char *what, bool positive) {
    if (isnan(v) || v < 0 || (positive && v == 0)) {
        ct_error("ct_%s: Invalid %s value: %g", op, what, v);
        return false;
    }
    return true;
}

/* ---- SGD ---- */
static unsigned sgd_bufs(const ct_param_group *g) {
    return g->h[H_MOMENTUM] != 0 ? 1u : 0u;
}
static void sgd_args(const ct_param_group *g, int64_t step, double *a) {
    (void)step;
    common_args(g, a);
    a[A_MOMENTUM] = g->h[H_MOMENTUM];
    a[A_DAMPENING] = g->h[H_DAMPENING];
    a[A_NESTEROV] = g->h[H_NESTEROV];
}
static void sgd_trace(const ct_param_group *g, const ct_param_state *st, ct_tensor *const *in) {
    (void)st;
    const double *h = g->h;
    CT_TRACE(CT_OP_sgd_step, 3, in, 0, NULL, CT_V_FLOAT(h[H_LR]), CT_V_FLOAT(h[H_MOMENTUM]),
             CT_V_FLOAT(h[H_DAMPENING]), CT_V_FLOAT(h[H_WEIGHT_DECAY]),
             CT_V_BOOL(h[H_NESTEROV] != 0), CT_V_BOOL(h[H_MAXIMIZE] != 0));
}
static const ct_optim_kind SGD = {"SGD", CT_OP_sgd_step, {"momentum_buffer"}, sgd_bufs, NULL, sgd_args,
                                  sgd_trace};

ct_optim *ct_sgd_with(ct_tensor *const *params, int n, ct_sgd_options o) {
    if (!ct_all_alive("ct_sgd", 1, params, n)) return NULL;
    if (!o.lr.set || o.lr.none) {
        ct_error("ct_sgd: required argument lr is missing (give .lr = CT_SOME(...))");
        return NULL;
    }
    if (!valid("sgd", o.lr.v, "learning rate", false) || !valid("sgd", o.momentum, "momentum", false) ||
        !valid("sgd", o.weight_decay, "weight_decay", false))
        return NULL;
    if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) {
        ct_error("ct_sgd: Nesterov momentum requires a momentum and zero dampening");
        return NULL;
    }
    double h[H_COUNT];
    no_h(h);
    h[H_LR] = o.lr.v;
    h[H_MOMENTUM] = o.momentum;
    h[H_DAMPENING] = o.dampening;
    h[H_WEIGHT_DECAY] = o.weight_decay;
    h[H_NESTEROV] = o.nesterov;
    h[H_MAXIMIZE] = o.maximize;
    return ct_optim_create(&SGD, params, n, h, o.master_weights);
}

/* ---- Adam / AdamW ---- */
static unsigned adam_bufs(const ct_param_group *g) {
    return g->h[H_AMSGRAD] != 0 ? 7u : 3u;
}
static void adam_args(const ct_param_group *g, int64_t step, double *a) {
    common_args(g, a);
    double b1 = g->h[H_BETA1], b2 = g->h[H_BETA2];
    a[A_BETA1] = b1;
    a[A_BETA2] = b2;
    a[A_EPS] = g->h[H_EPS];
    a[A_STEP_SIZE] = g->h[H_LR] / (1 - pow(b1, (double)step));
    a[A_BC2_SQRT] = sqrt(1 - pow(b2, (double)step));
    a[A_AMSGRAD] = g->h[H_AMSGRAD];
}
static void adamw_args(const ct_param_group *g, int64_t step, double *a) {
    adam_args(g, step, a);
    a[A_DECOUPLED] = 1;
}
static void adam_trace_as(const ct_param_group *g, const ct_param_state *st, ct_tensor *const *in,
                          bool decoupled) {
    const double *h = g->h;
    CT_TRACE(CT_OP_adam_step, 5, in, 0, NULL, CT_V_FLOAT(h[H_LR]), CT_V_FLOAT(h[H_BETA1]),
             CT_V_FLOAT(h[H_BETA2]), CT_V_FLOAT(h[H_EPS]), CT_V_FLOAT(h[H_WEIGHT_DECAY]),
             CT_V_BOOL(h[H_AMSGRAD] != 0), CT_V_BOOL(h[H_MAXIMIZE] != 0), CT_V_BOOL(decoupled),
             CT_V_INT(st->step));
}
static void adam_trace(const ct_param_group *g, const ct_param_state *st, ct_tensor *const *in) {
    adam_trace_as(g, st, in, false);
}
static void adamw_trace(const ct_param_group *g, const ct_param_state *st, ct_tensor *const *in) {
    adam_trace_as(g, st, in, true);
}
static const ct_optim_kind ADAM = {"Adam", CT_OP_adam_step, {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
                                   adam_bufs, NULL, adam_args, adam_trace};
static const ct_optim_kind ADAMW = {"AdamW", CT_OP_adam_step, {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
                                    adam_bufs, NULL, adamw_args, adamw_trace};

static ct_optim *adam_like(const ct_optim_kind *kind, ct_tensor *const *params, int n, ct_adam_options o) {
    const char *op = kind == &ADAM ? "adam" : "adamw";
    double lr = ct_zero_or(o.lr, 1e-3), eps = ct_zero_or(o.eps, 1e-8);
    double beta1 = ct_opt_or(o.beta1, 0.9), beta2 = ct_opt_or(o.beta2, 0.999);
    double wd = ct_opt_or(o.weight_decay, kind == &ADAM ? 0 : 1e-2);
    if (!valid(op, lr, "learning rate", false) || !valid(op, eps, "epsilon", false) ||
        !valid(op, wd, "weight_decay value", false))
        return NULL;
    if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) {
        ct_error("ct_%s: Invalid beta parameter: (%g, %g) (expected each in [0, 1))", op, beta1, beta2);
        return NULL;
    }
    double h[H_COUNT];
    no_h(h);
    h[H_LR] = lr;
    h[H_BETA1] = beta1;
    h[H_BETA2] = beta2;
    h[H_EPS] = eps;
    h[H_WEIGHT_DECAY] = wd;
    h[H_AMSGRAD] = o.amsgrad;
    h[H_MAXIMIZE] = o.maximize;
    return ct_optim_create(kind, params, n, h, o.master_weights);
}
ct_optim *ct_adam_with(ct_tensor *const *params, int n, ct_adam_options o) {
    if (!ct_all_alive("ct_adam", 1, params, n)) return NULL;
    return adam_like(&ADAM, params, n, o);
}
ct_optim *ct_adamw_with(ct_tensor *const *params, int n, ct_adam_options o) {
    if (!ct_all_alive("ct_adamw", 1, params, n)) return NULL;
    return adam_like(&ADAMW, params, n, o);
}

/* ---- RMSprop ---- */
static unsigned rmsprop_bufs(const ct_param_group *g) {
    return 1u | (g->h[H_MOMENTUM] > 0 ? 2u : 0u) | (g->h[H_CENTERED] != 0 ? 4u : 0u);
}
static void rmsprop_args(const ct_param_group *g, int64_t step, double *a) {
    (void)step;
    common_args(g, a);
    a[A_ALPHA] = g->h[H_ALPHA];
    a[A_EPS] = g->h[H_EPS];
    a[A_MOMENTUM] = g->h[H_MOMENTUM];
    a[A_CENTERED] = g->h[H_CENTERED];
}
static void rmsprop_trace(const ct_param_group *g, const ct_param_state *st, ct_tensor *const *in) {
    (void)st;
    const double *h = g->h;
    CT_TRACE(CT_OP_rmsprop_step, 5, in, 0, NULL, CT_V_FLOAT(h[H_LR]), CT_V_FLOAT(h[H_ALPHA]),
             CT_V_FLOAT(h[H_EPS]), CT_V_FLOAT(h[H_WEIGHT_DECAY]), CT_V_FLOAT(h[H_MOMENTUM]),
             CT_V_BOOL(h[H_CENTERED] != 0), CT_V_BOOL(h[H_MAXIMIZE] != 0));
}
static const ct_optim_kind RMSPROP = {"RMSprop", CT_OP_rmsprop_step,
                                      {"square_avg", "momentum_buffer", "grad_avg"},
                                      rmsprop_bufs, NULL, rmsprop_args, rmsprop_trace};

ct_optim *ct_rmsprop_with(ct_tensor *const *params, int n, ct_rmsprop_options o) {
    if (!ct_all_alive("ct_rmsprop", 1, params, n)) return NULL;
    o.lr = ct_zero_or(o.lr, 1e-2);
    o.eps = ct_zero_or(o.eps, 1e-8);
    double alpha = ct_opt_or(o.alpha, 0.99);
    if (!valid("rmsprop", o.lr, "learning rate", false) || !valid("rmsprop", o.eps, "epsilon", false) ||
        !valid("rmsprop", o.momentum, "momentum", false) ||
        !valid("rmsprop", o.weight_decay, "weight_decay", false) || !valid("rmsprop", alpha, "alpha", false))
        return NULL;
    double h[H_COUNT];
    no_h(h);
    h[H_LR] = o.lr;
    h[H_ALPHA] = alpha;
    h[H_EPS] = o.eps;
    h[H_WEIGHT_DECAY] = o.weight_decay;
    h[H_MOMENTUM] = o.momentum;
    h[H_CENTERED] = o.centered;
    h[H_MAXIMIZE] = o.maximize;
    return ct_optim_create(&RMSPROP, params, n, h, o.master_weights);
}

/* ---- Adagrad ---- */
static unsigned adagrad_bufs(const ct_param_group *g) {
    (void)g;
    return 1u;
}
static double adagrad_init(const ct_param_group *g, int i) {
    (void)i;
    return g->h[H_INITIAL_ACCUMULATOR];
}
static void adagrad_args(const ct_param_group *g, int64_t step, double *a) {
    common_args(g, a);
    a[A_EPS] = g->h[H_EPS];
    a[A_STEP_SIZE] = g->h[H_LR] / (1 + (double)(step - 1) * g->h[H_LR_DECAY]);
}
static void adagrad_trace(const ct_param_group *g, const ct_param_state *st, ct_tensor *const *in) {
    const double *h = g->h;
    CT_TRACE(CT_OP_adagrad_step, 3, in, 0, NULL, CT_V_FLOAT(h[H_LR]), CT_V_FLOAT(h[H_LR_DECAY]),
             CT_V_FLOAT(h[H_WEIGHT_DECAY]), CT_V_FLOAT(h[H_EPS]), CT_V_BOOL(h[H_MAXIMIZE] != 0),
             CT_V_INT(st->step));
}
static const ct_optim_kind ADAGRAD = {"Adagrad", CT_OP_adagrad_step, {"sum"}, adagrad_bufs,
                                      adagrad_init, adagrad_args, adagrad_trace};

ct_optim *ct_adagrad_with(ct_tensor *const *params, int n, ct_adagrad_options o) {
    if (!ct_all_alive("ct_adagrad", 1, params, n)) return NULL;
    o.lr = ct_zero_or(o.lr, 1e-2);
    o.eps = ct_zero_or(o.eps, 1e-10);
    if (!valid("adagrad", o.lr, "learning rate", false) || !valid("adagrad", o.lr_decay, "lr_decay", false) ||
        !valid("adagrad", o.weight_decay, "weight_decay", false) ||
        !valid("adagrad", o.initial_accumulator_value, "initial_accumulator_value", false) ||
        !valid("adagrad", o.eps, "epsilon", false))
        return NULL;
    double h[H_COUNT];
    no_h(h);
    h[H_LR] = o.lr;
    h[H_LR_DECAY] = o.lr_decay;
    h[H_WEIGHT_DECAY] = o.weight_decay;
    h[H_INITIAL_ACCUMULATOR] = o.initial_accumulator_value;
    h[H_EPS] = o.eps;
    h[H_MAXIMIZE] = o.maximize;
    return ct_optim_create(&ADAGRAD, params, n, h, o.master_weights);
}

/* ---- the record hook ---- */
void ct_optim_trace(const ct_optim_kind *kind, const ct_param_group *g, const ct_param_state *st,
                    ct_tensor *grad) {
    if (__builtin_expect(!ct_trace_active, 1)) return;
    /* With master weights the kernel updated the master; its rounding into the
     * parameter is reported as the copy it is. */
    ct_tensor *in[5] = {st->master ? st->master : st->param, grad, st->buf[0], st->buf[1],
                        st->buf[2]};
    kind->trace(g, st, in);
}
