/* ctorch/amp.h — automatic mixed precision: autocast regions (torch.autocast).
 *
 *     ct_module *model = ct_nn_linear(3, 2);
 *     ct_tensor *loss = NULL;
 *     CT_AUTOCAST(.device = CT_CPU, .dtype = CT_BF16) {
 *         ct_tensor *y = ct_forward(model, ct_ones(CT_SHAPE(4, 3)));  // bfloat16 [4, 2]
 *         loss = ct_mse_loss(y, ct_zeros(CT_SHAPE(4, 2)));            // float32
 *     }
 *     ct_backward(loss);  // the weight's gradient: float32, like the weight
 *
 * Inside a region each op follows its row of the op table (src/ops/ops.def's AUTOCAST
 * column, PyTorch 1.13's CPU policy): matrix products and convolutions run in the
 * region's dtype, losses, prod and reflection / replication padding in float32, cat
 * and stack in the widest floating dtype of their inputs, and every other op in
 * whatever it is given.  Floating inputs of another dtype (float64 aside) are cast
 * with differentiable casts, so gradients arrive in the inputs' own dtype; integer
 * and bool inputs are left alone.  The cast of a float32 leaf that requires grad (a
 * weight) is made once per outermost region and reused.  Outside a region nothing
 * changes.  State is per thread, like grad mode; regions nest, each restoring the
 * state it found.  Unlike PyTorch 1.13, the CPU also takes float16 (.dtype = CT_F16).
 */
#ifndef CTORCH_AMP_H
#define CTORCH_AMP_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* Options of an autocast region (torch.autocast's arguments). */
typedef struct {
    ct_device device;   /* device_type: the device whose tensors are cast (default CT_CPU) */
    ct_dtype dtype;     /* the lower precision: CT_BF16 (the CPU's default) or CT_F16 */
    bool enabled;       /* default true; false: autocast off inside (nested regions too) */
    bool cache_enabled; /* default true: reuse the casts of weights within the region */
} ct_autocast_options;

/* What CT_AUTOCAST keeps on the stack: the state to restore. */
typedef struct {
    bool prev_enabled;     /* the enclosing region's state ... */
    ct_dtype prev_dtype;   /* ... its dtype */
    ct_device prev_device; /* ... its device */
    bool prev_cache;       /* ... whether it caches casts */
    int once;              /* the block runs once */
} ct_autocast_guard;

/* Enters an autocast region on this thread (torch.autocast.__enter__), returning what
 * ct_autocast_end restores.  A dtype the device cannot autocast to (the CPU: bfloat16
 * and float16) sets an error and leaves autocast off inside. */
ct_autocast_guard ct_autocast_begin(ct_autocast_options o);
#define ct_autocast_begin(o) CT_AT(ct_autocast_begin(o))
/* Leaves the region ct_autocast_begin entered; leaving the outermost one drops the
 * cached casts (torch.autocast.__exit__). */
void ct_autocast_end(ct_autocast_guard *g);
#define ct_autocast_end(g) CT_AT(ct_autocast_end(g))
/* Whether ops on this thread autocast (torch.is_autocast_cpu_enabled()). */
bool ct_is_autocast_enabled(void);
#define ct_is_autocast_enabled(...) CT_AT(ct_is_autocast_enabled(__VA_ARGS__))
/* The dtype LOWER ops run in inside a region (torch.get_autocast_cpu_dtype(); CT_BF16
 * outside any). */
ct_dtype ct_get_autocast_dtype(void);
#define ct_get_autocast_dtype(...) CT_AT(ct_get_autocast_dtype(__VA_ARGS__))

/* CT_AUTOCAST(.dtype = CT_BF16) { ... }: the block is an autocast region (with
 * torch.autocast("cpu", dtype=torch.bfloat16):); left by break or at its end. */
#define CT_AUTOCAST(...)                                                                \
    for (ct_autocast_guard CT_CAT(ct_ac_, __LINE__) __attribute__((cleanup(ct_autocast_end))) = \
             ct_autocast_begin(CT_DEFAULTS(ct_autocast_options, .enabled = true,         \
                                           .cache_enabled = true, __VA_ARGS__));         \
         CT_CAT(ct_ac_, __LINE__).once; CT_CAT(ct_ac_, __LINE__).once = 0)

#ifdef __cplusplus
}
#endif
CT_API_END

#endif
