/* add_graph: a traced graph (ctorch/jit.h) as TensorBoard's GraphDef.
 *
 * Nodes, in this order: each graph input "input/<name>" (op "IO Node"), each
 * parameter and buffer under its state-dict name (op "prim::GetAttr"), each constant
 * "constant/<id>" (op "prim::Constant"), each op call "<op>_<i>" (op "aten::<aten
 * name>", no overload) reading its inputs' nodes, and each graph output
 * "output/<name>" (op "IO Node") reading the node that makes it.  A node's second and
 * later outputs are read as "<node>:<k>", GraphDef's convention.  Every node has its
 * outputs' shapes in the attr "_output_shapes", as PyTorch's add_graph writes them. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "core/object.h"
#include "tensorboard/graph.pb-c.h"
#include "io/tensorboard/writer.h"

/* The messages of one GraphDef; everything is freed by free_graph. */
typedef struct {
    int n_values, n_nodes; /* graph values; NodeDefs made so far */
    char **value_names;    /* per value id: what a NodeDef input names it by */
    Tensorboard__NodeDef *nodes;
    Tensorboard__NodeDef **node_ptrs;
    char **strings;        /* every string allocated, to free */
    int n_strings;
    Tensorboard__NodeDef__AttrEntry *attrs; /* one "_output_shapes" per node */
    Tensorboard__NodeDef__AttrEntry **attr_ptrs;
    Tensorboard__AttrValue *attr_values;
    Tensorboard__AttrValue__ListValue *lists;
    Tensorboard__TensorShapeProto **shapes; /* one per (node, output), to free */
    int n_shapes;
    char ***inputs;        /* per node: its input names (borrowed from value_names) */
    size_t cap;            /* entries of the per-node arrays */
} tb_graph;

static char *keep(tb_graph *t, char *s) {
    if (s) t->strings[t->n_strings++] = s;
    return s;
}

static Tensorboard__TensorShapeProto *shape_of(tb_graph *t, const ct_graph_value *v) {
    Tensorboard__TensorShapeProto *s = ct_calloc(1, sizeof *s);
    Tensorboard__TensorShapeProto__Dim *dims = s ? ct_calloc((size_t)v->ndim + 1, sizeof *dims) : NULL;
    Tensorboard__TensorShapeProto__Dim **ptrs = dims ? ct_calloc((size_t)v->ndim + 1, sizeof *ptrs) : NULL;
    if (!ptrs) {
        if (s) free(dims);
        free(s);
        return NULL;
    }
    tensorboard__tensor_shape_proto__init(s);
    for (int i = 0; i < v->ndim; i++) {
        tensorboard__tensor_shape_proto__dim__init(&dims[i]);
        dims[i].size = v->dynamic[i] ? -1 : v->sizes[i];
        ptrs[i] = &dims[i];
    }
    ptrs[0] = dims; /* also for a 0-d value: free_graph frees dim[0] */
    s->n_dim = (size_t)v->ndim;
    s->dim = ptrs;
    t->shapes[t->n_shapes++] = s;
    return s;
}

/* Adds a NodeDef name/op reading n_in inputs (value ids), with the shapes of the
 * n_out values outs.  0, or -1 (out of memory). */
static int add_node(tb_graph *t, const ct_graph *g, char *name, const char *op, const int *in, int n_in,
                    const int *outs, int n_out) {
    int k = t->n_nodes;
    Tensorboard__NodeDef *n = &t->nodes[k];
    tensorboard__node_def__init(n);
    n->name = name;
    n->op = (char *)op;
    t->inputs[k] = ct_calloc((size_t)n_in + 1, sizeof(char *));
    Tensorboard__TensorShapeProto **shapes = ct_calloc((size_t)n_out + 1, sizeof *shapes);
    if (!name || !t->inputs[k] || !shapes) {
        free(shapes);
        return -1;
    }
    for (int i = 0; i < n_in; i++)
        if (in[i] >= 0) t->inputs[k][n->n_input++] = t->value_names[in[i]];
    n->input = t->inputs[k];
    for (int i = 0; i < n_out; i++)
        if (!(shapes[i] = shape_of(t, ct_graph_value_at(g, outs[i])))) {
            free(shapes);
            return -1;
        }
    Tensorboard__AttrValue__ListValue *l = &t->lists[k];
    tensorboard__attr_value__list_value__init(l);
    l->n_shape = (size_t)n_out;
    l->shape = shapes;
    Tensorboard__AttrValue *av = &t->attr_values[k];
    tensorboard__attr_value__init(av);
    av->value_case = TENSORBOARD__ATTR_VALUE__VALUE_LIST;
    av->list = l;
    Tensorboard__NodeDef__AttrEntry *e = &t->attrs[k];
    tensorboard__node_def__attr_entry__init(e);
    e->key = "_output_shapes";
    e->value = av;
    t->attr_ptrs[k] = e;
    n->n_attr = 1;
    n->attr = &t->attr_ptrs[k];
    t->node_ptrs[k] = n;
    t->n_nodes++;
    return 0;
}

static void free_graph(tb_graph *t) {
    for (int i = 0; i < t->n_strings; i++) free(t->strings[i]);
    for (int i = 0; i < t->n_shapes; i++) {
        free(t->shapes[i]->dim[0]);
        free(t->shapes[i]->dim);
        free(t->shapes[i]);
    }
    for (size_t i = 0; t->inputs && i < t->cap; i++) free(t->inputs[i]);
    for (int i = 0; i < t->n_nodes; i++) free(t->lists[i].shape);
    free(t->strings);
    free(t->value_names);
    free(t->nodes);
    free(t->node_ptrs);
    free(t->attrs);
    free(t->attr_ptrs);
    free(t->attr_values);
    free(t->lists);
    free(t->shapes);
    free(t->inputs);
}

/* The GraphDef's nodes, as the head comment lists them.  0, or -1 (out of memory). */
static int build(tb_graph *t, const ct_graph *g) {
    int n_values = ct_graph_num_values(g), n_ops = ct_graph_num_nodes(g);
    int n_out = ct_graph_num_outputs(g), n_shapes = n_values + n_out + 1;
    for (int i = 0; i < n_ops; i++) n_shapes += ct_graph_node_at(g, i)->n_outputs;
    size_t cap = (size_t)(n_values + n_ops + n_out) + 1;
    t->n_values = n_values;
    t->cap = cap;
    t->value_names = ct_calloc((size_t)n_values + 1, sizeof(char *));
    t->strings = ct_calloc(cap + (size_t)n_values, sizeof(char *));
    t->nodes = ct_calloc(cap, sizeof *t->nodes);
    t->node_ptrs = ct_calloc(cap, sizeof *t->node_ptrs);
    t->attrs = ct_calloc(cap, sizeof *t->attrs);
    t->attr_ptrs = ct_calloc(cap, sizeof *t->attr_ptrs);
    t->attr_values = ct_calloc(cap, sizeof *t->attr_values);
    t->lists = ct_calloc(cap, sizeof *t->lists);
    t->shapes = ct_calloc((size_t)n_shapes, sizeof *t->shapes);
    t->inputs = ct_calloc(cap, sizeof *t->inputs);
    if (!t->value_names || !t->strings || !t->nodes || !t->node_ptrs || !t->attrs || !t->attr_ptrs ||
        !t->attr_values || !t->lists || !t->shapes || !t->inputs)
        return -1;
    /* inputs, weights and constants: one node each, in value id order */
    for (int id = 0; id < n_values; id++) {
        const ct_graph_value *v = ct_graph_value_at(g, id);
        char *name = NULL;
        const char *op;
        switch (v->kind) {
        case CT_GRAPH_INPUT:
            op = "IO Node";
            if (asprintf(&name, "input/%s", v->name ? v->name : "") < 0) name = NULL;
            break;
        case CT_GRAPH_PARAM:
        case CT_GRAPH_BUFFER:
            op = "prim::GetAttr";
            name = ct_strdup(v->name ? v->name : "");
            break;
        case CT_GRAPH_CONST:
            op = "prim::Constant";
            if (asprintf(&name, "constant/%d", id) < 0) name = NULL;
            break;
        default:
            continue;
        }
        if (!keep(t, name) || add_node(t, g, name, op, NULL, 0, &id, 1) != 0) return -1;
        t->value_names[id] = name;
    }
    /* op calls: their outputs are named before any later node reads them */
    for (int i = 0; i < n_ops; i++) {
        const ct_graph_node *nd = ct_graph_node_at(g, i);
        char *name, *op;
        const char *aten = nd->schema->aten_name;
        size_t n_aten = strcspn(aten, ".");
        if (asprintf(&name, "%s_%d", nd->schema->name, i) < 0) name = NULL;
        if (!keep(t, name)) return -1;
        if (asprintf(&op, "aten::%.*s", (int)n_aten, aten) < 0) op = NULL;
        if (!keep(t, op)) return -1;
        for (int k = 0; k < nd->n_outputs; k++) {
            char *ref = NULL;
            if (k == 0) ref = name;
            else if (asprintf(&ref, "%s:%d", name, k) < 0 || !keep(t, ref)) return -1;
            t->value_names[nd->outputs[k]] = ref;
        }
        if (add_node(t, g, name, op, nd->inputs, nd->n_inputs, nd->outputs, nd->n_outputs) != 0) return -1;
    }
    for (int i = 0; i < n_out; i++) {
        int id = ct_graph_output(g, i);
        const ct_graph_value *v = ct_graph_value_at(g, id);
        char *name;
        if (asprintf(&name, "output/%s", v->name ? v->name : "") < 0) name = NULL;
        if (!keep(t, name) || add_node(t, g, name, "IO Node", &id, 1, &id, 1) != 0) return -1;
    }
    return 0;
}

int(ct_tb_add_graph)(ct_summary_writer *w, const ct_graph *g) {
    static const char *op = "ct_tb_add_graph";
    if (!ct_alive(op, 2, g) || !tb_check_writer(op, w)) return -1;
    if (!g) {
        if (!ct_last_error()) ct_error("%s: the graph is NULL", op);
        return -1;
    }
    tb_graph t = {0};
    int rc = -1;
    if (build(&t, g) != 0) {
        ct_error("%s: out of memory", op);
        goto done;
    }
    Tensorboard__VersionDef versions = TENSORBOARD__VERSION_DEF__INIT;
    versions.producer = 22; /* what PyTorch's add_graph writes */
    Tensorboard__GraphDef gd = TENSORBOARD__GRAPH_DEF__INIT;
    gd.n_node = (size_t)t.n_nodes;
    gd.node = t.node_ptrs;
    gd.versions = &versions;
    size_t n = tensorboard__graph_def__get_packed_size(&gd);
    uint8_t *bytes = ct_malloc(n ? n : 1);
    if (!bytes) {
        ct_error("%s: out of memory", op);
        goto done;
    }
    tensorboard__graph_def__pack(&gd, bytes);
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = tb_wall_time();
    ev.what_case = TENSORBOARD__EVENT__WHAT_GRAPH_DEF;
    ev.graph_def = (ProtobufCBinaryData){n, bytes};
    rc = tb_write_event(w, op, &ev);
    free(bytes);
done:
    free_graph(&t);
    return rc;
}
