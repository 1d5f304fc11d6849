/* ONNX forms of the layers' ops: convolution, pooling, batch and layer norm (the op
 * table is in ops.c). */
#include <string.h>

#include "io/onnx/builder.h"

/* n spatial values from a list attribute, a one-element list repeated (PyTorch's
 * padding=1 for two spatial dims); def when the list is empty. */
static void spatial(const ct_value *v, int n, int64_t def, const int64_t *defs, int64_t *out) {
    for (int i = 0; i < n; i++)
        out[i] = v->ints.n == 0 ? (defs ? defs[i] : def) : v->ints.v[v->ints.n == 1 ? 0 : i];
}

/* ONNX's pads: the begins of every spatial dim, then the ends (PyTorch pads both). */
static bool pads_attr(onnx_builder *b, Onnx__NodeProto *node, const int64_t *p, int n) {
    int64_t pads[2 * CT_MAX_DIMS];
    for (int i = 0; i < n; i++) pads[i] = pads[n + i] = p[i];
    return ob_attr_ints(b, node, "pads", pads, 2 * n);
}

/* The output dims a second output (pooling's indices, batch norm's saved statistics)
 * would give: exporting one that a later node reads is not supported. */
static bool only_first_output(onnx_builder *b, const ct_graph_node *n) {
    for (int k = 1; k < n->n_outputs; k++) {
        int id = n->outputs[k];
        bool is_output = false;
        for (int i = 0; i < ct_graph_num_outputs(b->g); i++) is_output |= ct_graph_output(b->g, i) == id;
        if (b->uses[id] || is_output) return ob_fail(b, n, "output %d (%s) is read, which ONNX's form does not give", k,
                                                     n->schema->outputs[k].name[0] ? n->schema->outputs[k].name : "indices");
    }
    return true;
}

/* convolution: Conv, or ConvTranspose when transposed (weight [in, out/groups, k...]). */
bool onnx_emit_convolution(onnx_builder *b, const ct_graph_node *n, const char *type) {
    (void)type;
    const ct_graph_value *w = ob_in_value(b, n, 1);
    int ns = w->ndim - 2;
    bool transposed = ob_attr(n, "transposed")->b;
    int64_t kernel[CT_MAX_DIMS], stride[CT_MAX_DIMS], pad[CT_MAX_DIMS], dil[CT_MAX_DIMS], opad[CT_MAX_DIMS];
    for (int i = 0; i < ns; i++) kernel[i] = w->sizes[2 + i];
    spatial(ob_attr(n, "stride"), ns, 1, NULL, stride);
    spatial(ob_attr(n, "padding"), ns, 0, NULL, pad);
    spatial(ob_attr(n, "dilation"), ns, 1, NULL, dil);
    spatial(ob_attr(n, "output_padding"), ns, 0, NULL, opad);
    Onnx__NodeProto *node = ob_node(b, transposed ? "ConvTranspose" : "Conv", ob_out(b, n, 0), ob_in(b, n, 0),
                                    ob_in(b, n, 1), ob_in(b, n, 2));
    if (!ob_attr_ints(b, node, "kernel_shape", kernel, ns) || !ob_attr_ints(b, node, "strides", stride, ns) ||
        !pads_attr(b, node, pad, ns) || !ob_attr_ints(b, node, "dilations", dil, ns) ||
        !ob_attr_int(b, node, "group", ob_attr(n, "groups")->i))
        return false;
    bool any_opad = false;
    for (int i = 0; i < ns; i++) any_opad |= opad[i] != 0;
    return !transposed || !any_opad || ob_attr_ints(b, node, "output_padding", opad, ns);
}

/* max_pool2d_with_indices: MaxPool (the indices, PyTorch's flat per-plane ones, are
 * not exported); stride=[] is the kernel size. */
bool onnx_emit_max_pool(onnx_builder *b, const ct_graph_node *n, const char *type) {
    if (!only_first_output(b, n)) return false;
    int64_t k[2], s[2], p[2], d[2];
    spatial(ob_attr(n, "kernel_size"), 2, 1, NULL, k);
    spatial(ob_attr(n, "stride"), 2, 1, k, s);
    spatial(ob_attr(n, "padding"), 2, 0, NULL, p);
    spatial(ob_attr(n, "dilation"), 2, 1, NULL, d);
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0));
    return ob_attr_ints(b, node, "kernel_shape", k, 2) && ob_attr_ints(b, node, "strides", s, 2) &&
           pads_attr(b, node, p, 2) && ob_attr_ints(b, node, "dilations", d, 2) &&
           ob_attr_int(b, node, "ceil_mode", ob_attr(n, "ceil_mode")->b);
}

bool onnx_emit_avg_pool(onnx_builder *b, const ct_graph_node *n, const char *type) {
    if (!ob_attr(n, "divisor_override")->none) return ob_fail(b, n, "divisor_override is not supported");
    int64_t k[2], s[2], p[2];
    spatial(ob_attr(n, "kernel_size"), 2, 1, NULL, k);
    spatial(ob_attr(n, "stride"), 2, 1, k, s);
    spatial(ob_attr(n, "padding"), 2, 0, NULL, p);
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0));
    return ob_attr_ints(b, node, "kernel_shape", k, 2) && ob_attr_ints(b, node, "strides", s, 2) &&
           pads_attr(b, node, p, 2) && ob_attr_int(b, node, "ceil_mode", ob_attr(n, "ceil_mode")->b) &&
           ob_attr_int(b, node, "count_include_pad", ob_attr(n, "count_include_pad")->b);
}

/* adaptive pooling: to 1x1, GlobalAveragePool / GlobalMaxPool; to sizes that divide
 * the input's, a fixed pooling with kernel = stride = in / out (as torch.onnx). */
bool onnx_emit_adaptive_pool(onnx_builder *b, const ct_graph_node *n, const char *type) {
    if (!only_first_output(b, n)) return false;
    const ct_graph_value *in = ob_in_value(b, n, 0);
    int64_t out[2], k[2];
    spatial(ob_attr(n, "output_size"), 2, 1, NULL, out);
    bool is_max = !strcmp(type, "MaxPool");
    if (out[0] == 1 && out[1] == 1)
        return ob_node(b, is_max ? "GlobalMaxPool" : "GlobalAveragePool", ob_out(b, n, 0), ob_in(b, n, 0)) != NULL;
    for (int i = 0; i < 2; i++) {
        int d = in->ndim - 2 + i;
        if (in->dynamic[d] || in->sizes[d] % out[i])
            return ob_fail(b, n, "output size %lld of input size %lld is not supported (only divisors)",
                           (long long)out[i], (long long)in->sizes[d]);
        k[i] = in->sizes[d] / out[i];
    }
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0));
    return ob_attr_ints(b, node, "kernel_shape", k, 2) && ob_attr_ints(b, node, "strides", k, 2);
}

/* A constant of the given sizes, every element v (an absent affine weight or bias). */
static const char *filled(onnx_builder *b, ct_dtype dtype, const int64_t *sizes, int ndim, double v) {
    const char *r = NULL;
    ct_shape s = {.ndim = ndim};
    for (int d = 0; d < ndim; d++) s.d[d] = sizes[d];
    CT_SCOPE {
        ct_tensor *f = ct_full(s, v, .dtype = dtype);
        if (f) r = ob_const_tensor(b, NULL, f);
    }
    return r;
}

/* native_batch_norm in eval mode: BatchNormalization (ONNX's momentum is the running
 * statistics' weight: 1 - PyTorch's). */
bool onnx_emit_batch_norm(onnx_builder *b, const ct_graph_node *n, const char *type) {
    if (ob_attr(n, "training")->b)
        return ob_fail(b, n, "batch norm in training mode; export the module in eval mode");
    if (n->inputs[3] < 0 || n->inputs[4] < 0)
        return ob_fail(b, n, "batch norm without running statistics (track_running_stats=False)");
    if (!only_first_output(b, n)) return false;
    const ct_graph_value *x = ob_in_value(b, n, 0);
    int64_t c = x->sizes[1];
    const char *scale = n->inputs[1] >= 0 ? ob_in(b, n, 1) : filled(b, x->dtype, &c, 1, 1);
    const char *bias = n->inputs[2] >= 0 ? ob_in(b, n, 2) : filled(b, x->dtype, &c, 1, 0);
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), scale, bias, ob_in(b, n, 3), ob_in(b, n, 4));
    return ob_attr_float(b, node, "epsilon", ob_attr(n, "eps")->f) &&
           ob_attr_float(b, node, "momentum", 1 - ob_attr(n, "momentum")->f);
}

/* native_layer_norm at opset 17: LayerNormalization over the last dims. */
bool onnx_emit_layer_norm(onnx_builder *b, const ct_graph_node *n, const char *type) {
    if (!only_first_output(b, n)) return false;
    const ct_value *shape = ob_attr(n, "normalized_shape");
    const ct_graph_value *x = ob_in_value(b, n, 0);
    const char *scale = n->inputs[1] >= 0 ? ob_in(b, n, 1) : filled(b, x->dtype, shape->ints.v, shape->ints.n, 1);
    Onnx__NodeProto *node = ob_node(b, type, ob_out(b, n, 0), ob_in(b, n, 0), scale, ob_in(b, n, 2));
    return ob_attr_int(b, node, "axis", -shape->ints.n) && ob_attr_float(b, node, "epsilon", ob_attr(n, "eps")->f);
}

/* native_layer_norm before opset 17, as torch.onnx decomposes it:
 * d = x - mean(x), y = d / sqrt(mean(d^2) + eps) * weight + bias over the last dims. */
bool onnx_emit_layer_norm_decomposed(onnx_builder *b, const ct_graph_node *n, const char *type) {
    (void)type;
    if (!only_first_output(b, n)) return false;
    const ct_value *shape = ob_attr(n, "normalized_shape");
    ct_dtype dt = ob_in_value(b, n, 0)->dtype;
    int64_t axes[CT_MAX_DIMS];
    for (int i = 0; i < shape->ints.n; i++) axes[i] = i - shape->ints.n;
    Onnx__NodeProto *m1 = NULL, *m2 = NULL;
    const char *mean = ob_tmp(b, "ReduceMean"), *var = ob_tmp(b, "ReduceMean");
    if (!mean || !var || !(m1 = ob_node(b, "ReduceMean", mean, ob_in(b, n, 0))) ||
        !ob_attr_ints(b, m1, "axes", axes, shape->ints.n))
        return false;
    const char *d = ob_op(b, "Sub", ob_in(b, n, 0), mean);
    const char *sq = ob_op(b, "Pow", d, ob_const_scalar(b, dt, 2));
    if (!sq || !(m2 = ob_node(b, "ReduceMean", var, sq)) || !ob_attr_ints(b, m2, "axes", axes, shape->ints.n))
        return false;
    const char *y = ob_op(b, "Div", d, ob_op(b, "Sqrt", ob_op(b, "Add", var, ob_const_scalar(b, dt, ob_attr(n, "eps")->f))));
    if (n->inputs[1] >= 0) y = ob_op(b, "Mul", y, ob_in(b, n, 1));
    if (n->inputs[2] >= 0) y = ob_op(b, "Add", y, ob_in(b, n, 2));
    return ob_assign(b, n, 0, y);
}
