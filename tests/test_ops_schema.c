/* Op schemas (ctorch/ops.h): every op of the table has one, parsed into inputs,
 * attributes and outputs with PyTorch's names, types and defaults. */
#include "ct_test.h"

static const ct_schema_arg *attr_named(const ct_schema *s, const char *name) {
    for (int i = 0; i < s->n_attrs; i++)
        if (!strcmp(s->attrs[i].name, name)) return &s->attrs[i];
    return NULL;
}

TEST(every_op_has_a_parsed_schema) {
    CHECK(ct_num_ops() >= 180);
    for (int op = 0; op < ct_num_ops(); op++) {
        const ct_schema *s = ct_op_schema(op);
        CHECK(s && s->op == op && s->name && s->aten_name && s->signature);
        if (!s) continue;
        CHECK(ct_op_schema_find(s->name) == s);
        /* Every argument has a name and a type; outputs are tensors. */
        for (int i = 0; i < s->n_inputs; i++)
            CHECK(s->inputs[i].name[0] && (s->inputs[i].kind == CT_ARG_TENSOR ||
                                           s->inputs[i].kind == CT_ARG_TENSOR_LIST));
        for (int i = 0; i < s->n_attrs; i++)
            CHECK(s->attrs[i].name[0] && s->attrs[i].kind != CT_ARG_TENSOR &&
                  s->attrs[i].kind != CT_ARG_TENSOR_LIST);
        for (int i = 0; i < s->n_outputs; i++)
            CHECK(s->outputs[i].kind == CT_ARG_TENSOR || s->outputs[i].kind == CT_ARG_TENSOR_LIST);
    }
}

TEST(known_signatures) {
    const ct_schema *add = ct_op_schema_find("add");
    CHECK_STR_EQ(add->aten_name, "add.Tensor");
    CHECK_STR_EQ(add->grad_fn, "AddBackward0");
    CHECK_INT_EQ(add->n_inputs, 2);
    CHECK_STR_EQ(add->inputs[0].name, "self");
    CHECK_STR_EQ(add->inputs[1].name, "other");
    CHECK_INT_EQ(add->n_attrs, 1);
    CHECK_STR_EQ(add->attrs[0].name, "alpha");
    CHECK_INT_EQ(add->attrs[0].kind, CT_ARG_SCALAR);
    CHECK_STR_EQ(add->attrs[0].default_value, "1");
    CHECK(add->attrs[0].kwarg_only);
    CHECK_INT_EQ(add->n_outputs, 1);

    const ct_schema *conv = ct_op_schema_find("convolution");
    CHECK_STR_EQ(conv->grad_fn, "ConvolutionBackward0");
    CHECK_INT_EQ(conv->n_inputs, 3);
    CHECK(conv->inputs[2].optional && !strcmp(conv->inputs[2].name, "bias"));
    CHECK_INT_EQ(conv->n_attrs, 6);
    const char *names[] = {"stride", "padding", "dilation", "transposed", "output_padding",
                           "groups"};
    for (int i = 0; i < 6; i++) CHECK_STR_EQ(conv->attrs[i].name, names[i]);
    CHECK_INT_EQ(conv->attrs[0].kind, CT_ARG_INT_LIST);
    CHECK_INT_EQ(conv->attrs[3].kind, CT_ARG_BOOL);
    CHECK(conv->attrs[0].default_value == NULL);

    const ct_schema *mp = ct_op_schema_find("max_pool2d");
    CHECK_STR_EQ(mp->aten_name, "max_pool2d_with_indices");
    CHECK_INT_EQ(mp->n_outputs, 2);
    const ct_schema_arg *ks = attr_named(mp, "kernel_size");
    CHECK(ks && ks->kind == CT_ARG_INT_LIST && ks->list_len == 2 && !ks->default_value);
    const ct_schema_arg *st = attr_named(mp, "stride");
    CHECK(st && !strcmp(st->default_value, "[]"));
    CHECK_STR_EQ(attr_named(mp, "ceil_mode")->default_value, "False");

    const ct_schema *sum = ct_op_schema_find("sum");
    const ct_schema_arg *dim = attr_named(sum, "dim");
    CHECK(dim && dim->kind == CT_ARG_INT_LIST && dim->optional && dim->list_len == 1);
    const ct_schema_arg *dt = attr_named(sum, "dtype");
    CHECK(dt && dt->kind == CT_ARG_DTYPE && dt->optional && dt->kwarg_only);

    const ct_schema *gelu = ct_op_schema_find("gelu");
    CHECK_STR_EQ(attr_named(gelu, "approximate")->default_value, "'none'");
    CHECK_INT_EQ(attr_named(gelu, "approximate")->kind, CT_ARG_STR);

    const ct_schema *eq = ct_op_schema_find("eq");
    CHECK(eq->grad_fn == NULL); /* not differentiable */

    const ct_schema *cat = ct_op_schema_find("cat");
    CHECK_INT_EQ(cat->inputs[0].kind, CT_ARG_TENSOR_LIST);
    const ct_schema *split = ct_op_schema_find("split");
    CHECK_INT_EQ(split->outputs[0].kind, CT_ARG_TENSOR_LIST);
    const ct_schema *copy = ct_op_schema_find("copy");
    CHECK(copy->inputs[0].is_mutable && !copy->inputs[1].is_mutable);
    const ct_schema *sgd = ct_op_schema_find("sgd_step");
    CHECK_INT_EQ(sgd->n_outputs, 0);
    const ct_schema *bn = ct_op_schema_find("batch_norm");
    CHECK_INT_EQ(bn->n_inputs, 5);
    CHECK_INT_EQ(bn->n_outputs, 3);
    CHECK_STR_EQ(attr_named(bn, "eps")->type, "float");
}

TEST(bad_lookups_are_errors) {
    CHECK_ERROR(ct_op_schema(-1), "ct_op_schema: op -1 is out of range");
    CHECK_ERROR(ct_op_schema(ct_num_ops()), "out of range");
    CHECK_ERROR(ct_op_schema_find("no_such_op"), "no op is named \"no_such_op\"");
    CHECK_ERROR(ct_op_schema_find(NULL), "ct_op_schema_find: name is NULL");
}

TEST(values_print_as_pytorch_writes_them) {
    char buf[64];
    ct_value v = {.kind = CT_ARG_INT_LIST, .ints = {2, (const int64_t[]){1, 1}}};
    ct_value_format(&v, buf, sizeof buf);
    CHECK_STR_EQ(buf, "[1, 1]");
    ct_value f = {.kind = CT_ARG_FLOAT, .f = 1e-5};
    ct_value_format(&f, buf, sizeof buf);
    CHECK_STR_EQ(buf, "1e-05");
    f.f = 2;
    ct_value_format(&f, buf, sizeof buf);
    CHECK_STR_EQ(buf, "2.0");
    f.f = 20; /* not %g's 2e+01 */
    ct_value_format(&f, buf, sizeof buf);
    CHECK_STR_EQ(buf, "20.0");
    f.f = 1.5e6;
    ct_value_format(&f, buf, sizeof buf);
    CHECK_STR_EQ(buf, "1500000.0");
    f.f = 1e16;
    ct_value_format(&f, buf, sizeof buf);
    CHECK_STR_EQ(buf, "1e+16");
    f.f = -123456.0;
    ct_value_format(&f, buf, sizeof buf);
    CHECK_STR_EQ(buf, "-123456.0");
    ct_value s = {.kind = CT_ARG_SCALAR, .f = 0.01};
    ct_value_format(&s, buf, sizeof buf);
    CHECK_STR_EQ(buf, "0.01");
    ct_value b = {.kind = CT_ARG_BOOL, .b = false};
    ct_value_format(&b, buf, sizeof buf);
    CHECK_STR_EQ(buf, "False");
    ct_value d = {.kind = CT_ARG_DTYPE, .dtype = CT_F32};
    ct_value_format(&d, buf, sizeof buf);
    CHECK_STR_EQ(buf, "torch.float32");
    ct_value n = {.kind = CT_ARG_INT, .none = true};
    ct_value_format(&n, buf, sizeof buf);
    CHECK_STR_EQ(buf, "None");
    ct_value str = {.kind = CT_ARG_STR, .s = "mean"};
    ct_value_format(&str, buf, sizeof buf);
    CHECK_STR_EQ(buf, "'mean'");
    char small[4]; /* truncated, still terminated */
    CHECK_INT_EQ(ct_value_format(&v, small, sizeof small), 6);
    CHECK_STR_EQ(small, "[1,");
}
