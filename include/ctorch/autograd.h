/* ctorch/autograd.h — the recorded graph, backward, gradients and grad modes.
 *
 *     ct_tensor *x = ct_tensor_f32((float[]){3}, CT_SHAPE(1), .requires_grad = true);
 *     ct_tensor *y = ct_mul(x, x);
 *     ct_backward(ct_sum(y));
 *     ct_print(ct_grad(x));               // tensor([6.])
 */
#ifndef CTORCH_AUTOGRAD_H
#define CTORCH_AUTOGRAD_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* ---- leaves, grads, the graph ----------------------------------------- */

bool ct_requires_grad(const ct_tensor *t); /* t.requires_grad */
#define ct_requires_grad(t) CT_AT(ct_requires_grad(t))
/* requires_grad_(): only on leaves; returns 0, or -1 with an error. */
int ct_set_requires_grad(ct_tensor *t, bool requires_grad);
#define ct_set_requires_grad(t, requires_grad) CT_AT(ct_set_requires_grad(t, requires_grad))
bool ct_is_leaf(const ct_tensor *t); /* t.is_leaf: made by the user, not by an op that records */
#define ct_is_leaf(t) CT_AT(ct_is_leaf(t))
/* The accumulated gradient, borrowed: valid while t lives (NULL when none). */
ct_tensor *ct_grad(const ct_tensor *t);
#define ct_grad(t) CT_AT(ct_grad(t))
/* Replaces t's .grad (NULL sets it to None, like zero_grad(set_to_none=True)). */
int ct_set_grad(ct_tensor *t, ct_tensor *grad);
#define ct_set_grad(t, grad) CT_AT(ct_set_grad(t, grad))
/* Makes a non-leaf keep its .grad after backward. */
int ct_retain_grad(ct_tensor *t);
#define ct_retain_grad(t) CT_AT(ct_retain_grad(t))
/* A tensor sharing t's data, cut from the graph (requires_grad false). */
ct_tensor *ct_detach(ct_tensor *t);
#define ct_detach(t) CT_AT(ct_detach(t))

/* The node that created t (borrowed; NULL for leaves), its name as PyTorch prints it
 * ("AddBackward0") and the nodes its gradient flows to next. */
ct_node *ct_grad_fn(const ct_tensor *t);
#define ct_grad_fn(t) CT_AT(ct_grad_fn(t))
const char *ct_node_name(const ct_node *n);
#define ct_node_name(n) CT_AT(ct_node_name(n))
int ct_node_num_next(const ct_node *n);
#define ct_node_num_next(n) CT_AT(ct_node_num_next(n))
/* The i-th next node (borrowed; NULL when that input needs no gradient). */
ct_node *ct_node_next(const ct_node *n, int i, int *input_nr);
#define ct_node_next(n, i, input_nr) CT_AT(ct_node_next(n, i, input_nr))

/* ---- backward ---------------------------------------------------------- */

/* Options of ct_backward (torch.Tensor.backward). */
typedef struct {
    ct_tensor *gradient; /* required when t has more than one element */
    bool retain_graph;   /* keep saved tensors for another backward */
    bool create_graph;   /* record the backward itself (higher-order grads) */
} ct_backward_options;
int ct_backward_with(ct_tensor *t, ct_backward_options o); /* ct_backward with its options as a struct */
/* Accumulates d t / d leaf into every leaf's .grad.  Returns 0 or -1 with an error:
 * "grad can be implicitly created only for scalar outputs" for a non-scalar t
 * without .gradient, "Trying to backward through the graph a second time ..." when
 * the graph was freed by an earlier backward. */
#define ct_backward(t, ...) CT_AT(ct_backward_with(t, CT_OPTIONS(ct_backward_options, __VA_ARGS__)))

/* Options of ct_autograd_grad (torch.autograd.grad). */
typedef struct {
    ct_tensor **grad_outputs; /* n_outputs entries, NULL entries for scalars; or NULL */
    bool retain_graph;        /* defaults to create_graph */
    bool create_graph;        /* record the backward itself (higher-order grads) */
    bool allow_unused;        /* an input the outputs do not depend on gets NULL */
} ct_grad_options;
/* torch.autograd.grad: writes d outputs / d inputs[i] into result[i] (registered with
 * the scope) without touching any .grad.  Returns 0 or -1. */
int ct_autograd_grad_with(int n_outputs, ct_tensor *const *outputs, int n_inputs,
                      ct_tensor *const *inputs, ct_tensor **result, ct_grad_options o);
#define ct_autograd_grad(n_outputs, outputs, n_inputs, inputs, result, ...)            \
    CT_AT(ct_autograd_grad_with(n_outputs, outputs, n_inputs, inputs, result,             \
                            CT_OPTIONS(ct_grad_options, __VA_ARGS__)))

/* ---- grad modes (per thread, nestable) -------------------------------- */

bool ct_is_grad_enabled(void); /* torch.is_grad_enabled(), on this thread */
#define ct_is_grad_enabled(...) CT_AT(ct_is_grad_enabled(__VA_ARGS__))
bool ct_set_grad_enabled(bool enabled); /* returns the previous mode */
#define ct_set_grad_enabled(enabled) CT_AT(ct_set_grad_enabled(enabled))
/* What CT_NO_GRAD and CT_ENABLE_GRAD keep on the stack. */
typedef struct {
    bool prev; /* the mode to restore */
    int once;  /* the block runs once */
} ct_grad_mode_guard;
ct_grad_mode_guard ct_grad_mode_begin(bool enabled); /* sets the mode, keeping the previous */
#define ct_grad_mode_begin(enabled) CT_AT(ct_grad_mode_begin(enabled))
void ct_grad_mode_end(ct_grad_mode_guard *g); /* restores the mode ct_grad_mode_begin replaced */
#define ct_grad_mode_end(g) CT_AT(ct_grad_mode_end(g))
#define CT_GRAD_MODE_(enabled)                                                        \
    for (ct_grad_mode_guard CT_CAT(ct_gm_, __LINE__)                                  \
             __attribute__((cleanup(ct_grad_mode_end))) = ct_grad_mode_begin(enabled); \
         CT_CAT(ct_gm_, __LINE__).once; CT_CAT(ct_gm_, __LINE__).once = 0)
/* CT_NO_GRAD { ... }: nothing inside is recorded or saved (torch.no_grad()). */
#define CT_NO_GRAD CT_GRAD_MODE_(false)
/* CT_ENABLE_GRAD { ... }: recording on inside the block (torch.enable_grad()). */
#define CT_ENABLE_GRAD CT_GRAD_MODE_(true)
/* Inference mode: no graph at all; in ctorch the same as no_grad. */
#define CT_INFERENCE_MODE CT_GRAD_MODE_(false)

/* ---- anomaly mode (torch.autograd.set_detect_anomaly) ------------------- */

/* When on, backward checks every gradient a node computes and fails on NaN, as
 * PyTorch (1.13 and 2.x) does, with PyTorch's message followed by the forward op and
 * where it was called:
 *   "Function 'MulBackward0' returned nan values in its 0th output. The forward op
 *    was ct_mul, called at train.c:42."
 * An infinite gradient passes, as in PyTorch (log(0)'s is one), unless
 * ct_set_anomaly_check_inf(true) asks for infinities to fail too ("returned inf
 * values"), a ctorch extension.  Global (all threads), like PyTorch's; costs a pass
 * over every gradient. */
bool ct_set_detect_anomaly(bool enabled); /* returns the previous mode */
#define ct_set_detect_anomaly(enabled) CT_AT(ct_set_detect_anomaly(enabled))
bool ct_is_anomaly_enabled(void); /* torch.is_anomaly_enabled() */
bool ct_set_anomaly_check_inf(bool enabled); /* default false; returns the previous */
#define ct_set_anomaly_check_inf(enabled) CT_AT(ct_set_anomaly_check_inf(enabled))
#define ct_is_anomaly_enabled(...) CT_AT(ct_is_anomaly_enabled(__VA_ARGS__))
/* What CT_DETECT_ANOMALY keeps on the stack. */
typedef struct {
    bool prev; /* the mode to restore */
    int once;  /* the block runs once */
} ct_anomaly_guard;
ct_anomaly_guard ct_anomaly_begin(bool enabled); /* sets anomaly mode, remembering the previous one */
#define ct_anomaly_begin(enabled) CT_AT(ct_anomaly_begin(enabled))
void ct_anomaly_end(ct_anomaly_guard *g); /* restores the mode ct_anomaly_begin replaced */
#define ct_anomaly_end(g) CT_AT(ct_anomaly_end(g))
/* CT_DETECT_ANOMALY { ... }: anomaly mode on inside the block (restored on exit). */
#define CT_DETECT_ANOMALY                                                              \
    for (ct_anomaly_guard CT_CAT(ct_am_, __LINE__)                                     \
             __attribute__((cleanup(ct_anomaly_end))) = ct_anomaly_begin(true);          \
         CT_CAT(ct_am_, __LINE__).once; CT_CAT(ct_am_, __LINE__).once = 0)

/* ---- hooks -------------------------------------------------------------- */

/* Called with the gradient of t during backward; return NULL to keep it or a new
 * tensor to replace it.  Returns a handle for ct_remove_hook, or -1. */
typedef ct_tensor *(*ct_tensor_hook)(ct_tensor *grad, void *ctx);
/* t.register_hook(fn): fn(grad, ctx) runs on t's gradient; returns a handle or -1. */
int ct_register_hook(ct_tensor *t, ct_tensor_hook fn, void *ctx);
#define ct_register_hook(...) CT_AT(ct_register_hook(__VA_ARGS__))
int ct_remove_hook(ct_tensor *t, int handle); /* handle.remove(); 0 or -1 */
#define ct_remove_hook(t, handle) CT_AT(ct_remove_hook(t, handle))

/* Called with a leaf after a backward has accumulated into its .grad (ct_grad(leaf)
 * is the new value, which the hook may read or change in place).  A hook that reports
 * an error with ct_set_error fails the backward. */
typedef void (*ct_post_accumulate_grad_hook)(ct_tensor *leaf, void *ctx);
/* leaf.register_post_accumulate_grad_hook(fn) (PyTorch 2.x): fn(leaf, ctx) runs each
 * time ct_backward has updated leaf's .grad, after the tensor hooks and the
 * accumulation (ct_autograd_grad, which leaves .grad alone, runs none).  Hooks run in
 * registration order.  Returns a handle for ct_remove_hook (the handles of a tensor's
 * hooks of both kinds are distinct), or -1: leaf is not a leaf ("post accumulate grad
 * hooks cannot be registered on non-leaf tensors"), does not require grad, or fn is
 * NULL. */
int ct_register_post_accumulate_grad_hook(ct_tensor *leaf, ct_post_accumulate_grad_hook fn, void *ctx);
#define ct_register_post_accumulate_grad_hook(leaf, fn, ctx) \
    CT_AT(ct_register_post_accumulate_grad_hook(leaf, fn, ctx))

/* Variable._execution_engine.queue_callback(fn): only during a backward (from a
 * hook or a backward formula), fn(ctx) is called once when the running backward has
 * finished its graph, before ct_backward (or ct_autograd_grad) returns; callbacks run
 * in the order queued, and one may queue another.  A callback that reports an error
 * with ct_set_error makes the backward return -1 (the callbacks after it do not
 * run); when the graph itself fails, no callback runs.  Returns 0, or -1 outside a
 * backward ("Final callbacks can only be installed during backward pass."). */
int ct_autograd_queue_callback(void (*fn)(void *ctx), void *ctx);
#define ct_autograd_queue_callback(fn, ctx) CT_AT(ct_autograd_queue_callback(fn, ctx))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
