/* Gradient checkpointing: forward without a graph, backward by recomputation.
 *
 * The node (CheckpointFunctionBackward) saves only fn's inputs.  Its backward detaches
 * them, runs fn again with grad enabled and backpropagates the output's gradient
 * through the recomputed graph with a nested backward (see Note [Reentrant backward]
 * in engine.c): ct_backward when the outer run accumulates into .grad, so that leaves
 * fn reaches through ctx get their gradients too; ct_autograd_grad on the detached
 * inputs when the outer run is itself a ct_autograd_grad. */
#include <stdlib.h>

#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/trace.h"
#include "core/mem.h"

typedef struct {
    ct_checkpoint_fn fn;
    void *ctx;
} checkpoint_state;

ct_tensor *ct_checkpoint(ct_checkpoint_fn fn, void *ctx, int n, ct_tensor *const *inputs) {
    if (!ct_all_alive("ct_checkpoint", 4, inputs, n)) return NULL;
    if (!fn || n < 0 || (n > 0 && !inputs)) {
        ct_error("ct_checkpoint: fn, n >= 0 and inputs are required");
        return NULL;
    }
    if (n > CT_NODE_MAX_SAVED) {
        ct_error("ct_checkpoint: at most %d tensor inputs are supported (got %d); pass further "
                 "tensors through ctx", CT_NODE_MAX_SAVED, n);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!inputs[i]) return NULL;
    ct_node *node = ct_node_record(CT_OP_checkpoint, n, inputs, 1);
    ct_tensor *out = NULL;
    ct_trace_mute(); /* fn's ops are the checkpoint's own: it is reported as one op */
    CT_NO_GRAD {
        CT_SCOPE { out = ct_retain(fn(inputs, ctx)); }
    }
    ct_trace_unmute();
    if (!out && !ct_last_error()) ct_error("ct_checkpoint: fn returned NULL");
    if (node && out && ct_dtype_is_floating(out->dtype)) {
        checkpoint_state *st = ct_malloc(sizeof *st);
        if (st) {
            *st = (checkpoint_state){fn, ctx};
            node->extra = st;
            node->extra_free = free;
            for (int i = 0; i < n; i++) ct_node_save(node, i, inputs[i], false);
            out = ct_node_fresh_output(out);
        } else {
            ct_error("ct_checkpoint: out of memory");
            ct_release(out);
            out = NULL;
        }
        if (out) ct_node_set_output(node, out, 0);
    }
    ct_release(node);
    /* preserve_rng_state: the recomputation draws afresh (no RNG state is kept) */
    if (out) CT_TRACE_ATTRS(CT_OP_checkpoint, n, inputs, 1, &out, &(ct_checkpoint_attrs){false});
    return out ? ct_ret(out) : NULL;
}

bool checkpoint_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    checkpoint_state *st = n->extra;
    if (ct_is_grad_enabled()) {
        ct_error("ct_checkpoint: backward with create_graph through a checkpoint is not "
                 "supported (only first-order gradients)");
        return false;
    }
    ct_tensor *det[CT_NODE_MAX_SAVED], *req[CT_NODE_MAX_SAVED], *res[CT_NODE_MAX_SAVED];
    int which[CT_NODE_MAX_SAVED], k = 0;
    for (int i = 0; i < n->n_in; i++) {
        ct_tensor *x = ct_node_saved(n, i);
        if (!x || !(det[i] = ct_detach(x))) return false;
        if (n->needs_grad[i]) {
            ct_set_requires_grad(det[i], true);
            which[k] = i;
            req[k++] = det[i];
        }
    }
    if (!go[0]) return true; /* no gradient reached the output: none for the inputs */
    ct_tensor *out = NULL;
    CT_ENABLE_GRAD { out = st->fn(det, st->ctx); }
    if (!out) return false;
    if (!ct_requires_grad(out)) return true; /* fn did not use its inputs differentiably */
    if (ct_engine_capturing()) {
        if (ct_autograd_grad_with(1, &out, k, req, res,
                                  (ct_grad_options){.grad_outputs = go, .allow_unused = true}))
            return false;
    } else {
        if (ct_backward_with(out, (ct_backward_options){.gradient = go[0]})) return false;
        for (int j = 0; j < k; j++) res[j] = ct_grad(req[j]);
    }
    for (int j = 0; j < k; j++) gi[which[j]] = res[j];
    return true;
}
