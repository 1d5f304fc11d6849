/* The traced graph object (ctorch/jit.h): building it (for the tracer and the .ctm
 * reader), reading it, and freeing it (Note [Graph ownership] in io/graph_impl.h). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/lifetime.h"
#include "core/mem.h"
#include "io/graph_impl.h"

static void free_value(ct_value *v) {
    if (v->none) return; /* nothing owned (copy_value) */
    switch (v->kind) {
    case CT_ARG_STR: free((char *)v->s); break;
    case CT_ARG_INT_LIST: free((int64_t *)v->ints.v); break;
    case CT_ARG_FLOAT_LIST: free((double *)v->floats.v); break;
    case CT_ARG_BOOL_LIST: free((bool *)v->bools.v); break;
    default: break;
    }
}

static void graph_destroy(ct_object *o) {
    ct_graph *g = (ct_graph *)o;
    for (int i = 0; i < g->n_values; i++) {
        free((char *)g->values[i].name);
        ct_release(g->values[i].tensor);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        graph_node *n = &g->nodes[i];
        for (int a = 0; n->attrs && a < n->pub.schema->n_attrs; a++) free_value(&n->attrs[a]);
        free(n->attrs);
        free(n->ids);
        free(n->sym);
    }
    for (int i = 0; g->output_names && i < g->n_outputs; i++) free(g->output_names[i]);
    free(g->output_names);
    free(g->values);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->dyn);
    ct_lifetime_free(g);
}

ct_graph *graph_new(const char *op) {
    ct_graph *g = ct_calloc(1, sizeof *g);
    if (!g) {
        ct_error("%s: out of memory", op);
        return NULL;
    }
    ct_object_init(&g->obj, graph_destroy);
    return ct_scope_register(g);
}

/* Room for one more of n items of size each in *p (capacity *cap). */
static bool reserve(void **p, int *cap, int n, size_t size) {
    if (n < *cap) return true;
    int c = *cap ? *cap * 2 : 16;
    void *q = ct_realloc(*p, (size_t)c * size);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static char *dup_str(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = ct_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int graph_add_value(ct_graph *g, const char *op, ct_graph_value_kind kind, const char *name,
                    ct_dtype dtype, int ndim, const int64_t *sizes, ct_tensor *t) {
    if (!reserve((void **)&g->values, &g->cap_values, g->n_values, sizeof *g->values)) {
        ct_error("%s: out of memory", op);
        return -1;
    }
    ct_graph_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->dtype = dtype;
    v->ndim = ndim;
    if (ndim > 0) memcpy(v->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
    if (name && !(v->name = dup_str(name))) {
        ct_error("%s: out of memory", op);
        return -1;
    }
    v->tensor = t ? ct_retain(t) : NULL;
    return g->n_values++;
}

/* A copy of v owning its list or string; false when out of memory. */
static bool copy_value(ct_value *d, const ct_value *v) {
    *d = *v;
    if (v->none) {
        memset(&d->ints, 0, sizeof d->ints); /* a None list or string points nowhere */
        return true;
    }
    switch (v->kind) {
    case CT_ARG_STR: return (d->s = dup_str(v->s)) != NULL || !v->s;
#define LIST(member, T)                                                                \
    do {                                                                               \
        T *p = ct_malloc(sizeof(T) * (size_t)(v->member.n > 0 ? v->member.n : 1));     \
        if (!p) return false;                                                          \
        if (v->member.n > 0) memcpy(p, v->member.v, sizeof(T) * (size_t)v->member.n); \
        d->member.v = p;                                                               \
        return true;                                                                   \
    } while (0)
    case CT_ARG_INT_LIST: LIST(ints, int64_t);
    case CT_ARG_FLOAT_LIST: LIST(floats, double);
    case CT_ARG_BOOL_LIST: LIST(bools, bool);
#undef LIST
    default: return true;
    }
}

int graph_add_node(ct_graph *g, const char *op, const ct_schema *s, int n_in, const int *in,
                   int n_out, const int *out, const ct_value *attrs) {
    if (!reserve((void **)&g->nodes, &g->cap_nodes, g->n_nodes, sizeof *g->nodes)) goto oom;
    graph_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->pub.schema = s;
    n->ids = ct_malloc(sizeof(int) * (size_t)(n_in + n_out + 1));
    n->attrs = ct_calloc((size_t)(s->n_attrs ? s->n_attrs : 1), sizeof *n->attrs);
    g->n_nodes++; /* from here on graph_destroy frees what the node holds */
    if (!n->ids || !n->attrs) goto oom;
    for (int a = 0; a < s->n_attrs; a++) {
        if (!copy_value(&n->attrs[a], &attrs[a])) {
            n->attrs[a] = (ct_value){.kind = CT_ARG_INT}; /* nothing owned */
            goto oom;
        }
    }
    memcpy(n->ids, in, sizeof(int) * (size_t)n_in);
    memcpy(n->ids + n_in, out, sizeof(int) * (size_t)n_out);
    n->pub.n_inputs = n_in;
    n->pub.inputs = n->ids;
    n->pub.n_outputs = n_out;
    n->pub.outputs = n->ids + n_in;
    n->pub.attrs = n->attrs;
    return g->n_nodes - 1;
oom:
    ct_error("%s: out of memory", op);
    return -1;
}

bool graph_add_sym(ct_graph *g, int node, graph_sym sym) {
    graph_node *n = &g->nodes[node];
    graph_sym *p = ct_realloc(n->sym, sizeof *p * (size_t)(n->n_sym + 1));
    if (!p) return false;
    n->sym = p;
    n->sym[n->n_sym++] = sym;
    return true;
}

bool graph_set_io(ct_graph *g, const char *op, int n_in, const int *in, int n_out, const int *out,
                  const char *const *output_names) {
    g->inputs = ct_malloc(sizeof(int) * (size_t)(n_in + 1));
    g->outputs = ct_malloc(sizeof(int) * (size_t)(n_out + 1));
    g->output_names = ct_calloc((size_t)(n_out + 1), sizeof(char *));
    if (!g->inputs || !g->outputs || !g->output_names) goto oom;
    memcpy(g->inputs, in, sizeof(int) * (size_t)n_in);
    memcpy(g->outputs, out, sizeof(int) * (size_t)n_out);
    g->n_inputs = n_in;
    g->n_outputs = n_out;
    for (int i = 0; i < n_out; i++)
        if (!(g->output_names[i] = dup_str(output_names[i]))) goto oom;
    return true;
oom:
    ct_error("%s: out of memory", op);
    return false;
}

bool graph_set_dyn(ct_graph *g, const char *op, int n, const graph_dyn *dyn) {
    g->dyn = ct_malloc(sizeof *dyn * (size_t)(n + 1));
    if (!g->dyn) {
        ct_error("%s: out of memory", op);
        return false;
    }
    if (n) memcpy(g->dyn, dyn, sizeof *dyn * (size_t)n);
    g->n_dyn = n;
    return true;
}

bool graph_check(const char *op, const ct_graph *g) {
    if (!ct_alive(op, 1, g)) return false;
    if (!g) ct_error("%s: graph is NULL", op);
    return g != NULL;
}

/* ---- reading ---- */

int ct_graph_num_values(const ct_graph *g) {
    return graph_check("ct_graph_num_values", g) ? g->n_values : -1;
}
const ct_graph_value *ct_graph_value_at(const ct_graph *g, int id) {
    if (!graph_check("ct_graph_value_at", g)) return NULL;
    if (id < 0 || id >= g->n_values) {
        ct_error("ct_graph_value_at: value id %d is out of range (the graph has %d)", id, g->n_values);
        return NULL;
    }
    return &g->values[id];
}
int ct_graph_num_nodes(const ct_graph *g) {
    return graph_check("ct_graph_num_nodes", g) ? g->n_nodes : -1;
}
const ct_graph_node *ct_graph_node_at(const ct_graph *g, int i) {
    if (!graph_check("ct_graph_node_at", g)) return NULL;
    if (i < 0 || i >= g->n_nodes) {
        ct_error("ct_graph_node_at: node %d is out of range (the graph has %d)", i, g->n_nodes);
        return NULL;
    }
    return &g->nodes[i].pub;
}
int ct_graph_num_inputs(const ct_graph *g) {
    return graph_check("ct_graph_num_inputs", g) ? g->n_inputs : -1;
}
int ct_graph_input(const ct_graph *g, int i) {
    if (!graph_check("ct_graph_input", g)) return -1;
    if (i < 0 || i >= g->n_inputs) {
        ct_error("ct_graph_input: input %d is out of range (the graph has %d)", i, g->n_inputs);
        return -1;
    }
    return g->inputs[i];
}
int ct_graph_num_outputs(const ct_graph *g) {
    return graph_check("ct_graph_num_outputs", g) ? g->n_outputs : -1;
}
int ct_graph_output(const ct_graph *g, int i) {
    if (!graph_check("ct_graph_output", g)) return -1;
    if (i < 0 || i >= g->n_outputs) {
        ct_error("ct_graph_output: output %d is out of range (the graph has %d)", i, g->n_outputs);
        return -1;
    }
    return g->outputs[i];
}
