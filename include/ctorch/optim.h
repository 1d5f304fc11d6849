/* ctorch/optim.h — optimizers, parameter groups, gradient clipping.
 *
 *     ct_module *model = ct_gru(4, 8);
 *     ct_tensor *params[8];
 *     int n = ct_parameters(model, params, 8);
 *     ct_optim *opt = ct_adam(params, n, .lr = 1e-3);
 *     for (int step = 0; step < 3; step++) {
 *         CT_SCOPE_HERE;
 *         ct_tensor *loss = ct_mean(ct_forward(model, ct_randn(CT_SHAPE(5, 2, 4))));
 *         ct_zero_grad(opt);
 *         ct_backward(loss);
 *         ct_step(opt);
 *     }
 *
 * Options not given take PyTorch's defaults (each field says which; a zeroed `_with`
 * struct is the macro given nothing).  A learning rate or eps of 0 reads as the
 * default; betas, Adam's weight_decay (AdamW's default is 0.01) and RMSprop's alpha,
 * where 0 is a value, are CT_SOME(v).  Updates follow PyTorch 1.13's formulas
 * (float32 parameters are updated in float32 with the same order of operations).
 * Parameters whose .grad is NULL are skipped.  Extra groups (a backbone at a lower
 * lr) take the constructor's values for whatever they do not override:
 *
 *     ct_module *model = ct_gru(4, 8);
 *     ct_tensor *p[4];
 *     ct_parameters(model, p, 4);       // weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0
 *     ct_optim *opt = ct_sgd(p, 2, .lr = CT_SOME(0.1), .momentum = 0.9);
 *     ct_optim_add_param_group(opt, p + 2, 2, .lr = CT_SOME(0.001));
 *
 * Master weights (every optimizer's .master_weights = true) train a model converted
 * to bfloat16 or float16 (ct_module_to(m, .dtype = CT_BF16)) in float32: each such
 * parameter gets a float32 master copy, made from the parameter at its first step.
 * A step widens the gradient to float32, runs the float32 update on the master with
 * float32 state (momentum_buffer, exp_avg, ...), and overwrites the parameter with the
 * master rounded to its dtype (to nearest even), so updates smaller than half an ulp
 * of the parameter accumulate instead of vanishing.  Float32 and float64 parameters
 * step as they do without the option; without it, reduced parameters keep their
 * state in their own dtype, as PyTorch's do.  The master is the parameter's true
 * value: write a new value into the parameter between steps and the next step starts
 * from the master, not from it (load the optimizer's state with the model's).  The
 * masters are part of the state dict ("state.<i>.master", float32, shaped like the
 * parameter) and so of checkpoints, and a resumed run is bit-exact:
 *
 *     ct_module *model = ct_nn_linear(4, 2);
 *     ct_module_to(model, .dtype = CT_BF16);
 *     ct_tensor *w[2];
 *     ct_parameters(model, w, 2);
 *     ct_optim *opt = ct_adamw(w, 2, .lr = 1e-3, .master_weights = true);
 *     ct_backward(ct_mean(ct_forward(model, ct_randn(CT_SHAPE(3, 4), .dtype = CT_BF16))));
 *     ct_step(opt); // w[0]: its float32 master, updated by AdamW, rounded to bfloat16
 */
#ifndef CTORCH_OPTIM_H
#define CTORCH_OPTIM_H

#include <math.h>

#include "state_dict.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_optim ct_optim; /* an optimizer: its parameter groups and state */

/* Options of ct_sgd (torch.optim.SGD). */
typedef struct {
    ct_opt_f64 lr;                  /* required: no default in PyTorch; CT_SOME(0) is a real 0 */
    double momentum;                /* default 0 */
    double dampening;               /* default 0 */
    double weight_decay;            /* L2 penalty, default 0 */
    bool nesterov;                  /* Nesterov momentum */
    bool maximize;                  /* ascend instead of descend */
    bool master_weights;            /* float32 master copies of float16/bfloat16 parameters */
} ct_sgd_options;
/* Options of ct_adam and ct_adamw (torch.optim.Adam, AdamW). */
typedef struct {
    double lr;                      /* default 1e-3 */
    ct_opt_f64 beta1;               /* betas[0], default 0.9 */
    ct_opt_f64 beta2;               /* betas[1], default 0.999 */
    double eps;                     /* default 1e-8 */
    ct_opt_f64 weight_decay;        /* default 0 (AdamW: 1e-2) */
    bool amsgrad;                   /* the AMSGrad variant */
    bool maximize;                  /* ascend instead of descend */
    bool master_weights;            /* float32 master copies of float16/bfloat16 parameters */
} ct_adam_options;
/* Options of ct_rmsprop (torch.optim.RMSprop). */
typedef struct {
    double lr;                      /* default 1e-2 */
    ct_opt_f64 alpha;               /* default 0.99 */
    double eps;                     /* default 1e-8 */
    double weight_decay;            /* L2 penalty, default 0 */
    double momentum;                /* default 0 */
    bool centered;                  /* normalise by the gradient's estimated variance */
    bool maximize;                  /* ascend instead of descend */
    bool master_weights;            /* float32 master copies of float16/bfloat16 parameters */
} ct_rmsprop_options;
/* Options of ct_adagrad (torch.optim.Adagrad). */
typedef struct {
    double lr;                      /* default 1e-2 */
    double lr_decay;                /* default 0 */
    double weight_decay;            /* L2 penalty, default 0 */
    double initial_accumulator_value; /* default 0 */
    double eps;                     /* default 1e-10 */
    bool maximize;                  /* ascend instead of descend */
    bool master_weights;            /* float32 master copies of float16/bfloat16 parameters */
} ct_adagrad_options;

/* The optimizers over params[0..n-1] (one group; the parameters are retained). */
ct_optim *ct_sgd_with(ct_tensor *const *params, int n, ct_sgd_options o);
ct_optim *ct_adam_with(ct_tensor *const *params, int n, ct_adam_options o);
ct_optim *ct_adamw_with(ct_tensor *const *params, int n, ct_adam_options o);
ct_optim *ct_rmsprop_with(ct_tensor *const *params, int n, ct_rmsprop_options o);
ct_optim *ct_adagrad_with(ct_tensor *const *params, int n, ct_adagrad_options o);
/* SGD has no default lr in PyTorch: .lr = CT_SOME(v) is required (lr=0 is accepted, as
 * PyTorch does, and leaves the parameters as they are). */
#define ct_sgd(params, n, ...) CT_AT(ct_sgd_with(params, n, CT_OPTIONS(ct_sgd_options, __VA_ARGS__)))
#define ct_adam(params, n, ...) \
    CT_AT(ct_adam_with(params, n, CT_OPTIONS(ct_adam_options, __VA_ARGS__)))
#define ct_adamw(params, n, ...) \
    CT_AT(ct_adamw_with(params, n, CT_OPTIONS(ct_adam_options, __VA_ARGS__)))
#define ct_rmsprop(params, n, ...) \
    CT_AT(ct_rmsprop_with(params, n, CT_OPTIONS(ct_rmsprop_options, __VA_ARGS__)))
#define ct_adagrad(params, n, ...) \
    CT_AT(ct_adagrad_with(params, n, CT_OPTIONS(ct_adagrad_options, __VA_ARGS__)))

/* Per-group overrides, CT_SOME(v); a field not given takes the optimizer's value.
 * Returns 0 or -1. */
typedef struct {
    ct_opt_f64 lr;           /* learning rate */
    ct_opt_f64 momentum;     /* SGD, RMSprop */
    ct_opt_f64 dampening;    /* SGD */
    ct_opt_f64 weight_decay; /* every optimizer */
    ct_opt_f64 beta1;        /* Adam, AdamW */
    ct_opt_f64 beta2;        /* Adam, AdamW */
    ct_opt_f64 eps;          /* Adam, AdamW, RMSprop, Adagrad */
    ct_opt_f64 alpha;        /* RMSprop */
    ct_opt_f64 lr_decay;     /* Adagrad */
} ct_group_options;
int ct_optim_add_param_group_with(ct_optim *opt, ct_tensor *const *params, int n,
                                  ct_group_options o);
#define ct_optim_add_param_group(opt, params, n, ...) \
    CT_AT(ct_optim_add_param_group_with(opt, params, n, CT_OPTIONS(ct_group_options, __VA_ARGS__)))

/* One update of every parameter with a gradient.  Returns 0 or -1. */
int ct_step(ct_optim *opt);
#define ct_step(opt) CT_AT(ct_step(opt))
/* Zeroes the gradients; .set_to_none = true drops them (PyTorch 1.13's default is
 * to zero them in place). */
void ct_zero_grad_with(ct_optim *opt, ct_zero_grad_options o);
#define ct_zero_grad_with(...) CT_AT(ct_zero_grad_with(__VA_ARGS__))
#define ct_zero_grad(opt, ...) ct_zero_grad_with(opt, CT_OPTIONS(ct_zero_grad_options, __VA_ARGS__))

/* Groups and their learning rates (schedulers use these): len(opt.param_groups),
 * opt.param_groups[g]["lr"] (NAN with an error for a group out of range) and
 * opt.param_groups[g]["lr"] = lr. */
int ct_optim_num_groups(const ct_optim *opt);
#define ct_optim_num_groups(opt) CT_AT(ct_optim_num_groups(opt))
double ct_optim_get_lr(const ct_optim *opt, int group);
#define ct_optim_get_lr(opt, group) CT_AT(ct_optim_get_lr(opt, group))
int ct_optim_set_lr(ct_optim *opt, int group, double lr); /* 0 or -1 */
#define ct_optim_set_lr(opt, group, lr) CT_AT(ct_optim_set_lr(opt, group, lr))
/* Any hyperparameter of a group by PyTorch's name ("lr", "momentum", "beta1", ...);
 * NAN when the optimizer has no such field.  ct_optim_set returns 0 or -1. */
double ct_optim_get(const ct_optim *opt, int group, const char *key);
#define ct_optim_get(opt, group, key) CT_AT(ct_optim_get(opt, group, key))
int ct_optim_set(ct_optim *opt, int group, const char *key, double value);
#define ct_optim_set(opt, group, key, value) CT_AT(ct_optim_set(opt, group, key, value))

/* opt.param_groups[g] as a struct: the group's parameters (borrowed from the
 * optimizer, in the order they were given, valid while it lives) and every option it
 * holds.  A hyperparameter the optimizer does not have is NAN (SGD has no beta1, Adam
 * no momentum), a flag it does not have false; initial_lr is NAN until a scheduler
 * sets it.  Change options with ct_optim_set / ct_optim_set_lr.
 *
 *     ct_module *model = ct_nn_linear(3, 2);
 *     ct_tensor *p[2];
 *     ct_parameters(model, p, 2);
 *     ct_optim *opt = ct_adam(p, 1, .lr = 0.01);
 *     ct_optim_add_param_group(opt, p + 1, 1, .weight_decay = CT_SOME(0.1));
 *     ct_param_group_info g = ct_optim_param_group(opt, 1);
 *     // g.num_params == 1, g.params[0] == p[1], g.lr == 0.01, g.weight_decay == 0.1,
 *     // g.beta2 == 0.999, g.amsgrad == false, isnan(g.momentum)
 *     if (g.params[0] != p[1] || g.weight_decay != 0.1) return 1;
 *
 * On error (a NULL optimizer, a group out of range) params is NULL, num_params -1. */
typedef struct {
    ct_tensor *const *params;  /* the group's parameters (borrowed) */
    int num_params;            /* how many */
    double lr;                 /* learning rate */
    double momentum;           /* SGD, RMSprop */
    double dampening;          /* SGD */
    double weight_decay;       /* every optimizer */
    double beta1;              /* Adam, AdamW */
    double beta2;              /* Adam, AdamW */
    double eps;                /* Adam, AdamW, RMSprop, Adagrad */
    double alpha;              /* RMSprop */
    double lr_decay;           /* Adagrad */
    double initial_accumulator_value; /* Adagrad */
    double initial_lr;         /* set by the first scheduler */
    bool nesterov;             /* SGD */
    bool maximize;             /* every optimizer */
    bool amsgrad;              /* Adam, AdamW */
    bool centered;             /* RMSprop */
} ct_param_group_info;
ct_param_group_info ct_optim_param_group(const ct_optim *opt, int group);
#define ct_optim_param_group(opt, group) CT_AT(ct_optim_param_group(opt, group))
const char *ct_optim_type(const ct_optim *opt); /* "Adam" */
#define ct_optim_type(opt) CT_AT(ct_optim_type(opt))

/* The optimizer's state (per-parameter buffers and steps, and every group's
 * hyperparameters) under keys "state.<param index>.<name>" and
 * "param_groups.<g>.<key>", parameters numbered as PyTorch numbers them; with
 * .master_weights, also each reduced parameter's float32 "state.<i>.master".  A load
 * checks everything before changing anything: an entry the optimizer does not have,
 * a buffer of the wrong size, a step that is not an integer, a master that is not a
 * finite float32 tensor of the parameter's shape.  A parameter whose loaded state has
 * no master takes a new one from its value at its next step. */
ct_state_dict *ct_optim_state_dict(ct_optim *opt);
#define ct_optim_state_dict(opt) CT_AT(ct_optim_state_dict(opt))
int ct_optim_load_state_dict(ct_optim *opt, const ct_state_dict *sd);
#define ct_optim_load_state_dict(opt, sd) CT_AT(ct_optim_load_state_dict(opt, sd))

/* ---- gradient clipping ------------------------------------------------------ */

/* Options of ct_clip_grad_norm_. */
typedef struct {
    ct_opt_f64 norm_type;    /* default 2; CT_SOME(INFINITY) the max norm, CT_SOME(0) the
                              * count of nonzero gradient entries (PyTorch's norm of order 0) */
    bool error_if_nonfinite; /* fail when the total norm is NaN or Inf */
} ct_clip_options;
/* Scales all gradients so that their total norm is at most max_norm; returns the
 * total norm before clipping (NAN with an error on failure).  With gradients on the
 * meta device the norm has no value: the scaling is checked (shapes, dtypes) and
 * NAN comes back without an error. */
double ct_clip_grad_norm_with(ct_tensor *const *params, int n, double max_norm, ct_clip_options o);
#define ct_clip_grad_norm_with(...) CT_AT(ct_clip_grad_norm_with(__VA_ARGS__))
#define ct_clip_grad_norm_(params, n, max_norm, ...) \
    ct_clip_grad_norm_with(params, n, max_norm, CT_OPTIONS(ct_clip_options, __VA_ARGS__))
/* Clamps every gradient element into [-clip_value, clip_value]. */
int ct_clip_grad_value_(ct_tensor *const *params, int n, double clip_value);
#define ct_clip_grad_value_(params, n, clip_value) CT_AT(ct_clip_grad_value_(params, n, clip_value))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
