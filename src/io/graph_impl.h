/* The traced graph (ctorch/jit.h) inside the library: what the tracer builds, the
 * runner executes and the .ctm reader and writer move to and from a file.
 *
 * Note [Graph ownership]: the graph owns everything its public structs point to: the
 * values' names and tensors (one reference each), each node's id arrays, its attribute
 * values and their lists and strings.  Nothing in a graph borrows from the tracer, the
 * module or a file buffer, so a graph outlives all three.
 *
 * Note [Dynamic dims]: a dim marked dynamic at trace time has a trace-time size S0.
 * The tracer traces again with that dim one larger and compares each integer
 * attribute (an int, or one entry of an int list): a value v0 that became v1 depends
 * on the dim.  When it grew in proportion (v1 - v0 == v0 / S0: B, B * heads, S * B)
 * it scales: at run time it is v0 * S / S0 for the run's size S; otherwise it moves
 * by the slope k = v1 - v0: v0 + k * (S - S0) (B + 1).  Scaling is applied first, for
 * each dynamic dim in turn, then the slopes; so products of dynamic dims and offsets
 * from one work, while a sum of two dynamic dims times a third does not. */
#ifndef CT_IO_GRAPH_IMPL_H
#define CT_IO_GRAPH_IMPL_H

#include "core/object.h"
#include "ctorch/jit.h"

/* One attribute entry that depends on a dynamic dim (Note [Dynamic dims]). */
typedef struct {
    int attr;  /* the attribute's index in the schema */
    int entry; /* its entry, for an int list; 0 for an int */
    int dyn;   /* the dynamic dim (index into the graph's dyn) */
    int64_t k; /* the slope; 0: the value scales with the dim */
} graph_sym;

typedef struct {
    ct_graph_node pub; /* points into ids and attrs */
    int *ids;          /* pub.n_inputs input ids, then pub.n_outputs output ids */
    ct_value *attrs;   /* schema->n_attrs, lists and strings owned */
    int n_sym;
    graph_sym *sym;
} graph_node;

/* A dim marked dynamic: input's dim, of trace-time size size. */
typedef struct {
    int input, dim;
    int64_t size;
} graph_dyn;

struct ct_graph {
    ct_object obj;
    int n_values, cap_values;
    ct_graph_value *values;
    int n_nodes, cap_nodes;
    graph_node *nodes;
    int n_inputs, n_outputs;
    int *inputs, *outputs; /* value ids */
    char **output_names;   /* one per output */
    int n_dyn;
    graph_dyn *dyn;
};

/* An empty graph (registered with the scope); NULL with an error naming op. */
ct_graph *graph_new(const char *op);
/* Appends a value of kind with name (copied; NULL: none) and t's dtype and sizes (t
 * retained when kind holds a tensor); its id, or -1 with an error naming op. */
int graph_add_value(ct_graph *g, const char *op, ct_graph_value_kind kind, const char *name,
                    ct_dtype dtype, int ndim, const int64_t *sizes, ct_tensor *t);
/* Appends a node of schema with copies of ids and attrs; its index, or -1. */
int graph_add_node(ct_graph *g, const char *op, const ct_schema *s, int n_in, const int *in,
                   int n_out, const int *out, const ct_value *attrs);
/* Adds a dependence of node's attribute entry on dynamic dim dyn; false when out of memory. */
bool graph_add_sym(ct_graph *g, int node, graph_sym sym);
/* Sets the graph's inputs or outputs (copied); false with an error when out of memory. */
bool graph_set_io(ct_graph *g, const char *op, int n_in, const int *in, int n_out, const int *out,
                  const char *const *output_names);
/* Appends the dynamic dims; false when out of memory. */
bool graph_set_dyn(ct_graph *g, const char *op, int n, const graph_dyn *dyn);
/* Whether g is a live graph; false with "op: argument arg ..." otherwise. */
bool graph_check(const char *op, const ct_graph *g);

#endif
