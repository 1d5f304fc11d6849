/* The ONNX graph under construction (builder.h): arena, names, nodes, attributes and
 * initializers, all protobuf-c messages of ONNX's onnx.proto. */
#include "io/onnx/builder.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"

/* ---- arena: blocks chained from the newest, freed together (export.c) ---- */
struct onnx_arena {
    onnx_arena *next;
    size_t used, cap;
    max_align_t data[];
};

void *ob_alloc(onnx_builder *b, size_t size) {
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    onnx_arena *a = b->arena;
    if (!a || a->cap - a->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        onnx_arena *n = ct_malloc(sizeof *n + cap);
        if (!n) return NULL;
        n->next = a, n->used = 0, n->cap = cap;
        b->arena = a = n;
    }
    void *p = (char *)a->data + a->used;
    a->used += size;
    memset(p, 0, size);
    return p;
}

void onnx_arena_free(onnx_arena *a) {
    while (a) {
        onnx_arena *next = a->next;
        free(a);
        a = next;
    }
}

char *ob_strdup(onnx_builder *b, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = ob_alloc(b, n);
    if (p) memcpy(p, s, n);
    return p;
}

const char *ob_tmp(onnx_builder *b, const char *hint) {
    char buf[96];
    snprintf(buf, sizeof buf, "%s_t%d", hint, b->n_tmp++);
    return ob_strdup(b, buf);
}

bool ob_fail(onnx_builder *b, const ct_graph_node *n, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    ct_error("ct_onnx_export: %s (op '%s', opset %d)", what, n->schema->name, b->opset);
    return false;
}

/* Appends p to a growing array of pointers in the arena. */
static bool push(onnx_builder *b, void ***arr, size_t *n, size_t *cap, void *p) {
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        void **grown = ob_alloc(b, c * sizeof *grown);
        if (!grown) return false;
        if (*n) memcpy(grown, *arr, *n * sizeof *grown);
        *arr = grown, *cap = c;
    }
    (*arr)[(*n)++] = p;
    return true;
}

/* ---- values ---- */
const ct_graph_value *ob_in_value(onnx_builder *b, const ct_graph_node *n, int i) {
    return n->inputs[i] < 0 ? NULL : ct_graph_value_at(b->g, n->inputs[i]);
}
const ct_graph_value *ob_out_value(onnx_builder *b, const ct_graph_node *n, int i) {
    return ct_graph_value_at(b->g, n->outputs[i]);
}

int ob_onnx_dtype(ct_dtype dtype) {
    switch (dtype) {
    case CT_F32: return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    case CT_F64: return ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
    case CT_F16: return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    case CT_BF16: return ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
    case CT_I64: return ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    case CT_I32: return ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    case CT_I16: return ONNX__TENSOR_PROTO__DATA_TYPE__INT16;
    case CT_U8: return ONNX__TENSOR_PROTO__DATA_TYPE__UINT8;
    case CT_I8: return ONNX__TENSOR_PROTO__DATA_TYPE__INT8;
    case CT_BOOL: return ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    default: return 0;
    }
}

/* An initializer of the given type and dims holding bytes (copied into the arena). */
static const char *add_init(onnx_builder *b, const char *name, int dtype, const int64_t *dims,
                            int ndim, const void *bytes, size_t nbytes) {
    Onnx__TensorProto *t = ob_alloc(b, sizeof *t);
    int64_t *d = ob_alloc(b, (ndim ? ndim : 1) * sizeof *d);
    uint8_t *data = ob_alloc(b, nbytes ? nbytes : 1);
    char *nm = ob_strdup(b, name);
    if (!t || !d || !data || !nm) return NULL;
    onnx__tensor_proto__init(t);
    if (ndim) memcpy(d, dims, ndim * sizeof *d); /* a 0-d tensor has no dims array */
    if (nbytes) memcpy(data, bytes, nbytes);
    t->n_dims = ndim, t->dims = d;
    t->has_data_type = true, t->data_type = dtype;
    t->name = nm;
    t->has_raw_data = true, t->raw_data.len = nbytes, t->raw_data.data = data;
    return push(b, (void ***)&b->inits, &b->n_inits, &b->cap_inits, t) ? nm : NULL;
}

const char *ob_const_tensor(onnx_builder *b, const char *name, ct_tensor *t) {
    int dtype = ob_onnx_dtype(ct_dtype_of(t));
    if (!dtype) {
        ct_error("ct_onnx_export: tensor '%s' has dtype %s, which ONNX does not have",
                 name ? name : "", ct_dtype_name(ct_dtype_of(t)));
        return NULL;
    }
    const char *nm = name ? name : ob_tmp(b, "const");
    const char *r = NULL;
    if (!nm) return NULL;
    CT_SCOPE {
        /* Initializers hold C-order little-endian data from host memory. */
        ct_tensor *c = ct_contiguous(ct_to(t, .device = CT_CPU));
        if (c) {
            int64_t dims[CT_MAX_DIMS];
            int nd = ct_ndim(c);
            for (int d = 0; d < nd; d++) dims[d] = ct_size(c, d);
            r = add_init(b, nm, dtype, dims, nd, ct_data_ptr(c),
                         (size_t)ct_numel(c) * ct_dtype_size(ct_dtype_of(c)));
        }
    }
    return r;
}

const char *ob_const_ints(onnx_builder *b, const int64_t *v, int n) {
    const char *nm = ob_tmp(b, "ints");
    return nm ? add_init(b, nm, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, (int64_t[]){n}, 1, v,
                         n * sizeof *v)
              : NULL;
}

const char *ob_const_int(onnx_builder *b, int64_t v) {
    const char *nm = ob_tmp(b, "int");
    return nm ? add_init(b, nm, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, NULL, 0, &v, sizeof v) : NULL;
}

const char *ob_const_scalar(onnx_builder *b, ct_dtype dtype, double v) {
    const char *r = NULL;
    CT_SCOPE {
        ct_tensor *t = ct_to(ct_scalar_tensor(v, .dtype = CT_F64), .dtype = dtype);
        if (t) r = ob_const_tensor(b, NULL, t);
    }
    return r;
}

const char *ob_name(onnx_builder *b, int id) {
    if (id < 0) return "";
    if (b->names[id]) return b->names[id];
    const ct_graph_value *v = ct_graph_value_at(b->g, id);
    char buf[96];
    switch (v->kind) {
    case CT_GRAPH_PARAM:
    case CT_GRAPH_BUFFER:
        return b->names[id] = (char *)ob_const_tensor(b, v->name, v->tensor);
    case CT_GRAPH_CONST:
        snprintf(buf, sizeof buf, "const_%d", id);
        return b->names[id] = (char *)ob_const_tensor(b, buf, v->tensor);
    case CT_GRAPH_INPUT:
        return b->names[id] = ob_strdup(b, v->name);
    default:
        snprintf(buf, sizeof buf, "%s_%d",
                 b->producer[id] >= 0 ? ct_graph_node_at(b->g, b->producer[id])->schema->name : "value", id);
        return b->names[id] = ob_strdup(b, buf);
    }
}

const char *ob_in(onnx_builder *b, const ct_graph_node *n, int i) { return ob_name(b, n->inputs[i]); }
const char *ob_out(onnx_builder *b, const ct_graph_node *n, int i) { return ob_name(b, n->outputs[i]); }

const char *ob_in_as(onnx_builder *b, const ct_graph_node *n, int i, ct_dtype dtype) {
    const ct_graph_value *v = ob_in_value(b, n, i);
    if (!v || v->kind != CT_GRAPH_CONST || v->dtype == dtype) return ob_in(b, n, i);
    const char *r = NULL;
    CT_SCOPE {
        ct_tensor *t = ct_to(v->tensor, .dtype = dtype);
        if (t) r = ob_const_tensor(b, NULL, t);
    }
    return r;
}

/* ---- nodes ---- */
Onnx__NodeProto *ob_node_n(onnx_builder *b, const char *op_type, int n_in, const char *const *in,
                           int n_out, const char *const *out) {
    for (int i = 0; i < n_in; i++)
        if (!in[i]) return NULL;
    for (int i = 0; i < n_out; i++)
        if (!out[i]) return NULL;
    Onnx__NodeProto *node = ob_alloc(b, sizeof *node);
    char **ins = ob_alloc(b, (n_in + 1) * sizeof *ins), **outs = ob_alloc(b, n_out * sizeof *outs);
    char name[64];
    snprintf(name, sizeof name, "%s_%zu", op_type, b->n_nodes);
    if (!node || !ins || !outs) return NULL;
    onnx__node_proto__init(node);
    for (int i = 0; i < n_in; i++) ins[i] = (char *)in[i];
    for (int i = 0; i < n_out; i++) outs[i] = (char *)out[i];
    /* Trailing absent optional inputs are left out, as ONNX prefers. */
    while (n_in > 0 && !in[n_in - 1][0]) n_in--;
    node->n_input = n_in, node->input = ins;
    node->n_output = n_out, node->output = outs;
    node->op_type = (char *)op_type;
    node->name = ob_strdup(b, name);
    if (!node->name) return NULL;
    return push(b, (void ***)&b->nodes, &b->n_nodes, &b->cap_nodes, node) ? node : NULL;
}

const char *ob_op_n(onnx_builder *b, const char *op_type, int n_in, const char *const *in) {
    const char *out = ob_tmp(b, op_type);
    return ob_node_n(b, op_type, n_in, in, 1, &out) ? out : NULL;
}

static Onnx__AttributeProto *add_attr(onnx_builder *b, Onnx__NodeProto *node, const char *name,
                                      Onnx__AttributeProto__AttributeType type) {
    if (!node) return NULL;
    Onnx__AttributeProto *a = ob_alloc(b, sizeof *a);
    if (!a) return NULL;
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = true, a->type = type;
    Onnx__AttributeProto **grown = ob_alloc(b, (node->n_attribute + 1) * sizeof *grown);
    if (!grown) return NULL;
    if (node->n_attribute) memcpy(grown, node->attribute, node->n_attribute * sizeof *grown);
    grown[node->n_attribute++] = a;
    node->attribute = grown;
    return a;
}

bool ob_attr_int(onnx_builder *b, Onnx__NodeProto *node, const char *name, int64_t v) {
    Onnx__AttributeProto *a = add_attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) a->has_i = true, a->i = v;
    return a != NULL;
}

bool ob_attr_ints(onnx_builder *b, Onnx__NodeProto *node, const char *name, const int64_t *v, int n) {
    Onnx__AttributeProto *a = add_attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *copy = a ? ob_alloc(b, (n ? n : 1) * sizeof *copy) : NULL;
    if (!copy) return false;
    memcpy(copy, v, n * sizeof *copy);
    a->n_ints = n, a->ints = copy;
    return true;
}

bool ob_attr_float(onnx_builder *b, Onnx__NodeProto *node, const char *name, double v) {
    Onnx__AttributeProto *a = add_attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) a->has_f = true, a->f = (float)v;
    return a != NULL;
}

bool ob_attr_str(onnx_builder *b, Onnx__NodeProto *node, const char *name, const char *v) {
    Onnx__AttributeProto *a = add_attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    char *s = a ? ob_strdup(b, v) : NULL;
    if (!s) return false;
    a->has_s = true, a->s.len = strlen(s), a->s.data = (uint8_t *)s;
    return true;
}

const ct_value *ob_attr(const ct_graph_node *n, const char *name) {
    for (int i = 0; i < n->schema->n_attrs; i++)
        if (!strcmp(n->schema->attrs[i].name, name)) return &n->attrs[i];
    CT_ASSERT(false && "ob_attr: the op's schema has no such attribute");
    return NULL;
}

/* Renames every use of value name `from` to `to` (nodes and value names). */
static void rename_value(onnx_builder *b, const char *from, char *to) {
    for (size_t i = 0; i < b->n_nodes; i++) {
        Onnx__NodeProto *node = b->nodes[i];
        for (size_t k = 0; k < node->n_input; k++)
            if (!strcmp(node->input[k], from)) node->input[k] = to;
        for (size_t k = 0; k < node->n_output; k++)
            if (!strcmp(node->output[k], from)) node->output[k] = to;
    }
    for (int v = 0; v < ct_graph_num_values(b->g); v++)
        if (b->names[v] && b->names[v] != to && !strcmp(b->names[v], from)) b->names[v] = to;
}

/* True when name is what a node of the builder writes, and no graph output's name. */
static bool renamable(onnx_builder *b, const char *name) {
    for (int i = 0; i < ct_graph_num_outputs(b->g); i++) {
        const char *out = b->names[ct_graph_output(b->g, i)];
        if (out && !strcmp(out, name)) return false;
    }
    for (size_t i = 0; i < b->n_nodes; i++)
        for (size_t k = 0; k < b->nodes[i]->n_output; k++)
            if (!strcmp(b->nodes[i]->output[k], name)) return true;
    return false;
}

bool ob_assign(onnx_builder *b, const ct_graph_node *n, int k, const char *name) {
    if (!name) return false;
    int id = n->outputs[k];
    if (!b->names[id]) {
        b->names[id] = (char *)name;
        return true;
    }
    /* A graph output: the node that wrote name writes the output instead (no
     * Identity, as torch.onnx), unless name is an input, a weight or an output. */
    if (renamable(b, name)) {
        rename_value(b, name, b->names[id]);
        return true;
    }
    return ob_node(b, "Identity", b->names[id], name) != NULL;
}
