/* ct_onnx_export's ModelProto, read back with protobuf-c: opset and IR version, the
 * weights as initializers under their state-dict names, the nodes the op table
 * writes (Gemm with transB=1 for Linear, LayerNormalization at 17 and its
 * decomposition before, Trilu from opset 14), symbolic dims, eval-mode export, and
 * the errors (an op with no ONNX form at the opset, a bad opset, bad dynamic_axes).
 * Running the models is test_onnx_runtime's. */
#include <stdlib.h>
#include <unistd.h>

#include "ct_test.h"
#include "onnx/load_model.h"

static const char *model_path(void) {
    static char path[512];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/ct_test_onnx_export_%d.onnx", dir && dir[0] ? dir : "/tmp", (int)getpid());
    return path;
}

static Onnx__ModelProto *load(const char *path) { return onnx_test_load(path); }

/* How many nodes of op_type the graph has. */
static int count_ops(const Onnx__ModelProto *m, const char *op_type) {
    int k = 0;
    for (size_t i = 0; i < m->graph->n_node; i++) k += !strcmp(m->graph->node[i]->op_type, op_type);
    return k;
}

static const Onnx__NodeProto *find_op(const Onnx__ModelProto *m, const char *op_type) {
    for (size_t i = 0; i < m->graph->n_node; i++)
        if (!strcmp(m->graph->node[i]->op_type, op_type)) return m->graph->node[i];
    return NULL;
}

static const Onnx__AttributeProto *find_attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; n && i < n->n_attribute; i++)
        if (!strcmp(n->attribute[i]->name, name)) return n->attribute[i];
    return NULL;
}

static bool has_init(const Onnx__ModelProto *m, const char *name) {
    for (size_t i = 0; i < m->graph->n_initializer; i++)
        if (!strcmp(m->graph->initializer[i]->name, name)) return true;
    return false;
}

TEST(linear_is_gemm_with_state_dict_initializers_and_a_dynamic_batch) {
    ct_module *model = ct_sequential(CT_MODULES(ct_nn_linear(4, 3), ct_nn_relu(), ct_nn_linear(3, 2)));
    ct_module_eval(model);
    ct_tensor *x = ct_randn(CT_SHAPE(5, 4));
    const char *in[] = {"features"}, *out[] = {"scores"};
    ct_onnx_dynamic_axis axes[] = {{"features", 0, "batch"}, {"scores", 0, NULL}};
    CHECK(ct_onnx_export(model, &x, 1, model_path(), .opset = 15, .input_names = in, .output_names = out,
                         .dynamic_axes = axes, .n_dynamic_axes = 2) == 0);
    Onnx__ModelProto *m = load(model_path());
    CHECK(m != NULL);
    if (!m) return;
    CHECK_INT_EQ(m->ir_version, 8);
    CHECK_INT_EQ(m->n_opset_import, 1);
    CHECK_INT_EQ(m->opset_import[0]->version, 15);
    CHECK_STR_EQ(m->producer_name, "ctorch");
    CHECK_INT_EQ(count_ops(m, "Gemm"), 2);
    CHECK_INT_EQ(count_ops(m, "Relu"), 1);
    CHECK_INT_EQ(count_ops(m, "Transpose"), 0); /* folded into transB */
    CHECK_INT_EQ(find_attr(find_op(m, "Gemm"), "transB") ? find_attr(find_op(m, "Gemm"), "transB")->i : 0, 1);
    CHECK_INT_EQ(m->graph->n_initializer, 4);
    CHECK(has_init(m, "0.weight") && has_init(m, "0.bias") && has_init(m, "2.weight") && has_init(m, "2.bias"));
    CHECK_INT_EQ(m->graph->n_input, 1);
    CHECK_STR_EQ(m->graph->input[0]->name, "features");
    const Onnx__TensorShapeProto *s = m->graph->input[0]->type->tensor_type->shape;
    CHECK_INT_EQ(s->n_dim, 2);
    CHECK_STR_EQ(s->dim[0]->dim_param, "batch");
    CHECK_INT_EQ(s->dim[1]->dim_value, 4);
    CHECK_STR_EQ(m->graph->output[0]->name, "scores");
    CHECK_STR_EQ(m->graph->output[0]->type->tensor_type->shape->dim[0]->dim_param, "scores_dim0");
    /* The last node writes the output under its name. */
    const Onnx__NodeProto *last = m->graph->node[m->graph->n_node - 1];
    CHECK_STR_EQ(last->output[0], "scores");
    onnx__model_proto__free_unpacked(m, NULL);
    remove(model_path());
}

TEST(layer_norm_is_one_node_at_opset_17_and_decomposed_before) {
    ct_module *ln = ct_nn_layer_norm(CT_SHAPE(6));
    ct_tensor *x = ct_randn(CT_SHAPE(2, 3, 6));
    for (int opset = 13; opset <= 17; opset += 4) {
        CHECK(ct_onnx_export(ln, &x, 1, model_path(), .opset = opset) == 0);
        Onnx__ModelProto *m = load(model_path());
        CHECK(m != NULL);
        if (!m) continue;
        CHECK_INT_EQ(count_ops(m, "LayerNormalization"), opset == 17);
        CHECK_INT_EQ(count_ops(m, "ReduceMean"), opset == 17 ? 0 : 2);
        CHECK(has_init(m, "weight") && has_init(m, "bias"));
        CHECK_STR_EQ(m->graph->input[0]->name, "input_0");
        CHECK_STR_EQ(m->graph->output[0]->name, "output_0");
        onnx__model_proto__free_unpacked(m, NULL);
    }
    remove(model_path());
}

/* A module whose forward is one function of its input. */
typedef struct {
    ct_tensor *(*fn)(ct_tensor *);
} fn_module;
static ct_tensor *fn_forward(ct_module *m, ct_tensor *x) { return ((fn_module *)ct_module_state(m))->fn(x); }
static const ct_module_class FN = {.name = "Fn", .forward = fn_forward};
static ct_module *fn_new(ct_tensor *(*fn)(ct_tensor *)) {
    ct_module *m = ct_module_new(&FN, sizeof(fn_module));
    ((fn_module *)ct_module_state(m))->fn = fn;
    return m;
}
static ct_tensor *lower(ct_tensor *x) { return ct_tril(x, 0); }
static ct_tensor *nonzero(ct_tensor *x) { return ct_nonzero(x); }

TEST(an_op_without_an_onnx_form_names_the_op_and_the_opset) {
    ct_module *m = fn_new(lower);
    ct_tensor *x = ct_randn(CT_SHAPE(3, 3));
    CHECK(ct_onnx_export(m, &x, 1, model_path(), .opset = 13) == -1);
    CHECK_STR_EQ(ct_last_error(),
                 "ct_onnx_export: Exporting the operator 'tril' to ONNX opset version 13 is not supported");
    ct_clear_error();
    CHECK(ct_onnx_export(m, &x, 1, model_path(), .opset = 14) == 0); /* Trilu */
    Onnx__ModelProto *p = load(model_path());
    CHECK(p && count_ops(p, "Trilu") == 1);
    if (p) onnx__model_proto__free_unpacked(p, NULL);
    ct_module *nz = fn_new(nonzero);
    CHECK(ct_onnx_export(nz, &x, 1, model_path()) == -1);
    CHECK(strstr(ct_last_error(), "'nonzero' to ONNX opset version 17 is not supported") != NULL);
    ct_clear_error();
    remove(model_path());
}

TEST(bad_options_are_errors) {
    ct_module *m = ct_nn_linear(2, 2);
    ct_module_eval(m);
    ct_tensor *x = ct_randn(CT_SHAPE(1, 2));
    CHECK(ct_onnx_export(m, &x, 1, model_path(), .opset = 12) == -1);
    CHECK_STR_EQ(ct_last_error(), "ct_onnx_export: opset_version 12 is not supported (ctorch writes opsets 13 to 17)");
    ct_clear_error();
    CHECK(ct_onnx_export(m, &x, 1, model_path(), .opset = 18) == -1);
    ct_clear_error();
    ct_onnx_dynamic_axis bad[] = {{"nope", 0, "batch"}};
    CHECK(ct_onnx_export(m, &x, 1, model_path(), .dynamic_axes = bad, .n_dynamic_axes = 1) == -1);
    CHECK_STR_EQ(ct_last_error(), "ct_onnx_export: dynamic_axes names 'nope', which is neither an input nor an output");
    ct_clear_error();
    ct_onnx_dynamic_axis far[] = {{"input_0", 2, "batch"}};
    CHECK(ct_onnx_export(m, &x, 1, model_path(), .dynamic_axes = far, .n_dynamic_axes = 1) == -1);
    CHECK(strstr(ct_last_error(), "dim 2") != NULL);
    ct_clear_error();
    CHECK(ct_onnx_export(NULL, &x, 1, model_path()) == -1);
    ct_clear_error();
    CHECK(ct_onnx_export_graph(NULL, model_path()) == -1);
    ct_clear_error();
}

TEST(a_module_in_train_mode_is_exported_in_eval_mode_and_left_in_train_mode) {
    ct_module *m = ct_sequential(CT_MODULES(ct_nn_linear(3, 3), ct_nn_dropout(0.5)));
    ct_tensor *x = ct_randn(CT_SHAPE(2, 3));
    CHECK(ct_module_is_training(m));
    CHECK(ct_onnx_export(m, &x, 1, model_path()) == 0);
    CHECK(ct_module_is_training(m));
    Onnx__ModelProto *p = load(model_path());
    CHECK(p != NULL);
    if (p) {
        CHECK_INT_EQ(p->graph->n_node, 1); /* Gemm; the dropout is gone */
        CHECK_STR_EQ(p->graph->node[0]->op_type, "Gemm");
        onnx__model_proto__free_unpacked(p, NULL);
    }
    remove(model_path());
}

TEST(a_traced_graph_exports_with_its_own_names) {
    ct_module *m = ct_nn_linear(3, 2, .bias = false);
    ct_module_eval(m);
    ct_tensor *x = ct_randn(CT_SHAPE(4, 3));
    ct_dynamic_dim batch = {0, 0};
    const char *in[] = {"x"}, *out[] = {"y"};
    ct_graph *g = ct_trace(m, &x, 1, .input_names = in, .output_names = out, .dynamic = &batch, .n_dynamic = 1);
    CHECK(g != NULL);
    if (!g) return;
    CHECK(ct_onnx_export_graph(g, model_path(), .opset = 13) == 0);
    Onnx__ModelProto *p = load(model_path());
    CHECK(p != NULL);
    if (p) {
        CHECK_STR_EQ(p->graph->input[0]->name, "x");
        CHECK_STR_EQ(p->graph->output[0]->name, "y");
        CHECK_STR_EQ(p->graph->input[0]->type->tensor_type->shape->dim[0]->dim_param, "x_dim0");
        CHECK_INT_EQ(count_ops(p, "Gemm"), 1); /* no bias: Gemm without C, transB=1 */
        CHECK_INT_EQ(find_op(p, "Gemm") ? (int)find_op(p, "Gemm")->n_input : 0, 2);
        onnx__model_proto__free_unpacked(p, NULL);
    }
    remove(model_path());
}
