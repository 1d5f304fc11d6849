/* ctorch/function.h — custom autograd functions written in C (torch.autograd.Function).
 *
 *     static ct_tensor *my_exp_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
 *         ct_tensor *y = ct_exp(in[0]);
 *         ct_ctx_save_for_backward(ctx, 1, &y);
 *         return y;
 *     }
 *     static int my_exp_backward(ct_function_ctx *ctx, ct_tensor *grad_out, ct_tensor **grad_in) {
 *         if (ct_ctx_needs_input_grad(ctx, 0))
 *             if (!(grad_in[0] = ct_mul(grad_out, ct_ctx_saved(ctx, 0)))) return -1;
 *         return 0;
 *     }
 *     static const ct_function MyExp = {"MyExp", my_exp_forward, my_exp_backward, NULL};
 *     ...
 *     ct_tensor *y = ct_function_apply(&MyExp, 1, &x);    // ct_grad_fn(y): "MyExpBackward"
 *
 * forward runs in no-grad mode and returns one tensor.  When grad mode is on and an
 * input requires grad, a node named "<name>Backward" links the output to the inputs;
 * backward then gets the output's gradient (zeros when none arrived) and writes the
 * gradient of each input that needs one (others may stay NULL), shaped like the input
 * or broadcastable to it.  backward is written with ops, so it runs under
 * create_graph too (double backward).  Tensors saved for backward are checked against
 * in-place modification and freed by a backward without retain_graph, like those of
 * built-in ops. */
#ifndef CTORCH_FUNCTION_H
#define CTORCH_FUNCTION_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_function_ctx ct_function_ctx; /* ctx of a custom function: saved tensors and data */

/* A custom function (a subclass of torch.autograd.Function). */
typedef struct {
    const char *name; /* "MyExp": the node is "MyExpBackward" */
    /* Returns the output (registered with the scope, as ops return) or NULL with an error. */
    ct_tensor *(*forward)(ct_function_ctx *ctx, int n, ct_tensor *const *inputs);
    /* Fills grad_inputs[i] (n entries, all NULL on entry); returns 0, or -1 with an error. */
    int (*backward)(ct_function_ctx *ctx, ct_tensor *grad_output, ct_tensor **grad_inputs);
    void *data; /* read back with ct_ctx_data (constant settings of the function) */
} ct_function;

/* Runs fn on inputs (n of them) and records its node.  NULL with an error on failure
 * (a NULL input: NULL, keeping the first error). */
ct_tensor *ct_function_apply(const ct_function *fn, int n, ct_tensor *const *inputs);
#define ct_function_apply(fn, n, inputs) CT_AT(ct_function_apply(fn, n, inputs))

/* In forward: keeps up to 6 tensors (inputs, the output, or others) for backward;
 * may be called more than once.  Returns 0 or -1 with an error. */
int ct_ctx_save_for_backward(ct_function_ctx *ctx, int n, ct_tensor *const *tensors);
#define ct_ctx_save_for_backward(ctx, n, tensors) CT_AT(ct_ctx_save_for_backward(ctx, n, tensors))
/* The i-th saved tensor (borrowed); in backward NULL with PyTorch's errors when it was
 * modified in place since, or freed by an earlier backward. */
ct_tensor *ct_ctx_saved(ct_function_ctx *ctx, int i);
#define ct_ctx_saved(ctx, i) CT_AT(ct_ctx_saved(ctx, i))
/* Whether input i needs a gradient (known in forward already; false in no-grad mode). */
bool ct_ctx_needs_input_grad(const ct_function_ctx *ctx, int i);
#define ct_ctx_needs_input_grad(ctx, i) CT_AT(ct_ctx_needs_input_grad(ctx, i))
/* Per-call user data: starts as fn->data; ct_ctx_set_data replaces it, and free_fn
 * (if given) runs when the node dies. */
void *ct_ctx_data(const ct_function_ctx *ctx);
#define ct_ctx_data(ctx) CT_AT(ct_ctx_data(ctx))
void ct_ctx_set_data(ct_function_ctx *ctx, void *data, void (*free_fn)(void *data));
#define ct_ctx_set_data(...) CT_AT(ct_ctx_set_data(__VA_ARGS__))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
