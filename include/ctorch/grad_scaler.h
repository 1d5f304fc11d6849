/* ctorch/grad_scaler.h — loss scaling for mixed precision (torch.cuda.amp.GradScaler).
 *
 * Small float16 gradients underflow to zero; scaling the loss by a large factor before
 * backward keeps them representable, and the gradients are divided by the same factor
 * before the optimizer uses them.  When a scaled gradient overflowed (an inf or NaN),
 * the step is skipped and the scale shrinks; after growth_interval good steps in a
 * row it grows again.  A training step reads as PyTorch's:
 *
 *     ct_module *model = ct_nn_linear(4, 2);
 *     ct_tensor *p[2];
 *     ct_parameters(model, p, 2);
 *     ct_optim *opt = ct_sgd(p, 2, .lr = CT_SOME(0.1));
 *     ct_grad_scaler *scaler = ct_grad_scaler();   // init_scale 65536, growth every 2000
 *     for (int step = 0; step < 3; step++) {
 *         CT_SCOPE_HERE;
 *         ct_tensor *loss = ct_mean(ct_forward(model, ct_randn(CT_SHAPE(8, 4))));
 *         ct_zero_grad(opt);
 *         ct_backward(ct_grad_scaler_scale(scaler, loss));
 *         ct_grad_scaler_unscale_(scaler, opt);       // optional: true gradients from here
 *         ct_clip_grad_norm_(p, 2, 1.0);
 *         ct_grad_scaler_step(scaler, opt);           // skipped if a gradient is inf/NaN
 *         ct_grad_scaler_update(scaler);
 *     }
 *     if (ct_grad_scaler_get_scale(scaler) != 65536) return 1;
 *
 * Semantics are PyTorch 1.13's, on the CPU as well: the scale is a float32 value,
 * the gradients are unscaled in place by one fused pass per gradient that multiplies
 * by inv_scale = (float)(1 / (double)scale) and records whether any element was inf
 * or NaN; update() multiplies the scale by backoff_factor when any optimizer found
 * one since the last update, else counts a good step and multiplies it by
 * growth_factor (unless that overflows float32) at growth_interval of them.  Each
 * optimizer is unscaled at most once per iteration.  In a distributed run (the default
 * process group initialised, ctorch/distributed.h) unscale_ also takes the maximum of
 * the found-inf flag over the ranks, so all of them skip the same steps even when
 * their gradients differ (without DDP); every rank must then call it for the same
 * optimizers in the same order.
 *
 * A scaler is a ctorch object: ct_release it (or let its scope do so). */
#ifndef CTORCH_GRAD_SCALER_H
#define CTORCH_GRAD_SCALER_H

#include "optim.h"
#include "state_dict.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_grad_scaler ct_grad_scaler; /* a loss scaler and its per-optimizer state */

/* Options of ct_grad_scaler (GradScaler's constructor). */
typedef struct {
    double init_scale;      /* default 2^16 */
    double growth_factor;   /* default 2; must be > 1 */
    double backoff_factor;  /* default 0.5; must be in (0, 1) */
    int growth_interval;    /* good steps in a row before growing, default 2000 */
    bool enabled;           /* default true; false: every call passes through */
} ct_grad_scaler_options;
/* A new scaler (registered with the current scope); NULL with PyTorch's message for
 * a growth factor <= 1 or a backoff factor >= 1. */
ct_grad_scaler *ct_grad_scaler_with(ct_grad_scaler_options o);
#define ct_grad_scaler(...) \
    CT_AT(ct_grad_scaler_with(CT_DEFAULTS(ct_grad_scaler_options, .enabled = true, __VA_ARGS__)))

/* scale(loss): loss times the scale (a float32 tensor of shape [1], as PyTorch 1.13's
 * scale is, so the product has shape [1] and is float32 for a float16 or bfloat16
 * loss); differentiable.  Disabled: loss itself (retained and registered with the
 * scope, as ct_to returns an unchanged tensor). */
ct_tensor *ct_grad_scaler_scale(ct_grad_scaler *s, ct_tensor *loss);
#define ct_grad_scaler_scale(s, loss) CT_AT(ct_grad_scaler_scale(s, loss))

/* unscale_(opt): divides opt's gradients by the scale, in place, and records whether
 * any was inf or NaN.  Any float dtype (PyTorch refuses float16 gradients; they are
 * unscaled here).  A second call before update() is an error, as in PyTorch.
 * Disabled: nothing.  Returns 0 or -1. */
int ct_grad_scaler_unscale_(ct_grad_scaler *s, ct_optim *opt);
#define ct_grad_scaler_unscale_(s, opt) CT_AT(ct_grad_scaler_unscale_(s, opt))

/* step(opt): unscales opt's gradients unless unscale_ already did, then runs
 * ct_step(opt) only when none of them was inf or NaN.  Returns 1 when it stepped,
 * 0 when it skipped the step, -1 on error (a second step before update(), no
 * gradients at all).  Disabled: ct_step(opt), 1 (or -1). */
int ct_grad_scaler_step(ct_grad_scaler *s, ct_optim *opt);
#define ct_grad_scaler_step(s, opt) CT_AT(ct_grad_scaler_step(s, opt))

/* Options of ct_grad_scaler_update. */
typedef struct {
    double new_scale; /* given (> 0): the scale becomes it, the growth tracker is kept */
} ct_grad_scaler_update_options;
/* update(): the new scale from the found-inf flags of every optimizer unscaled since
 * the last update (PyTorch's _amp_update_scale_), or .new_scale; then every
 * optimizer is ready for the next iteration.  Disabled: nothing.  Returns 0 or -1. */
int ct_grad_scaler_update_with(ct_grad_scaler *s, ct_grad_scaler_update_options o);
#define ct_grad_scaler_update(s, ...) \
    CT_AT(ct_grad_scaler_update_with(s, CT_OPTIONS(ct_grad_scaler_update_options, __VA_ARGS__)))

/* get_scale(): the current scale (1 when disabled; NAN with an error for NULL). */
double ct_grad_scaler_get_scale(const ct_grad_scaler *s);
#define ct_grad_scaler_get_scale(s) CT_AT(ct_grad_scaler_get_scale(s))
/* is_enabled(). */
bool ct_grad_scaler_is_enabled(const ct_grad_scaler *s);
#define ct_grad_scaler_is_enabled(s) CT_AT(ct_grad_scaler_is_enabled(s))

/* state_dict(): PyTorch's five entries as 0-d tensors, "scale", "growth_factor",
 * "backoff_factor" (float64), "growth_interval", "_growth_tracker" (int64); empty
 * when disabled.  Save it after update(). */
ct_state_dict *ct_grad_scaler_state_dict(ct_grad_scaler *s);
#define ct_grad_scaler_state_dict(s) CT_AT(ct_grad_scaler_state_dict(s))
/* load_state_dict(sd): all five entries are required and checked (a scale that is
 * not a positive finite float32, factors out of range, a negative interval or
 * tracker, an unknown key: an error naming the key, nothing changed).  An empty dict
 * is PyTorch's error; disabled: nothing.  Returns 0 or -1. */
int ct_grad_scaler_load_state_dict(ct_grad_scaler *s, const ct_state_dict *sd);
#define ct_grad_scaler_load_state_dict(s, sd) CT_AT(ct_grad_scaler_load_state_dict(s, sd))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
