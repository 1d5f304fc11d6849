/* The ops' typed attribute structs (ops/attr_types.h), generated from schema.def at
 * build time: each matches its op's schema field by field, graph nodes keep them by
 * name, and ct_attrs_values turns one into the record hook's values (the trace of
 * ops that report them: test_ops_trace). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "autograd/node.h"
#include "ct_test.h"
#include "ops/trace.h"

/* The storage the generator must have chosen for schema attribute a. */
static bool storage_fits(const ct_schema_arg *a, ct_attr_storage st) {
    switch (a->kind) {
    case CT_ARG_INT: return st == (a->optional ? CT_ATTR_OPT_INT : CT_ATTR_INT);
    case CT_ARG_FLOAT:
    case CT_ARG_SCALAR: return st == (a->optional ? CT_ATTR_OPT_FLOAT : CT_ATTR_FLOAT);
    case CT_ARG_BOOL: return st == CT_ATTR_BOOL;
    case CT_ARG_DTYPE: return st == CT_ATTR_DTYPE;
    case CT_ARG_STR: return st == CT_ATTR_STR;
    case CT_ARG_DEVICE: return st == CT_ATTR_DEVICE;
    case CT_ARG_GENERATOR: return st == CT_ATTR_GENERATOR;
    case CT_ARG_INT_LIST: return st == CT_ATTR_INTS;
    case CT_ARG_FLOAT_LIST: return st == CT_ATTR_FLOATS;
    case CT_ARG_BOOL_LIST: return st == CT_ATTR_BOOLS;
    default: return false;
    }
}

TEST(every_op_struct_matches_its_schema) {
    int in_node = 0, with_attrs = 0;
    for (int op = 0; op < ct_num_ops(); op++) {
        const ct_schema *s = ct_op_schema(op);
        const ct_attrs_info *info = &ct_attrs_info_of[op];
        CHECK_INT_EQ(info->n_fields, s->n_attrs);
        CHECK((info->size == 0) == (s->n_attrs == 0));
        CHECK(info->in_node == (info->size > 0 && info->size <= CT_NODE_ATTRS_MAX));
        if (s->n_attrs) with_attrs++;
        if (info->in_node) in_node++;
        size_t end = 0;
        for (int i = 0; i < info->n_fields && i < s->n_attrs; i++) {
            const ct_attr_field *f = &info->fields[i];
            const ct_schema_arg *a = &s->attrs[i];
            CHECK_STR_EQ(f->name, a->name);
            CHECK_INT_EQ(f->kind, a->kind);
            if (!storage_fits(a, f->storage))
                ct_test_fail(__FILE__, __LINE__, "%s.%s (%s): storage %d", s->name, a->name,
                             a->type, (int)f->storage);
            /* in schema order, inside the struct */
            CHECK(f->offset >= end && f->offset < info->size);
            end = f->offset + 1;
            if (a->kind == CT_ARG_INT_LIST)
                CHECK_INT_EQ(f->cap, a->list_len >= 2 ? a->list_len : CT_MAX_DIMS);
        }
    }
    CHECK(with_attrs > 100);
    CHECK(in_node > 90); /* only the ops with several long lists are left out */
    CHECK(sizeof(ct_op_attrs) <= CT_NODE_ATTRS_MAX);
    CHECK(!ct_attrs_info_of[CT_OP_convolution].in_node && ct_attrs_info_of[CT_OP_add].in_node);
}

TEST(generated_structs_are_named_and_typed) {
    /* Written against the generated header: these fail to compile if it changes. */
    ct_add_attrs add = {.alpha = 2};
    ct_max_pool2d_attrs mp = {.kernel_size = {2, {3, 3}}, .ceil_mode = true};
    ct_clamp_attrs cl = {.min = {true, -1}};
    ct_sum_attrs sum = {.dim = {1, {0}}, .keepdim = true, .dtype = CT_F64};
    ct_gelu_attrs ge = {.approximate = "tanh"};
    CHECK_INT_EQ(ct_attrs_info_of[CT_OP_add].fields[0].offset, offsetof(ct_add_attrs, alpha));
    CHECK_INT_EQ(ct_attrs_info_of[CT_OP_max_pool2d].fields[4].offset,
                 offsetof(ct_max_pool2d_attrs, ceil_mode));
    CHECK_INT_EQ(ct_attrs_info_of[CT_OP_sum].size, sizeof sum);
    CHECK_INT_EQ(ct_attrs_info_of[CT_OP_max_pool2d].fields[0].cap, 2);

    ct_value v[6];
    ct_attrs_values(CT_OP_add, &add, v);
    CHECK(v[0].kind == CT_ARG_SCALAR && !v[0].none && v[0].f == 2);
    ct_attrs_values(CT_OP_max_pool2d, &mp, v);
    CHECK(v[0].kind == CT_ARG_INT_LIST && v[0].ints.n == 2 && v[0].ints.v[1] == 3);
    CHECK(v[1].ints.n == 0 && v[4].kind == CT_ARG_BOOL && v[4].b);
    ct_attrs_values(CT_OP_clamp, &cl, v);
    CHECK(!v[0].none && v[0].f == -1 && v[1].none);
    ct_attrs_values(CT_OP_sum, &sum, v);
    CHECK(!v[0].none && v[0].ints.n == 1 && v[1].b && v[2].dtype == CT_F64 && !v[2].none);
    sum.dim.n = -1;
    sum.dtype = CT_DTYPE_UNSET;
    ct_attrs_values(CT_OP_sum, &sum, v);
    CHECK(v[0].none && v[2].none);
    ct_attrs_values(CT_OP_gelu, &ge, v);
    CHECK(v[0].kind == CT_ARG_STR && !strcmp(v[0].s, "tanh"));
    ct_div_attrs div = {0};
    ct_attrs_values(CT_OP_div, &div, v);
    CHECK(v[0].kind == CT_ARG_STR && v[0].none);
    ct_randperm_attrs rp = {.n = 5, .generator = ct_default_generator(), .dtype = CT_I64};
    ct_attrs_values(CT_OP_randperm, &rp, v);
    CHECK(v[0].i == 5 && v[1].kind == CT_ARG_GENERATOR && v[1].none && v[3].none);
}

TEST(nodes_keep_attributes_by_name) {
    ct_tensor *x = ct_tensor_f32(((float[]){-1, 2, 3, -4, 5, 6}), CT_SHAPE(2, 3),
                                 .requires_grad = true);
    ct_tensor *y = ct_ones(CT_SHAPE(2, 3));
    CHECK_CLOSE(ct_add_alpha(x, y, 2.5)->grad_fn->attrs.add.alpha, 2.5, 0);
    CHECK_CLOSE(ct_leaky_relu(x, .negative_slope = CT_SOME(0.2))->grad_fn->attrs.leaky_relu.negative_slope,
                0.2, 0);
    CHECK_STR_EQ(ct_gelu(x, .approximate = CT_GELU_TANH)->grad_fn->attrs.gelu.approximate, "tanh");
    CHECK(ct_div_mode(x, y, CT_ROUND_TRUNC)->grad_fn->attrs.div.rounding_mode);
    CHECK(!ct_div(x, y)->grad_fn->attrs.div.rounding_mode);
    const ct_clamp_attrs *c = &ct_clamp(x, .max = CT_SOME(1))->grad_fn->attrs.clamp;
    CHECK(!c->min.some && c->max.some && c->max.v == 1);
    const ct_transpose_attrs *t = &ct_transpose(x, -1, 0)->grad_fn->attrs.transpose;
    CHECK(t->dim0 == -1 && t->dim1 == 0);
    CHECK(ct_permute(x, CT_DIMS(1, 0))->grad_fn->attrs.permute.dims.d[0] == 1);
    CHECK_INT_EQ(ct_triu(x, -1)->grad_fn->attrs.triu.diagonal, -1);
    CHECK(ct_sum(x, .dims = CT_DIMS(1), .keepdim = true)->grad_fn->state.reduce.mask == 2);
    ct_tensor *img = ct_ones(CT_SHAPE(1, 1, 4, 4), .requires_grad = true);
    const ct_max_pool2d_attrs *mp =
        &ct_max_pool2d(img, .kernel_size = CT_DIMS(2))->grad_fn->attrs.max_pool2d;
    CHECK(mp->kernel_size.n == 2 && mp->kernel_size.d[1] == 2 && mp->stride.d[0] == 2 &&
          mp->dilation.d[0] == 1 && !mp->ceil_mode);
    /* and the backward reads them back: d(x - 2.5 y)/dy = -2.5 */
    ct_tensor *b = ct_tensor_f32(((float[]){1, 2}), CT_SHAPE(2), .requires_grad = true);
    CHECK(ct_backward(ct_sum(ct_sub_alpha(ct_ones(CT_SHAPE(2)), b, 2.5))) == 0);
    CHECK_VALUES(ct_grad(b), 0, -2.5, -2.5);
}

/* The text of the macro call at p ("CT_TRACE(" ...): its top-level arguments counted,
 * the first copied into first. */
static int count_args(const char *p, char *first, size_t cap) {
    int depth = 0, n = 1;
    size_t len = 0;
    for (p = strchr(p, '(') + 1; *p && (depth > 0 || *p != ')'); p++) {
        if (*p == '(' || *p == '{' || *p == '[') depth++;
        if (*p == ')' || *p == '}' || *p == ']') depth--;
        if (depth == 0 && *p == ',') n++;
        if (n == 1 && len + 1 < cap && *p != ' ') first[len++] = *p;
    }
    first[len] = '\0';
    return n;
}

/* Every op reports its attributes through its typed struct (CT_TRACE_ATTRS): CT_TRACE,
 * which lists values one by one, is left to ops without attributes.  A CT_TRACE in
 * src/ops or src/autograd given values, or naming an op whose schema has attributes,
 * fails here; one that reaches the hook for such an op under another name fails
 * ct_trace_emit's schema check. */
TEST(trace_sites_report_attributes_through_their_structs) {
    static const char *const dirs[] = {"../src/ops", "../src/autograd"};
    int sites = 0;
    for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
        DIR *dir = opendir(dirs[d]);
        CHECK(dir != NULL);
        if (!dir) continue;
        for (struct dirent *e; (e = readdir(dir));) {
            size_t nl = strlen(e->d_name);
            if (nl < 3 || strcmp(e->d_name + nl - 2, ".c")) continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
            FILE *f = fopen(path, "r");
            CHECK(f != NULL);
            if (!f) continue;
            static char text[1 << 20];
            size_t got = fread(text, 1, sizeof text - 1, f);
            fclose(f);
            text[got] = '\0';
            for (const char *p = text; (p = strstr(p, "CT_TRACE(")); p++) {
                char first[128];
                int n = count_args(p, first, sizeof first);
                int line = 1;
                for (const char *q = text; q < p; q++) line += *q == '\n';
                sites++;
                if (n != 5)
                    ct_test_fail(path, line, "CT_TRACE given attribute values: use "
                                             "CT_TRACE_ATTRS with the op's struct");
                if (strncmp(first, "CT_OP_", 6)) continue;
                for (int op = 0; op < ct_num_ops(); op++)
                    if (!strcmp(ct_ops[op].name, first + 6) && ct_op_schema(op)->n_attrs)
                        ct_test_fail(path, line, "CT_TRACE of %s, whose schema has attributes: "
                                                 "use CT_TRACE_ATTRS", first);
            }
        }
        closedir(dir);
    }
    CHECK(sites > 10);
}
