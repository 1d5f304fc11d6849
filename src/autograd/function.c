/* Custom autograd functions: a user's forward and backward behind one node.
 *
 * The node (op custom_function, renamed "<name>Backward") is recorded before forward
 * runs, so that the call site is the user's and needs_input_grad is known inside
 * forward; the context lives in node->extra and dies with the node.  Tensors saved in
 * forward wait in the context until the output exists (saving the output itself must
 * not make a cycle), then go into the node's saved slots, with their versions. */
#include <stdlib.h>
#include <string.h>

#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/trace.h"
#include "core/mem.h"

struct ct_function_ctx {
    ct_function fn; /* a copy: the caller's descriptor may be gone by backward */
    ct_node *node; /* weak: the node owns the context; NULL when nothing is recorded */
    bool in_forward;
    int n_pending;
    ct_tensor *pending[CT_NODE_MAX_SAVED]; /* owned until moved into the node */
    void *data;
    void (*free_data)(void *);
    int out_ndim; /* the output's geometry, for a missing grad_output */
    ct_dtype out_dtype;
    int64_t out_sizes[CT_MAX_DIMS];
    char name[]; /* "<name>Backward" */
};

static void ctx_free(void *p) {
    ct_function_ctx *ctx = p;
    for (int i = 0; i < ctx->n_pending; i++) ct_release(ctx->pending[i]);
    if (ctx->free_data) ctx->free_data(ctx->data);
    free(ctx);
}

static bool check_ctx(const char *fn, const ct_function_ctx *ctx) {
    if (!ctx) ct_error("%s: ctx is NULL", fn);
    return ctx != NULL;
}

int ct_ctx_save_for_backward(ct_function_ctx *ctx, int n, ct_tensor *const *tensors) {
    if (!ct_all_alive("ct_ctx_save_for_backward", 3, tensors, n)) return -1;
    if (!check_ctx("ct_ctx_save_for_backward", ctx)) return -1;
    if (!ctx->in_forward) {
        ct_error("ct_ctx_save_for_backward: can only be called in forward (%s)", ctx->name);
        return -1;
    }
    if (n < 0 || ctx->n_pending + n > CT_NODE_MAX_SAVED) {
        ct_error("ct_ctx_save_for_backward: at most %d tensors can be saved (got %d)",
                 CT_NODE_MAX_SAVED, ctx->n_pending + n);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (!tensors[i]) return -1;
    for (int i = 0; i < n; i++) ctx->pending[ctx->n_pending++] = ct_retain(tensors[i]);
    return 0;
}

ct_tensor *ct_ctx_saved(ct_function_ctx *ctx, int i) {
    if (!check_ctx("ct_ctx_saved", ctx)) return NULL;
    if (ctx->in_forward || !ctx->node) {
        if (i >= 0 && i < ctx->n_pending) return ctx->pending[i];
    } else if (i >= 0 && i < CT_NODE_MAX_SAVED &&
               (ctx->node->saved[i].t || ctx->node->released)) {
        return ct_node_saved(ctx->node, i);
    }
    ct_error("ct_ctx_saved: %s saved no tensor %d", ctx->name, i);
    return NULL;
}

bool ct_ctx_needs_input_grad(const ct_function_ctx *ctx, int i) {
    return ctx && ctx->node && i >= 0 && i < ctx->node->n_in && ctx->node->needs_grad[i];
}

void *ct_ctx_data(const ct_function_ctx *ctx) { return ctx ? ctx->data : NULL; }

void ct_ctx_set_data(ct_function_ctx *ctx, void *data, void (*free_fn)(void *)) {
    if (!ctx) return;
    if (ctx->free_data && ctx->data != data) ctx->free_data(ctx->data);
    ctx->data = data;
    ctx->free_data = free_fn;
}

/* Makes out (forward's result, owned) the node's output and moves the tensors saved
 * in forward into the node; returns the output (out, or an alias of it). */
static ct_tensor *attach_output(ct_function_ctx *ctx, ct_tensor *out) {
    /* The context's own references to out must not count as someone else's. */
    bool is_out[CT_NODE_MAX_SAVED] = {0};
    for (int i = 0; i < ctx->n_pending; i++)
        if (ctx->pending[i] == out) {
            is_out[i] = true;
            ct_release(out);
            ctx->pending[i] = NULL;
        }
    out = ct_node_fresh_output(out);
    for (int i = 0; i < ctx->n_pending; i++) {
        if (!out) {
            ct_release(ctx->pending[i]);
            continue;
        }
        ct_node_save(ctx->node, i, is_out[i] ? out : ctx->pending[i], is_out[i]);
        ct_release(ctx->pending[i]);
    }
    ctx->n_pending = 0;
    if (!out) return NULL;
    ctx->out_ndim = out->ndim;
    ctx->out_dtype = out->dtype;
    memcpy(ctx->out_sizes, out->sizes, sizeof(int64_t) * (size_t)out->ndim);
    ct_node_set_output(ctx->node, out, 0);
    return out;
}

ct_tensor *ct_function_apply(const ct_function *fn, int n, ct_tensor *const *inputs) {
    if (!ct_all_alive("ct_function_apply", 3, inputs, n)) return NULL;
    if (!fn || !fn->forward || n < 0 || (n > 0 && !inputs)) {
        ct_error("ct_function_apply: fn with a forward, n >= 0 and inputs are required");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!inputs[i]) return NULL;
    const char *name = fn->name ? fn->name : "CustomFunction";
    size_t len = strlen(name) + sizeof "Backward";
    ct_function_ctx *ctx = ct_calloc(1, sizeof *ctx + len);
    if (!ctx) {
        ct_error("ct_function_apply: out of memory");
        return NULL;
    }
    snprintf(ctx->name, len, "%sBackward", name);
    ctx->fn = *fn;
    ctx->data = fn->data;
    ctx->node = ct_node_record(CT_OP_custom_function, n, inputs, 1);
    if (ctx->node) {
        ctx->node->name = ctx->name;
        ctx->node->extra = ctx;
        ctx->node->extra_free = ctx_free;
    }

    ct_tensor *out = NULL;
    ctx->in_forward = true;
    ct_trace_mute(); /* forward's ops are the function's own: it is reported as one op */
    CT_NO_GRAD {
        CT_SCOPE { out = ct_retain(fn->forward(ctx, n, inputs)); }
    }
    ct_trace_unmute();
    ctx->in_forward = false;
    if (!out && !ct_last_error()) ct_error("ct_function_apply: %s's forward returned NULL", name);

    if (!ctx->node) {
        ctx_free(ctx);
    } else {
        if (out && ct_dtype_is_floating(out->dtype)) out = attach_output(ctx, out);
        ct_release(ctx->node); /* the output holds it; without one it dies with ctx */
    }
    if (out)
        CT_TRACE_ATTRS(CT_OP_custom_function, n, inputs, 1, &out,
                       &(ct_custom_function_attrs){name});
    return out ? ct_ret(out) : NULL;
}

/* A gradient may be broadcastable to its input (the engine sums it down), nothing else. */
static bool grad_fits(const ct_tensor *g, const ct_input_meta *m) {
    if (g->ndim < m->ndim) return false;
    for (int d = 1; d <= m->ndim; d++) {
        int64_t want = m->sizes[m->ndim - d], got = g->sizes[g->ndim - d];
        if (want != got && want != 1) return false;
    }
    return true;
}

bool custom_function_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_function_ctx *ctx = n->extra;
    if (!ctx->fn.backward) {
        ct_error("%s: backward is not implemented for this function", ctx->name);
        return false;
    }
    ct_tensor *g = go[0];
    if (!g) { /* like ctx.set_materialize_grads(True): zeros, never None */
        ct_shape s = {.ndim = ctx->out_ndim};
        memcpy(s.d, ctx->out_sizes, sizeof(int64_t) * (size_t)ctx->out_ndim);
        if (!(g = ct_zeros_with(s, (ct_tensor_options){.dtype = ctx->out_dtype}))) return false;
    }
    if (ctx->fn.backward(ctx, g, gi) != 0) {
        if (!ct_last_error()) ct_error("%s: backward returned an error", ctx->name);
        return false;
    }
    for (int i = 0; i < n->n_in; i++) {
        if (!gi[i]) continue;
        if (!n->needs_grad[i]) {
            gi[i] = NULL; /* a gradient nobody asked for: dropped (it dies with the scope) */
            continue;
        }
        const ct_input_meta *m = &n->in_meta[i];
        if (!grad_fits(gi[i], m)) {
            char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
            ct_error("Function %s returned an invalid gradient at index %d - got %s but expected "
                     "shape compatible with %s", ctx->name, i,
                     ct_shape_str(gi[i]->ndim, gi[i]->sizes, a), ct_shape_str(m->ndim, m->sizes, b));
            return false;
        }
    }
    return true;
}
