/* The backward engine.
 *
 * Collects the nodes reachable from the roots (for ct_autograd_grad only those on a
 * path to an input, see mark_needed), counts for each how many edges lead into it,
 * then runs nodes whose every incoming gradient has arrived, newest first.
 * Each node's gradients are summed in its buffer; broadcast gradients are reduced to
 * the input's shape (and cast to its dtype) here, once, so formulas never do it.
 * Each node runs in its own scope so that temporaries die as soon as it is done.
 * Callbacks queued during a run (ct_autograd_queue_callback) run when its graph is done. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "autograd/hooks.h"
#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/trace.h"
#include "core/mem.h"
#include "core/prof.h"

typedef struct {
    ct_node **items;
    int len, cap;
} node_vec;

/* False, with the error set: the caller gives up the run. */
static bool out_of_memory(void) {
    ct_error("ct_backward: out of memory running the graph");
    return false;
}

/* Grows an array of cap items of `size` bytes to hold one more; false when out of memory
 * (the array is kept). */
static bool grow(void **items, int *cap, size_t size) {
    int c = *cap ? *cap * 2 : 32;
    void *p = ct_realloc(*items, (size_t)c * size);
    if (!p) return out_of_memory();
    *items = p;
    *cap = c;
    return true;
}

static bool push(node_vec *v, ct_node *n) {
    if (v->len == v->cap && !grow((void **)&v->items, &v->cap, sizeof *v->items)) return false;
    v->items[v->len++] = n;
    return true;
}

/* Max-heap on seq: among ready nodes the most recently created runs first. */
static bool heap_push(node_vec *h, ct_node *n) {
    if (!push(h, n)) return false;
    int i = h->len - 1;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h->items[p]->seq >= h->items[i]->seq) break;
        ct_node *t = h->items[p];
        h->items[p] = h->items[i];
        h->items[i] = t;
        i = p;
    }
    return true;
}

static ct_node *heap_pop(node_vec *h) {
    ct_node *top = h->items[0];
    h->items[0] = h->items[--h->len];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->len && h->items[l]->seq > h->items[m]->seq) m = l;
        if (r < h->len && h->items[r]->seq > h->items[m]->seq) m = r;
        if (m == i) break;
        ct_node *t = h->items[m];
        h->items[m] = h->items[i];
        h->items[i] = t;
        i = m;
    }
    return top;
}

static atomic_uint_fast64_t next_task = 1;

/* Adds g (owned reference) into slot. */
static bool accumulate_into(ct_tensor **slot, ct_tensor *g) {
    if (!*slot) {
        *slot = g;
        return true;
    }
    ct_tensor *sum = ct_add(*slot, g);
    ct_release(g);
    if (!sum) return false;
    ct_release(*slot);
    *slot = ct_retain(sum);
    return true;
}

/* AccumulateGrad: hooks, then .grad += grad (in place unless building a graph),
 * reported as the op accumulate_grad (the ops that do it are its own). */
static bool accumulate_grad(ct_node *node, ct_tensor *grad, bool create_graph) {
    ct_tensor *leaf = node->variable;
    ct_tensor *g = ct_hooks_apply(leaf, grad);
    if (!g) return false;
    ct_trace_mute();
    bool ok = true;
    if (!leaf->grad) {
        /* Steal the gradient when only the node's buffer (and g, here) hold it: no other
         * tensor can then see later in-place accumulation.  Else copy it. */
        bool alone = g == grad && atomic_load(&g->obj.refs) == 2 &&
                     atomic_load(&g->storage->obj.refs) == 1 && ct_tensor_is_contiguous(g) &&
                     !g->grad_fn;
        if (create_graph || alone) {
            leaf->grad = ct_retain(g);
        } else {
            leaf->grad = ct_retain(ct_clone(g));
            ok = leaf->grad != NULL;
        }
    } else if (create_graph || leaf->grad->grad_fn) {
        ct_tensor *sum = ct_add(leaf->grad, g);
        ok = sum != NULL;
        if (ok) {
            ct_release(leaf->grad);
            leaf->grad = ct_retain(sum);
        }
    } else {
        ok = ct_add_(leaf->grad, g) != NULL;
    }
    ct_trace_unmute();
    if (ok) CT_TRACE(CT_OP_accumulate_grad, 2, ((ct_tensor *[]){leaf, g}), 0, NULL);
    ct_release(g);
    if (ok && leaf->autograd_meta && leaf->autograd_meta->n_post_hooks)
        ok = ct_hooks_run_post_accumulate(leaf);
    return ok;
}

/* Runs one node with its buffer filled; sends its input gradients along its edges. */
static bool run_node(ct_node *node, node_vec *ready) {
    bool ok = true;
    CT_SCOPE {
        ct_tensor *grad_in_small[8] = {0}, **grad_in = grad_in_small;
        if (node->n_in > 8 && !(grad_in = ct_calloc((size_t)node->n_in, sizeof *grad_in))) {
            ok = out_of_memory();
            break;
        }
        /* A node that received no gradient at all passes none on. */
        bool any = false;
        for (int k = 0; k < node->n_out; k++) any = any || node->buffer[k];
        if (any) {
            ok = ct_ops[node->op].backward(node, node->buffer, grad_in);
            if (!ok && !ct_last_error())
                ct_error("%s: backward failed without a message (internal error)",
                         ct_node_grad_name(node));
        }
        if (ok && ct_anomaly_enabled) ok = ct_anomaly_check(node, grad_in);
        for (int i = 0; ok && i < node->n_in; i++) {
            ct_node *next = node->next[i].fn;
            if (!next || !grad_in[i] || !(next->flags & CT_NODE_NEEDED)) continue;
            ct_tensor *g = grad_in[i];
            const ct_input_meta *m = &node->in_meta[i];
            if (g->ndim != m->ndim || memcmp(g->sizes, m->sizes, sizeof(int64_t) * (size_t)m->ndim))
                g = ct_sum_to_size(g, m->ndim, m->sizes);
            if (g && g->dtype != m->dtype) g = ct_to_with(g, (ct_to_options){.dtype = m->dtype});
            ok = g && next->task == node->task &&
                 accumulate_into(&next->buffer[node->next[i].input_nr], ct_retain(g));
        }
        for (int i = 0; ok && i < node->n_in; i++) {
            ct_node *next = node->next[i].fn;
            if (next && (next->flags & CT_NODE_NEEDED) && --next->deps == 0)
                ok = heap_push(ready, next);
        }
        if (grad_in != grad_in_small) free(grad_in);
    }
    return ok;
}

typedef struct {
    int n;
    ct_tensor *const *inputs;
    ct_tensor **captured; /* NULL: accumulate into .grad */
} capture_spec;

/* The node whose buffer holds the gradient of input x (NULL when x has none yet). */
static ct_node *target_of(ct_tensor *x) {
    ct_node *fn = ct_grad_fn_of(x);
    return fn ? fn : x->grad_acc;
}

static void capture(ct_node *node, const capture_spec *c) {
    for (int i = 0; i < c->n; i++) {
        ct_tensor *x = c->inputs[i];
        if (target_of(x) != node) continue;
        int slot = ct_grad_fn_of(x) ? x->output_nr : 0;
        if (node->buffer[slot] && !c->captured[i]) c->captured[i] = ct_retain(node->buffer[slot]);
    }
}

/* Note [Reentrant backward]: a backward formula may run a backward of its own (the
 * checkpoint node does) over a graph that shares nodes with the outer one, such as a
 * parameter's AccumulateGrad.  The bookkeeping lives in the nodes, so a run saves the
 * state of every node it claims and restores it when done; runs on one thread nest.
 * (Concurrent backward runs on other threads must not share nodes.) */
typedef struct {
    ct_node *node;
    uint64_t task;
    int deps;
    ct_tensor **buffer;
    uint8_t flags;
} claim;

typedef struct {
    claim *items;
    int len, cap;
} claim_vec;

/* False when out of memory; a node claimed is restored by the run's end even then
 * (its buffer may be NULL). */
static bool claim_node(claim_vec *v, node_vec *stack, ct_node *n, uint64_t task) {
    if (n->task == task) return true;
    if (v->len == v->cap && !grow((void **)&v->items, &v->cap, sizeof *v->items)) return false;
    v->items[v->len++] = (claim){n, n->task, n->deps, n->buffer, n->flags};
    n->task = task;
    n->deps = 0;
    n->flags = 0;
    n->buffer = ct_calloc((size_t)n->n_out, sizeof(ct_tensor *));
    if (!n->buffer) return out_of_memory();
    return push(stack, n);
}

/* ct_autograd_grad runs only the nodes on a path from the roots to an input: a
 * post-order walk marks a node EXEC when a next node is NEEDED, and NEEDED when it is
 * EXEC or holds an input's gradient (TARGET). */
static bool mark_needed(int n_roots, ct_node **roots, uint64_t task) {
    typedef struct { ct_node *n; int i; } frame;
    int sp = 0, cap = 0;
    frame *st = NULL;
    if (!grow((void **)&st, &cap, sizeof *st)) return false;
    for (int r = 0; r < n_roots; r++) {
        if (roots[r]->flags & CT_NODE_VISITED) continue;
        roots[r]->flags |= CT_NODE_VISITED;
        st[sp++] = (frame){roots[r], 0};
        while (sp) {
            frame *f = &st[sp - 1];
            ct_node *n = f->n;
            if (f->i < n->n_in) {
                ct_node *next = n->next[f->i++].fn;
                if (!next || (next->flags & CT_NODE_VISITED)) continue;
                next->flags |= CT_NODE_VISITED;
                if (sp == cap && !grow((void **)&st, &cap, sizeof *st)) {
                    free(st);
                    return false;
                }
                st[sp++] = (frame){next, 0};
                continue;
            }
            for (int i = 0; i < n->n_in; i++) {
                ct_node *next = n->next[i].fn;
                if (next && next->task == task && (next->flags & CT_NODE_NEEDED))
                    n->flags |= CT_NODE_EXEC;
            }
            if (n->flags & (CT_NODE_EXEC | CT_NODE_TARGET)) n->flags |= CT_NODE_NEEDED;
            sp--;
        }
    }
    free(st);
    return true;
}

static _Thread_local bool capturing;
bool ct_engine_capturing(void) { return capturing; }

/* The callbacks queued during the backward running on this thread (NULL outside one;
 * a nested run has its own). */
typedef struct {
    void (*fn)(void *ctx);
    void *ctx;
} queued_callback;
typedef struct {
    queued_callback *items;
    int len, cap;
} callback_vec;
static _Thread_local callback_vec *queued;

int ct_autograd_queue_callback(void (*fn)(void *ctx), void *ctx) {
    if (!queued) {
        ct_error("ct_autograd_queue_callback: Final callbacks can only be installed during "
                 "backward pass.");
        return -1;
    }
    if (!fn) {
        ct_error("ct_autograd_queue_callback: callback function is NULL");
        return -1;
    }
    if (queued->len == queued->cap &&
        !grow((void **)&queued->items, &queued->cap, sizeof *queued->items))
        return -1;
    queued->items[queued->len++] = (queued_callback){fn, ctx};
    return 0;
}

/* Runs the queued callbacks in order, those they queue included, each in its own
 * scope as a node runs; -1 when one reported an error. */
static int run_callbacks(callback_vec *v) {
    for (int i = 0; i < v->len; i++) {
        unsigned errors = ct_error_count();
        queued_callback c = v->items[i];
        CT_SCOPE c.fn(c.ctx);
        if (ct_error_count() != errors) return -1;
    }
    return 0;
}

static int run_backward(int n_roots, ct_tensor *const *roots, ct_tensor *const *root_grads,
                        bool keep_graph, bool create_graph, const capture_spec *cap) {
    uint64_t task = atomic_fetch_add(&next_task, 1);
    node_vec stack = {0}, ready = {0};
    claim_vec all = {0};
    int rc = 0;
    bool prev_mode = ct_set_grad_enabled(create_graph), prev_capturing = capturing;
    capturing = cap != NULL;
    callback_vec callbacks = {0}, *prev_queued = queued;
    queued = &callbacks;

    /* Collect the reachable nodes. */
    bool collected = true;
    ct_node **root_nodes = ct_calloc((size_t)n_roots, sizeof *root_nodes);
    if (!root_nodes) {
        collected = out_of_memory();
        n_roots = 0;
    }
    for (int r = 0; collected && r < n_roots; r++) {
        ct_node *fn = ct_grad_fn_of(roots[r]);
        ct_node *n = fn ? ct_retain(fn) : ct_grad_accumulator(roots[r]);
        root_nodes[r] = n;
        collected = n && claim_node(&all, &stack, n, task);
    }
    while (collected && stack.len) {
        ct_node *n = stack.items[--stack.len];
        for (int i = 0; collected && i < n->n_in; i++)
            if (n->next[i].fn) collected = claim_node(&all, &stack, n->next[i].fn, task);
    }
    if (!collected) rc = -1;
    /* Decide which run, then count the incoming edges that will carry a gradient. */
    if (rc != 0) {
    } else if (cap) {
        for (int i = 0; i < cap->n; i++) {
            ct_node *t = target_of(cap->inputs[i]);
            if (t && t->task == task) t->flags |= CT_NODE_TARGET;
        }
        if (!mark_needed(n_roots, root_nodes, task)) rc = -1;
    } else {
        for (int i = 0; i < all.len; i++) all.items[i].node->flags = CT_NODE_EXEC | CT_NODE_NEEDED;
    }
    for (int i = 0; rc == 0 && i < all.len; i++) {
        ct_node *n = all.items[i].node;
        if (!(n->flags & CT_NODE_EXEC)) continue;
        for (int k = 0; k < n->n_in; k++) {
            ct_node *next = n->next[k].fn;
            if (next && (next->flags & CT_NODE_NEEDED)) next->deps++;
        }
    }
    for (int r = 0; rc == 0 && r < n_roots; r++) {
        int slot = roots[r]->grad_fn ? roots[r]->output_nr : 0;
        if (!accumulate_into(&root_nodes[r]->buffer[slot], ct_retain(root_grads[r]))) rc = -1;
    }
    for (int i = 0; rc == 0 && i < all.len; i++) {
        ct_node *n = all.items[i].node;
        if (n->deps == 0 && (n->flags & CT_NODE_NEEDED) && !heap_push(&ready, n)) rc = -1;
    }

    while (ready.len && rc == 0) {
        ct_node *node = heap_pop(&ready);
        bool ok = true, ran = false;
        ct_trace_backward_depth++; /* the ops run for a node are reported as backward */
        ct_prof_range_begin(ct_node_grad_name(node), (int64_t)node->seq, node->file, node->line);
        CT_SCOPE {
            ok = ct_node_run_pre_hooks(node);
            if (ok && cap) capture(node, cap);
            if (ok && node->op == CT_OP_accumulate_grad) {
                if (!cap && node->buffer[0])
                    ok = accumulate_grad(node, node->buffer[0], create_graph);
            } else if (ok && (node->flags & CT_NODE_EXEC)) {
                ok = run_node(node, &ready);
                ran = true;
            }
        }
        ct_prof_range_end();
        ct_trace_backward_depth--;
        if (!ok) rc = -1;
        if (!keep_graph && ran) ct_node_release_saved(node);
    }

    for (int i = 0; i < all.len; i++) {
        claim *c = &all.items[i];
        ct_node *n = c->node;
        for (int k = 0; n->buffer && k < n->n_out; k++) ct_release(n->buffer[k]);
        free(n->buffer);
        n->buffer = c->buffer;
        n->task = c->task;
        n->deps = c->deps;
        n->flags = c->flags;
    }
    for (int r = 0; r < n_roots; r++) ct_release(root_nodes[r]);
    free(root_nodes);
    free(all.items);
    free(stack.items);
    free(ready.items);
    if (rc == 0) rc = run_callbacks(&callbacks);
    free(callbacks.items);
    queued = prev_queued;
    capturing = prev_capturing;
    ct_set_grad_enabled(prev_mode);
    return rc;
}

bool ct_node_run_pre_hooks(ct_node *node) {
    for (ct_node_hook *h = node->pre_hooks; h; h = h->next) {
        ct_tensor *t = h->tensor;
        ct_tensor **slot = &node->buffer[t->output_nr];
        if (!*slot) continue;
        ct_tensor *g = ct_hooks_apply(t, *slot);
        if (!g) return false;
        ct_release(*slot);
        *slot = g;
        if (t->autograd_meta->retains_grad) { /* an attached tensor has a meta */
            ct_tensor *acc = t->grad ? ct_add(t->grad, g) : ct_clone(g);
            if (!acc) return false;
            ct_release(t->grad);
            t->grad = ct_retain(acc);
        }
    }
    return true;
}

/* The gradient to start from: given, or ones for a one-element output. */
static ct_tensor *root_gradient(const char *op, ct_tensor *t, ct_tensor *given, int index) {
    if (!ct_requires_grad_impl(t)) {
        ct_error("%s: element %d of tensors does not require grad and does not have a grad_fn",
                 op, index);
        return NULL;
    }
    if (!given) {
        if (t->numel != 1) {
            ct_error("%s: grad can be implicitly created only for scalar outputs", op);
            return NULL;
        }
        return ct_ones_like_with(t, (ct_tensor_options){0});
    }
    if (given->ndim != t->ndim || memcmp(given->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim)) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error("%s: Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a "
                 "shape of %s.", op, index, ct_shape_str(given->ndim, given->sizes, a), index,
                 ct_shape_str(t->ndim, t->sizes, b));
        return NULL;
    }
    return given;
}

int ct_backward_with(ct_tensor *t, ct_backward_options o) {
    if (!ct_alive("ct_backward", 1, t) || !ct_option_alive("ct_backward", "gradient", o.gradient))
        return -1;
    if (!t) return -1;
    int rc = -1;
    CT_SCOPE {
        ct_tensor *g = root_gradient("ct_backward", t, o.gradient, 0);
        if (g) rc = run_backward(1, &t, &g, o.retain_graph || o.create_graph, o.create_graph, NULL);
    }
    return rc;
}

int ct_autograd_grad_with(int n_out, ct_tensor *const *outputs, int n_in, ct_tensor *const *inputs,
                      ct_tensor **result, ct_grad_options o) {
    if (!outputs || !inputs || !result || n_out <= 0 || n_in <= 0) {
        ct_error("ct_autograd_grad: outputs, inputs and result must be non-empty arrays");
        return -1;
    }
    if (!ct_all_alive("ct_autograd_grad", 2, outputs, n_out) ||
        !ct_all_alive("ct_autograd_grad", 4, inputs, n_in))
        return -1;
    for (int i = 0; o.grad_outputs && i < n_out; i++)
        if (!ct_option_alive("ct_autograd_grad", "grad_outputs", o.grad_outputs[i])) return -1;
    for (int i = 0; i < n_out; i++)
        if (!outputs[i]) return -1;
    for (int i = 0; i < n_in; i++) {
        if (!inputs[i]) return -1;
        if (!ct_requires_grad_impl(inputs[i])) {
            ct_error("ct_autograd_grad: One of the differentiated Tensors does not require grad");
            return -1;
        }
        result[i] = NULL;
    }
    int rc = -1;
    ct_tensor **captured = ct_calloc((size_t)n_in, sizeof *captured);
    ct_tensor **grads = ct_calloc((size_t)n_out, sizeof *grads);
    if (!captured || !grads) {
        free(captured);
        free(grads);
        ct_error("ct_autograd_grad: out of memory");
        return -1;
    }
    CT_SCOPE {
        bool ok = true;
        for (int i = 0; ok && i < n_out; i++)
            ok = (grads[i] = root_gradient("ct_autograd_grad", outputs[i],
                                           o.grad_outputs ? o.grad_outputs[i] : NULL, i)) != NULL;
        capture_spec cap = {n_in, inputs, captured};
        if (ok)
            rc = run_backward(n_out, outputs, grads, o.retain_graph || o.create_graph,
                              o.create_graph, &cap);
    }
    for (int i = 0; i < n_in; i++) {
        if (rc == 0 && !captured[i] && !o.allow_unused) {
            ct_error("ct_autograd_grad: One of the differentiated Tensors appears to not have "
                     "been used in the graph. Set allow_unused=True if this is the desired "
                     "behavior.");
            rc = -1;
        }
    }
    for (int i = 0; i < n_in; i++) {
        if (rc == 0)
            result[i] = ct_scope_register(captured[i]);
        else
            ct_release(captured[i]);
    }
    free(captured);
    free(grads);
    return rc;
}

/* AccumulateGrad is run by the engine itself (accumulate_grad above). */
bool accumulate_grad_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    (void)go;
    (void)gi;
    CT_ASSERT(!"AccumulateGrad is not run through the op table");
    return false;
}
