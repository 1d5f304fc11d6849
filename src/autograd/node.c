/* Recording: nodes, edges, saved tensors. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/autograd.h"
#include "autograd/hooks.h"
#include "autograd/node.h"
#include "core/lifetime.h"
#include "core/pool.h"
#include "core/mem.h"
#include "ops/autocast.h"
#include "ops/internal.h"

_Atomic bool ct_anomaly_enabled; /* global, as in PyTorch */

/* Sequence numbers: each thread takes them in blocks from the global counter, so that
 * a node costs no atomic.  They stay unique and increase along each thread (PyTorch's
 * sequence numbers are per thread too); the engine uses them only as a priority. */
#define SEQ_BLOCK 4096
static atomic_uint_fast64_t next_seq_block;
static _Thread_local uint64_t seq_next, seq_end;

static uint64_t take_seq(void) {
    if (seq_next == seq_end) {
        seq_next = atomic_fetch_add_explicit(&next_seq_block, SEQ_BLOCK, memory_order_relaxed);
        seq_end = seq_next + SEQ_BLOCK;
    }
    return seq_next++;
}

/* Nodes of up to POOL_INPUTS inputs (most ops) come from the per-thread cache of
 * core/pool.h, all in one block size. */
#define POOL_INPUTS 3

static size_t node_size(int n_in) {
    /* One block: the node, then its edges, input metadata and flags. */
    return sizeof(ct_node) + (size_t)n_in * (sizeof(ct_edge) + sizeof(ct_input_meta)) +
           (size_t)n_in * sizeof(bool);
}

static void node_destroy(ct_object *o) {
    ct_node *n = (ct_node *)o;
    for (int i = 0; i < n->n_in; i++) ct_object_release(n->next[i].fn);
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++) ct_object_release(n->saved[i].t);
    if (n->extra_free) n->extra_free(n->extra);
    if (n->variable && n->variable->grad_acc == n) n->variable->grad_acc = NULL;
    ct_object_release(n->variable);
    if (n->pre_hooks) ct_node_hooks_free(n->pre_hooks);
    if (n->n_in <= POOL_INPUTS)
        ct_pool_free(CT_POOL_NODE, n);
    else
        ct_lifetime_free(n);
}

bool ct_any_requires_grad(int n, ct_tensor *const *inputs) {
    if (!ct_is_grad_enabled()) return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && ct_requires_grad_impl(inputs[i])) return true;
    return false;
}

/* A node whose fields, edges and flags are zero; its input metadata is the caller's to
 * fill (ct_node_record writes each input's, up to its ndim: most of it never is).  The
 * node and its edges are zeroed by one memset of a size not known at compile time: gcc
 * turns a constant-size one into a `rep stos`, whose start-up costs a good part of a
 * small op. */
static ct_node *node_alloc(ct_op_id op, int n_in, int n_out) {
    ct_node *n = n_in <= POOL_INPUTS ? ct_pool_alloc(CT_POOL_NODE, node_size(POOL_INPUTS))
                                     : ct_malloc(node_size(n_in));
    if (!n) {
        ct_error_fail_result("%s: out of memory recording the graph", ct_ops[op].fn);
        return NULL;
    }
    memset(n, 0, sizeof *n + (size_t)n_in * sizeof(ct_edge));
    ct_object_init(&n->obj, node_destroy);
    n->op = op;
    n->n_in = n_in;
    n->n_out = n_out;
    n->next = (ct_edge *)(n + 1);
    n->in_meta = (ct_input_meta *)(n->next + n_in);
    n->needs_grad = (bool *)(n->in_meta + n_in);
    memset(n->needs_grad, 0, (size_t)n_in);
    n->seq = take_seq();
    ct_current_site(&n->file, &n->line);
    return n;
}

ct_node *ct_node_new(ct_op_id op, int n_in, int n_out) {
    ct_node *n = node_alloc(op, n_in, n_out);
    if (n) memset(n->in_meta, 0, (size_t)n_in * sizeof(ct_input_meta));
    return n;
}

ct_node *ct_grad_accumulator(ct_tensor *leaf) {
    if (leaf->grad_acc) return ct_retain(leaf->grad_acc);
    ct_node *n = node_alloc(CT_OP_accumulate_grad, 0, 1);
    if (!n) return NULL;
    /* The node owns the leaf; the leaf points back weakly (cleared on destroy). */
    n->variable = ct_retain(leaf);
    leaf->grad_acc = n;
    return n;
}

ct_node *ct_node_record(ct_op_id op, int n_in, ct_tensor *const *inputs, int n_out) {
    if (!ct_any_requires_grad(n_in, inputs)) return NULL;
    ct_node *n = node_alloc(op, n_in, n_out);
    if (!n) return NULL;
    for (int i = 0; i < n_in; i++) {
        ct_tensor *t = inputs[i];
        if (!t) {
            n->in_meta[i].ndim = 0;
            n->in_meta[i].dtype = CT_DTYPE_UNSET;
            continue;
        }
        n->in_meta[i].ndim = t->ndim;
        n->in_meta[i].dtype = t->dtype;
        memcpy(n->in_meta[i].sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
        ct_node *fn = ct_grad_fn_of(t);
        if (fn) {
            n->next[i].fn = ct_retain(fn);
            n->next[i].input_nr = t->output_nr;
        } else if (t->requires_grad) {
            n->next[i].fn = ct_grad_accumulator(t);
            n->next[i].input_nr = 0;
            if (!n->next[i].fn) { /* the result fails (ct_error_fail_result) */
                ct_release(n);
                return NULL;
            }
        }
        n->needs_grad[i] = n->next[i].fn != NULL;
    }
    return n;
}

void ct_node_give_output(ct_node *node, ct_tensor *out, int output_nr) {
    ct_release(out->grad_fn);
    out->grad_fn = node;
    out->output_nr = output_nr;
    out->requires_grad = false; /* implied by grad_fn */
}

void ct_node_set_output(ct_node *node, ct_tensor *out, int output_nr) {
    ct_node_give_output(ct_retain(node), out, output_nr);
}

ct_node *ct_record1(ct_op_id op, ct_tensor *out, int n_in, ct_tensor *const *inputs) {
    ct_node *n = ct_node_record(op, n_in, inputs, 1);
    if (n) ct_node_give_output(n, out, 0); /* out holds it */
    return n;
}

ct_tensor *ct_node_fresh_output(ct_tensor *out) {
    if (atomic_load(&out->obj.refs) == 1 && !out->grad_fn && !out->requires_grad) return out;
    ct_tensor *alias = ct_tensor_view_of(out, out->ndim, out->sizes, out->strides, out->offset);
    ct_release(out);
    return alias; /* NULL when out of memory */
}

void ct_node_save(ct_node *node, int slot, ct_tensor *t, bool is_output) {
    CT_ASSERT(slot >= 0 && slot < CT_NODE_MAX_SAVED && !node->saved[slot].t);
    ct_saved *s = &node->saved[slot];
    s->version = ct_version_counter(t);
    s->is_output = is_output;
    s->output_nr = t->output_nr;
    if (is_output) {
        /* An alias without grad_fn: saving the output itself would be a cycle. */
        s->t = ct_tensor_view_of(t, t->ndim, t->sizes, t->strides, t->offset);
        if (!s->t) {
            ct_error_fail_result("%s: out of memory saving a tensor for backward",
                                 ct_ops[node->op].fn);
            return;
        }
        ct_release(s->t->base); /* the alias must not own the output either */
        s->t->base = NULL;
    } else {
        ct_tensor *leaf = ct_autocast_cast_source(t);
        s->recast_dtype = leaf ? t->dtype : CT_DTYPE_UNSET;
        if (leaf) s->version = ct_version_counter(leaf);
        s->t = leaf ? leaf : ct_retain(t);
    }
}

void ct_node_release_saved(ct_node *node) {
    if (node->op == CT_OP_copy_slices) { /* its wrapped node's too; see inplace_view.c */
        ct_node_release_saved(*(ct_node **)node->extra);
        node->released = true;
    }
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++) {
        if (!node->saved[i].t) continue;
        ct_release(node->saved[i].t);
        ct_release(node->saved[i].recast);
        node->saved[i].t = NULL;
        node->saved[i].recast = NULL;
        node->released = true;
    }
}

const char *ct_node_grad_name(const ct_node *n) {
    return n->name ? n->name : ct_ops[n->op].grad_name;
}

/* The autocast cast s stands for, made again from the tensor saved in its place.
 * Building a graph (create_graph), a view of a weight is remade by as_strided on it,
 * so that the cast's history reaches the weight. */
static ct_tensor *recast(const ct_saved *s) {
    ct_tensor *from = s->t;
    if (ct_is_grad_enabled() && from->base && !from->grad_fn) {
        ct_shape size = ct_shape_of(from), stride = {.ndim = from->ndim};
        memcpy(stride.d, from->strides, sizeof(int64_t) * (size_t)from->ndim);
        from = ct_as_strided(from->base, size, stride, from->offset);
        if (!from) return NULL;
    }
    return ct_to_dtype_new("autocast", from, s->recast_dtype);
}

ct_tensor *ct_node_saved(ct_node *node, int slot) {
    ct_saved *s = &node->saved[slot];
    if (!s->t) {
        if (node->released)
            ct_error("Trying to backward through the graph a second time (or directly access "
                     "saved tensors after they have already been freed). Saved intermediate "
                     "values of the graph are freed when you call .backward() or "
                     "autograd.grad(). Specify retain_graph=True if you need to backward "
                     "through the graph a second time or if you need to access saved tensors "
                     "after calling backward.");
        else
            ct_error("%s: saved tensor %d was never saved (internal error)",
                     ct_node_grad_name(node), slot);
        return NULL;
    }
    unsigned now = ct_version_counter(s->t);
    if (now != s->version) {
        char shape[CT_SHAPE_STR_MAX];
        ct_error("one of the variables needed for gradient computation has been modified by "
                 "an inplace operation: [%s %s], which is %s %s, is at version %u; expected "
                 "version %u instead. Hint: enable anomaly detection to find the operation "
                 "that failed to compute its gradient.",
                 ct_dtype_name(s->t->dtype), ct_shape_str(s->t->ndim, s->t->sizes, shape),
                 s->is_output ? "output 0 of" : "an input of", ct_node_grad_name(node), now,
                 s->version);
        return NULL;
    }
    if (s->is_output && ct_is_grad_enabled()) {
        /* create_graph: the output must carry this node again so that formulas using
         * it are differentiated through it. */
        ct_tensor *a = ct_tensor_view_of(s->t, s->t->ndim, s->t->sizes, s->t->strides,
                                         s->t->offset);
        if (!a) return NULL;
        a->grad_fn = ct_retain(node);
        a->output_nr = s->output_nr;
        return ct_ret(a);
    }
    if (s->recast_dtype != CT_DTYPE_UNSET && !s->recast) s->recast = recast(s);
    return s->recast_dtype != CT_DTYPE_UNSET ? s->recast : s->t;
}

/* ---- public graph inspection -------------------------------------------- */

ct_node *ct_grad_fn(const ct_tensor *t) {
    if (!ct_alive("ct_grad_fn", 1, t)) return NULL;
    return t ? ct_grad_fn_of((ct_tensor *)t) : NULL;
}
const char *ct_node_name(const ct_node *n) {
    if (!ct_alive("ct_node_name", 1, n)) return NULL;
    return n ? ct_node_grad_name(n) : NULL;
}
int ct_node_num_next(const ct_node *n) {
    if (!ct_alive("ct_node_num_next", 1, n)) return -1;
    return n ? n->n_in : 0;
}
ct_node *ct_node_next(const ct_node *n, int i, int *input_nr) {
    if (!ct_alive("ct_node_next", 1, n)) return NULL;
    if (!n || i < 0 || i >= n->n_in) return NULL;
    if (input_nr) *input_nr = n->next[i].input_nr;
    return n->next[i].fn;
}
