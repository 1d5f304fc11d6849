/* The gradient scaler (torch.cuda.amp.GradScaler, PyTorch 1.13): the scale and its
 * growth tracker, the per-optimizer stages, unscaling through the fused
 * check-and-unscale kernel, the scale update and the state dict. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp/grad_scaler_impl.h"
#include "core/error.h"
#include "core/lifetime.h"
#include "core/mem.h"
#include "core/object.h"
#include "core/tensor_impl.h"
#include "ctorch.h"
#include "ops/dispatch.h"
#include "ops/trace.h"

/* Where an optimizer is in the current iteration (PyTorch's OptState). */
typedef enum { STAGE_READY, STAGE_UNSCALED, STAGE_STEPPED } opt_stage;

typedef struct {
    const ct_optim *opt;  /* weak: identifies the optimizer, as PyTorch's id(optimizer) */
    opt_stage stage;
    ct_tensor *found_inf; /* float32 [1], set by unscale_; NULL when it had no gradients */
} opt_state;

struct ct_grad_scaler {
    ct_object obj;
    bool enabled;
    bool started;           /* scale() was called: PyTorch's lazily created _scale exists */
    float scale;            /* a float32 tensor in PyTorch */
    int32_t growth_tracker; /* an int32 tensor in PyTorch */
    double growth_factor, backoff_factor;
    int growth_interval;
    opt_state *states; /* the optimizers seen since the last update */
    int n_states;
};

#define DEFAULT_INIT_SCALE 65536.0

static void clear_states(ct_grad_scaler *s) {
    for (int i = 0; i < s->n_states; i++) ct_release(s->states[i].found_inf);
    s->n_states = 0;
}

static void scaler_destroy(ct_object *o) {
    ct_grad_scaler *s = (ct_grad_scaler *)o;
    clear_states(s);
    free(s->states);
    ct_lifetime_free(s);
}

ct_grad_scaler *ct_grad_scaler_with(ct_grad_scaler_options o) {
    double init = o.init_scale != 0 ? o.init_scale : DEFAULT_INIT_SCALE;
    double growth = o.growth_factor != 0 ? o.growth_factor : 2.0;
    double backoff = o.backoff_factor != 0 ? o.backoff_factor : 0.5;
    int interval = o.growth_interval != 0 ? o.growth_interval : 2000;
    if (o.enabled) {
        if (!(growth > 1.0)) {
            ct_error("ct_grad_scaler: The growth factor must be > 1.0. (got %g)", growth);
            return NULL;
        }
        if (!(backoff < 1.0) || !(backoff > 0)) {
            ct_error("ct_grad_scaler: The backoff factor must be < 1.0. (and > 0; got %g)", backoff);
            return NULL;
        }
        if (!(init > 0) || !isfinite((float)init)) {
            ct_error("ct_grad_scaler: init_scale must be a positive finite float32 number (got %g)",
                     init);
            return NULL;
        }
        if (interval < 0) {
            ct_error("ct_grad_scaler: growth_interval must be positive (got %d)", interval);
            return NULL;
        }
    }
    ct_grad_scaler *s = ct_calloc(1, sizeof *s);
    if (!s) {
        ct_error("ct_grad_scaler: out of memory");
        return NULL;
    }
    ct_object_init(&s->obj, scaler_destroy);
    s->enabled = o.enabled;
    s->scale = (float)init;
    s->growth_factor = growth;
    s->backoff_factor = backoff;
    s->growth_interval = interval;
    return ct_scope_register(s);
}

/* opt's state, created READY when opt was not seen since the last update; NULL on
 * failure. */
static opt_state *state_of(ct_grad_scaler *s, const ct_optim *opt, const char *fn) {
    for (int i = 0; i < s->n_states; i++)
        if (s->states[i].opt == opt) return &s->states[i];
    opt_state *grown = ct_realloc(s->states, sizeof *grown * (size_t)(s->n_states + 1));
    if (!grown) {
        ct_error("%s: out of memory", fn);
        return NULL;
    }
    s->states = grown;
    s->states[s->n_states] = (opt_state){.opt = opt, .stage = STAGE_READY};
    return &s->states[s->n_states++];
}

/* PyTorch's _check_scale_growth_tracker. */
static bool check_started(const ct_grad_scaler *s, const char *fn, const char *what) {
    if (s->started) return true;
    ct_error("%s: Attempted %s but _scale is None.  This may indicate your script did not use "
             "scaler.scale(loss or outputs) earlier in the iteration (ct_grad_scaler_scale).",
             fn, what);
    return false;
}

ct_tensor *ct_grad_scaler_scale(ct_grad_scaler *s, ct_tensor *loss) {
    if (!ct_alive("ct_grad_scaler_scale", 1, s) || !ct_alive("ct_grad_scaler_scale", 2, loss))
        return NULL;
    if (!s || !loss) {
        if (!s && !ct_last_error()) ct_error("ct_grad_scaler_scale: the scaler is NULL");
        return NULL;
    }
    /* loss itself, retained and registered as every returned object is (as ct_to does) */
    if (!s->enabled) return ct_scope_register(ct_retain(loss));
    s->started = true;
    ct_tensor *out = NULL;
    CT_SCOPE {
        ct_tensor *scale =
            ct_full(CT_SHAPE(1), s->scale, .dtype = CT_F32, .device = ct_device_of(loss));
        out = ct_keep(ct_mul(loss, scale));
    }
    return out;
}

/* The gradients of opt (borrowed), n of them into *out (malloc'd); -1 on failure. */
static int grads_of(const ct_optim *opt, ct_tensor ***out, const char *fn) {
    int n = 0, cap = 0;
    ct_tensor **grads = NULL;
    for (int g = 0; g < ct_optim_num_groups(opt); g++) {
        ct_param_group_info info = ct_optim_param_group(opt, g);
        if (info.num_params < 0) {
            free(grads);
            return -1;
        }
        cap += info.num_params;
        ct_tensor **grown = ct_realloc(grads, sizeof *grown * (size_t)(cap ? cap : 1));
        if (!grown) {
            free(grads);
            ct_error("%s: out of memory", fn);
            return -1;
        }
        grads = grown;
        for (int i = 0; i < info.num_params; i++) {
            ct_tensor *grad = ct_grad(info.params[i]);
            if (grad) grads[n++] = grad;
        }
    }
    *out = grads;
    return n;
}

/* One gradient through the fused kernel k: in place when contiguous, else through a
 * contiguous copy written back. */
static int unscale_one(ct_optim_kernel k, ct_tensor *grad, ct_tensor *found_inf,
                       ct_tensor *inv_scale) {
    int rc = -1;
    CT_SCOPE {
        ct_tensor *work = grad;
        if (!ct_is_contiguous(grad)) {
            ct_trace_mute();
            work = ct_contiguous(grad);
            ct_trace_unmute();
            if (!work) break;
        }
        char *data[3] = {ct_data_ptr(work), ct_data_ptr(found_inf), ct_data_ptr(inv_scale)};
        const double no_args[1] = {0};
        k(data, ct_numel(work), no_args);
        if (work != grad) {
            ct_trace_mute();
            int copied = -1;
            CT_NO_GRAD { copied = ct_copy_(grad, work) ? 0 : -1; }
            ct_trace_unmute();
            if (copied != 0) break;
        }
        ct_bump_version(grad);
        ct_tensor *in[3] = {grad, found_inf, inv_scale};
        CT_TRACE(CT_OP_amp_non_finite_check_and_unscale, 3, in, 0, NULL);
        rc = 0;
    }
    return rc;
}

/* PyTorch's _unscale_grads_: every gradient of opt unscaled by one fused pass, and
 * the found-inf flag (NULL when opt has no gradients) into *found_out (a new
 * reference).  Every gradient is checked first (a kernel for its dtype, one device),
 * so that a refusal changes nothing. */
static int unscale_grads(ct_grad_scaler *s, const ct_optim *opt, ct_tensor **found_out,
                         const char *fn) {
    *found_out = NULL;
    ct_tensor **grads = NULL;
    int n = grads_of(opt, &grads, fn);
    if (n < 0) return -1;
    int rc = 0;
    ct_optim_kernel kernels[n ? n : 1];
    char dev_a[16], dev_b[16];
    for (int i = 0; i < n && rc == 0; i++) {
        ct_device d = ct_device_of(grads[i]);
        kernels[i] = ct_kernel_optim_for(CT_OP_amp_non_finite_check_and_unscale, d,
                                         ct_dtype_of(grads[i]));
        if (!kernels[i]) {
            ct_error("%s: \"_amp_foreach_non_finite_check_and_unscale_\" not implemented for "
                     "'%s' gradients on %s", fn, ct_dtype_name(ct_dtype_of(grads[i])),
                     ct_device_str(d, dev_a));
            rc = -1;
        } else if (!ct_device_eq(d, ct_device_of(grads[0]))) {
            ct_error("%s: gradients on several devices (%s and %s) are not supported", fn,
                     ct_device_str(ct_device_of(grads[0]), dev_a), ct_device_str(d, dev_b));
            rc = -1;
        }
    }
    if (rc == 0 && n > 0) {
        CT_SCOPE {
            ct_device d = ct_device_of(grads[0]);
            /* FP32 division can be imprecise for certain compile options, so PyTorch
             * carries out the reciprocal in FP64: inv_scale = scale.double().reciprocal().float() */
            float inv = (float)(1.0 / (double)s->scale);
            ct_tensor *inv_scale = ct_full(CT_SHAPE(1), inv, .dtype = CT_F32, .device = d);
            ct_tensor *found = ct_zeros(CT_SHAPE(1), .dtype = CT_F32, .device = d);
            for (int i = 0; i < n && rc == 0 && found && inv_scale; i++)
                rc = unscale_one(kernels[i], grads[i], found, inv_scale);
            /* Ranks whose gradients differ (no DDP) must still skip the same steps. */
            if (rc == 0 && found && ct_dist_is_initialized() && ct_dist_world_size() > 1)
                rc = ct_dist_all_reduce(found, .op = CT_DIST_MAX);
            if (!found || !inv_scale) rc = -1;
            if (rc == 0) *found_out = ct_retain(found); /* the caller's reference */
        }
    }
    free(grads);
    return rc;
}

int ct_grad_scaler_unscale_(ct_grad_scaler *s, ct_optim *opt) {
    const char *fn = "ct_grad_scaler_unscale_";
    if (!ct_alive(fn, 1, s) || !ct_alive(fn, 2, opt)) return -1;
    if (!s || !opt) {
        if (!ct_last_error()) ct_error("%s: the scaler and the optimizer are required", fn);
        return -1;
    }
    if (!s->enabled) return 0;
    if (!check_started(s, fn, "unscale_")) return -1;
    opt_state *st = state_of(s, opt, fn);
    if (!st) return -1;
    if (st->stage == STAGE_UNSCALED) {
        ct_error("%s: unscale_() has already been called on this optimizer since the last "
                 "update().", fn);
        return -1;
    }
    if (st->stage == STAGE_STEPPED) {
        ct_error("%s: unscale_() is being called after step().", fn);
        return -1;
    }
    ct_tensor *found = NULL;
    if (unscale_grads(s, opt, &found, fn) != 0) return -1;
    st->found_inf = found;
    st->stage = STAGE_UNSCALED;
    return 0;
}

int ct_grad_scaler_step(ct_grad_scaler *s, ct_optim *opt) {
    const char *fn = "ct_grad_scaler_step";
    if (!ct_alive(fn, 1, s) || !ct_alive(fn, 2, opt)) return -1;
    if (!s || !opt) {
        if (!ct_last_error()) ct_error("%s: the scaler and the optimizer are required", fn);
        return -1;
    }
    if (!s->enabled) return ct_step(opt) == 0 ? 1 : -1;
    if (!check_started(s, fn, "step")) return -1;
    opt_state *st = state_of(s, opt, fn);
    if (!st) return -1;
    if (st->stage == STAGE_STEPPED) {
        ct_error("%s: step() has already been called since the last update().", fn);
        return -1;
    }
    if (st->stage == STAGE_READY && ct_grad_scaler_unscale_(s, opt) != 0) return -1;
    st = state_of(s, opt, fn); /* unscale_ may have moved the states */
    if (!st->found_inf) {
        ct_error("%s: No inf checks were recorded for this optimizer (it has no gradients).", fn);
        return -1;
    }
    double found = ct_item(st->found_inf);
    if (isnan(found)) return -1;
    int rc = found != 0 ? 0 : ct_step(opt) == 0 ? 1 : -1;
    if (rc >= 0) st->stage = STAGE_STEPPED;
    return rc;
}

/* PyTorch's _amp_update_scale_ (its CUDA kernel's arithmetic: the float32 scale times
 * the double factor, rounded to float32). */
static void update_scale(ct_grad_scaler *s, bool found_inf) {
    if (found_inf) {
        s->scale = (float)((double)s->scale * s->backoff_factor);
        s->growth_tracker = 0;
        return;
    }
    /* A successful step: the tracker counts it before comparing with the interval. */
    int64_t successful = (int64_t)s->growth_tracker + 1;
    if (successful == s->growth_interval) {
        float grown = (float)((double)s->scale * s->growth_factor);
        if (isfinite(grown)) s->scale = grown; /* never grow past float32 into inf */
        s->growth_tracker = 0;
    } else {
        s->growth_tracker = (int32_t)successful;
    }
}

int ct_grad_scaler_update_with(ct_grad_scaler *s, ct_grad_scaler_update_options o) {
    const char *fn = "ct_grad_scaler_update";
    if (!ct_alive(fn, 1, s)) return -1;
    if (!s) {
        ct_error("%s: the scaler is NULL", fn);
        return -1;
    }
    if (!s->enabled) return 0;
    if (!check_started(s, fn, "update")) return -1;
    if (o.new_scale != 0) {
        if (!(o.new_scale > 0) || !isfinite((float)o.new_scale)) {
            ct_error("%s: new_scale must be a positive finite float32 number (got %g)", fn,
                     o.new_scale);
            return -1;
        }
        s->scale = (float)o.new_scale;
    } else {
        /* PyTorch sums the optimizers' flags; any nonzero sum backs off. */
        double found = 0;
        int recorded = 0;
        for (int i = 0; i < s->n_states; i++) {
            if (!s->states[i].found_inf) continue;
            double f = ct_item(s->states[i].found_inf);
            if (isnan(f)) return -1;
            found += f;
            recorded++;
        }
        if (!recorded) {
            ct_error("%s: No inf checks were recorded prior to update.", fn);
            return -1;
        }
        update_scale(s, found != 0);
    }
    clear_states(s);
    return 0;
}

double ct_grad_scaler_get_scale(const ct_grad_scaler *s) {
    if (!ct_alive("ct_grad_scaler_get_scale", 1, s)) return NAN;
    if (!s) {
        ct_error("ct_grad_scaler_get_scale: the scaler is NULL");
        return NAN;
    }
    return s->enabled ? (double)s->scale : 1.0;
}

bool ct_grad_scaler_is_enabled(const ct_grad_scaler *s) {
    if (!ct_alive("ct_grad_scaler_is_enabled", 1, s)) return false;
    return s && s->enabled;
}

/* ---- state dicts ----------------------------------------------------------------- */

ct_state_dict *ct_grad_scaler_state_dict(ct_grad_scaler *s) {
    if (!ct_alive("ct_grad_scaler_state_dict", 1, s)) return NULL;
    if (!s) {
        ct_error("ct_grad_scaler_state_dict: the scaler is NULL");
        return NULL;
    }
    ct_state_dict *sd = NULL;
    CT_SCOPE {
        ct_state_dict *d = ct_state_dict_new();
        if (d && s->enabled) {
            ct_state_dict_set(d, "scale", ct_scalar_tensor((double)s->scale, .dtype = CT_F64));
            ct_state_dict_set(d, "growth_factor", ct_scalar_tensor(s->growth_factor, .dtype = CT_F64));
            ct_state_dict_set(d, "backoff_factor", ct_scalar_tensor(s->backoff_factor, .dtype = CT_F64));
            ct_state_dict_set(d, "growth_interval",
                              ct_scalar_tensor(s->growth_interval, .dtype = CT_I64));
            ct_state_dict_set(d, "_growth_tracker",
                              ct_scalar_tensor(s->growth_tracker, .dtype = CT_I64));
        }
        if (d && ct_state_dict_len(d) == (s->enabled ? 5 : 0)) sd = ct_keep(d);
    }
    return sd;
}

enum { K_SCALE, K_GROWTH, K_BACKOFF, K_INTERVAL, K_TRACKER, K_COUNT };
static const char *const state_keys[K_COUNT] = {"scale", "growth_factor", "backoff_factor",
                                                "growth_interval", "_growth_tracker"};

/* The five values of sd, checked, into v; false with an error naming the key. */
static bool read_state(const ct_state_dict *sd, const char *prefix, double *v) {
    const char *fn = "ct_grad_scaler_load_state_dict";
    if (ct_state_dict_len(sd) == 0) {
        ct_error("%s: The source state dict is empty, possibly because it was saved from a "
                 "disabled instance of GradScaler.", fn);
        return false;
    }
    for (int i = 0; i < ct_state_dict_len(sd); i++) {
        bool known = false;
        for (int k = 0; k < K_COUNT; k++) known = known || !strcmp(ct_state_dict_key(sd, i), state_keys[k]);
        if (!known) {
            ct_error("%s: unexpected key '%s%s'", fn, prefix, ct_state_dict_key(sd, i));
            return false;
        }
    }
    for (int k = 0; k < K_COUNT; k++) {
        ct_tensor *t = ct_state_dict_get(sd, state_keys[k]);
        if (!t) {
            ct_error("%s: missing key '%s%s'", fn, prefix, state_keys[k]);
            return false;
        }
        double x = ct_numel(t) == 1 ? ct_item(t) : NAN;
        bool ok;
        const char *want;
        switch (k) {
        case K_SCALE:
            ok = x > 0 && isfinite((float)x);
            want = "a positive finite float32 number";
            break;
        case K_GROWTH:
            ok = x > 1 && isfinite(x);
            want = "a finite number > 1";
            break;
        case K_BACKOFF:
            ok = x > 0 && x < 1;
            want = "a number in (0, 1)";
            break;
        case K_INTERVAL:
            ok = x >= 1 && x <= INT32_MAX && x == floor(x);
            want = "an integer from 1 to 2^31 - 1";
            break;
        default:
            ok = x >= 0 && x <= INT32_MAX && x == floor(x);
            want = "an integer from 0 to 2^31 - 1";
            break;
        }
        if (!ok) {
            ct_error("%s: '%s%s' is %g, not %s", fn, prefix, state_keys[k], x, want);
            return false;
        }
        v[k] = x;
    }
    return true;
}

int ct_grad_scaler_check_state_dict(const ct_grad_scaler *s, const ct_state_dict *sd,
                                    const char *prefix) {
    double v[K_COUNT];
    if (!s || !sd) return -1;
    return !s->enabled || read_state(sd, prefix, v) ? 0 : -1;
}

int ct_grad_scaler_load_state_dict(ct_grad_scaler *s, const ct_state_dict *sd) {
    const char *fn = "ct_grad_scaler_load_state_dict";
    if (!ct_alive(fn, 1, s) || !ct_alive(fn, 2, sd)) return -1;
    if (!s || !sd) {
        if (!ct_last_error()) ct_error("%s: the scaler and the state dict are required", fn);
        return -1;
    }
    if (!s->enabled) return 0;
    double v[K_COUNT];
    if (!read_state(sd, "", v)) return -1;
    s->scale = (float)v[K_SCALE];
    s->growth_factor = v[K_GROWTH];
    s->backoff_factor = v[K_BACKOFF];
    s->growth_interval = (int)v[K_INTERVAL];
    s->growth_tracker = (int32_t)v[K_TRACKER];
    return 0;
}
