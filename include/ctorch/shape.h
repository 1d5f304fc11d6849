/* ctorch/shape.h — views, joins, splits and shape manipulation.
 *
 * Views share the input's storage (no copy): view, expand, transpose, permute,
 * narrow, slice, select, squeeze, unsqueeze, unflatten, as_strided, and the pieces of
 * split, chunk and unbind.  reshape and flatten copy only when the input's strides
 * make a view impossible.  cat, stack, repeat, tile, flip, roll, tril, triu and pad
 * return new tensors.  Negative dims count from the end, as in PyTorch.
 *
 * Lists of tensors go in as a count and an array; CT_TENSORS(a, b, c) writes both:
 *
 *     ct_tensor *y = ct_cat(CT_TENSORS(a, b), 0);       // torch.cat([a, b], 0)
 *     ct_tensor *ts[] = {a, b, a};
 *     ct_tensor *z = ct_stack(3, ts, 0);                // [3, 3]
 *
 * Lists come out through an array the caller provides.  Functions producing them
 * return how many tensors the result has; given out == NULL they only count:
 *
 *     int n = ct_chunk(x, 3, 0, NULL, 0);                // how many pieces
 *     ct_tensor *parts[3];
 *     ct_chunk(x, 3, 0, parts, 3);                       // x.chunk(3, 0)
 *
 * Each piece is registered with the innermost scope like any op result.  An out array
 * too small for the result is an error (-1) and nothing is written. */
#ifndef CTORCH_SHAPE_H
#define CTORCH_SHAPE_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* One size may be -1 (inferred). */
ct_tensor *ct_view(ct_tensor *t, ct_shape shape);
ct_tensor *ct_reshape(ct_tensor *t, ct_shape shape);
/* Sizes of -1 keep the input's size; new leading dims are broadcast (stride 0). */
ct_tensor *ct_expand(ct_tensor *t, ct_shape shape);
ct_tensor *ct_expand_as(ct_tensor *t, ct_tensor *other);  /* ct_expand to other's shape */
ct_tensor *ct_transpose(ct_tensor *t, int64_t dim0, int64_t dim1); /* dims dim0 and dim1 swapped */
ct_tensor *ct_t(ct_tensor *t); /* 2-D transpose (0-D and 1-D returned as is) */
ct_tensor *ct_permute(ct_tensor *t, ct_dims dims); /* dim i of the result is dims[i] of t */
#define ct_view(t, shape) CT_AT(ct_view(t, shape))
#define ct_reshape(t, shape) CT_AT(ct_reshape(t, shape))
#define ct_expand(t, shape) CT_AT(ct_expand(t, shape))
#define ct_expand_as(t, other) CT_AT(ct_expand_as(t, other))
#define ct_transpose(t, dim0, dim1) CT_AT(ct_transpose(t, dim0, dim1))
#define ct_t(t) CT_AT(ct_t(t))
#define ct_permute(t, dims) CT_AT(ct_permute(t, dims))

/* ---- more views (no copy) ------------------------------------------------ */

/* x.narrow(dim, start, length): start may be negative (counted from the end). */
ct_tensor *ct_narrow(ct_tensor *t, int64_t dim, int64_t start, int64_t length);
/* x[..., start:end:step, ...] along dim, step > 0.  start and end are clamped to the
 * size like Python slices; negative ones count from the end.  CT_END (INT64_MAX) for
 * "to the end": x[:, ::2] is ct_slice(x, 1, 0, CT_END, 2). */
#define CT_END INT64_MAX
ct_tensor *ct_slice(ct_tensor *t, int64_t dim, int64_t start, int64_t end, int64_t step); /* a view */
/* x.select(dim, index): drops dim; index may be negative. */
ct_tensor *ct_select(ct_tensor *t, int64_t dim, int64_t index);
/* x.squeeze(): drops every size-1 dim; ct_squeeze_dim drops dim only if its size is 1. */
ct_tensor *ct_squeeze(ct_tensor *t);
ct_tensor *ct_squeeze_dim(ct_tensor *t, int64_t dim);
/* x.unsqueeze(dim): a size-1 dim inserted at dim (in [-ndim-1, ndim]). */
ct_tensor *ct_unsqueeze(ct_tensor *t, int64_t dim);
/* x.flatten(start_dim, end_dim): dims start..end merged into one; ct_flatten(x, 0, -1)
 * is x.flatten().  A view when the strides allow it, else a copy. */
ct_tensor *ct_flatten(ct_tensor *t, int64_t start_dim, int64_t end_dim);
/* x.unflatten(dim, sizes): dim split into sizes (one may be -1). */
ct_tensor *ct_unflatten(ct_tensor *t, int64_t dim, ct_shape sizes);
/* x.as_strided(size, stride, storage_offset): any geometry over x's storage (strides
 * in elements, non-negative).  storage_offset < 0 keeps x's offset.  Gradients reach
 * only elements of x itself: reading storage outside a view x (which PyTorch routes
 * to the view's base) gives those elements no gradient. */
ct_tensor *ct_as_strided(ct_tensor *t, ct_shape size, ct_shape stride, int64_t storage_offset);
#define ct_narrow(t, dim, start, length) CT_AT(ct_narrow(t, dim, start, length))
#define ct_slice(t, dim, start, end, step) CT_AT(ct_slice(t, dim, start, end, step))
#define ct_select(t, dim, index) CT_AT(ct_select(t, dim, index))
#define ct_squeeze(t) CT_AT(ct_squeeze(t))
#define ct_squeeze_dim(t, dim) CT_AT(ct_squeeze_dim(t, dim))
#define ct_unsqueeze(t, dim) CT_AT(ct_unsqueeze(t, dim))
#define ct_flatten(t, start_dim, end_dim) CT_AT(ct_flatten(t, start_dim, end_dim))
#define ct_unflatten(t, dim, sizes) CT_AT(ct_unflatten(t, dim, sizes))
#define ct_as_strided(t, size, stride, offset) CT_AT(ct_as_strided(t, size, stride, offset))

/* ---- joining and splitting ---------------------------------------------- */

/* `n, array` for the list arguments below: ct_cat(CT_TENSORS(a, b), 0). */
#define CT_TENSORS(...)                                                            \
    (int)(sizeof((ct_tensor *[]){__VA_ARGS__}) / sizeof(ct_tensor *)), (ct_tensor *[]){__VA_ARGS__}

/* torch.cat(ts, dim): sizes must match except along dim; dtypes are promoted; 1-D
 * empty tensors (shape [0]) are skipped as in PyTorch. */
ct_tensor *ct_cat(int n, ct_tensor *const *ts, int64_t dim);
/* torch.stack(ts, dim): equal shapes, joined along a new dim. */
ct_tensor *ct_stack(int n, ct_tensor *const *ts, int64_t dim);
/* x.split(split_size, dim): pieces of split_size (the last may be smaller).  Returns
 * the number of pieces (written to out, views of x), or -1. */
int ct_split(ct_tensor *t, int64_t split_size, int64_t dim, ct_tensor **out, int max_out);
/* x.split([s0, s1, ...], dim): n pieces of the given sizes (summing to the size). */
int ct_split_with_sizes(ct_tensor *t, int n, const int64_t *sizes, int64_t dim,
                        ct_tensor **out, int max_out);
/* x.chunk(chunks, dim): at most `chunks` pieces of equal size (the last smaller). */
int ct_chunk(ct_tensor *t, int64_t chunks, int64_t dim, ct_tensor **out, int max_out);
/* x.unbind(dim): size(dim) views with dim removed. */
int ct_unbind(ct_tensor *t, int64_t dim, ct_tensor **out, int max_out);
/* The variadic forms let a compound literal pass through: ct_cat(2, (ct_tensor *[]){a, b}, 0) */
#define ct_cat(...) CT_AT(ct_cat(__VA_ARGS__))
#define ct_stack(...) CT_AT(ct_stack(__VA_ARGS__))
#define ct_split(t, split_size, dim, out, max_out) CT_AT(ct_split(t, split_size, dim, out, max_out))
#define ct_split_with_sizes(...) CT_AT(ct_split_with_sizes(__VA_ARGS__))
#define ct_chunk(t, chunks, dim, out, max_out) CT_AT(ct_chunk(t, chunks, dim, out, max_out))
#define ct_unbind(t, dim, out, max_out) CT_AT(ct_unbind(t, dim, out, max_out))

/* ---- copies that rearrange ------------------------------------------------ */

/* x.repeat(r0, r1, ...): repeats.ndim >= x's ndim (leading dims are added). */
ct_tensor *ct_repeat(ct_tensor *t, ct_shape repeats);
/* x.tile(dims): like repeat, with missing leading repeats taken as 1. */
ct_tensor *ct_tile(ct_tensor *t, ct_shape dims);
/* x.flip(dims): reverses the order of elements along each of dims. */
ct_tensor *ct_flip(ct_tensor *t, ct_dims dims);
/* x.roll(shifts, dims): elements shifted along dims, wrapping around.  With no dims,
 * one shift rolls the flattened tensor: ct_roll(x, CT_DIMS(2), CT_DIMS()). */
ct_tensor *ct_roll(ct_tensor *t, ct_dims shifts, ct_dims dims);
/* x.tril(diagonal) / x.triu(diagonal) over the last two dims (batched). */
ct_tensor *ct_tril(ct_tensor *t, int64_t diagonal);
ct_tensor *ct_triu(ct_tensor *t, int64_t diagonal);
#define ct_repeat(t, repeats) CT_AT(ct_repeat(t, repeats))
#define ct_tile(t, dims) CT_AT(ct_tile(t, dims))
#define ct_flip(t, dims) CT_AT(ct_flip(t, dims))
#define ct_roll(t, shifts, dims) CT_AT(ct_roll(t, shifts, dims))
#define ct_tril(t, diagonal) CT_AT(ct_tril(t, diagonal))
#define ct_triu(t, diagonal) CT_AT(ct_triu(t, diagonal))

/* ---- padding (torch.nn.functional.pad) ------------------------------------ */

/* F.pad's mode: "constant", "reflect" or "replicate". */
typedef enum { CT_PAD_CONSTANT = 0, CT_PAD_REFLECT, CT_PAD_REPLICATE } ct_pad_mode;
/* Options of ct_pad. */
typedef struct {
    ct_pad_mode mode; /* default constant */
    double value;     /* fill value of constant padding (default 0) */
} ct_pad_options;
/* F.pad(x, pad, mode, value): pad lists (left, right) of the last dim, then (top,
 * bottom) of the one before, ...  Constant padding takes any number of dims and
 * negative pads (cropping).  Reflect and replicate pad the last 1, 2 or 3 dims of a
 * 2-3, 3-4 or 4-5 dimensional input; reflect pads must be smaller than the size.
 *
 *     ct_tensor *p = ct_pad(t, CT_DIMS(1, 1, 2, 2), .mode = CT_PAD_REFLECT);  // [2, 7, 6]
 */
ct_tensor *ct_pad_with(ct_tensor *t, ct_dims pad, ct_pad_options o);
#define ct_pad(t, pad, ...) CT_AT(ct_pad_with(t, pad, CT_OPTIONS(ct_pad_options, __VA_ARGS__)))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
