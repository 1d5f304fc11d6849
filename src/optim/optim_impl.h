/* The optimizer struct, shared by the optimizers and the schedulers. */
#ifndef CT_OPTIM_IMPL_H
#define CT_OPTIM_IMPL_H

#include "ctorch.h"
#include "ctorch/optim.h"
#include "core/object.h"
#include "ops/op_table.h"

/* Hyperparameters every group carries (those an optimizer does not use stay NAN;
 * flags are 0 or 1). */
typedef enum {
    H_LR, H_MOMENTUM, H_DAMPENING, H_WEIGHT_DECAY, H_BETA1, H_BETA2, H_EPS, H_ALPHA,
    H_LR_DECAY, H_INITIAL_ACCUMULATOR, H_NESTEROV, H_MAXIMIZE, H_AMSGRAD, H_CENTERED,
    H_INITIAL_LR, H_COUNT
} ct_hparam;
extern const char *const ct_hparam_names[H_COUNT];

typedef struct {
    ct_tensor **params;
    int n;
    double h[H_COUNT];
} ct_param_group;

/* Per-parameter state: up to three buffers shaped like the parameter, a step, and with
 * master weights a float16/bfloat16 parameter's float32 master copy (Note [Master
 * weights] in optim/optimizer.c). */
#define CT_OPTIM_MAX_BUFS 3
typedef struct {
    ct_tensor *param; /* weak: groups own the parameters */
    ct_tensor *buf[CT_OPTIM_MAX_BUFS];
    ct_tensor *master; /* NULL until the first step, and without master weights */
    int64_t step;
} ct_param_state;

/* What distinguishes one optimizer from another. */
typedef struct ct_optim_kind {
    const char *name;
    ct_op_id kernel_op; /* its fused update kernel (src/cpu/optim.c) */
    const char *buf_names[CT_OPTIM_MAX_BUFS]; /* PyTorch's state names, NULL-terminated */
    /* Which buffers this optimizer's configuration needs (bit i: buf i). */
    unsigned (*bufs_needed)(const ct_param_group *g);
    /* Initial value of buffer i (zeros unless said). */
    double (*buf_init)(const ct_param_group *g, int i);
    /* Fills the kernel's scalar arguments for one parameter's update. */
    void (*kernel_args)(const ct_param_group *g, int64_t step, double *args);
    /* Reports one update to the record hook as kernel_op with g's hyperparameters;
     * in: the parameter, its gradient and the three state buffers (NULL if unused). */
    void (*trace)(const ct_param_group *g, const ct_param_state *st, ct_tensor *const *in);
} ct_optim_kind;

struct ct_optim {
    ct_object obj;
    const ct_optim_kind *kind;
    ct_param_group *groups;
    int n_groups;
    ct_param_state *states; /* one per parameter, in group order */
    int n_states;
    bool master_weights; /* float32 masters for float16/bfloat16 parameters */
};


/* Reports one parameter's update (after it) to the record hook as the op of kind's
 * kernel (sgd_step, adam_step, ...) with g's hyperparameters (optim/kinds.c). */
void ct_optim_trace(const ct_optim_kind *kind, const ct_param_group *g, const ct_param_state *st,
                    ct_tensor *grad);

/* Creates an optimizer with one group of params and hyperparameters h; master_weights:
 * the option of that name. */
ct_optim *ct_optim_create(const ct_optim_kind *kind, ct_tensor *const *params, int n,
                          const double *h, bool master_weights);

/* The checks of ct_optim_load_state_dict / ct_sched_load_state_dict without the load:
 * 0, or -1 with the error the load would give (so that a checkpoint can check all of
 * its parts before changing any). */
int ct_optim_check_state_dict(ct_optim *opt, const ct_state_dict *sd);
int ct_sched_check_state_dict(ct_scheduler *s, const ct_state_dict *sd);

#endif
