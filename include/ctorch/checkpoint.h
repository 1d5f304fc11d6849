/* ctorch/checkpoint.h — gradient checkpointing (torch.utils.checkpoint).
 *
 *     static ct_tensor *block(ct_tensor *const *in, void *ctx) {
 *         return ct_tanh(ct_mul(in[0], (ct_tensor *)ctx));
 *     }
 *     ...
 *     ct_tensor *w = ct_full(CT_SHAPE(3), 0.5, .requires_grad = true);
 *     ct_tensor *h = ct_checkpoint(block, w, 1, &x);   // nothing inside block is kept
 *     ct_backward(ct_sum(h));                          // block runs again here
 *
 * Trades compute for memory: fn runs without recording a graph, so none of its
 * intermediate activations are kept; backward runs fn again with grad enabled on
 * detached copies of the inputs and backpropagates through that recomputed graph.
 * fn must compute the same thing both times (no RNG state is restored), and ctx must
 * stay valid until the backward is done.  Leaves fn
 * reaches through ctx (parameters) get their .grad accumulated by ct_backward, as
 * with PyTorch's reentrant checkpoint; ct_autograd_grad sees only the inputs.  Only
 * first-order gradients: backward with create_graph through a checkpoint fails. */
#ifndef CTORCH_CHECKPOINT_H
#define CTORCH_CHECKPOINT_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* The block ct_checkpoint runs (and runs again in backward). */
typedef ct_tensor *(*ct_checkpoint_fn)(ct_tensor *const *inputs, void *ctx);
/* fn(inputs, ctx) with its activations recomputed in backward; at most 6 tensor
 * inputs (pass others through ctx).  NULL with an error on failure. */
ct_tensor *ct_checkpoint(ct_checkpoint_fn fn, void *ctx, int n, ct_tensor *const *inputs);
#define ct_checkpoint(fn, ctx, n, inputs) CT_AT(ct_checkpoint(fn, ctx, n, inputs))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
