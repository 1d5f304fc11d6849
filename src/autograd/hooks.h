/* Tensor hooks and retain_grad, and the autograd meta that holds them.
 *
 * A leaf's hooks run in its AccumulateGrad node before accumulation.  A non-leaf's
 * hooks (and retain_grad) are attached to its grad_fn as a pre-hook on its output
 * slot; the node refers to the tensor weakly, and the tensor detaches itself when it
 * dies: core releases the tensor's ct_autograd_meta through the interface this file
 * registers (core/autograd_meta.h), at start-up and at the latest with the first meta. */
#ifndef CT_AUTOGRAD_HOOKS_H
#define CT_AUTOGRAD_HOOKS_H

#include "ctorch/autograd.h"

typedef struct ct_node_hook ct_node_hook;
typedef struct ct_hook_entry ct_hook_entry;
typedef struct ct_post_hook_entry ct_post_hook_entry;

/* A tensor's autograd state beyond the tensor's own fields (core/tensor_impl.h). */
struct ct_autograd_meta {
    ct_hook_entry *hooks; /* in registration order */
    int n_hooks, cap, next_handle; /* next_handle: shared by both kinds of hook */
    ct_post_hook_entry *post_hooks; /* post-accumulate-grad hooks, in registration order */
    int n_post_hooks, post_cap;
    bool retains_grad;
    ct_node *attached_to; /* weak: the node whose pre-hooks list this tensor (its grad_fn
                           * then, an older one after an in-place op); NULL: none */
};

struct ct_node_hook {
    ct_tensor *tensor; /* weak */
    ct_node_hook *next;
};

void ct_node_hooks_free(ct_node_hook *h);
/* Runs t's hooks on grad in registration order; returns the final gradient (a new
 * reference: grad retained, or a hook's replacement).  NULL with an error if a hook
 * returned a tensor of the wrong shape. */
ct_tensor *ct_hooks_apply(ct_tensor *t, ct_tensor *grad);
/* Runs leaf's post-accumulate-grad hooks (the engine calls it only when
 * n_post_hooks > 0); false when one reported an error. */
bool ct_hooks_run_post_accumulate(ct_tensor *leaf);
/* Called by the engine before running node: applies hooks and retain_grad of the
 * non-leaf outputs to node->buffer.  Returns false on error. */
bool ct_node_run_pre_hooks(ct_node *node);
/* Takes t off its grad_fn's pre-hooks (t dies, or its grad_fn is about to change). */
void ct_tensor_detach_hooks(ct_tensor *t);

#endif
