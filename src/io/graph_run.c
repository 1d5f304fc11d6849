/* ct_graph_run and ct_graph_print (ctorch/jit.h).
 *
 * A run fills one tensor slot per value: parameters, buffers and constants from the
 * graph, inputs from the caller, then each node's outputs in order, from the node's
 * runner (io/graph_ops.h).  Attributes that depend on a dynamic dim are recomputed
 * from the run's input sizes first (Note [Dynamic dims] in io/graph_impl.h).  Every
 * temporary lives in the run's own scope; the outputs are handed to the caller's. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "io/graph_impl.h"
#include "io/graph_ops.h"

#define RUN "ct_graph_run"

/* The run's size of each dynamic dim into sizes; false with an error when an input
 * does not fit the trace. */
static bool check_inputs(const ct_graph *g, ct_tensor *const *in, int n, int64_t *sizes) {
    if (n != g->n_inputs) {
        ct_error(RUN ": the graph takes %d inputs (got %d)", g->n_inputs, n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        const ct_graph_value *v = &g->values[g->inputs[i]];
        if (!in || !in[i]) {
            ct_error(RUN ": input %d (%s) is NULL", i, v->name);
            return false;
        }
        ct_shape s = ct_shape_of(in[i]);
        bool ok = s.ndim == v->ndim && ct_dtype_of(in[i]) == v->dtype;
        for (int d = 0; ok && d < s.ndim; d++) ok = v->dynamic[d] || s.d[d] == v->sizes[d];
        if (!ok) {
            char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
            ct_error(RUN ": input %d (%s) is %s%s; the trace had %s%s (only dims marked dynamic may differ)",
                     i, v->name, ct_dtype_name(ct_dtype_of(in[i])), ct_shape_str(s.ndim, s.d, a),
                     ct_dtype_name(v->dtype), ct_shape_str(v->ndim, v->sizes, b));
            return false;
        }
    }
    for (int j = 0; j < g->n_dyn; j++) sizes[j] = ct_size(in[g->dyn[j].input], g->dyn[j].dim);
    return true;
}

/* The node's attributes at the run's sizes: n->attrs, or a copy in a (with its int
 * lists in lists) where some depend on a dynamic dim. */
static const ct_value *resolve(const graph_node *n, const int64_t *sizes, const graph_dyn *dyn,
                               ct_value *a, int64_t *lists) {
    if (!n->n_sym) return n->attrs;
    int na = n->pub.schema->n_attrs;
    memcpy(a, n->attrs, sizeof *a * (size_t)na);
    int64_t *p = lists;
    for (int i = 0; i < na; i++)
        if (a[i].kind == CT_ARG_INT_LIST && !a[i].none) {
            memcpy(p, a[i].ints.v, sizeof *p * (size_t)a[i].ints.n);
            a[i].ints.v = p;
            p += a[i].ints.n;
        }
    for (int pass = 0; pass < 2; pass++) /* scaling, then slopes (Note [Dynamic dims]) */
        for (int s = 0; s < n->n_sym; s++) {
            const graph_sym *y = &n->sym[s];
            if ((y->k == 0) != (pass == 0)) continue;
            int64_t *v = a[y->attr].kind == CT_ARG_INT ? &a[y->attr].i : (int64_t *)a[y->attr].ints.v + y->entry;
            int64_t s0 = dyn[y->dyn].size, s1 = sizes[y->dyn];
            *v = y->k ? *v + y->k * (s1 - s0) : *v / s0 * s1;
        }
    return a;
}

/* Int-list entries of node n (room for its resolved lists). */
static int64_t list_entries(const graph_node *n) {
    int64_t t = 0;
    for (int i = 0; i < n->pub.schema->n_attrs; i++)
        if (n->attrs[i].kind == CT_ARG_INT_LIST && !n->attrs[i].none) t += n->attrs[i].ints.n;
    return t;
}

static bool run_node(const ct_graph *g, int i, ct_tensor **slot, const int64_t *sizes) {
    const graph_node *n = &g->nodes[i];
    const ct_schema *s = n->pub.schema;
    graph_op_fn fn = graph_op_runner(s);
    if (!fn) {
        ct_error(RUN ": node %d: op %s (%s) cannot run from a graph", i, s->name, s->aten_name);
        return false;
    }
    ct_tensor *in[n->pub.n_inputs + 1], *out[n->pub.n_outputs + 1];
    for (int k = 0; k < n->pub.n_inputs; k++) {
        int id = n->pub.inputs[k];
        in[k] = id >= 0 ? slot[id] : NULL;
        if (id >= 0 && !in[k]) {
            ct_error(RUN ": node %d (%s): input %d, value %%%d, was not computed", i, s->name, k, id);
            return false;
        }
    }
    ct_value attrs[s->n_attrs + 1];
    int64_t lists[list_entries(n) + 1];
    const ct_value *a = resolve(n, sizes, g->dyn, attrs, lists);
    memset(out, 0, sizeof out);
    if (fn(in, n->pub.n_inputs, a, out, n->pub.n_outputs) != 0) return false;
    for (int k = 0; k < n->pub.n_outputs; k++)
        if (n->pub.outputs[k] >= 0) slot[n->pub.outputs[k]] = out[k];
    return true;
}

int ct_graph_run(ct_graph *g, ct_tensor *const *inputs, int n_inputs, ct_tensor **outputs, int max_outputs) {
    if (!graph_check(RUN, g) || !ct_all_alive(RUN, 2, inputs, n_inputs)) return -1;
    if (!outputs && max_outputs > 0) {
        ct_error(RUN ": outputs is NULL");
        return -1;
    }
    int64_t sizes[g->n_dyn + 1];
    if (!check_inputs(g, inputs, n_inputs, sizes)) return -1;
    ct_tensor **slot = ct_calloc((size_t)g->n_values + 1, sizeof *slot);
    if (!slot) {
        ct_error(RUN ": out of memory");
        return -1;
    }
    bool ok = true;
    CT_SCOPE {
        for (int v = 0; v < g->n_values; v++) slot[v] = g->values[v].tensor;
        for (int i = 0; i < n_inputs; i++) slot[g->inputs[i]] = inputs[i];
        for (int i = 0; i < g->n_nodes && ok; i++) ok = run_node(g, i, slot, sizes);
        for (int i = 0; ok && i < g->n_outputs && i < max_outputs; i++) {
            outputs[i] = slot[g->outputs[i]];
            if (!outputs[i]) {
                ct_error(RUN ": output %d was not computed", i);
                ok = false;
            }
        }
        /* the outputs outlive the run's scope: one reference each for the caller's */
        for (int i = 0; ok && i < g->n_outputs && i < max_outputs; i++) ct_retain(outputs[i]);
    }
    free(slot);
    if (!ok) return -1;
    for (int i = 0; i < g->n_outputs && i < max_outputs; i++) ct_scope_register(outputs[i]);
    return g->n_outputs;
}

/* ---- printing ---- */

static void print_type(FILE *f, const ct_graph_value *v) {
    fprintf(f, "%s[", ct_dtype_name(v->dtype));
    for (int d = 0; d < v->ndim; d++)
        fprintf(f, v->dynamic[d] ? "%s%" PRId64 "?" : "%s%" PRId64, d ? ", " : "", v->sizes[d]);
    fprintf(f, "]");
}

static const char *kind_name(ct_graph_value_kind k) {
    switch (k) {
    case CT_GRAPH_INPUT: return "input";
    case CT_GRAPH_PARAM: return "param";
    case CT_GRAPH_BUFFER: return "buffer";
    case CT_GRAPH_CONST: return "constant";
    default: return "value";
    }
}

int ct_graph_print(const ct_graph *g, FILE *f) {
    if (!graph_check("ct_graph_print", g)) return -1;
    if (!f) {
        ct_error("ct_graph_print: f is NULL");
        return -1;
    }
    for (int v = 0; v < g->n_values; v++) {
        const ct_graph_value *x = &g->values[v];
        if (x->kind == CT_GRAPH_VALUE) continue;
        fprintf(f, "%%%d: ", v);
        print_type(f, x);
        fprintf(f, " = %s", kind_name(x->kind));
        if (x->name) fprintf(f, " %s", x->name);
        fputc('\n', f);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ct_graph_node *n = &g->nodes[i].pub;
        for (int k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] < 0) fprintf(f, "%s_", k ? ", " : "");
            else {
                fprintf(f, "%s%%%d: ", k ? ", " : "", n->outputs[k]);
                print_type(f, &g->values[n->outputs[k]]);
            }
        }
        fprintf(f, "%s%s(", n->n_outputs ? " = " : "", n->schema->name);
        for (int k = 0; k < n->n_inputs; k++)
            fprintf(f, n->inputs[k] < 0 ? "%sNone" : "%s%%%d", k ? ", " : "", n->inputs[k]);
        for (int k = 0; k < n->schema->n_attrs; k++) {
            char buf[256];
            ct_value_format(&n->attrs[k], buf, sizeof buf);
            fprintf(f, "%s%s=%s", k || n->n_inputs ? ", " : "", n->schema->attrs[k].name, buf);
        }
        fprintf(f, ")\n");
    }
    fprintf(f, "return (");
    for (int i = 0; i < g->n_outputs; i++) fprintf(f, "%s%%%d", i ? ", " : "", g->outputs[i]);
    fprintf(f, ")\n");
    return ferror(f) ? -1 : 0;
}
