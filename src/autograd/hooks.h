/* Tensor hooks and retain_grad.
 *
 * A leaf's hooks run in its AccumulateGrad node before accumulation.  A non-leaf's
 * hooks (and retain_grad) are attached to its grad_fn as a pre-hook on its output
 * slot; the node refers to the tensor weakly, and the tensor detaches itself when it
 * dies. */
#ifndef CT_AUTOGRAD_HOOKS_H
#define CT_AUTOGRAD_HOOKS_H

#include "ctorch/autograd.h"

typedef struct ct_hook_list ct_hook_list;
typedef struct ct_node_hook ct_node_hook;

struct ct_node_hook {
    ct_tensor *tensor; /* weak */
    ct_node_hook *next;
};

void ct_hooks_free(ct_hook_list *l);
void ct_node_hooks_free(ct_node_hook *h);
/* Runs t's hooks on grad in registration order; returns the final gradient (a new
 * reference: grad retained, or a hook's replacement).  NULL with an error if a hook
 * returned a tensor of the wrong shape. */
ct_tensor *ct_hooks_apply(ct_tensor *t, ct_tensor *grad);
/* Called by the engine before running node: applies hooks and retain_grad of the
 * non-leaf outputs to node->buffer.  Returns false on error. */
bool ct_node_run_pre_hooks(ct_node *node);
/* Called when a non-leaf tensor dies. */
void ct_tensor_detach_hooks(ct_tensor *t);

#endif
