/* The op table of ONNX export: for each ctorch op (by its schema name) the ONNX nodes
 * it becomes, from the first opset a form applies to.  An op with two rows (layer_norm)
 * takes the one of the highest opset not above the export's.  The emitters of the
 * pointwise, reduction, shape and matrix ops are here; those of the layers (conv,
 * pooling, normalization, recurrent) in ops_nn.c and ops_rnn.c.
 *
 * Wrapped numbers (the 2 of x * 2) reach an op as 0-dim constants, converted to the
 * other operand's dtype (ob_in_as) because ONNX's binary ops take one type. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "io/onnx/builder.h"

/* ---- helpers ---- */

/* The dtype the operands of an elementwise node share: that of its first input that
 * is not a constant (all constants: the first input's). */
static ct_dtype operand_dtype(onnx_builder *b, const ct_graph_node *n) {
    for (int i = 0; i < n->n_inputs; i++) {
        const ct_graph_value *v = ob_in_value(b, n, i);
        if (v && v->kind != CT_GRAPH_CONST) return v->dtype;
    }
    return ob_in_value(b, n, 0)->dtype;
}

/* A Scalar attribute as a constant of dtype. */
static const char *scalar_attr(onnx_builder *b, const ct_graph_node *n, const char *name, ct_dtype dtype) {
    return ob_const_scalar(b, dtype, ob_attr(n, name)->f);
}

/* One node op_type(inputs...) writing node output 0. */
static bool to_out(onnx_builder *b, const ct_graph_node *n, const char *name) {
    return ob_assign(b, n, 0, name);
}

/* ---- elementwise ---- */

/* Unary ops with one ONNX op of the same meaning. */
static bool emit_unary(onnx_builder *b, const ct_graph_node *n, const char *type) {
    return ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0)) != NULL;
}

/* Ops that compute nothing in an eval graph (dropout in eval mode, clone, a cast to
 * the same dtype): the output is the input. */
static bool emit_alias(onnx_builder *b, const ct_graph_node *n, const char *type) {
    (void)type;
    return to_out(b, n, ob_in(b, n, 0));
}

/* Binary ops: both operands in one dtype. */
static bool emit_binary(onnx_builder *b, const ct_graph_node *n, const char *type) {
    ct_dtype dt = operand_dtype(b, n);
    return ob_node(b, type, ob_out(b, n, 0), ob_in_as(b, n, 0, dt), ob_in_as(b, n, 1, dt)) != NULL;
}

/* add, sub: self op alpha * other. */
static bool emit_add_sub(onnx_builder *b, const ct_graph_node *n, const char *type) {
    ct_dtype dt = operand_dtype(b, n);
    const char *other = ob_in_as(b, n, 1, dt);
    double alpha = ob_attr(n, "alpha")->f;
    if (alpha != 1) other = ob_op(b, "Mul", other, ob_const_scalar(b, dt, alpha));
    return ob_node(b, type, ob_out(b, n, 0), ob_in_as(b, n, 0, dt), other) != NULL;
}

static bool emit_div(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const ct_value *mode = ob_attr(n, "rounding_mode");
    if (mode->none) return emit_binary(b, n, type);
    ct_dtype dt = operand_dtype(b, n);
    if (!strcmp(mode->s, "floor") && (dt == CT_F32 || dt == CT_F64))
        return to_out(b, n, ob_op(b, "Floor", ob_op(b, "Div", ob_in_as(b, n, 0, dt), ob_in_as(b, n, 1, dt))));
    return ob_fail(b, n, "rounding_mode='%s' is not supported", mode->s);
}

static bool emit_ne(onnx_builder *b, const ct_graph_node *n, const char *type) {
    ct_dtype dt = operand_dtype(b, n);
    return to_out(b, n, ob_op(b, "Not", ob_op(b, type, ob_in_as(b, n, 0, dt), ob_in_as(b, n, 1, dt))));
}

static bool emit_pow_scalar(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const char *x = ob_in(b, n, 0), *e = scalar_attr(b, n, "exponent", ob_in_value(b, n, 0)->dtype);
    return ob_node(b, type, ob_out(b, n, 0), x, e) != NULL;
}

static bool emit_rpow_scalar(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const char *base = scalar_attr(b, n, "self", ob_out_value(b, n, 0)->dtype);
    return ob_node(b, type, ob_out(b, n, 0), base, ob_in(b, n, 0)) != NULL;
}

/* where(condition, self, other) */
static bool emit_where(onnx_builder *b, const ct_graph_node *n, const char *type) {
    ct_dtype dt = ob_out_value(b, n, 0)->dtype;
    return ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), ob_in_as(b, n, 1, dt), ob_in_as(b, n, 2, dt)) != NULL;
}

/* masked_fill(self, mask, value) = Where(mask, value, self) */
static bool emit_masked_fill(onnx_builder *b, const ct_graph_node *n, const char *type) {
    ct_dtype dt = ob_in_value(b, n, 0)->dtype;
    const char *value = n->n_inputs > 2 ? ob_in_as(b, n, 2, dt) : scalar_attr(b, n, "value", dt);
    return ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 1), value, ob_in(b, n, 0)) != NULL;
}

/* clamp(min, max), hardtanh(min_val, max_val): Clip with absent bounds as "". */
static bool emit_clip(onnx_builder *b, const ct_graph_node *n, const char *type) {
    ct_dtype dt = ob_in_value(b, n, 0)->dtype;
    bool hard = !strcmp(n->schema->name, "hardtanh");
    const ct_value *lo = ob_attr(n, hard ? "min_val" : "min"), *hi = ob_attr(n, hard ? "max_val" : "max");
    const char *l = lo->none ? "" : ob_const_scalar(b, dt, lo->f);
    const char *h = hi->none ? "" : ob_const_scalar(b, dt, hi->f);
    return ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), l, h) != NULL;
}

static bool emit_leaky_relu(onnx_builder *b, const ct_graph_node *n, const char *type) {
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0));
    return ob_attr_float(b, node, "alpha", ob_attr(n, "negative_slope")->f);
}

static bool emit_elu(onnx_builder *b, const ct_graph_node *n, const char *type) {
    if (ob_attr(n, "scale")->f != 1 || ob_attr(n, "input_scale")->f != 1)
        return ob_fail(b, n, "elu with scale or input_scale other than 1 is not supported");
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0));
    return ob_attr_float(b, node, "alpha", ob_attr(n, "alpha")->f);
}

/* softplus(x, beta) = Softplus(beta x) / beta (torch.onnx ignores threshold too). */
static bool emit_softplus(onnx_builder *b, const ct_graph_node *n, const char *type) {
    ct_dtype dt = ob_in_value(b, n, 0)->dtype;
    double beta = ob_attr(n, "beta")->f;
    if (beta == 1) return emit_unary(b, n, type);
    const char *bx = ob_op(b, "Mul", ob_in(b, n, 0), ob_const_scalar(b, dt, beta));
    return ob_node(b, "Div", ob_out(b, n, 0), ob_op(b, type, bx), ob_const_scalar(b, dt, beta)) != NULL;
}

/* silu(x) = x * sigmoid(x), as torch.onnx writes it. */
static bool emit_silu(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const char *x = ob_in(b, n, 0);
    return ob_node(b, type, ob_out(b, n, 0), x, ob_op(b, "Sigmoid", x)) != NULL;
}

/* gelu: 'none': x * 0.5 * (1 + erf(x / sqrt(2)));
 *       'tanh': x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))). */
static bool emit_gelu(onnx_builder *b, const ct_graph_node *n, const char *type) {
    (void)type;
    ct_dtype dt = ob_in_value(b, n, 0)->dtype;
    const char *x = ob_in(b, n, 0), *inner;
    if (!strcmp(ob_attr(n, "approximate")->s, "tanh")) {
        const char *x3 = ob_op(b, "Mul", ob_op(b, "Mul", x, x), x);
        const char *u = ob_op(b, "Add", x, ob_op(b, "Mul", x3, ob_const_scalar(b, dt, 0.044715)));
        inner = ob_op(b, "Tanh", ob_op(b, "Mul", u, ob_const_scalar(b, dt, sqrt(2 / M_PI))));
    } else {
        inner = ob_op(b, "Erf", ob_op(b, "Div", x, ob_const_scalar(b, dt, M_SQRT2)));
    }
    const char *half = ob_op(b, "Mul", ob_op(b, "Mul", x, ob_op(b, "Add", inner, ob_const_scalar(b, dt, 1))),
                             ob_const_scalar(b, dt, 0.5));
    return to_out(b, n, half);
}

/* rsqrt, expm1, log1p, log2: compositions of ONNX ops. */
static bool emit_composite_unary(onnx_builder *b, const ct_graph_node *n, const char *type) {
    (void)type;
    ct_dtype dt = ob_in_value(b, n, 0)->dtype;
    const char *x = ob_in(b, n, 0), *op = n->schema->name, *r;
    if (!strcmp(op, "rsqrt")) r = ob_op(b, "Reciprocal", ob_op(b, "Sqrt", x));
    else if (!strcmp(op, "expm1")) r = ob_op(b, "Sub", ob_op(b, "Exp", x), ob_const_scalar(b, dt, 1));
    else if (!strcmp(op, "log1p")) r = ob_op(b, "Log", ob_op(b, "Add", x, ob_const_scalar(b, dt, 1)));
    else r = ob_op(b, "Div", ob_op(b, "Log", x), ob_const_scalar(b, dt, M_LN2));
    return to_out(b, n, r);
}

/* _to_copy(dtype=...): Cast, or the input itself when the dtype stays. */
static bool emit_to_copy(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const ct_graph_value *in = ob_in_value(b, n, 0), *out = ob_out_value(b, n, 0);
    if (in->dtype == out->dtype) return emit_alias(b, n, type);
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0));
    return ob_attr_int(b, node, "to", ob_onnx_dtype(out->dtype));
}

static bool emit_dropout(onnx_builder *b, const ct_graph_node *n, const char *type) {
    if (ob_attr(n, "train")->b && ob_attr(n, "p")->f > 0)
        return ob_fail(b, n, "dropout in training mode; export the module in eval mode");
    return emit_alias(b, n, type);
}

/* ---- softmax and reductions ---- */

/* The input, cast first when the op's dtype= asks for another. */
static const char *input_in_dtype(onnx_builder *b, const ct_graph_node *n, const char *attr) {
    const ct_value *dtype = ob_attr(n, attr);
    const char *x = ob_in(b, n, 0);
    if (dtype->none || dtype->dtype == ob_in_value(b, n, 0)->dtype) return x;
    ct_dtype to = dtype->dtype;
    const char *out = ob_tmp(b, "Cast");
    Onnx__NodeProto *node = ob_node(b, "Cast", out, x);
    return ob_attr_int(b, node, "to", ob_onnx_dtype(to)) ? out : NULL;
}

static bool emit_softmax(onnx_builder *b, const ct_graph_node *n, const char *type) {
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), input_in_dtype(b, n, "dtype"));
    return ob_attr_int(b, node, "axis", ob_attr(n, "dim")->i);
}

/* The reduced dims of a reduction: its dim list (None or [] reduce every dim: n = 0). */
static int reduce_dims(const ct_graph_node *n, int ndim, int64_t *dims) {
    const ct_value *d = ob_attr(n, "dim");
    if (d->none) return 0;
    if (d->kind == CT_ARG_INT) {
        dims[0] = ob_dim(d->i, ndim);
        return 1;
    }
    for (int i = 0; i < d->ints.n; i++) dims[i] = ob_dim(d->ints.v[i], ndim);
    return d->ints.n;
}

static bool has_attr(const ct_graph_node *n, const char *name) {
    for (int i = 0; i < n->schema->n_attrs; i++)
        if (!strcmp(n->schema->attrs[i].name, name)) return true;
    return false;
}

/* sum, mean, prod, amax, amin, logsumexp, max, min: Reduce*.  ReduceSum takes its axes
 * as an input from opset 13, the others as an attribute until opset 18. */
static bool emit_reduce(onnx_builder *b, const ct_graph_node *n, const char *type) {
    int ndim = ob_in_value(b, n, 0)->ndim;
    int64_t dims[CT_MAX_DIMS];
    int nd = has_attr(n, "dim") ? reduce_dims(n, ndim, dims) : 0;
    bool keep = has_attr(n, "keepdim") && ob_attr(n, "keepdim")->b;
    const char *x = has_attr(n, "dtype") ? input_in_dtype(b, n, "dtype") : ob_in(b, n, 0);
    Onnx__NodeProto *node;
    if (!strcmp(type, "ReduceSum"))
        node = ob_node(b, type, ob_out(b, n, 0), x, nd ? ob_const_ints(b, dims, nd) : "");
    else {
        node = ob_node(b, type, ob_out(b, n, 0), x);
        if (nd && !ob_attr_ints(b, node, "axes", dims, nd)) return false;
    }
    return ob_attr_int(b, node, "keepdims", keep);
}

/* max.dim / min.dim: values (ReduceMax / ReduceMin) and indices (ArgMax / ArgMin). */
static bool emit_reduce_dim(onnx_builder *b, const ct_graph_node *n, const char *type) {
    int64_t dim = ob_dim(ob_attr(n, "dim")->i, ob_in_value(b, n, 0)->ndim);
    bool keep = ob_attr(n, "keepdim")->b, is_max = !strcmp(type, "ReduceMax");
    Onnx__NodeProto *v = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0));
    Onnx__NodeProto *i = ob_node(b, is_max ? "ArgMax" : "ArgMin", ob_out(b, n, 1), ob_in(b, n, 0));
    return ob_attr_ints(b, v, "axes", &dim, 1) && ob_attr_int(b, v, "keepdims", keep) &&
           ob_attr_int(b, i, "axis", dim) && ob_attr_int(b, i, "keepdims", keep);
}

/* argmax / argmin; dim=None is over the flattened input. */
static bool emit_arg_reduce(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const ct_value *d = ob_attr(n, "dim");
    const char *x = ob_in(b, n, 0);
    int64_t dim = 0;
    if (d->none) x = ob_op(b, "Reshape", x, ob_const_ints(b, (int64_t[]){-1}, 1));
    else dim = ob_dim(d->i, ob_in_value(b, n, 0)->ndim);
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), x);
    return ob_attr_int(b, node, "axis", dim) && ob_attr_int(b, node, "keepdims", !d->none && ob_attr(n, "keepdim")->b);
}

static bool emit_cumsum(onnx_builder *b, const ct_graph_node *n, const char *type) {
    return ob_node(b, type, ob_out(b, n, 0), input_in_dtype(b, n, "dtype"),
                   ob_const_int(b, ob_attr(n, "dim")->i)) != NULL;
}

/* ---- shapes ---- */

/* The shape input of a Reshape to out's sizes from in: a dynamic dim is 0 (copy the
 * input's dim) where the input has the same dynamic dim at that place, else -1 (what
 * the other dims leave), as torch.onnx writes a dynamic batch. */
static const char *reshape_shape(onnx_builder *b, const ct_graph_node *n, const ct_graph_value *in,
                                 const ct_graph_value *out) {
    int64_t s[CT_MAX_DIMS];
    int n_dyn = 0, n_infer = 0;
    for (int d = 0; d < out->ndim; d++) n_dyn += out->dynamic[d];
    for (int d = 0; d < out->ndim; d++) {
        s[d] = out->sizes[d];
        if (!out->dynamic[d]) continue;
        if (n_dyn > 1 && d < in->ndim && in->dynamic[d] && in->sizes[d] == out->sizes[d]) s[d] = 0;
        else if (n_infer++ == 0) s[d] = -1;
        else {
            ob_fail(b, n, "a reshape to %d dynamic dims that are not the input's own", n_infer);
            return NULL;
        }
    }
    /* A size-0 dim is "copy the input's" to Reshape unless allowzero; none is traced. */
    return ob_const_ints(b, s, out->ndim);
}

static bool emit_view(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const char *shape = reshape_shape(b, n, ob_in_value(b, n, 0), ob_out_value(b, n, 0));
    return shape && ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), shape);
}

/* expand: a dynamic dim the input has at the same place (from the right) stays its
 * own (1: Expand broadcasts like numpy); expanding a size-1 dim to a dynamic size is
 * not supported. */
static bool emit_expand(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const ct_graph_value *in = ob_in_value(b, n, 0), *out = ob_out_value(b, n, 0);
    int64_t s[CT_MAX_DIMS];
    for (int d = 0; d < out->ndim; d++) {
        int di = d - (out->ndim - in->ndim);
        s[d] = out->sizes[d];
        if (!out->dynamic[d]) continue;
        if (di < 0 || in->sizes[di] != out->sizes[d])
            return ob_fail(b, n, "expanding dim %d to a dynamic size is not supported", d);
        s[d] = 1;
    }
    return ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), ob_const_ints(b, s, out->ndim)) != NULL;
}

static bool transpose_perm(const ct_graph_node *n, int ndim, int64_t *perm) {
    for (int d = 0; d < ndim; d++) perm[d] = d;
    if (!strcmp(n->schema->name, "transpose")) {
        int64_t d0 = ob_dim(ob_attr(n, "dim0")->i, ndim), d1 = ob_dim(ob_attr(n, "dim1")->i, ndim);
        perm[d0] = d1, perm[d1] = d0;
    } else {
        const ct_value *dims = ob_attr(n, "dims");
        for (int d = 0; d < ndim; d++) perm[d] = ob_dim(dims->ints.v[d], ndim);
    }
    return true;
}

/* The node making value id, when it is a 2-D transpose of a weight (F.linear's
 * weight.t()): Gemm reads the weight with transB=1 instead. */
static const ct_graph_node *weight_transpose(onnx_builder *b, int id) {
    if (id < 0 || b->producer[id] < 0) return NULL;
    const ct_graph_node *t = ct_graph_node_at(b->g, b->producer[id]);
    if (strcmp(t->schema->name, "transpose") || ob_in_value(b, t, 0)->ndim != 2) return NULL;
    ct_graph_value_kind k = ob_in_value(b, t, 0)->kind;
    return k == CT_GRAPH_PARAM || k == CT_GRAPH_BUFFER || k == CT_GRAPH_CONST ? t : NULL;
}

/* The consumers of a weight's transpose that read it as Gemm's B. */
static bool reads_as_gemm_b(const ct_graph_node *c, int id) {
    const char *op = c->schema->name;
    return (!strcmp(op, "addmm") && c->inputs[2] == id && c->inputs[1] != id) ||
           (!strcmp(op, "mm") && c->inputs[1] == id && c->inputs[0] != id);
}

bool onnx_folded(onnx_builder *b, int i) {
    const ct_graph_node *t = ct_graph_node_at(b->g, i);
    int id = t->outputs[0];
    if (!weight_transpose(b, id)) return false;
    for (int k = 0; k < ct_graph_num_outputs(b->g); k++)
        if (ct_graph_output(b->g, k) == id) return false;
    for (int c = i + 1; c < ct_graph_num_nodes(b->g); c++) {
        const ct_graph_node *cn = ct_graph_node_at(b->g, c);
        for (int k = 0; k < cn->n_inputs; k++)
            if (cn->inputs[k] == id && !reads_as_gemm_b(cn, id)) return false;
    }
    return true;
}

static bool emit_transpose(onnx_builder *b, const ct_graph_node *n, const char *type) {
    int64_t perm[CT_MAX_DIMS];
    int ndim = ob_in_value(b, n, 0)->ndim;
    transpose_perm(n, ndim, perm);
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0));
    return ob_attr_ints(b, node, "perm", perm, ndim);
}

/* addmm(self, mat1, mat2, beta, alpha) = Gemm(mat1, mat2, self); mm = Gemm without C
 * when mat2 is a weight's transpose (transB=1), MatMul otherwise. */
static bool emit_gemm(onnx_builder *b, const ct_graph_node *n, const char *type) {
    bool addmm = !strcmp(n->schema->name, "addmm");
    int a = addmm ? 1 : 0;
    const ct_graph_node *t = weight_transpose(b, n->inputs[a + 1]);
    if (t && !onnx_folded(b, b->producer[n->inputs[a + 1]])) t = NULL; /* also read elsewhere */
    if (!addmm && !t) return ob_node(b, "MatMul", ob_out(b, n, 0), ob_in(b, n, 0), ob_in(b, n, 1)) != NULL;
    const char *mat2 = t ? ob_in(b, t, 0) : ob_in(b, n, a + 1);
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, a), mat2, addmm ? ob_in(b, n, 0) : "");
    if (!node || (t && !ob_attr_int(b, node, "transB", 1))) return false;
    if (!addmm) return true;
    double alpha = ob_attr(n, "alpha")->f, beta = ob_attr(n, "beta")->f;
    return (alpha == 1 || ob_attr_float(b, node, "alpha", alpha)) &&
           (beta == 1 || ob_attr_float(b, node, "beta", beta));
}

/* baddbmm(self, b1, b2, beta, alpha) = beta self + alpha b1 @ b2 */
static bool emit_baddbmm(onnx_builder *b, const ct_graph_node *n, const char *type) {
    ct_dtype dt = ob_out_value(b, n, 0)->dtype;
    double alpha = ob_attr(n, "alpha")->f, beta = ob_attr(n, "beta")->f;
    const char *p = ob_op(b, type, ob_in(b, n, 1), ob_in(b, n, 2)), *s = ob_in(b, n, 0);
    if (alpha != 1) p = ob_op(b, "Mul", p, ob_const_scalar(b, dt, alpha));
    if (beta == 0) return to_out(b, n, p);
    if (beta != 1) s = ob_op(b, "Mul", s, ob_const_scalar(b, dt, beta));
    return ob_node(b, "Add", ob_out(b, n, 0), p, s) != NULL;
}

/* slice(dim, start, end, step): Slice with one axis. */
static bool emit_slice(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const ct_value *start = ob_attr(n, "start"), *end = ob_attr(n, "end");
    int64_t s = start->none ? 0 : start->i, e = end->none ? INT64_MAX : end->i;
    return ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), ob_const_ints(b, &s, 1), ob_const_ints(b, &e, 1),
                   ob_const_ints(b, (int64_t[]){ob_attr(n, "dim")->i}, 1),
                   ob_const_ints(b, (int64_t[]){ob_attr(n, "step")->i}, 1)) != NULL;
}

/* select(dim, index): Gather with a scalar index drops the dim. */
static bool emit_select(onnx_builder *b, const ct_graph_node *n, const char *type) {
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), ob_const_int(b, ob_attr(n, "index")->i));
    return ob_attr_int(b, node, "axis", ob_attr(n, "dim")->i);
}

/* index_select(self, dim, index): Gather; gather(self, dim, index): GatherElements. */
static bool emit_gather(onnx_builder *b, const ct_graph_node *n, const char *type) {
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), ob_in(b, n, 1));
    return ob_attr_int(b, node, "axis", ob_attr(n, "dim")->i);
}

/* embedding(weight, indices) = Gather(weight, indices, axis=0) */
static bool emit_embedding(onnx_builder *b, const ct_graph_node *n, const char *type) {
    return ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), ob_in(b, n, 1)) != NULL;
}

/* squeeze(): the static size-1 dims; squeeze(dim): that dim when its size is 1 (else
 * the input itself, as PyTorch).  Axes are an input from opset 13. */
static bool emit_squeeze(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const ct_graph_value *in = ob_in_value(b, n, 0);
    int64_t axes[CT_MAX_DIMS];
    int na = 0;
    if (has_attr(n, "dim")) {
        int64_t d = ob_dim(ob_attr(n, "dim")->i, in->ndim);
        if (in->ndim > 0 && (in->sizes[d] == 1 && !in->dynamic[d])) axes[na++] = d;
    } else {
        for (int d = 0; d < in->ndim; d++)
            if (in->sizes[d] == 1 && !in->dynamic[d]) axes[na++] = d;
    }
    if (!na) return emit_alias(b, n, type);
    return ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), ob_const_ints(b, axes, na)) != NULL;
}

static bool emit_unsqueeze(onnx_builder *b, const ct_graph_node *n, const char *type) {
    int64_t d = ob_dim(ob_attr(n, "dim")->i, ob_out_value(b, n, 0)->ndim);
    return ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), ob_const_ints(b, &d, 1)) != NULL;
}

/* cat(tensors, dim): Concat; stack: Concat of each unsqueezed. */
static bool emit_concat(onnx_builder *b, const ct_graph_node *n, const char *type) {
    ct_dtype dt = ob_out_value(b, n, 0)->dtype;
    bool stack = !strcmp(n->schema->name, "stack");
    int64_t dim = ob_dim(ob_attr(n, "dim")->i, ob_out_value(b, n, 0)->ndim);
    const char **in = ob_alloc(b, (n->n_inputs + 1) * sizeof *in);
    if (!in) return false;
    for (int i = 0; i < n->n_inputs; i++) {
        in[i] = ob_in_as(b, n, i, dt);
        if (stack) in[i] = ob_op(b, "Unsqueeze", in[i], ob_const_ints(b, &dim, 1));
    }
    const char *out = ob_out(b, n, 0);
    Onnx__NodeProto *node = ob_node_n(b, type, n->n_inputs, in, 1, &out);
    return ob_attr_int(b, node, "axis", dim);
}

/* split, split_with_sizes, unbind: Split (sizes as an input from opset 13). */
static bool emit_split(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const ct_graph_value *in = ob_in_value(b, n, 0);
    int64_t dim = ob_dim(ob_attr(n, "dim")->i, in->ndim);
    if (in->dynamic[dim]) return ob_fail(b, n, "splitting a dynamic dim is not supported");
    bool unbind = !strcmp(n->schema->name, "unbind");
    int64_t *sizes = ob_alloc(b, (n->n_outputs + 1) * sizeof *sizes);
    const char **outs = ob_alloc(b, (n->n_outputs + 1) * sizeof *outs);
    if (!sizes || !outs) return false;
    for (int k = 0; k < n->n_outputs; k++) {
        sizes[k] = unbind ? 1 : ob_out_value(b, n, k)->sizes[dim];
        outs[k] = unbind ? ob_tmp(b, "Split") : ob_out(b, n, k);
    }
    Onnx__NodeProto *node = ob_node_n(b, type, 2, OB_NAMES(ob_in(b, n, 0), ob_const_ints(b, sizes, n->n_outputs)),
                                      n->n_outputs, outs);
    if (!ob_attr_int(b, node, "axis", dim)) return false;
    for (int k = 0; unbind && k < n->n_outputs; k++)
        if (!ob_node(b, "Squeeze", ob_out(b, n, k), outs[k], ob_const_ints(b, &dim, 1))) return false;
    return true;
}

/* repeat(repeats): Tile (a repeat with more dims than the input first unsqueezes). */
static bool emit_repeat(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const ct_value *r = ob_attr(n, "repeats");
    const ct_graph_value *in = ob_in_value(b, n, 0);
    const char *x = ob_in(b, n, 0);
    if (r->ints.n > in->ndim) {
        int64_t s[CT_MAX_DIMS];
        int extra = r->ints.n - in->ndim;
        for (int d = 0; d < r->ints.n; d++) s[d] = d < extra ? 1 : in->sizes[d - extra];
        x = ob_op(b, "Reshape", x, ob_const_ints(b, s, r->ints.n));
    }
    return ob_node(b, type, ob_out(b, n, 0), x, ob_const_ints(b, r->ints.v, r->ints.n)) != NULL;
}

/* tril / triu(diagonal): Trilu (opset 14). */
static bool emit_trilu(onnx_builder *b, const ct_graph_node *n, const char *type) {
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), ob_const_int(b, ob_attr(n, "diagonal")->i));
    return ob_attr_int(b, node, "upper", !strcmp(n->schema->name, "triu"));
}

/* constant_pad_nd(pad, value): PyTorch's pad lists (begin, end) pairs from the last
 * dim; ONNX's Pad all begins, then all ends, from the first. */
static bool emit_pad(onnx_builder *b, const ct_graph_node *n, const char *type) {
    const ct_value *p = ob_attr(n, "pad");
    int ndim = ob_in_value(b, n, 0)->ndim;
    int64_t pads[2 * CT_MAX_DIMS] = {0};
    for (int i = 0; i < p->ints.n / 2; i++) {
        int d = ndim - 1 - i;
        pads[d] = p->ints.v[2 * i], pads[ndim + d] = p->ints.v[2 * i + 1];
    }
    const char *value = scalar_attr(b, n, "value", ob_in_value(b, n, 0)->dtype);
    return ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), ob_const_ints(b, pads, 2 * ndim), value) != NULL;
}

/* ---- the table ---- */
static const onnx_op_row rows[] = {
    /* pointwise */
    {"add", 13, emit_add_sub, "Add"},
    {"sub", 13, emit_add_sub, "Sub"},
    {"mul", 13, emit_binary, "Mul"},
    {"div", 13, emit_div, "Div"},
    {"pow", 13, emit_binary, "Pow"},
    {"pow_scalar", 13, emit_pow_scalar, "Pow"},
    {"rpow_scalar", 13, emit_rpow_scalar, "Pow"},
    {"maximum", 13, emit_binary, "Max"},
    {"minimum", 13, emit_binary, "Min"},
    {"eq", 13, emit_binary, "Equal"},
    {"ne", 13, emit_ne, "Equal"},
    {"lt", 13, emit_binary, "Less"},
    {"le", 13, emit_binary, "LessOrEqual"},
    {"gt", 13, emit_binary, "Greater"},
    {"ge", 13, emit_binary, "GreaterOrEqual"},
    {"logical_and", 13, emit_binary, "And"},
    {"logical_or", 13, emit_binary, "Or"},
    {"logical_xor", 13, emit_binary, "Xor"},
    {"where", 13, emit_where, "Where"},
    {"masked_fill", 13, emit_masked_fill, "Where"},
    {"masked_fill_tensor", 13, emit_masked_fill, "Where"},
    {"clamp", 13, emit_clip, "Clip"},
    {"hardtanh", 13, emit_clip, "Clip"},
    {"neg", 13, emit_unary, "Neg"},
    {"exp", 13, emit_unary, "Exp"},
    {"log", 13, emit_unary, "Log"},
    {"reciprocal", 13, emit_unary, "Reciprocal"},
    {"sqrt", 13, emit_unary, "Sqrt"},
    {"abs", 13, emit_unary, "Abs"},
    {"sign", 13, emit_unary, "Sign"},
    {"sin", 13, emit_unary, "Sin"},
    {"cos", 13, emit_unary, "Cos"},
    {"tanh", 13, emit_unary, "Tanh"},
    {"sigmoid", 13, emit_unary, "Sigmoid"},
    {"erf", 13, emit_unary, "Erf"},
    {"relu", 13, emit_unary, "Relu"},
    {"isnan", 13, emit_unary, "IsNaN"},
    {"isinf", 13, emit_unary, "IsInf"},
    {"logical_not", 13, emit_unary, "Not"},
    {"rsqrt", 13, emit_composite_unary, NULL},
    {"expm1", 13, emit_composite_unary, NULL},
    {"log1p", 13, emit_composite_unary, NULL},
    {"log2", 13, emit_composite_unary, NULL},
    {"leaky_relu", 13, emit_leaky_relu, "LeakyRelu"},
    {"elu", 13, emit_elu, "Elu"},
    {"gelu", 13, emit_gelu, NULL},
    {"silu", 13, emit_silu, "Mul"},
    {"softplus", 13, emit_softplus, "Softplus"},
    {"clone", 13, emit_alias, NULL},
    {"to_copy", 13, emit_to_copy, "Cast"},
    {"dropout", 13, emit_dropout, NULL},
    /* softmax and reductions */
    {"softmax", 13, emit_softmax, "Softmax"},
    {"log_softmax", 13, emit_softmax, "LogSoftmax"},
    {"sum", 13, emit_reduce, "ReduceSum"},
    {"mean", 13, emit_reduce, "ReduceMean"},
    {"prod", 13, emit_reduce, "ReduceProd"},
    {"amax", 13, emit_reduce, "ReduceMax"},
    {"amin", 13, emit_reduce, "ReduceMin"},
    {"max", 13, emit_reduce, "ReduceMax"},
    {"min", 13, emit_reduce, "ReduceMin"},
    {"logsumexp", 13, emit_reduce, "ReduceLogSumExp"},
    {"max_dim", 13, emit_reduce_dim, "ReduceMax"},
    {"min_dim", 13, emit_reduce_dim, "ReduceMin"},
    {"argmax", 13, emit_arg_reduce, "ArgMax"},
    {"argmin", 13, emit_arg_reduce, "ArgMin"},
    {"cumsum", 13, emit_cumsum, "CumSum"},
    /* views and shapes */
    {"view", 13, emit_view, "Reshape"},
    {"expand", 13, emit_expand, "Expand"},
    {"transpose", 13, emit_transpose, "Transpose"},
    {"permute", 13, emit_transpose, "Transpose"},
    {"slice", 13, emit_slice, "Slice"},
    {"select", 13, emit_select, "Gather"},
    {"index_select", 13, emit_gather, "Gather"},
    {"gather", 13, emit_gather, "GatherElements"},
    {"embedding", 13, emit_embedding, "Gather"},
    {"squeeze", 13, emit_squeeze, "Squeeze"},
    {"squeeze_dim", 13, emit_squeeze, "Squeeze"},
    {"unsqueeze", 13, emit_unsqueeze, "Unsqueeze"},
    {"cat", 13, emit_concat, "Concat"},
    {"stack", 13, emit_concat, "Concat"},
    {"split", 13, emit_split, "Split"},
    {"split_with_sizes", 13, emit_split, "Split"},
    {"unbind", 13, emit_split, "Split"},
    {"repeat", 13, emit_repeat, "Tile"},
    {"tril", 14, emit_trilu, "Trilu"},
    {"triu", 14, emit_trilu, "Trilu"},
    {"constant_pad_nd", 13, emit_pad, "Pad"},
    /* matrix products */
    {"mm", 13, emit_gemm, "Gemm"},
    {"addmm", 13, emit_gemm, "Gemm"},
    {"bmm", 13, emit_binary, "MatMul"},
    {"baddbmm", 13, emit_baddbmm, "MatMul"},
    {"mv", 13, emit_binary, "MatMul"},
    {"dot", 13, emit_binary, "MatMul"},
    /* layers (ops_nn.c, ops_rnn.c) */
    {"convolution", 13, onnx_emit_convolution, NULL},
    {"max_pool2d", 13, onnx_emit_max_pool, "MaxPool"},
    {"avg_pool2d", 13, onnx_emit_avg_pool, "AveragePool"},
    {"adaptive_avg_pool2d", 13, onnx_emit_adaptive_pool, "AveragePool"},
    {"adaptive_max_pool2d", 13, onnx_emit_adaptive_pool, "MaxPool"},
    {"batch_norm", 13, onnx_emit_batch_norm, "BatchNormalization"},
    {"layer_norm", 13, onnx_emit_layer_norm_decomposed, NULL},
    {"layer_norm", 17, onnx_emit_layer_norm, "LayerNormalization"},
    {"lstm", 13, onnx_emit_rnn, "LSTM"},
    {"gru", 13, onnx_emit_rnn, "GRU"},
    {"thnn_fused_lstm_cell", 13, onnx_emit_lstm_cell, NULL},
    {"thnn_fused_gru_cell", 13, onnx_emit_gru_cell, NULL},
};

const onnx_op_row *onnx_op_find(const char *op, int opset) {
    const onnx_op_row *best = NULL;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (!strcmp(rows[i].op, op) && rows[i].since <= opset && (!best || rows[i].since > best->since))
            best = &rows[i];
    return best;
}
