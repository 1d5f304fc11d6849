/* Views, joins and shaping ops: values and gradients against PyTorch (fixtures from
 * tests/fixtures/gen_shape.py), view semantics, the list API, errors. */
#include <stdlib.h>

#include "ct_test.h"
#include "opcase.h"

/* ---- values and gradients against PyTorch: the OPCASE rows of file shape in
 * tests/opinfo.def (the generator reads the same rows) ---------------------------- */

/* Data movement is exact: values must match bitwise; gradients sum a few terms. */
static opcase_tol tolerances(ct_dtype dt) {
    return dt == CT_F64 ? (opcase_tol){0, 1e-12} : dt == CT_F32 ? (opcase_tol){1e-6, 1e-5}
                                                                 : (opcase_tol){0, 0};
}

TEST(values_and_grads_match_pytorch) { CHECK(opcase_check("shape", tolerances) > 40); }

/* ---- views share storage ---------------------------------------------------------- */

static ct_tensor *arange(int64_t n) {
    ct_tensor *t = ct_empty(CT_SHAPE(n), .dtype = CT_F64);
    double *p = ct_data_ptr(t);
    for (int64_t i = 0; i < n; i++) p[i] = (double)i;
    return t;
}

TEST(views_share_storage) {
    ct_tensor *x = ct_view(arange(12), CT_SHAPE(3, 4));
    ct_tensor *s = ct_slice(x, 1, 1, CT_END, 2); /* columns 1, 3 */
    CHECK_INT_EQ(ct_storage_offset(s), 1);
    CHECK_INT_EQ(ct_stride(s, 1), 2);
    CHECK_VALUES(s, 0, 1, 3, 5, 7, 9, 11);
    ct_fill_(ct_select(x, 0, -1), -1); /* the last row, through a view */
    CHECK_VALUES(ct_select(x, 1, 0), 0, 0, 4, -1);
    CHECK(ct_data_ptr(ct_narrow(x, 0, 1, 1)) == (double *)ct_data_ptr(x) + 4);
    CHECK(ct_data_ptr(ct_squeeze(ct_unsqueeze(x, 1))) == ct_data_ptr(x));
    CHECK(ct_data_ptr(ct_flatten(x, 0, -1)) == ct_data_ptr(x));
    CHECK(ct_data_ptr(ct_unflatten(x, 1, CT_SHAPE(2, -1))) == ct_data_ptr(x));
    CHECK(ct_data_ptr(ct_as_strided(x, CT_SHAPE(2), CT_SHAPE(5), 2)) == (double *)ct_data_ptr(x) + 2);
    ct_tensor *parts[4];
    CHECK_INT_EQ(ct_chunk(x, 2, 1, parts, 4), 2);
    CHECK(ct_data_ptr(parts[1]) == (double *)ct_data_ptr(x) + 2);
    CHECK_INT_EQ(ct_unbind(x, 0, parts, 4), 3);
    CHECK(ct_data_ptr(parts[2]) == (double *)ct_data_ptr(x) + 8);
    /* flatten of a non-viewable tensor copies */
    ct_tensor *f = ct_flatten(ct_t(x), 0, 1);
    CHECK(ct_is_contiguous(f));
    CHECK_VALUES(f, 0, 0, 4, -1, 1, 5, -1, 2, 6, -1, 3, 7, -1);
    /* flatten(d, d) is the input itself, as in PyTorch */
    CHECK(ct_flatten(x, 1, 1) == x);
}

TEST(slice_clamps_like_python) {
    ct_tensor *x = arange(5);
    CHECK_VALUES(ct_slice(x, 0, -100, 100, 1), 0, 0, 1, 2, 3, 4);
    CHECK_VALUES(ct_slice(x, 0, -2, CT_END, 1), 0, 3, 4);
    CHECK_INT_EQ(ct_numel(ct_slice(x, 0, 4, 2, 1)), 0);
    CHECK_INT_EQ(ct_numel(ct_slice(x, 0, 7, CT_END, 1)), 0);
    CHECK_VALUES(ct_slice(x, 0, 0, -1, 3), 0, 0, 3);
    CHECK_VALUES(ct_narrow(x, 0, -2, 2), 0, 3, 4);
}

TEST(squeeze_unsqueeze_flatten_shapes) {
    ct_tensor *x = ct_zeros(CT_SHAPE(1, 3, 1, 2));
    CHECK_INT_EQ(ct_ndim(ct_squeeze(x)), 2);
    CHECK_INT_EQ(ct_ndim(ct_squeeze_dim(x, 1)), 4); /* size 3: unchanged */
    CHECK_INT_EQ(ct_size(ct_squeeze_dim(x, -2), 2), 2);
    CHECK_INT_EQ(ct_size(ct_unsqueeze(x, -1), 4), 1);
    CHECK_INT_EQ(ct_ndim(ct_unsqueeze(ct_scalar_tensor(1.0), 0)), 1);
    ct_tensor *f = ct_flatten(x, 1, -1);
    CHECK_INT_EQ(ct_ndim(f), 2);
    CHECK_INT_EQ(ct_size(f, 1), 6);
    CHECK_INT_EQ(ct_ndim(ct_flatten(ct_scalar_tensor(2.0), 0, -1)), 1);
    ct_tensor *u = ct_unflatten(ct_zeros(CT_SHAPE(2, 6)), -1, CT_SHAPE(3, -1));
    CHECK_INT_EQ(ct_size(u, 2), 2);
}

TEST(grad_fn_names_are_pytorch_names) {
    ct_tensor *x = ct_ones(CT_SHAPE(2, 3, 4), .requires_grad = true);
    ct_tensor *p[4];
    struct { ct_tensor *t; const char *name; } c[] = {
        {ct_narrow(x, 0, 0, 1), "SliceBackward0"},
        {ct_slice(x, 2, 0, CT_END, 2), "SliceBackward0"},
        {ct_select(x, 0, 1), "SelectBackward0"},
        {ct_squeeze(x), "SqueezeBackward0"},
        {ct_squeeze_dim(x, 0), "SqueezeBackward1"},
        {ct_unsqueeze(x, 0), "UnsqueezeBackward0"},
        {ct_unflatten(x, 2, CT_SHAPE(2, 2)), "ViewBackward0"},
        {ct_as_strided(x, CT_SHAPE(2), CT_SHAPE(1), 0), "AsStridedBackward0"},
        {ct_cat(CT_TENSORS(x, x), 1), "CatBackward0"},
        {ct_stack(CT_TENSORS(x, x), 1), "StackBackward0"},
        {ct_repeat(x, CT_SHAPE(1, 1, 2)), "RepeatBackward0"},
        {ct_tile(x, CT_SHAPE(2)), "RepeatBackward0"},
        {ct_flip(x, CT_DIMS(0)), "FlipBackward0"},
        {ct_roll(x, CT_DIMS(1), CT_DIMS()), "RollBackward0"},
        {ct_tril(x, 0), "TrilBackward0"},
        {ct_triu(x, 0), "TriuBackward0"},
        {ct_pad(x, CT_DIMS(1, 1)), "ConstantPadNdBackward0"},
        {ct_pad(x, CT_DIMS(1, 1), .mode = CT_PAD_REFLECT), "ReflectionPad1DBackward0"},
        {ct_pad(x, CT_DIMS(1, 1, 1, 1), .mode = CT_PAD_REFLECT), "ReflectionPad2DBackward0"},
        {ct_pad(x, CT_DIMS(1, 1), .mode = CT_PAD_REPLICATE), "ReplicationPad1DBackward0"},
        {ct_pad(ct_unsqueeze(x, 0), CT_DIMS(1, 1, 1, 1, 1, 1), .mode = CT_PAD_REPLICATE),
         "ReplicationPad3DBackward0"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        CHECK_STR_EQ(ct_node_name(ct_grad_fn(c[i].t)), c[i].name);
    CHECK(ct_split(x, 2, 2, p, 4) == 2);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(p[1])), "SplitBackward0");
    CHECK(ct_grad_fn(p[0]) == ct_grad_fn(p[1])); /* one node, two outputs */
    CHECK(ct_split_with_sizes(x, 2, (int64_t[]){1, 3}, -1, p, 4) == 2);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(p[0])), "SplitWithSizesBackward0");
    CHECK(ct_chunk(x, 2, 1, p, 4) == 2);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(p[0])), "SplitBackward0");
    CHECK(ct_unbind(x, 0, p, 4) == 2);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(p[0])), "UnbindBackward0");
}

/* ---- the list API --------------------------------------------------------------------- */

TEST(split_chunk_unbind_counts) {
    ct_tensor *x = ct_view(arange(10), CT_SHAPE(2, 5));
    ct_tensor *p[8];
    CHECK_INT_EQ(ct_split(x, 2, 1, NULL, 0), 3); /* only counting */
    CHECK_INT_EQ(ct_split(x, 2, 1, p, 8), 3);
    CHECK_VALUES(p[2], 0, 4, 9);
    CHECK_INT_EQ(ct_chunk(x, 4, 1, p, 8), 3); /* ceil(5/4) = 2 per chunk: 3 chunks */
    CHECK_VALUES(p[1], 0, 2, 3, 7, 8);
    CHECK_INT_EQ(ct_chunk(ct_zeros(CT_SHAPE(0, 2)), 3, 0, p, 8), 3);
    CHECK_INT_EQ(ct_split(ct_zeros(CT_SHAPE(0, 2)), 0, 0, p, 8), 1);
    CHECK_INT_EQ(ct_split_with_sizes(x, 3, (int64_t[]){0, 4, 1}, 1, p, 8), 3);
    CHECK_INT_EQ(ct_numel(p[0]), 0);
    CHECK_VALUES(p[2], 0, 4, 9);
    CHECK_INT_EQ(ct_unbind(x, 1, p, 8), 5);
    CHECK_VALUES(p[3], 0, 3, 8);
    CHECK_ERROR(ct_unbind(x, 1, p, 2), "out has room for 2 tensors but the result has 5");
    CHECK_ERROR(ct_split(x, 1, 1, p, 4), "out has room for 4 tensors but the result has 5");
}

TEST(split_pieces_without_grad_get_zeros) {
    ct_tensor *x = ct_ones(CT_SHAPE(4, 2), .requires_grad = true);
    ct_tensor *p[2];
    CHECK(ct_chunk(x, 2, 0, p, 2) == 2);
    CHECK(ct_backward(ct_sum(ct_mul_scalar(p[1], 3))) == 0);
    CHECK_VALUES(ct_grad(x), 0, 0, 0, 0, 0, 3, 3, 3, 3);
}

TEST(cat_promotes_and_skips_legacy_empty) {
    ct_tensor *a = ct_tensor_i64(((int64_t[]){1, 2}), CT_SHAPE(1, 2));
    ct_tensor *b = ct_tensor_f32(((float[]){0.5f, 1.5f}), CT_SHAPE(1, 2));
    ct_tensor *e = ct_zeros(CT_SHAPE(0), .dtype = CT_F64);
    ct_tensor *y = ct_cat(CT_TENSORS(a, e, b), 0);
    CHECK(ct_dtype_of(y) == CT_F64); /* int64, float64 (the empty one counts), float32 */
    CHECK_INT_EQ(ct_size(y, 0), 2);
    CHECK_VALUES(y, 0, 1, 2, 0.5, 1.5);
    CHECK(ct_dtype_of(ct_stack(CT_TENSORS(a, a), 0)) == CT_I64);
    ct_tensor *only_empty = ct_cat(CT_TENSORS(e, e), 3);
    CHECK_INT_EQ(ct_numel(only_empty), 0);
    ct_tensor *ts[] = {a, a, a};
    CHECK_VALUES(ct_cat(3, ts, -1), 0, 1, 2, 1, 2, 1, 2);
    CHECK_VALUES(ct_stack(CT_TENSORS(ct_scalar_tensor(1.0), ct_scalar_tensor(2.0)), 0), 0, 1, 2);
}

TEST(cat_of_mixed_dtypes_returns_each_input_its_dtype) {
    ct_tensor *a = ct_ones(CT_SHAPE(2), .dtype = CT_F32, .requires_grad = true);
    ct_tensor *b = ct_ones(CT_SHAPE(3), .dtype = CT_F64, .requires_grad = true);
    ct_tensor *w = ct_tensor_f64(((double[]){1, 2, 3, 4, 5}), CT_SHAPE(5));
    ct_tensor *y = ct_cat(CT_TENSORS(a, b), 0);
    CHECK(ct_dtype_of(y) == CT_F64);
    CHECK(ct_backward(ct_sum(ct_mul(y, w))) == 0);
    CHECK(ct_dtype_of(ct_grad(a)) == CT_F32);
    CHECK_VALUES(ct_grad(a), 0, 1, 2);
    CHECK_VALUES(ct_grad(b), 0, 3, 4, 5);
}

/* ---- more values ---------------------------------------------------------------------- */

TEST(repeat_roll_tril_values) {
    ct_tensor *x = ct_view(arange(6), CT_SHAPE(2, 3));
    CHECK_VALUES(ct_repeat(ct_view(arange(2), CT_SHAPE(2, 1)), CT_SHAPE(2, 2)), 0,
                 0, 0, 1, 1, 0, 0, 1, 1);
    CHECK_INT_EQ(ct_numel(ct_repeat(x, CT_SHAPE(0, 1))), 0);
    CHECK_VALUES(ct_roll(x, CT_DIMS(1, -1), CT_DIMS(0, 1)), 0, 4, 5, 3, 1, 2, 0);
    CHECK_VALUES(ct_roll(x, CT_DIMS(1, 1), CT_DIMS(1, 1)), 0, 1, 2, 0, 4, 5, 3); /* adds up */
    CHECK_VALUES(ct_tril(x, 0), 0, 0, 0, 0, 3, 4, 0);
    CHECK_VALUES(ct_triu(x, 1), 0, 0, 1, 2, 0, 0, 5);
    CHECK_VALUES(ct_triu(ct_t(x), 0), 0, 0, 3, 0, 4, 0, 0); /* non-contiguous input */
    CHECK_VALUES(ct_tril(x, -5), 0, 0, 0, 0, 0, 0, 0);
    CHECK_VALUES(ct_flip(ct_t(x), CT_DIMS(1)), 0, 3, 0, 4, 1, 5, 2);
    CHECK_VALUES(ct_pad(arange(3), CT_DIMS(-1, 2), .value = 9), 0, 1, 2, 9, 9);
    ct_tensor *b = ct_tensor_bool(((bool[]){true, false}), CT_SHAPE(1, 2));
    CHECK_VALUES(ct_pad(b, CT_DIMS(1, 1), .mode = CT_PAD_REPLICATE), 0, 1, 1, 0, 0);
}

/* Large copies run in parallel; any thread count gives the same bits. */
TEST(large_copies_are_parallel_and_exact) {
    int64_t n = 300 * 400;
    ct_tensor *x = ct_view(arange(n), CT_SHAPE(300, 400));
    ct_tensor *r[2];
    int threads[] = {1, 4};
    for (int k = 0; k < 2; k++) {
        ct_set_num_threads(threads[k]);
        r[k] = ct_cat(CT_TENSORS(ct_flip(ct_t(x), CT_DIMS(0)),
                                 ct_roll(ct_pad(ct_t(x), CT_DIMS(2, -2), .mode = CT_PAD_REPLICATE),
                                         CT_DIMS(3), CT_DIMS(1)),
                                 ct_tril(ct_t(x), 3)), 0);
    }
    ct_set_num_threads(2);
    CHECK(ct_test_max_diff(r[0], r[1]) == 0);
    double *v = ct_test_values(r[0]);
    CHECK(v != NULL);
    if (v) {
        /* x^T[i][j] = 400 j + i.  Rows 0..399: x^T flipped upside down; rows 400..799:
         * x^T[i][clamp(j - 2)] rolled right by 3; rows 800..: tril(x^T, 3). */
        CHECK_CLOSE(v[0 * 300 + 5], 5 * 400 + 399, 0);
        CHECK_CLOSE(v[(400 + 0) * 300 + 3], 0 * 400 + 0, 0);
        CHECK_CLOSE(v[(400 + 7) * 300 + 10], 5 * 400 + 7, 0);
        CHECK_CLOSE(v[(800 + 2) * 300 + 5], 5 * 400 + 2, 0);
        CHECK_CLOSE(v[(800 + 2) * 300 + 6], 0, 0);
        free(v);
    }
}

/* ---- errors with PyTorch's wording -------------------------------------------------------- */

TEST(errors_have_pytorch_wording) {
    ct_tensor *x = ct_zeros(CT_SHAPE(2, 3));
    ct_tensor *p[4];
    CHECK_ERROR(ct_narrow(x, 2, 0, 1), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    CHECK_ERROR(ct_narrow(x, 1, 2, 2), "start (2) + length (2) exceeds dimension size (3).");
    CHECK_ERROR(ct_narrow(x, 1, -4, 1), "start out of range");
    CHECK_ERROR(ct_select(ct_zeros(CT_SHAPE(3)), 0, 5), "select(): index 5 out of range for tensor of size [3] at dimension 0");
    CHECK_ERROR(ct_select(ct_scalar_tensor(1.0), 0, 0), "select() cannot be applied to a 0-dim tensor.");
    CHECK_ERROR(ct_slice(x, 1, 0, 2, 0), "slice step must be positive");
    CHECK_ERROR(ct_squeeze_dim(x, 2), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    CHECK_ERROR(ct_unsqueeze(x, 3), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
    CHECK_ERROR(ct_flatten(x, 1, 0), "flatten() has invalid args: start_dim cannot come after end_dim");
    CHECK_ERROR(ct_unflatten(x, 1, CT_SHAPE(2, 2)), "Provided sizes [2, 2] don't multiply up to the size of dim 1 (3) in the input tensor");
    CHECK_ERROR(ct_as_strided(x, CT_SHAPE(2, 2), CT_SHAPE(1), 0), "mismatch in length of strides and shape");
    CHECK_ERROR(ct_as_strided(x, CT_SHAPE(2, 20), CT_SHAPE(1, 1), 0), "requiring a storage size of 84 are out of bounds for storage of size 24");
    CHECK_ERROR(ct_as_strided(x, CT_SHAPE(2), CT_SHAPE(-1), 0), "Negative strides are not supported");
    CHECK_ERROR(ct_cat(0, NULL, 0), "torch.cat(): expected a non-empty list of Tensors");
    CHECK_ERROR(ct_cat(CT_TENSORS(x, ct_zeros(CT_SHAPE(3, 3))), 1),
                "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list.");
    CHECK_ERROR(ct_cat(CT_TENSORS(x, ct_zeros(CT_SHAPE(2, 3, 1))), 1), "Tensors must have same number of dimensions: got 2 and 3");
    CHECK_ERROR(ct_cat(CT_TENSORS(x, ct_scalar_tensor(1.0)), 0), "zero-dimensional tensor (at position 1) cannot be concatenated");
    CHECK_ERROR(ct_cat(CT_TENSORS(x, x), 2), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    CHECK(ct_cat(CT_TENSORS(x, NULL), 0) == NULL); /* NULL in: NULL out */
    CHECK_ERROR(ct_stack(CT_TENSORS(x, ct_zeros(CT_SHAPE(2, 4))), 0),
                "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1");
    CHECK_ERROR(ct_stack(CT_TENSORS(x, x), 3), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
    CHECK_ERROR(ct_split(x, 0, 1, p, 4), "split_size can only be 0 if dimension size is 0, but got dimension size of 3");
    CHECK_ERROR(ct_split(x, -1, 1, p, 4), "split expects split_size be non-negative, but got split_size=-1");
    CHECK_ERROR(ct_split_with_sizes(x, 2, (int64_t[]){1, 1}, 1, p, 4),
                "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at dimension 1), but got split_sizes=[1, 1]");
    CHECK_ERROR(ct_chunk(x, 0, 1, p, 4), "chunk expects `chunks` to be greater than 0, got: 0");
    CHECK_ERROR(ct_unbind(ct_scalar_tensor(1.0), 0, p, 4), "Dimension specified as 0 but tensor has no dimensions");
    CHECK_ERROR(ct_repeat(x, CT_SHAPE(2)), "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
    CHECK_ERROR(ct_repeat(x, CT_SHAPE(2, -1)), "Trying to create tensor with negative dimension -3: [4, -3]");
    CHECK_ERROR(ct_flip(x, CT_DIMS(0, -2)), "dim 0 appears multiple times in the list of dims");
    CHECK_ERROR(ct_roll(x, CT_DIMS(1, 2), CT_DIMS(0)), "shifts and dimensions must align. shifts: 2, dims:1");
    CHECK_ERROR(ct_roll(x, CT_DIMS(), CT_DIMS()), "`shifts` required");
    CHECK_ERROR(ct_tril(ct_zeros(CT_SHAPE(3)), 0), "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
    CHECK_ERROR(ct_pad(x, CT_DIMS(1)), "Padding length must be divisible by 2");
    CHECK_ERROR(ct_pad(x, CT_DIMS(1, 1, 1, 1, 1, 1)), "Padding length too large");
    CHECK_ERROR(ct_pad(x, CT_DIMS(3, 3), .mode = CT_PAD_REFLECT),
                "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (3, 3) at dimension 1 of input [2, 3]");
    CHECK_ERROR(ct_pad(ct_zeros(CT_SHAPE(1, 2, 3)), CT_DIMS(1, 1, 2, 2), .mode = CT_PAD_REFLECT),
                "Argument #6: Padding size should be less than the corresponding input dimension");
    CHECK_ERROR(ct_pad(ct_zeros(CT_SHAPE(3)), CT_DIMS(1, 1), .mode = CT_PAD_REFLECT),
                "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
    CHECK_ERROR(ct_pad(ct_zeros(CT_SHAPE(2, 0)), CT_DIMS(1, 1), .mode = CT_PAD_REPLICATE),
                "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: [2, 0]");
    CHECK_ERROR(ct_pad(x, CT_DIMS(-3, -1)), "resulted in a negative output size");
}
