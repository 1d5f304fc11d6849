/* The ONNX graph being built from a traced graph: the nodes, initializers and value
 * names that the op emitters (ops.c) add to, and the ModelProto written from them.
 *
 * Every message lives in the builder's arena and is freed with it, so an emitter
 * never frees anything and may stop at the first failure (a NULL from any helper
 * here: an allocation failed or an error was set).  Value names: a graph input or
 * output has its name, a parameter or buffer its state-dict name, a constant
 * "const_<id>", a node's output "<op>_<id>"; temporaries an emitter makes are
 * "<hint>_t<n>". */
#ifndef CT_IO_ONNX_BUILDER_H
#define CT_IO_ONNX_BUILDER_H

#include "ctorch/onnx.h"
#include "onnx/onnx.pb-c.h"

typedef struct onnx_arena onnx_arena;

typedef struct {
    const ct_graph *g;
    int opset;
    char **names;        /* per value id: its ONNX name, NULL until first used */
    int *producer;       /* per value id: the node making it, -1 for others */
    int *uses;           /* per value id: how many node inputs read it */
    Onnx__NodeProto **nodes;
    size_t n_nodes, cap_nodes;
    Onnx__TensorProto **inits;
    size_t n_inits, cap_inits;
    int n_tmp;
    onnx_arena *arena;
} onnx_builder;

/* Frees an arena and every message in it. */
void onnx_arena_free(onnx_arena *a);
/* Arena memory (zeroed), and a copy of s in it; NULL with an error when out of memory. */
void *ob_alloc(onnx_builder *b, size_t size);
char *ob_strdup(onnx_builder *b, const char *s);
/* A new temporary name "<hint>_t<n>". */
const char *ob_tmp(onnx_builder *b, const char *hint);

/* The graph value of node input i (NULL when the optional input is absent) / output i. */
const ct_graph_value *ob_in_value(onnx_builder *b, const ct_graph_node *n, int i);
const ct_graph_value *ob_out_value(onnx_builder *b, const ct_graph_node *n, int i);
/* The ONNX name of value id; parameters, buffers and constants become initializers
 * the first time they are asked for.  "" for id -1 (an absent optional input). */
const char *ob_name(onnx_builder *b, int id);
/* ob_name of node input i / output i. */
const char *ob_in(onnx_builder *b, const ct_graph_node *n, int i);
const char *ob_out(onnx_builder *b, const ct_graph_node *n, int i);
/* Input i, converted to dtype when it is a constant of another dtype (a wrapped
 * number such as the 2 of x * 2): ONNX's binary ops take one type. */
const char *ob_in_as(onnx_builder *b, const ct_graph_node *n, int i, ct_dtype dtype);

/* Adds a node op_type(in...) -> (out...); NULL when something failed.  "" stands for
 * an absent optional input. */
Onnx__NodeProto *ob_node_n(onnx_builder *b, const char *op_type, int n_in, const char *const *in,
                           int n_out, const char *const *out);
#define OB_NAMES(...) (const char *const[]){__VA_ARGS__}
#define OB_COUNT(...) ((int)(sizeof OB_NAMES(__VA_ARGS__) / sizeof(const char *)))
/* ob_node(b, "Add", out, x, y): one output. */
#define ob_node(b, op_type, out, ...) \
    ob_node_n(b, op_type, OB_COUNT(__VA_ARGS__), OB_NAMES(__VA_ARGS__), 1, OB_NAMES(out))
/* A node with one output, a new temporary: its name (NULL on failure). */
const char *ob_op_n(onnx_builder *b, const char *op_type, int n_in, const char *const *in);
#define ob_op(b, op_type, ...) ob_op_n(b, op_type, OB_COUNT(__VA_ARGS__), OB_NAMES(__VA_ARGS__))

/* Attributes of node (false when node is NULL or memory ran out). */
bool ob_attr_int(onnx_builder *b, Onnx__NodeProto *node, const char *name, int64_t v);
bool ob_attr_ints(onnx_builder *b, Onnx__NodeProto *node, const char *name, const int64_t *v, int n);
bool ob_attr_float(onnx_builder *b, Onnx__NodeProto *node, const char *name, double v);
bool ob_attr_str(onnx_builder *b, Onnx__NodeProto *node, const char *name, const char *v);

/* Initializers: a 1-D int64 tensor of v (shapes, axes, indices), an int64 scalar, a
 * scalar of dtype, and t's values under name (NULL: a temporary name). */
const char *ob_const_ints(onnx_builder *b, const int64_t *v, int n);
const char *ob_const_int(onnx_builder *b, int64_t v);
const char *ob_const_scalar(onnx_builder *b, ct_dtype dtype, double v);
const char *ob_const_tensor(onnx_builder *b, const char *name, ct_tensor *t);

/* The ONNX element type of dtype (TensorProto.DataType); 0 when it has none. */
int ob_onnx_dtype(ct_dtype dtype);

/* The op's error: "ct_onnx_export: <what> (op '<op>', opset N)"; returns false. */
bool ob_fail(onnx_builder *b, const ct_graph_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An attribute of node n by its schema name (the op's schema must have it). */
const ct_value *ob_attr(const ct_graph_node *n, const char *name);
/* dim counted from the front of an ndim-dim tensor. */
static inline int64_t ob_dim(int64_t dim, int ndim) { return dim < 0 ? dim + ndim : dim; }
/* Makes name the ONNX name of node output k: the output itself when nothing named
 * it yet (no node is added), else an Identity copy into its name.  false on failure. */
bool ob_assign(onnx_builder *b, const ct_graph_node *n, int k, const char *name);

/* ---- the op table (ops.c) ---- */
/* Adds the ONNX nodes of one traced node; onnx_type is the table row's ONNX op (for
 * emitters that serve several ops).  false with an error. */
typedef bool (*onnx_emit_fn)(onnx_builder *b, const ct_graph_node *n, const char *onnx_type);
/* One row: ctorch's op, the first opset the row applies to, its emitter and ONNX op. */
typedef struct {
    const char *op;
    int since;
    onnx_emit_fn emit;
    const char *onnx_type;
} onnx_op_row;
/* The row for ctorch op name at opset (the one with the highest `since` <= opset);
 * NULL when there is none. */
const onnx_op_row *onnx_op_find(const char *op, int opset);
/* True when node i makes nothing of its own: its consumers fold it in (a weight's
 * transpose read by Gemm with transB=1). */
bool onnx_folded(onnx_builder *b, int i);

/* Emitters of the layers' ops (ops_nn.c, ops_rnn.c), for the table. */
bool onnx_emit_convolution(onnx_builder *b, const ct_graph_node *n, const char *onnx_type);
bool onnx_emit_max_pool(onnx_builder *b, const ct_graph_node *n, const char *onnx_type);
bool onnx_emit_avg_pool(onnx_builder *b, const ct_graph_node *n, const char *onnx_type);
bool onnx_emit_adaptive_pool(onnx_builder *b, const ct_graph_node *n, const char *onnx_type);
bool onnx_emit_batch_norm(onnx_builder *b, const ct_graph_node *n, const char *onnx_type);
bool onnx_emit_layer_norm(onnx_builder *b, const ct_graph_node *n, const char *onnx_type);
bool onnx_emit_layer_norm_decomposed(onnx_builder *b, const ct_graph_node *n, const char *onnx_type);
bool onnx_emit_rnn(onnx_builder *b, const ct_graph_node *n, const char *onnx_type);
bool onnx_emit_lstm_cell(onnx_builder *b, const ct_graph_node *n, const char *onnx_type);
bool onnx_emit_gru_cell(onnx_builder *b, const ct_graph_node *n, const char *onnx_type);

#endif
