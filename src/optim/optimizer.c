/* The optimizer base: groups, per-parameter state, step, zero_grad, state dicts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lifetime.h"
#include "core/tensor_impl.h"
#include "ops/trace.h"
#include "optim/optim_impl.h"
#include "core/mem.h"

const char *const ct_hparam_names[H_COUNT] = {
    "lr", "momentum", "dampening", "weight_decay", "beta1", "beta2", "eps", "alpha",
    "lr_decay", "initial_accumulator_value", "nesterov", "maximize", "amsgrad", "centered",
    "initial_lr",
};

static void optim_destroy(ct_object *o) {
    ct_optim *opt = (ct_optim *)o;
    for (int g = 0; g < opt->n_groups; g++) {
        for (int i = 0; i < opt->groups[g].n; i++) ct_release(opt->groups[g].params[i]);
        free(opt->groups[g].params);
    }
    for (int i = 0; i < opt->n_states; i++) {
        for (int b = 0; b < CT_OPTIM_MAX_BUFS; b++) ct_release(opt->states[i].buf[b]);
        ct_release(opt->states[i].master);
    }
    free(opt->groups);
    free(opt->states);
    ct_lifetime_free(opt);
}

static bool contains(const ct_optim *opt, const ct_tensor *p) {
    for (int i = 0; i < opt->n_states; i++)
        if (opt->states[i].param == p) return true;
    return false;
}

static int add_group(ct_optim *opt, ct_tensor *const *params, int n, const double *h) {
    if (n <= 0 || !params) {
        ct_error("ct_%s: optimizer got an empty parameter list", opt->kind->name);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (!params[i]) return -1;
        if (!ct_is_leaf(params[i])) {
            ct_error("ct_%s: can't optimize a non-leaf Tensor", opt->kind->name);
            return -1;
        }
        if (!ct_dtype_is_floating(ct_dtype_of(params[i]))) {
            ct_error("ct_%s: parameters must be floating point tensors (got %s)",
                     opt->kind->name, ct_dtype_name(ct_dtype_of(params[i])));
            return -1;
        }
        bool repeated = contains(opt, params[i]);
        for (int j = 0; j < i; j++) repeated = repeated || params[j] == params[i];
        if (repeated) {
            ct_error("some parameters appear in more than one parameter group");
            return -1;
        }
    }
    ct_param_group *groups = ct_realloc(opt->groups, sizeof *groups * (size_t)(opt->n_groups + 1));
    ct_param_state *states = ct_realloc(opt->states, sizeof *states * (size_t)(opt->n_states + n));
    if (groups) opt->groups = groups;
    if (states) opt->states = states;
    ct_tensor **ps = ct_malloc(sizeof *ps * (size_t)n);
    if (!groups || !states || !ps) {
        free(ps);
        ct_error("ct_%s: out of memory", opt->kind->name);
        return -1;
    }
    ct_param_group *g = &opt->groups[opt->n_groups++];
    g->params = ps;
    g->n = n;
    memcpy(g->h, h, sizeof g->h);
    for (int i = 0; i < n; i++) {
        ps[i] = ct_retain(params[i]);
        opt->states[opt->n_states++] = (ct_param_state){.param = params[i]};
    }
    return 0;
}

ct_optim *ct_optim_create(const ct_optim_kind *kind, ct_tensor *const *params, int n, const double *h,
                          bool master_weights) {
    ct_optim *opt = ct_calloc(1, sizeof *opt);
    if (!opt) {
        ct_error("ct_%s: out of memory", kind->name);
        return NULL;
    }
    ct_object_init(&opt->obj, optim_destroy);
    opt->kind = kind;
    opt->master_weights = master_weights;
    if (add_group(opt, params, n, h) != 0) {
        ct_release(opt);
        return NULL;
    }
    return ct_scope_register(opt);
}

int ct_optim_add_param_group_with(ct_optim *opt, ct_tensor *const *params, int n, ct_group_options o) {
    if (!ct_alive("ct_optim_add_param_group", 1, opt) ||
        !ct_all_alive("ct_optim_add_param_group", 2, params, n))
        return -1;
    if (!opt) return -1;
    double h[H_COUNT];
    memcpy(h, opt->groups[0].h, sizeof h);
    const ct_opt_f64 given[] = {o.lr, o.momentum, o.dampening, o.weight_decay, o.beta1, o.beta2,
                                o.eps, o.alpha, o.lr_decay};
    for (int k = 0; k < (int)(sizeof given / sizeof given[0]); k++) {
        if (!given[k].set || given[k].none) continue;
        if (isnan(h[k])) {
            ct_error("ct_optim_add_param_group: %s has no hyperparameter '%s'", opt->kind->name,
                     ct_hparam_names[k]);
            return -1;
        }
        h[k] = given[k].v;
    }
    h[H_INITIAL_LR] = NAN; /* set by the first scheduler */
    return add_group(opt, params, n, h);
}

/* Note [Master weights]: with .master_weights, a float16/bfloat16 parameter is the
 * rounding of a float32 master that the optimizer owns.  Its first step copies the
 * parameter into the master (exact); every step widens the gradient to float32, runs
 * the float32 kernel on the master and float32 state, and rounds the master into the
 * parameter (to nearest even, ct_copy_'s conversion).  So the update is the float32
 * optimizer's, bit for bit, on the master, and an update below half an ulp of the
 * parameter accumulates in the master until it moves the parameter.  Everything else
 * (float32/float64 parameters, or no option) keeps its state in the parameter's dtype. */
static bool keeps_master(const ct_optim *opt, const ct_tensor *p) {
    ct_dtype dt = ct_dtype_of(p);
    return opt->master_weights && (dt == CT_F16 || dt == CT_BF16);
}

/* The dtype the update runs in: the master's or the parameter's. */
static ct_dtype state_dtype(const ct_optim *opt, const ct_tensor *p) {
    return keeps_master(opt, p) ? CT_F32 : ct_dtype_of(p);
}

/* A new tensor shaped like st's parameter, in its state dtype (NULL with an error). */
static ct_tensor *state_like(const char *op, const ct_optim *opt, const ct_param_state *st) {
    return ct_tensor_new(op, ct_shape_of(st->param), state_dtype(opt, st->param),
                         ct_device_of(st->param));
}

/* Allocates the buffers (and master) a parameter needs on its first update. */
static bool init_state(ct_optim *opt, const ct_param_group *g, ct_param_state *st) {
    unsigned need = opt->kind->bufs_needed(g);
    for (int b = 0; b < CT_OPTIM_MAX_BUFS; b++) {
        if (!(need >> b & 1) || st->buf[b]) continue;
        double v = opt->kind->buf_init ? opt->kind->buf_init(g, b) : 0;
        st->buf[b] = state_like("ct_step", opt, st);
        if (!st->buf[b]) return false;
        CT_SCOPE { ct_fill_(st->buf[b], v); }
    }
    if (keeps_master(opt, st->param) && !st->master) {
        ct_tensor *m = state_like("ct_step", opt, st);
        int rc = -1;
        if (m) CT_NO_GRAD { rc = ct_copy_(m, st->param) ? 0 : -1; }
        if (rc != 0) {
            ct_release(m);
            return false;
        }
        st->master = m;
    }
    return true;
}

/* One parameter's update by its kind's fused kernel, reported as the kernel's op (the
 * state's allocation and the gradient's cast are the step's own): 0 or -1. */
static int step_param(ct_optim *opt, const ct_param_group *g, ct_param_state *st, ct_tensor *p,
                      ct_tensor *grad) {
    if (!ct_is_contiguous(p)) {
        ct_error("ct_step: %s needs contiguous parameters", opt->kind->name);
        return -1;
    }
    ct_dtype dt = state_dtype(opt, p);
    /* A parameter converted after its state was made (ct_module_to) would have its
     * kernel read the state as another dtype. */
    bool stale = st->master && !keeps_master(opt, p);
    for (int b = 0; b < CT_OPTIM_MAX_BUFS; b++)
        stale = stale || (st->buf[b] && ct_dtype_of(st->buf[b]) != dt);
    if (stale) {
        ct_error("ct_step: %s's state for a parameter is not %s, the parameter's dtype now "
                 "(convert the model before creating its optimizer)", opt->kind->name,
                 ct_dtype_name(dt));
        return -1;
    }
    ct_optim_kernel k = ct_kernel_optim_for(opt->kind->kernel_op, ct_device_of(p), dt);
    ct_trace_mute();
    ct_tensor *gc = k && init_state(opt, g, st) ? ct_contiguous(ct_to(grad, .dtype = dt)) : NULL;
    ct_trace_unmute();
    if (!gc) return -1;
    st->step++;
    double args[16];
    opt->kind->kernel_args(g, st->step, args);
    ct_tensor *w = st->master ? st->master : p; /* Note [Master weights] */
    char *data[5] = {ct_data_ptr(w), ct_data_ptr(gc), NULL, NULL, NULL};
    for (int b = 0; b < CT_OPTIM_MAX_BUFS; b++)
        data[2 + b] = st->buf[b] ? ct_data_ptr(st->buf[b]) : NULL;
    /* First momentum step: the buffer starts as the gradient itself. */
    args[15] = st->step == 1;
    k(data, ct_numel(p), args);
    ct_optim_trace(opt->kind, g, st, grad);
    if (st->master) {
        ct_tensor *r = NULL;
        CT_NO_GRAD { r = ct_copy_(p, st->master); }
        if (!r) return -1;
    } else {
        ct_bump_version(p);
    }
    return 0;
}

int ct_step(ct_optim *opt) {
    if (!ct_alive("ct_step", 1, opt)) return -1;
    if (!opt) return -1;
    int rc = 0;
    int s = 0;
    CT_SCOPE {
        for (int gi = 0; gi < opt->n_groups && rc == 0; gi++) {
            ct_param_group *g = &opt->groups[gi];
            for (int i = 0; i < g->n && rc == 0; i++, s++) {
                ct_tensor *grad = ct_grad(g->params[i]);
                if (grad) rc = step_param(opt, g, &opt->states[s], g->params[i], grad);
            }
        }
    }
    return rc;
}

void ct_zero_grad_with(ct_optim *opt, ct_zero_grad_options o) {
    if (!ct_alive("ct_zero_grad", 1, opt)) return;
    if (!opt) return;
    CT_SCOPE {
        for (int gi = 0; gi < opt->n_groups; gi++)
            for (int i = 0; i < opt->groups[gi].n; i++) {
                ct_tensor *p = opt->groups[gi].params[i];
                if (!ct_grad(p)) continue;
                if (o.set_to_none)
                    ct_set_grad(p, NULL);
                else
                    CT_NO_GRAD { ct_zero_(ct_grad(p)); }
            }
    }
}

int ct_optim_num_groups(const ct_optim *opt) {
    if (!ct_alive("ct_optim_num_groups", 1, opt)) return -1;
    return opt ? opt->n_groups : -1;
}
const char *ct_optim_type(const ct_optim *opt) {
    if (!ct_alive("ct_optim_type", 1, opt)) return NULL;
    return opt ? opt->kind->name : NULL;
}

static int key_index(const char *key) {
    for (int k = 0; k < H_COUNT; k++)
        if (!strcmp(ct_hparam_names[k], key)) return k;
    return -1;
}

/* Group g, or NULL with an error naming op. */
static const ct_param_group *group_at(const char *op, const ct_optim *opt, int g) {
    if (g >= 0 && g < opt->n_groups) return &opt->groups[g];
    ct_error("%s: group %d out of range (%d groups)", op, g, opt->n_groups);
    return NULL;
}

double ct_optim_get(const ct_optim *opt, int group, const char *key) {
    if (!ct_alive("ct_optim_get", 1, opt)) return NAN;
    if (!opt || !key || !group_at("ct_optim_get", opt, group)) return NAN;
    int k = key_index(key);
    return k < 0 ? NAN : opt->groups[group].h[k];
}

int ct_optim_set(ct_optim *opt, int group, const char *key, double value) {
    if (!ct_alive("ct_optim_set", 1, opt)) return -1;
    if (!opt || !key || !group_at("ct_optim_set", opt, group)) return -1;
    int k = key_index(key);
    if (k < 0 || (isnan(opt->groups[group].h[k]) && k != H_INITIAL_LR)) {
        ct_error("ct_optim_set: %s has no hyperparameter '%s'", opt->kind->name, key);
        return -1;
    }
    opt->groups[group].h[k] = value;
    return 0;
}

double ct_optim_get_lr(const ct_optim *opt, int group) {
    if (!ct_alive("ct_optim_get_lr", 1, opt)) return NAN;
    return ct_optim_get(opt, group, "lr");
}
int ct_optim_set_lr(ct_optim *opt, int group, double lr) {
    if (!ct_alive("ct_optim_set_lr", 1, opt)) return -1;
    return ct_optim_set(opt, group, "lr", lr);
}

ct_param_group_info ct_optim_param_group(const ct_optim *opt, int group) {
    const ct_param_group *g = opt && ct_alive("ct_optim_param_group", 1, opt)
                                  ? group_at("ct_optim_param_group", opt, group)
                                  : NULL;
    if (!g) {
        if (!opt && !ct_last_error()) ct_error("ct_optim_param_group: the optimizer is NULL");
        return (ct_param_group_info){.num_params = -1, .lr = NAN, .momentum = NAN, .dampening = NAN,
                                     .weight_decay = NAN, .beta1 = NAN, .beta2 = NAN, .eps = NAN,
                                     .alpha = NAN, .lr_decay = NAN,
                                     .initial_accumulator_value = NAN, .initial_lr = NAN};
    }
    const double *h = g->h;
    return (ct_param_group_info){
        .params = g->params, .num_params = g->n, .lr = h[H_LR], .momentum = h[H_MOMENTUM],
        .dampening = h[H_DAMPENING], .weight_decay = h[H_WEIGHT_DECAY], .beta1 = h[H_BETA1],
        .beta2 = h[H_BETA2], .eps = h[H_EPS], .alpha = h[H_ALPHA], .lr_decay = h[H_LR_DECAY],
        .initial_accumulator_value = h[H_INITIAL_ACCUMULATOR], .initial_lr = h[H_INITIAL_LR],
        /* Flags are 0 or 1, NAN where the optimizer has none. */
        .nesterov = h[H_NESTEROV] == 1, .maximize = h[H_MAXIMIZE] == 1,
        .amsgrad = h[H_AMSGRAD] == 1, .centered = h[H_CENTERED] == 1};
}

/* ---- state dicts ------------------------------------------------------------- */

ct_state_dict *ct_optim_state_dict(ct_optim *opt) {
    if (!ct_alive("ct_optim_state_dict", 1, opt)) return NULL;
    if (!opt) return NULL;
    ct_state_dict *sd = NULL;
    CT_SCOPE {
        sd = ct_keep(ct_state_dict_new());
        char key[128];
        for (int s = 0; s < opt->n_states; s++) {
            ct_param_state *st = &opt->states[s];
            if (!st->step) continue;
            snprintf(key, sizeof key, "state.%d.step", s);
            ct_state_dict_set(sd, key, ct_scalar_tensor((double)st->step, .dtype = CT_F64));
            for (int b = 0; b < CT_OPTIM_MAX_BUFS && opt->kind->buf_names[b]; b++) {
                if (!st->buf[b]) continue;
                snprintf(key, sizeof key, "state.%d.%s", s, opt->kind->buf_names[b]);
                ct_state_dict_set(sd, key, ct_detach(st->buf[b]));
            }
            if (st->master) {
                snprintf(key, sizeof key, "state.%d.master", s);
                ct_state_dict_set(sd, key, ct_detach(st->master));
            }
        }
        for (int g = 0; g < opt->n_groups; g++)
            for (int k = 0; k < H_COUNT; k++) {
                if (isnan(opt->groups[g].h[k])) continue;
                snprintf(key, sizeof key, "param_groups.%d.%s", g, ct_hparam_names[k]);
                ct_state_dict_set(sd, key, ct_scalar_tensor(opt->groups[g].h[k], .dtype = CT_F64));
            }
    }
    return sd;
}

/* A loaded value that is converted to an integer or used as a hyper-parameter must be
 * in range (Note [Float to integer]); false with an error naming the key. */
static bool loaded_scalar(const char *key, const ct_tensor *v, bool is_step, double *out) {
    double x = ct_numel(v) == 1 ? ct_item(v) : NAN;
    if (is_step && !(x >= 0 && x <= 0x1p53 && x == floor(x))) {
        ct_error("ct_optim_load_state_dict: '%s' is %g, not a step count (an integer from 0 "
                 "to 2^53)", key, x);
        return false;
    }
    if (!isfinite(x)) {
        ct_error("ct_optim_load_state_dict: '%s' is %g, not a finite number", key, x);
        return false;
    }
    *out = x;
    return true;
}

/* A loaded master must be what a step would have made: float32, the parameter's
 * shape, every value finite (Note [Master weights]); false with an error. */
static bool loaded_master(const ct_optim *opt, int idx, const char *key, ct_tensor *v) {
    ct_tensor *p = opt->states[idx].param;
    if (!keeps_master(opt, p)) {
        ct_error("ct_optim_load_state_dict: entry '%s' does not fit %s's parameter %d (a master "
                 "copy is kept only with .master_weights = true, for float16 and bfloat16 "
                 "parameters; it is %s)", key, opt->kind->name, idx, ct_dtype_name(ct_dtype_of(p)));
        return false;
    }
    if (ct_dtype_of(v) != CT_F32) {
        ct_error("ct_optim_load_state_dict: '%s' is %s, a master copy is float32", key,
                 ct_dtype_name(ct_dtype_of(v)));
        return false;
    }
    ct_shape vs = ct_shape_of(v), ps = ct_shape_of(p);
    if (vs.ndim != ps.ndim || memcmp(vs.d, ps.d, sizeof vs.d[0] * (size_t)vs.ndim)) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error("ct_optim_load_state_dict: '%s' has shape %s, parameter %d has shape %s", key,
                 ct_shape_str(vs.ndim, vs.d, a), idx, ct_shape_str(ps.ndim, ps.d, b));
        return false;
    }
    double bad = NAN;
    CT_SCOPE { bad = ct_item(ct_sum(ct_logical_not(ct_isfinite(v)), .dtype = CT_F64)); }
    if (bad != 0) {
        ct_error("ct_optim_load_state_dict: '%s' has %.0f NaN or infinite values", key, bad);
        return false;
    }
    return true;
}

int ct_optim_check_state_dict(ct_optim *opt, const ct_state_dict *sd) {
    if (!opt || !sd) return -1;
    for (int i = 0; i < ct_state_dict_len(sd); i++) {
        const char *key = ct_state_dict_key(sd, i);
        int idx, n = 0;
        char name[64];
        if (sscanf(key, "state.%d.%63s%n", &idx, name, &n) == 2) {
            if (idx < 0 || idx >= opt->n_states) {
                ct_error("ct_optim_load_state_dict: state for parameter %d, but the optimizer has "
                         "%d parameters", idx, opt->n_states);
                return -1;
            }
            double x;
            if (!strcmp(name, "step") && !loaded_scalar(key, ct_state_dict_value(sd, i), true, &x))
                return -1;
            if (!strcmp(name, "master")) {
                if (!loaded_master(opt, idx, key, ct_state_dict_value(sd, i))) return -1;
            } else if (strcmp(name, "step")) {
                bool known = false;
                for (int b = 0; b < CT_OPTIM_MAX_BUFS && opt->kind->buf_names[b]; b++)
                    known = known || !strcmp(opt->kind->buf_names[b], name);
                ct_tensor *v = ct_state_dict_value(sd, i), *p = opt->states[idx].param;
                if (!known || ct_numel(v) != ct_numel(p)) {
                    ct_error("ct_optim_load_state_dict: entry '%s' does not fit %s's parameter %d",
                             key, opt->kind->name, idx);
                    return -1;
                }
            }
        } else if (sscanf(key, "param_groups.%d.%63s", &idx, name) == 2) {
            if (idx < 0 || idx >= opt->n_groups || key_index(name) < 0) {
                ct_error("ct_optim_load_state_dict: loaded state dict contains a parameter group "
                         "that doesn't match the size of optimizer's group ('%s')", key);
                return -1;
            }
            double x;
            if (!loaded_scalar(key, ct_state_dict_value(sd, i), false, &x)) return -1;
        } else {
            ct_error("ct_optim_load_state_dict: unexpected key '%s'", key);
            return -1;
        }
    }
    return 0;
}

int ct_optim_load_state_dict(ct_optim *opt, const ct_state_dict *sd) {
    if (!ct_alive("ct_optim_load_state_dict", 1, opt) ||
        !ct_alive("ct_optim_load_state_dict", 2, sd))
        return -1;
    /* Check everything first, so that a failed load changes nothing. */
    if (ct_optim_check_state_dict(opt, sd) != 0) return -1;
    int rc = 0;
    CT_SCOPE {
        /* A parameter whose loaded state has a step and no master takes a new master
         * from its value at its next step, not the master of the run before. */
        for (int i = 0; i < ct_state_dict_len(sd); i++) {
            int idx;
            char name[64];
            if (sscanf(ct_state_dict_key(sd, i), "state.%d.%63s", &idx, name) == 2 &&
                !strcmp(name, "step")) {
                ct_release(opt->states[idx].master);
                opt->states[idx].master = NULL;
            }
        }
        for (int i = 0; i < ct_state_dict_len(sd) && rc == 0; i++) {
            const char *key = ct_state_dict_key(sd, i);
            ct_tensor *v = ct_state_dict_value(sd, i);
            int idx;
            char name[64];
            if (sscanf(key, "state.%d.%63s", &idx, name) == 2) {
                ct_param_state *st = &opt->states[idx];
                if (!strcmp(name, "step")) {
                    st->step = (int64_t)ct_item(v); /* checked: an integer in range */
                    continue;
                }
                if (!strcmp(name, "master")) {
                    ct_tensor *t = state_like("ct_optim_load_state_dict", opt, st);
                    if (!t) {
                        rc = -1;
                        break;
                    }
                    CT_NO_GRAD { ct_copy_(t, v); } /* checked: float32, the parameter's shape */
                    ct_release(st->master);
                    st->master = t;
                    continue;
                }
                for (int b = 0; b < CT_OPTIM_MAX_BUFS && opt->kind->buf_names[b]; b++) {
                    if (strcmp(opt->kind->buf_names[b], name)) continue;
                    ct_tensor *t = state_like("ct_optim_load_state_dict", opt, st);
                    if (!t) {
                        rc = -1;
                        break;
                    }
                    CT_NO_GRAD { ct_copy_(t, ct_reshape(v, ct_shape_of(st->param))); }
                    ct_release(st->buf[b]);
                    st->buf[b] = t;
                }
            } else if (sscanf(key, "param_groups.%d.%63s", &idx, name) == 2) {
                opt->groups[idx].h[key_index(name)] = ct_item(v);
            }
        }
    }
    return rc;
}
