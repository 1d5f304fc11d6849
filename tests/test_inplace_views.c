/* In-place ops on views of tensors that require grad (PyTorch's CopySlices): values
 * and gradients against PyTorch (tests/fixtures/gen_inplace_views.py), the grad_fn
 * names, double backward, and the errors of the forbidden cases. */
#include <stdlib.h>

#include "ct_test.h"
#include "fixtures.h"
#include "fx_case.h"

/* ---- the scenarios of gen_inplace_views.py, one function each ------------------- */

typedef ct_tensor *(*scenario_fn)(ct_tensor **in);

static ct_tensor *slice_mul(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_mul_scalar_(ct_slice(b, 0, 1, 3, 1), 2);
    return b;
}

static ct_tensor *select_add(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_add_(ct_select(b, 1, 0), in[1]);
    return b;
}

static ct_tensor *narrow_copy(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_copy_(ct_narrow(b, 1, 1, 2), in[1]);
    return ct_mul(b, b);
}

static ct_tensor *transpose_slice_mul(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_mul_(ct_slice(ct_t(b), 0, 0, 2, 1), in[1]);
    return b;
}

static ct_tensor *view_fill(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_fill_(ct_slice(ct_view(b, CT_SHAPE(-1)), 0, 0, CT_END, 3), 1.5);
    return ct_mul(b, in[0]);
}

static ct_tensor *diagonal_zero(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_zero_(ct_as_strided(b, CT_SHAPE(4), CT_SHAPE(5), 0));
    return ct_mul(b, in[0]);
}

static ct_tensor *masked_fill(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    bool m[12] = {1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1};
    ct_masked_fill_(ct_slice(b, 0, 1, CT_END, 1), ct_tensor_bool(m, CT_SHAPE(3, 4)), -1.0);
    return ct_exp(b);
}

static ct_tensor *index_put(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    int64_t i[2] = {2, 0};
    ct_tensor *idx = ct_tensor_i64(i, CT_SHAPE(2));
    ct_index_put_(ct_slice(b, 1, 1, CT_END, 1), 1, &idx, in[1], false);
    return b;
}

static ct_tensor *clamp(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_clamp_(ct_slice(b, 1, 0, 2, 1), .min = CT_SOME(-0.5), .max = CT_SOME(0.5));
    return ct_mul(b, in[0]);
}

static ct_tensor *three_views(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_clamp_(ct_select(b, 0, 0), .min = CT_SOME(-0.2));
    ct_mul_(ct_select(b, 0, 2), ct_select(in[0], 1, 0));
    ct_relu_(ct_select(b, 1, 3));
    return b;
}

static ct_tensor *same_view_chain(ct_tensor **in) {
    ct_tensor *b = ct_mul_scalar(in[0], 1);
    ct_tensor *v = ct_slice(b, 0, 1, 3, 1);
    ct_mul_scalar_(v, 2);
    ct_add_(v, in[1]);
    ct_sub_(v, ct_select(in[0], 0, 0));
    ct_div_(v, in[1]);
    return b;
}

static ct_tensor *base_after_view(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_tensor *v = ct_slice(b, 0, 0, 2, 1);
    ct_mul_scalar_(b, 3);
    return ct_mul(v, in[1]);
}

static ct_tensor *other_view(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_tensor *v = ct_slice(b, 0, 0, 2, 1);
    ct_mul_(ct_slice(b, 0, 1, 3, 1), in[1]);
    return ct_mul_scalar(v, 1);
}

static ct_tensor *base_no_grad(ct_tensor **in) {
    ct_tensor *z = ct_zeros(CT_SHAPE(4, 4), .dtype = CT_F64);
    ct_add_(ct_slice(z, 0, 1, 3, 1), ct_mul_scalar(ct_slice(in[0], 0, 0, 2, 1), 2));
    return ct_mul(z, z);
}

static ct_tensor *div_saved_output(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_div_(ct_select(b, 0, 1), in[1]);
    return ct_mul_scalar(b, 1);
}

static ct_tensor *view_then_base_twice(ct_tensor **in) {
    ct_tensor *b = ct_clone(in[0]);
    ct_tensor *v = ct_select(b, 1, 1);
    ct_add_(b, in[1]);
    ct_mul_scalar_(v, 2);
    ct_mul_(b, in[0]);
    return ct_cat(CT_TENSORS(ct_view(b, CT_SHAPE(-1)), v), 0);
}

static const struct {
    const char *name;
    int n_in;
    scenario_fn f;
} scenarios[] = {
#define S(name, n) {#name, n, name}
    S(slice_mul, 1), S(select_add, 2), S(narrow_copy, 2), S(transpose_slice_mul, 2),
    S(view_fill, 1), S(diagonal_zero, 1), S(masked_fill, 1), S(index_put, 2), S(clamp, 1),
    S(three_views, 1), S(same_view_chain, 2), S(base_after_view, 2), S(other_view, 2),
    S(base_no_grad, 1), S(div_saved_output, 2), S(view_then_base_twice, 2),
#undef S
};

TEST(values_and_grads_match_pytorch) {
    fx_file *f = fx_load("inplace_views");
    if (!f) return;
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        CT_SCOPE {
            ct_tensor *in[2] = {NULL, NULL};
            fx_case_inputs(f, scenarios[i].name, scenarios[i].n_in, CT_F64, in);
            ct_tensor *y = scenarios[i].f(in);
            if (!y)
                ct_test_fail(__FILE__, __LINE__, "%s: %s", scenarios[i].name,
                             ct_last_error() ? ct_last_error() : "failed");
            else
                fx_case_check(f, scenarios[i].name, scenarios[i].n_in, in, y, CT_F64, 1e-12);
        }
    }
    fx_free(f);
}

/* ---- graph shape: the names PyTorch prints ---------------------------------------- */

static const char *fn_name(ct_tensor *t) { return ct_node_name(ct_grad_fn(t)); }

TEST(grad_fn_names_follow_pytorch) {
    ct_tensor *x = ct_randn(CT_SHAPE(4, 3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *b = ct_clone(x);
    ct_tensor *v = ct_slice(b, 0, 1, 3, 1);
    CHECK_STR_EQ(fn_name(v), "SliceBackward0");
    ct_mul_scalar_(v, 2);
    CHECK_STR_EQ(fn_name(b), "CopySlices");
    CHECK_STR_EQ(fn_name(v), "AsStridedBackward0");
    /* CopySlices takes the op's edges but the first, which goes to the base's history. */
    CHECK_INT_EQ(ct_node_num_next(ct_grad_fn(b)), 2);
    CHECK_STR_EQ(ct_node_name(ct_node_next(ct_grad_fn(b), 0, NULL)), "CloneBackward0");
    CHECK(ct_node_next(ct_grad_fn(b), 1, NULL) == NULL);
    /* A view taken before the base changed sees the new history. */
    ct_tensor *w = ct_select(b, 0, 0);
    CHECK_STR_EQ(fn_name(w), "SelectBackward0");
    ct_add_scalar_(b, 1);
    CHECK_STR_EQ(fn_name(b), "AddBackward0");
    CHECK_STR_EQ(fn_name(w), "AsStridedBackward0");
    CHECK(ct_node_next(ct_grad_fn(w), 0, NULL) == ct_grad_fn(b));
    CHECK(!ct_is_leaf(w));
    /* A base that needed no grad gets one from the op's other input. */
    ct_tensor *z = ct_zeros(CT_SHAPE(3), .dtype = CT_F64);
    ct_tensor *zv = ct_slice(z, 0, 0, 2, 1);
    CHECK(!ct_requires_grad(z) && !ct_requires_grad(zv));
    ct_add_(zv, ct_slice(ct_select(x, 1, 1), 0, 0, 2, 1));
    CHECK_STR_EQ(fn_name(z), "CopySlices");
    CHECK_STR_EQ(fn_name(zv), "AsStridedBackward0");
    CHECK(ct_requires_grad(z) && ct_requires_grad(zv));
    /* Nothing requires grad: nothing is recorded. */
    ct_tensor *p = ct_zeros(CT_SHAPE(3), .dtype = CT_F64);
    ct_tensor *pv = ct_slice(p, 0, 0, 2, 1);
    ct_add_scalar_(pv, 1);
    CHECK(ct_grad_fn(p) == NULL && ct_grad_fn(pv) == NULL);
    CHECK_VALUES(p, 0, 1, 1, 0);
}

TEST(view_untouched_by_grad_free_inplace) {
    /* In no_grad mode the view keeps its history; the base's stays as it was. */
    ct_tensor *x = ct_randn(CT_SHAPE(3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *b = ct_mul_scalar(x, 2);
    ct_tensor *v = ct_slice(b, 0, 0, 2, 1);
    CT_NO_GRAD { ct_add_scalar_(v, 1); }
    CHECK_STR_EQ(fn_name(b), "MulBackward0");
    ct_backward(ct_sum(v));
    CHECK_VALUES(ct_grad(x), 0, 2, 2, 0);
}

TEST(backward_from_the_modified_view) {
    /* v = (x * 1)[1:3, 1:]; v *= 3; sum(v).backward(): x's gradient is 3 on v's region. */
    ct_tensor *x = ct_zeros(CT_SHAPE(3, 3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *b = ct_mul_scalar(x, 1);
    ct_tensor *v = ct_slice(ct_slice(b, 0, 1, 3, 1), 1, 1, CT_END, 1);
    ct_mul_scalar_(v, 3);
    CHECK(ct_backward(ct_sum(v)) == 0);
    CHECK_VALUES(ct_grad(x), 0, 0, 0, 0, 0, 3, 3, 0, 3, 3);
}

TEST(views_of_a_detached_tensor_stay_detached) {
    ct_tensor *x = ct_randn(CT_SHAPE(3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *d = ct_detach(ct_mul_scalar(x, 2));
    ct_tensor *v = ct_select(d, 0, 1);
    ct_add_scalar_(d, 1);
    CHECK(!ct_requires_grad(v) && ct_grad_fn(v) == NULL);
    /* and may be modified in place: d is the root, not x */
    ct_tensor *dx = ct_detach(x), *w = ct_select(dx, 0, 0);
    ct_add_scalar_(dx, 1);
    CHECK(ct_add_scalar_(w, 1) != NULL);
    CHECK(ct_grad_fn(dx) == NULL);
}

/* ---- double backward --------------------------------------------------------------- */

TEST(double_backward_through_copy_slices) {
    /* b = x * 1; b[0:2] *= x[1:3]  =>  sum(b * b): d/dx twice, compared with PyTorch's
     * numbers worked by hand: b0 = x0*x1, b1 = x1*x2, b2 = x2. */
    double xv[3] = {0.5, -1.5, 2.0};
    ct_tensor *x = ct_tensor_f64(xv, CT_SHAPE(3), .requires_grad = true);
    ct_tensor *b = ct_mul_scalar(x, 1);
    ct_mul_(ct_slice(b, 0, 0, 2, 1), ct_slice(x, 0, 1, 3, 1));
    ct_tensor *s = ct_sum(ct_mul(b, b));
    ct_tensor *g = NULL;
    CHECK(ct_autograd_grad(1, &s, 1, &x, &g, .create_graph = true) == 0);
    /* s = x0^2 x1^2 + x1^2 x2^2 + x2^2 */
    double x0 = xv[0], x1 = xv[1], x2 = xv[2];
    CHECK_VALUES(g, 1e-12, 2 * x0 * x1 * x1, 2 * x0 * x0 * x1 + 2 * x1 * x2 * x2,
                 2 * x1 * x1 * x2 + 2 * x2);
    ct_backward(ct_sum(g));
    /* row sums of the Hessian */
    CHECK_VALUES(ct_grad(x), 1e-12, 2 * x1 * x1 + 4 * x0 * x1,
                 4 * x0 * x1 + 2 * x0 * x0 + 2 * x2 * x2 + 4 * x1 * x2,
                 4 * x1 * x2 + 2 * x1 * x1 + 2);
}

TEST(backward_twice_through_copy_slices) {
    ct_tensor *x = ct_randn(CT_SHAPE(3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *y = ct_randn(CT_SHAPE(2), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *b = ct_mul_scalar(x, 1);
    ct_mul_(ct_slice(b, 0, 0, 2, 1), y);
    ct_tensor *s = ct_sum(b);
    CHECK(ct_backward(s) == 0);
    CHECK_ERROR(ct_backward(s), "Trying to backward through the graph a second time");
    /* add_ saves nothing; CopySlices refuses all the same, as PyTorch's does. */
    ct_tensor *c = ct_mul_scalar(x, 1);
    ct_add_(ct_slice(c, 0, 0, 2, 1), y);
    ct_tensor *s2 = ct_sum(c);
    CHECK(ct_backward(s2, .retain_graph = true) == 0);
    CHECK(ct_backward(s2) == 0);
    CHECK_ERROR(ct_backward(s2), "Trying to backward through the graph a second time");
}

/* ---- errors ------------------------------------------------------------------------ */

TEST(view_of_leaf_is_refused) {
    ct_tensor *x = ct_randn(CT_SHAPE(4, 3), .dtype = CT_F64, .requires_grad = true);
    CHECK_ERROR(ct_add_scalar_(ct_select(x, 0, 0), 1),
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation.");
    CHECK_ERROR(ct_fill_(ct_slice(x, 1, 0, 2, 1), 0), "a view of a leaf Variable");
    CHECK_ERROR(ct_copy_(ct_t(x), ct_zeros(CT_SHAPE(3, 4), .dtype = CT_F64)),
                "a view of a leaf Variable");
    /* Under no_grad it is how parameters are initialised. */
    CT_NO_GRAD { CHECK(ct_fill_(ct_select(x, 0, 0), 0) != NULL); }
    CHECK_CLOSE(ct_item(ct_sum(ct_select(x, 0, 0))), 0, 0);
}

TEST(view_made_in_no_grad_is_refused) {
    ct_tensor *x = ct_randn(CT_SHAPE(4, 3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *b = ct_clone(x);
    ct_tensor *u = NULL;
    CT_NO_GRAD { u = ct_select(b, 0, 0); }
    CHECK_ERROR(ct_add_scalar_(u, 1),
                "A view was created in no_grad mode and is being modified inplace with grad "
                "mode enabled. Given that this use case is ambiguous and error-prone, it is "
                "forbidden.");
    /* Also when only the op's other input requires grad; and views of such a view. */
    ct_tensor *z = ct_zeros(CT_SHAPE(3), .dtype = CT_F64), *zv = NULL;
    CT_NO_GRAD { zv = ct_slice(z, 0, 0, 2, 1); }
    CHECK_ERROR(ct_add_(zv, ct_slice(ct_select(x, 0, 0), 0, 0, 2, 1)),
                "A view was created in no_grad mode");
    CHECK_ERROR(ct_mul_scalar_(ct_slice(u, 0, 0, 2, 1), 2), "A view was created in no_grad mode");
    /* Nothing requires grad: allowed. */
    CHECK(ct_add_scalar_(zv, 1) != NULL);
}

TEST(multi_output_views_are_refused) {
    ct_tensor *x = ct_randn(CT_SHAPE(4, 3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *b = ct_clone(x);
    ct_tensor *parts[4];
    CHECK_INT_EQ(ct_unbind(b, 0, parts, 4), 4);
    CHECK_ERROR(ct_add_scalar_(parts[0], 1),
                "Output 0 of UnbindBackward0 is a view and is being modified inplace. This view "
                "is the output of a function that returns multiple views. Such functions do not "
                "allow the output views to be modified inplace. You should replace the inplace "
                "operation by an out-of-place one.");
    CHECK_INT_EQ(ct_split(b, 2, 0, parts, 4), 2);
    CHECK_ERROR(ct_mul_scalar_(parts[1], 2), "Output 1 of SplitBackward0 is a view");
    CHECK_INT_EQ(ct_chunk(b, 2, 0, parts, 4), 2);
    CHECK_ERROR(ct_relu_(parts[1]), "Output 1 of SplitBackward0 is a view");
    /* A base needing no grad, an input that does: no grad_fn to name. */
    ct_tensor *z = ct_zeros(CT_SHAPE(3, 2), .dtype = CT_F64);
    CHECK_INT_EQ(ct_unbind(z, 0, parts, 4), 3);
    CHECK_ERROR(ct_add_(parts[0], ct_slice(ct_select(x, 0, 0), 0, 0, 2, 1)),
                "A view was created in no_grad mode and is being modified inplace with grad "
                "mode enabled. This view is the output of a function that returns multiple "
                "views.");
    CHECK(ct_add_scalar_(parts[0], 1) != NULL); /* nothing requires grad */
}

TEST(writes_through_an_expanded_tensor_are_refused) {
    const char *msg = "unsupported operation: more than one element of the written-to tensor "
                      "refers to a single memory location. Please clone() the tensor before "
                      "performing the operation.";
    ct_tensor *row = ct_zeros(CT_SHAPE(1, 3));
    ct_tensor *e = ct_expand(row, CT_SHAPE(4, 3));
    CHECK_ERROR(ct_add_scalar_(e, 1), msg);
    CHECK_ERROR(ct_add_(e, ct_ones(CT_SHAPE(4, 3))), msg);
    CHECK_ERROR(ct_relu_(e), msg);
    CHECK_ERROR(ct_fill_(e, 2), msg);
    CHECK_ERROR(ct_copy_(e, ct_ones(CT_SHAPE(4, 3))), msg);
    CHECK_ERROR(ct_uniform_(e, 0, 1), msg);
    CHECK_ERROR(ct_masked_fill_(e, ct_ones(CT_SHAPE(4, 3), .dtype = CT_BOOL), 1), msg);
    CT_NO_GRAD { CHECK_ERROR(ct_mul_scalar_(e, 2), msg); }
    double *v = ct_test_values(row); /* nothing was written */
    CHECK(v && v[0] == 0 && v[1] == 0 && v[2] == 0);
    free(v);
    /* A stride of 0 over a dim of size 1 writes each element once: allowed. */
    CHECK(ct_add_scalar_(ct_expand(ct_zeros(CT_SHAPE(3)), CT_SHAPE(1, 3)), 1) != NULL);
    CHECK(ct_add_scalar_(ct_clone(e), 1) != NULL);
}
