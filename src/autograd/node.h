/* Graph nodes: one per recorded op output group.
 *
 * A node holds an edge per input (the input's grad_fn, or its AccumulateGrad node
 * for a leaf, or nothing when that input needs no gradient), the input's shape and
 * dtype (so the engine can reduce broadcast gradients and cast them back), the
 * tensors its backward needs, the op's attributes by name (the generated struct of its
 * schema row, ops/attrs.h: node->attrs.add.alpha) and what else its forward computed
 * for the backward (ops/node_state.h: node->state.reduce.mask). */
#ifndef CT_AUTOGRAD_NODE_H
#define CT_AUTOGRAD_NODE_H

#include "ops/attrs.h"
#include "ops/node_state.h"
#include "ops/op_table.h"

#define CT_NODE_MAX_SAVED 6

typedef struct {
    ct_node *fn; /* owned reference; NULL: this input gets no gradient */
    int input_nr;
} ct_edge;

typedef struct {
    int ndim;
    ct_dtype dtype;
    int64_t sizes[CT_MAX_DIMS]; /* the first ndim are set */
} ct_input_meta;

typedef struct {
    ct_tensor *t;     /* owned; for outputs a grad_fn-less alias (no reference cycle) */
    unsigned version; /* storage version when saved, see Note [Version counter] */
    bool is_output;   /* t is an output of this node: re-attached on unpack */
    int output_nr;
    /* Not UNSET: t is the leaf an autocast cast was made of, saved instead of the cast;
     * unpacking casts it to this dtype again, into recast (owned, kept until release). */
    ct_dtype recast_dtype;
    ct_tensor *recast;
} ct_saved;

typedef struct ct_node_hook ct_node_hook;

struct ct_node {
    ct_object obj;
    ct_op_id op;
    int n_in, n_out;
    ct_edge *next;          /* n_in */
    ct_input_meta *in_meta; /* n_in */
    bool *needs_grad;       /* n_in: next[i].fn != NULL */
    ct_saved saved[CT_NODE_MAX_SAVED];
    bool released;          /* saved tensors were freed by a backward */
    ct_op_attrs attrs;      /* the forward's schema attributes: attrs.<op>.<name> */
    ct_node_state state;    /* what else the forward computed for the backward: state.<op> */
    void *extra;            /* op-specific state, freed by extra_free */
    void (*extra_free)(void *);
    ct_tensor *variable;    /* AccumulateGrad: the leaf (owned) */
    const char *name;       /* overrides ct_ops[op].grad_name (custom functions) */
    ct_node_hook *pre_hooks; /* tensor hooks of non-leaf outputs, by output_nr */
    const char *file;       /* call site of the forward (anomaly mode) */
    int line;
    uint64_t seq;           /* creation order: later nodes run first */
    /* engine bookkeeping for the backward in progress, see Note [Reentrant backward] */
    uint64_t task;
    int deps;
    ct_tensor **buffer;     /* n_out gradient slots */
    uint8_t flags;          /* CT_NODE_* below */
};

/* Attributes and state together keep to the 160 bytes the node has for them. */
_Static_assert(sizeof(ct_op_attrs) + sizeof(ct_node_state) <= 160,
               "a graph node's attributes and state outgrew their room (CT_NODE_ATTRS_MAX, "
               "CT_NODE_STATE_MAX)");

/* Engine flags of a node within one backward run. */
enum {
    CT_NODE_VISITED = 1, /* seen by the pruning walk */
    CT_NODE_TARGET = 2,  /* ct_autograd_grad captures a gradient here */
    CT_NODE_EXEC = 4,    /* its backward runs */
    CT_NODE_NEEDED = 8,  /* gradients sent to it are used (a target, or it runs) */
};

/* True while the innermost backward on this thread is a ct_autograd_grad (capturing,
 * not accumulating into .grad); nodes that run backward themselves follow suit. */
bool ct_engine_capturing(void);

/* Creates a node for op with n_in inputs and n_out outputs if grad mode is on and an
 * input requires grad; else returns NULL (and nothing is recorded).  Edges and input
 * metadata are filled from inputs (entries may be NULL: not differentiable). */
ct_node *ct_node_record(ct_op_id op, int n_in, ct_tensor *const *inputs, int n_out);
/* Makes out the output_nr-th output of node (out->grad_fn = node). */
void ct_node_set_output(ct_node *node, ct_tensor *out, int output_nr);
/* ct_node_set_output that hands the caller's reference to out (no retain; the caller
 * must not release node afterwards): the last step of recording a one-output op. */
void ct_node_give_output(ct_node *node, ct_tensor *out, int output_nr);
/* Saves t for backward (inputs: is_output false; outputs of this node: true). */
void ct_node_save(ct_node *node, int slot, ct_tensor *t, bool is_output);
/* The saved tensor, checked against its version; NULL with PyTorch's errors when it
 * was freed by an earlier backward or modified in place since. */
ct_tensor *ct_node_saved(ct_node *node, int slot);
/* Frees saved tensors after a backward without retain_graph. */
void ct_node_release_saved(ct_node *node);
const char *ct_node_grad_name(const ct_node *n);

/* Shortcut for single-output ops: records a node when needed and attaches out. */
ct_node *ct_record1(ct_op_id op, ct_tensor *out, int n_in, ct_tensor *const *inputs);
/* A view whose base was modified in place since its grad_fn was made requires grad
 * when its base does (autograd/inplace_view.c). */
bool ct_view_requires_grad(const ct_tensor *t);
/* Whether t requires grad (ct_requires_grad without the NULL check). */
static inline bool ct_requires_grad_impl(const ct_tensor *t) {
    return t->requires_grad || t->grad_fn != NULL || (t->view_kind && ct_view_requires_grad(t));
}
/* True when grad mode is on and any input requires grad. */
bool ct_any_requires_grad(int n, ct_tensor *const *inputs);

/* The output of a node recorded around user code (custom functions, checkpoints):
 * out itself (an owned reference), or when out cannot take a grad_fn (someone else
 * holds it, e.g. it is an input, or it is already in a graph) a new alias of it, and
 * out is released. */
ct_tensor *ct_node_fresh_output(ct_tensor *out); /* NULL when out of memory */

/* A bare node for op (no edges yet; owned reference), recorded whatever the grad mode:
 * for nodes made by autograd itself (CopySlices). */
ct_node *ct_node_new(ct_op_id op, int n_in, int n_out);

/* ---- Note [In-place on views] -------------------------------------------------
 * As PyTorch's CopySlices: an in-place op on a view `v` of base `b` (b, or an input of
 * the op, requiring grad) rebases b's history: b.grad_fn becomes a CopySlices node
 * wrapping the op's node, which applies the op's backward to v's region of b's
 * gradient.  v's grad_fn is then an AsStridedBackward0 of b.  Other views of b learn
 * about it lazily: a view remembers the storage version its grad_fn was made at, and
 * when the version moved on (b or another view was modified in place) its grad_fn is
 * made again from b's (ct_grad_fn_of).  Views made in no_grad mode and the outputs of
 * ops returning several views may not be modified in place when grad is needed. */
enum {
    CT_VIEW_NONE = 0,   /* not a view of autograd's (internal aliases, detach) */
    CT_VIEW_DEFAULT,    /* made by a view op in grad mode */
    CT_VIEW_NO_GRAD,    /* made in no_grad mode */
    CT_VIEW_MULTI,      /* one of several views returned by one op (unbind, split, chunk) */
};
/* Marks out, just made as a view of t, with kind (adjusted for grad mode and t's own). */
void ct_view_mark(ct_tensor *out, const ct_tensor *t, int kind);
/* A view's grad_fn, made again from its base's when the base changed in place. */
ct_node *ct_view_grad_fn(ct_tensor *t);
static inline ct_node *ct_grad_fn_of(ct_tensor *t) {
    return t->view_kind ? ct_view_grad_fn(t) : t->grad_fn;
}
/* Makes node the grad_fn of out, modified in place by node's op: as
 * ct_node_set_output(node, out, 0), or for a view the CopySlices rebase above. */
void ct_rebase_history(ct_node *node, ct_tensor *out);
/* The view checks of an in-place op on t with other inputs (PyTorch's check_inplace):
 * false with PyTorch's error when t may not be modified in place. */
bool ct_view_check_inplace(const char *op, ct_tensor *t, int n, ct_tensor *const *inputs);

/* The leaf's AccumulateGrad node, created on first use (owned reference returned). */
ct_node *ct_grad_accumulator(ct_tensor *leaf);

/* Anomaly mode flag (set via the public API in autograd/anomaly.c). */
extern _Atomic bool ct_anomaly_enabled;
/* Anomaly mode's check of the gradients node computed (n_in of them, NULL allowed):
 * false with PyTorch's message when one holds a NaN (or an Inf, when asked for). */
bool ct_anomaly_check(ct_node *node, ct_tensor **grad_in);

#endif
