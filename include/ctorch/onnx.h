/* ctorch/onnx.h — export to ONNX (torch.onnx.export).
 *
 * A module is traced once on example inputs (ct_trace, ctorch/jit.h) and its graph
 * written as an ONNX ModelProto: every op of the trace becomes one or more ONNX
 * nodes of the default domain at the opset asked for (13 to 17), the parameters and
 * buffers become initializers under their state-dict names ("fc1.weight"), and dims
 * named in dynamic_axes stay symbolic, so that the model runs at any batch size.
 * As torch.onnx.export (training=TrainingMode.EVAL), the module is traced in eval
 * mode (and put back in train mode after, if it was): dropout becomes Identity and
 * batch norm uses its running statistics.
 *
 *     ct_module *model = ct_nn_linear(4, 2);
 *     ct_module_eval(model);
 *     ct_tensor *in = ct_randn(CT_SHAPE(3, 4));
 *     const char *in_names[] = {"input"}, *out_names[] = {"output"};
 *     ct_onnx_dynamic_axis batch[] = {{"input", 0, "batch"}, {"output", 0, "batch"}};
 *     ct_onnx_export(model, &in, 1, "linear.onnx", .opset = 17, .input_names = in_names,
 *                    .output_names = out_names, .dynamic_axes = batch, .n_dynamic_axes = 2);
 *     // linear.onnx: Gemm(input, weight, bias, transB=1) -> output, for any batch size
 *
 * An op of the trace that has no ONNX form at the opset asked for is an error naming
 * both: "ct_onnx_export: Exporting the operator 'nonzero' to ONNX opset version 13 is
 * not supported".  ct_onnx_export_graph writes a graph already traced.
 */
#ifndef CTORCH_ONNX_H
#define CTORCH_ONNX_H

#include "jit.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

#define CT_ONNX_OPSET_MIN 13 /* the first opset ct_onnx_export writes */
#define CT_ONNX_OPSET_MAX 17 /* the last one, and the default */

/* One dim that stays symbolic in the exported model: dim `dim` of the input or
 * output named `name` (torch.onnx.export's dynamic_axes={"input": {0: "batch"}}).
 * label: the dim's name in the model (dim_param); NULL: "<name>_dim<dim>". */
typedef struct {
    const char *name;  /* an input's or output's name */
    int dim;           /* its dim */
    const char *label; /* the dim's name in the model; NULL: "<name>_dim<dim>" */
} ct_onnx_dynamic_axis;

/* Options of ct_onnx_export and ct_onnx_export_graph. */
typedef struct {
    int opset;                        /* 13 to 17; 0: 17 */
    const char *const *input_names;   /* NULL: "input_0", "input_1", ... (the graph's own for a graph) */
    const char *const *output_names;  /* NULL: "output_0", ... (the graph's own for a graph) */
    const ct_onnx_dynamic_axis *dynamic_axes; /* dims of inputs and outputs left symbolic */
    int n_dynamic_axes;               /* how many dynamic_axes */
    const char *doc_string;           /* the model's doc_string; NULL: none */
} ct_onnx_export_options;

/* Traces m in eval mode on inputs (ct_trace, with the inputs' dims named in
 * dynamic_axes marked dynamic) and writes the graph to path as ONNX.  Returns 0, or -1 with an error (a
 * failed trace, an op with no ONNX form at the opset, a bad option, a write error). */
int ct_onnx_export_with(ct_module *m, ct_tensor *const *inputs, int n_inputs, const char *path,
                        ct_onnx_export_options o);
#define ct_onnx_export(m, inputs, n_inputs, path, ...)                                     \
    CT_AT(ct_onnx_export_with(m, inputs, n_inputs, path,                                  \
                              CT_OPTIONS(ct_onnx_export_options, __VA_ARGS__)))

/* Writes the traced graph g to path as ONNX.  The dims g holds dynamic stay symbolic
 * (named by dynamic_axes where it names them); input_names and output_names rename
 * the graph's inputs and outputs.  0, or -1 with an error. */
int ct_onnx_export_graph_with(const ct_graph *g, const char *path, ct_onnx_export_options o);
#define ct_onnx_export_graph(g, path, ...) \
    CT_AT(ct_onnx_export_graph_with(g, path, CT_OPTIONS(ct_onnx_export_options, __VA_ARGS__)))

#ifdef __cplusplus
}
#endif

CT_API_END
#endif
