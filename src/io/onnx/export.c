/* ct_onnx_export: a traced graph as an ONNX ModelProto (ctorch/onnx.h).
 *
 * The graph's inputs and outputs are named first (so that a node whose value is a
 * graph output writes it under the output's name), then each node, in execution
 * order, is handed to its op's emitter (the table in ops.c), which adds ONNX nodes
 * and initializers to the builder; parameters, buffers and constants become
 * initializers when a node first reads them, so unused ones (num_batches_tracked) are
 * left out.  The model is packed by protobuf-c and written atomically. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "ctorch/version.h"
#include "io/atomic_file.h"
#include "io/onnx/builder.h"

/* ONNX IR version 8 (ONNX 1.10 and later), which every opset from 13 to 17 accepts. */
#define CT_ONNX_IR_VERSION 8

static const char *io_name(const ct_graph *g, bool output, int i, const char *const *names) {
    if (names) return names[i];
    const ct_graph_value *v = ct_graph_value_at(g, output ? ct_graph_output(g, i) : ct_graph_input(g, i));
    return v->name;
}

/* The label of dim d of the input or output named name, when dynamic_axes names it. */
static const char *axis_label(const ct_onnx_export_options *o, const char *name, int d, bool *listed) {
    for (int i = 0; i < o->n_dynamic_axes; i++)
        if (o->dynamic_axes[i].dim == d && !strcmp(o->dynamic_axes[i].name, name)) {
            *listed = true;
            return o->dynamic_axes[i].label;
        }
    *listed = false;
    return NULL;
}

/* A ValueInfoProto: name, element type and shape, dynamic dims as dim_param. */
static Onnx__ValueInfoProto *value_info(onnx_builder *b, const ct_onnx_export_options *o,
                                        const char *name, const ct_graph_value *v) {
    Onnx__ValueInfoProto *vi = ob_alloc(b, sizeof *vi);
    Onnx__TypeProto *tp = ob_alloc(b, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = ob_alloc(b, sizeof *tt);
    Onnx__TensorShapeProto *sh = ob_alloc(b, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dims = ob_alloc(b, (v->ndim + 1) * sizeof *dims);
    if (!vi || !tp || !tt || !sh || !dims) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int d = 0; d < v->ndim; d++) {
        Onnx__TensorShapeProto__Dimension *dim = ob_alloc(b, sizeof *dim);
        if (!dim) return NULL;
        onnx__tensor_shape_proto__dimension__init(dim);
        bool listed;
        const char *label = axis_label(o, name, d, &listed);
        if (listed || v->dynamic[d]) {
            char buf[160];
            if (!label) snprintf(buf, sizeof buf, "%s_dim%d", name, d);
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = ob_strdup(b, label ? label : buf);
            if (!dim->dim_param) return NULL;
        } else {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = v->sizes[d];
        }
        dims[d] = dim;
    }
    sh->n_dim = v->ndim, sh->dim = dims;
    tt->has_elem_type = true, tt->elem_type = ob_onnx_dtype(v->dtype);
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, tp->tensor_type = tt;
    vi->name = ob_strdup(b, name);
    vi->type = tp;
    return vi->name ? vi : NULL;
}

static bool check_options(const ct_graph *g, const ct_onnx_export_options *o) {
    if (o->opset < CT_ONNX_OPSET_MIN || o->opset > CT_ONNX_OPSET_MAX) {
        ct_error("ct_onnx_export: opset_version %d is not supported (ctorch writes opsets %d to %d)",
                 o->opset, CT_ONNX_OPSET_MIN, CT_ONNX_OPSET_MAX);
        return false;
    }
    int ni = ct_graph_num_inputs(g), no = ct_graph_num_outputs(g);
    for (int k = 0; k < 2; k++) {
        const char *const *names = k ? o->output_names : o->input_names;
        for (int i = 0; names && i < (k ? no : ni); i++)
            if (!names[i] || !names[i][0]) {
                ct_error("ct_onnx_export: %s_names[%d] is empty", k ? "output" : "input", i);
                return false;
            }
    }
    for (int a = 0; a < o->n_dynamic_axes; a++) {
        const ct_onnx_dynamic_axis *ax = &o->dynamic_axes[a];
        int ndim = -1;
        for (int i = 0; ax->name && i < ni + no; i++) {
            bool out = i >= ni;
            int k = out ? i - ni : i;
            if (!strcmp(io_name(g, out, k, out ? o->output_names : o->input_names), ax->name))
                ndim = ct_graph_value_at(g, out ? ct_graph_output(g, k) : ct_graph_input(g, k))->ndim;
        }
        if (ndim < 0) {
            ct_error("ct_onnx_export: dynamic_axes names '%s', which is neither an input nor an output",
                     ax->name ? ax->name : "(null)");
            return false;
        }
        if (ax->dim < 0 || ax->dim >= ndim) {
            ct_error("ct_onnx_export: dynamic_axes: '%s' has %d dims, no dim %d", ax->name, ndim, ax->dim);
            return false;
        }
    }
    return true;
}

/* Names, nodes and the graph's inputs and outputs, into gp. */
static bool build(onnx_builder *b, const ct_onnx_export_options *o, Onnx__GraphProto *gp) {
    const ct_graph *g = b->g;
    int ni = ct_graph_num_inputs(g), no = ct_graph_num_outputs(g), nn = ct_graph_num_nodes(g);
    for (int i = 0; i < nn; i++) {
        const ct_graph_node *n = ct_graph_node_at(g, i);
        for (int k = 0; k < n->n_outputs; k++) b->producer[n->outputs[k]] = i;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) b->uses[n->inputs[k]]++;
    }
    for (int i = 0; i < ni; i++)
        if (!(b->names[ct_graph_input(g, i)] = ob_strdup(b, io_name(g, false, i, o->input_names))))
            return false;
    /* A node's value that is an output is written under the output's name. */
    for (int i = 0; i < no; i++) {
        int id = ct_graph_output(g, i);
        if (ct_graph_value_at(g, id)->kind == CT_GRAPH_VALUE && !b->names[id])
            if (!(b->names[id] = ob_strdup(b, io_name(g, true, i, o->output_names)))) return false;
    }
    for (int i = 0; i < nn; i++) {
        const ct_graph_node *n = ct_graph_node_at(g, i);
        if (onnx_folded(b, i)) continue;
        const onnx_op_row *row = onnx_op_find(n->schema->name, b->opset);
        if (!row) {
            ct_error("ct_onnx_export: Exporting the operator '%s' to ONNX opset version %d is not supported",
                     n->schema->name, b->opset);
            return false;
        }
        if (!row->emit(b, n, row->onnx_type)) return false;
    }
    gp->n_input = ni, gp->input = ob_alloc(b, (ni + 1) * sizeof *gp->input);
    gp->n_output = no, gp->output = ob_alloc(b, (no + 1) * sizeof *gp->output);
    if (!gp->input || !gp->output) return false;
    for (int i = 0; i < ni; i++) {
        const ct_graph_value *v = ct_graph_value_at(g, ct_graph_input(g, i));
        if (!(gp->input[i] = value_info(b, o, b->names[ct_graph_input(g, i)], v))) return false;
    }
    for (int i = 0; i < no; i++) {
        int id = ct_graph_output(g, i);
        const char *want = io_name(g, true, i, o->output_names), *have = ob_name(b, id);
        if (!have) return false;
        /* An output that is an input, a weight, or another output's value: a copy. */
        if (strcmp(have, want) && !ob_node(b, "Identity", ob_strdup(b, want), have)) return false;
        if (!(gp->output[i] = value_info(b, o, want, ct_graph_value_at(g, id)))) return false;
    }
    gp->n_node = b->n_nodes, gp->node = b->nodes;
    gp->n_initializer = b->n_inits, gp->initializer = b->inits;
    return true;
}

static int write_model(const Onnx__ModelProto *mp, const char *path) {
    size_t size = onnx__model_proto__get_packed_size(mp);
    uint8_t *buf = ct_malloc(size ? size : 1);
    if (!buf) return -1;
    onnx__model_proto__pack(mp, buf);
    ct_atomic_file af;
    int rc = -1;
    if (ct_atomic_open(&af, path, "ct_onnx_export") == 0) {
        bool ok = ct_atomic_write(&af, buf, size);
        rc = ct_atomic_commit(&af, ok);
    }
    free(buf);
    return rc;
}

int ct_onnx_export_graph_with(const ct_graph *g, const char *path, ct_onnx_export_options o) {
    if (!g || !path) {
        ct_error("ct_onnx_export: %s is NULL", g ? "path" : "graph");
        return -1;
    }
    if (!o.opset) o.opset = CT_ONNX_OPSET_MAX;
    if (!check_options(g, &o)) return -1;
    int nv = ct_graph_num_values(g);
    onnx_builder b = {.g = g, .opset = o.opset};
    b.names = ct_calloc(nv + 1, sizeof *b.names);
    b.producer = ct_malloc((nv + 1) * sizeof *b.producer);
    b.uses = ct_calloc(nv + 1, sizeof *b.uses);
    int rc = -1;
    if (b.names && b.producer && b.uses) {
        for (int i = 0; i < nv; i++) b.producer[i] = -1;
        Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
        Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
        Onnx__OperatorSetIdProto *opsets[] = {&opset};
        Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
        opset.domain = "", opset.has_version = true, opset.version = o.opset;
        gp.name = "main_graph";
        mp.has_ir_version = true, mp.ir_version = CT_ONNX_IR_VERSION;
        mp.n_opset_import = 1, mp.opset_import = opsets;
        mp.producer_name = "ctorch", mp.producer_version = (char *)ct_version();
        mp.doc_string = (char *)o.doc_string;
        mp.graph = &gp;
        if (build(&b, &o, &gp)) rc = write_model(&mp, path);
    }
    onnx_arena_free(b.arena);
    free(b.names);
    free(b.producer);
    free(b.uses);
    return rc;
}

int ct_onnx_export_with(ct_module *m, ct_tensor *const *inputs, int n_inputs, const char *path,
                        ct_onnx_export_options o) {
    if (!m || !path || n_inputs < 0 || (n_inputs && !inputs)) {
        ct_error("ct_onnx_export: %s", !m ? "module is NULL" : !path ? "path is NULL" : "bad inputs");
        return -1;
    }
    /* The inputs' dims named in dynamic_axes are dynamic in the trace. */
    ct_dynamic_dim *dyn = ct_calloc(o.n_dynamic_axes + 1, sizeof *dyn);
    if (!dyn) return -1;
    int n_dyn = 0;
    for (int a = 0; a < o.n_dynamic_axes; a++)
        for (int i = 0; i < n_inputs; i++) {
            char def[32];
            snprintf(def, sizeof def, "input_%d", i);
            const char *name = o.input_names ? o.input_names[i] : def;
            if (o.dynamic_axes[a].name && name && !strcmp(name, o.dynamic_axes[a].name))
                dyn[n_dyn++] = (ct_dynamic_dim){i, o.dynamic_axes[a].dim};
        }
    bool was_training = ct_module_is_training(m);
    if (was_training) ct_module_eval(m);
    int rc = -1;
    CT_SCOPE {
        ct_graph *g = ct_trace(m, inputs, n_inputs, .input_names = o.input_names,
                               .output_names = o.output_names, .dynamic = dyn, .n_dynamic = n_dyn,
                               .check_trace = false);
        if (g) rc = ct_onnx_export_graph_with(g, path, o);
    }
    if (was_training) ct_module_train(m, true);
    free(dyn);
    return rc;
}
