/* ctorch/jit.h — traced graphs (torch.jit.trace): record a module's forward once, run
 * the recording without the module's code, save it with its weights as one .ctm file.
 *
 *     ct_module *model = ct_sequential(CT_MODULES(ct_nn_linear(4, 8), ct_nn_relu(),
 *                                                 ct_nn_linear(8, 2)));
 *     ct_module_eval(model);                          // trace what deployment runs
 *     ct_tensor *in = ct_randn(CT_SHAPE(3, 4));
 *     ct_dynamic_dim batch = {.input = 0, .dim = 0};  // any batch size at run time
 *     ct_graph *g = ct_trace(model, &in, 1, .dynamic = &batch, .n_dynamic = 1);
 *     ct_graph_print(g, stdout);    // %4: float32[3?, 8] = addmm(%3, %0, %2, beta=1, alpha=1)
 *     ct_graph_save(g, "/tmp/ct_jit_doc.ctm");
 *     // another program, with none of the model's code:
 *     ct_graph *h = ct_graph_load("/tmp/ct_jit_doc.ctm");
 *     ct_tensor *in5 = ct_randn(CT_SHAPE(5, 4)), *y;
 *     ct_graph_run(h, &in5, 1, &y, 1);   // y equals ct_forward(model, in5), bitwise
 *
 * Ops appear as the record hook of ctorch/ops.h reports them: ct_linear is transpose +
 * addmm (or mm), flatten is view, cross_entropy is log_softmax + nll_loss; an LSTM or
 * GRU layer is one node (lstm / gru, PyTorch's aten::lstm.input / aten::gru.input).
 * Like torch.jit.trace, a trace records one path through the code: a branch on a
 * value read from a tensor (ct_item, ...) or on the module's train mode is baked in,
 * and ct_trace warns (ct_warn) when either happened.  The .ctm layout is docs/ctm.md.
 */
#ifndef CTORCH_JIT_H
#define CTORCH_JIT_H

#include <stdio.h>

#include "nn.h"
#include "ops.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* A traced graph: a reference-counted ctorch object (ct_retain / ct_release; returned
 * objects join the innermost CT_SCOPE like every other ctorch object). */
typedef struct ct_graph ct_graph;

/* A dim of an input that the graph must not fix: any size works at run time. */
typedef struct {
    int input; /* which input (0-based) */
    int dim;   /* which of its dims */
} ct_dynamic_dim;

/* ct_trace's options. */
typedef struct {
    const char *const *input_names;   /* NULL: "input_0", "input_1", ... */
    const char *const *output_names;  /* NULL: "output_0", ... */
    const ct_dynamic_dim *dynamic;    /* dims the graph must not fix (dynamic batch) */
    int n_dynamic;                    /* how many dynamic holds */
    bool check_trace;                 /* default true: rerun, compare outputs bitwise */
} ct_trace_options;

/* Runs m's forward (ct_forward_multi) once on inputs, recording every op (the record
 * hook of ctorch/ops.h) into a graph: inputs, parameters and buffers by their
 * state-dict names, constants, one node per op with its attributes, outputs.  Warns
 * (ct_warn) when the module is in train mode or the trace read a tensor's value
 * (ct_item, ...).  With check_trace, runs the graph on the same inputs and fails when
 * its outputs differ from the module's in any bit.  NULL with an error on failure. */
ct_graph *ct_trace_with(ct_module *m, ct_tensor *const *inputs, int n_inputs, ct_trace_options o);
#define ct_trace(m, inputs, n, ...)                                                    \
    CT_AT(ct_trace_with(m, inputs, n,                                                  \
                        CT_DEFAULTS(ct_trace_options, .check_trace = true, __VA_ARGS__)))

/* ---- reading a graph (exporters: ONNX, TensorBoard's add_graph) ---- */
typedef enum {
    CT_GRAPH_INPUT,   /* a graph input */
    CT_GRAPH_PARAM,   /* a parameter, by its state-dict name ("fc1.weight") */
    CT_GRAPH_BUFFER,  /* a buffer ("bn.running_mean") */
    CT_GRAPH_CONST,   /* a tensor the trace met that is none of those (constant) */
    CT_GRAPH_VALUE,   /* a node's output */
} ct_graph_value_kind;

/* A value of a graph: an input, a weight, a constant or a node's output. */
typedef struct {
    ct_graph_value_kind kind; /* what the value is */
    const char *name;       /* inputs/outputs: their names; params/buffers: state-dict names */
    ct_dtype dtype;         /* its dtype */
    int ndim;               /* its number of dims */
    int64_t sizes[CT_MAX_DIMS];   /* the sizes seen at trace time */
    bool dynamic[CT_MAX_DIMS];    /* true: a dim marked (or derived) dynamic */
    ct_tensor *tensor;      /* PARAM, BUFFER, CONST: the value (borrowed); else NULL */
} ct_graph_value;

/* A node of a graph: one op call. */
typedef struct {
    const ct_schema *schema;  /* the op (ctorch/ops.h): name, aten name, attrs' names */
    int n_inputs;             /* how many inputs */
    const int *inputs;        /* value ids; -1: an absent optional input */
    int n_outputs;            /* how many outputs */
    const int *outputs;       /* value ids */
    const ct_value *attrs;    /* schema->n_attrs values, in schema order */
} ct_graph_node;

/* The number of values; ids run from 0 to that less one. */
int ct_graph_num_values(const ct_graph *g);
#define ct_graph_num_values(g) CT_AT(ct_graph_num_values(g))
/* The value id (borrowed from g); NULL with an error when id is out of range. */
const ct_graph_value *ct_graph_value_at(const ct_graph *g, int id);
#define ct_graph_value_at(g, id) CT_AT(ct_graph_value_at(g, id))
/* The number of nodes. */
int ct_graph_num_nodes(const ct_graph *g);
#define ct_graph_num_nodes(g) CT_AT(ct_graph_num_nodes(g))
const ct_graph_node *ct_graph_node_at(const ct_graph *g, int i);  /* in execution order */
#define ct_graph_node_at(g, i) CT_AT(ct_graph_node_at(g, i))
/* The number of graph inputs. */
int ct_graph_num_inputs(const ct_graph *g);
#define ct_graph_num_inputs(g) CT_AT(ct_graph_num_inputs(g))
int ct_graph_input(const ct_graph *g, int i);    /* value id of input i */
#define ct_graph_input(g, i) CT_AT(ct_graph_input(g, i))
/* The number of graph outputs. */
int ct_graph_num_outputs(const ct_graph *g);
#define ct_graph_num_outputs(g) CT_AT(ct_graph_num_outputs(g))
int ct_graph_output(const ct_graph *g, int i);   /* value id of output i */
#define ct_graph_output(g, i) CT_AT(ct_graph_output(g, i))

/* ---- using a graph ---- */
/* Runs g on inputs (dynamic dims may differ from the trace's); writes up to
 * max_outputs new tensors; returns the number of outputs or -1 with an error. */
int ct_graph_run(ct_graph *g, ct_tensor *const *inputs, int n_inputs, ct_tensor **outputs, int max_outputs);
#define ct_graph_run(g, inputs, n_inputs, outputs, max_outputs)                        \
    CT_AT(ct_graph_run(g, inputs, n_inputs, outputs, max_outputs))
int ct_graph_print(const ct_graph *g, FILE *f);     /* one line per node; 0 or -1 */
#define ct_graph_print(g, f) CT_AT(ct_graph_print(g, f))
int ct_graph_save(const ct_graph *g, const char *path);  /* .ctm: graph + weights; 0 or -1 */
#define ct_graph_save(g, path) CT_AT(ct_graph_save(g, path))
ct_graph *ct_graph_load(const char *path);          /* NULL with an error */
#define ct_graph_load(path) CT_AT(ct_graph_load(path))
/* ct_graph_load from n bytes in memory (what the file holds). */
ct_graph *ct_graph_load_buffer(const void *data, size_t n);
#define ct_graph_load_buffer(data, n) CT_AT(ct_graph_load_buffer(data, n))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
