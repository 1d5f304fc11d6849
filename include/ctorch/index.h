/* ctorch/index.h — indexing: select, gather/scatter, masks, sort, embedding.
 *
 *     ct_tensor *idx = ct_arange(2), *idx2d = ct_zeros(CT_SHAPE(2, 3, 1), .dtype = CT_I64);
 *     ct_tensor *mask = ct_gt_scalar(ct_rand_like(t), 0.5);
 *     ct_tensor *rows = ct_index_select(t, 0, idx);          // idx: int64 (or int32), 1-D
 *     ct_tensor *g = ct_gather(t, 1, idx2d);                 // idx2d: int64, same ndim as t
 *     ct_tensor *m = ct_masked_fill(t, mask, -INFINITY);     // mask: bool, broadcast
 *     ct_values_indices s = ct_sort(t, -1, .descending = true);
 *     ct_values_indices k = ct_topk(t, 2, -1);               // largest 2 along the last dim
 *
 * Index values are checked before anything is written: an out-of-range index gives
 * PyTorch's "index 5 is out of bounds for dimension 0 with size 3", never a crash.
 * Negative indices are accepted only where PyTorch accepts them (ct_index,
 * ct_index_put_).
 * Determinism: scatter_add, index_add, index_put_(accumulate) and the embedding
 * gradient add duplicates in index order, so results never depend on the thread
 * count.  With duplicate indices ct_scatter / ct_index_put_ (no accumulate) keep one
 * of the written values; PyTorch leaves which one undefined (ctorch keeps the last). */
#ifndef CTORCH_INDEX_H
#define CTORCH_INDEX_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* ---- selecting along a dim -------------------------------------------- */

/* t.index_select(dim, index): index is 1-D (or 0-d) int64 or int32. */
ct_tensor *ct_index_select(ct_tensor *t, int64_t dim, ct_tensor *index);
/* t.index_add(dim, index, source, alpha=alpha): out = t; out[.., index[j], ..] +=
 * alpha * source[.., j, ..].  source has t's shape except size numel(index) at dim. */
ct_tensor *ct_index_add(ct_tensor *t, int64_t dim, ct_tensor *index, ct_tensor *source,
                        double alpha);
#define ct_index_select(t, dim, index) CT_AT(ct_index_select(t, dim, index))
#define ct_index_add(t, dim, index, source, alpha) CT_AT(ct_index_add(t, dim, index, source, alpha))

/* ---- gather / scatter (index: int64, same ndim as t) ------------------- */

/* out[i][j] = t[index[i][j]][j] (dim 0); out has index's shape. */
ct_tensor *ct_gather(ct_tensor *t, int64_t dim, ct_tensor *index);
/* out = t; out[index[i][j]][j] = src[i][j] (dim 0).  src has t's dtype. */
ct_tensor *ct_scatter(ct_tensor *t, int64_t dim, ct_tensor *index, ct_tensor *src);
/* As ct_scatter with every src element equal to value (converted to t's dtype). */
ct_tensor *ct_scatter_value(ct_tensor *t, int64_t dim, ct_tensor *index, double value);
/* out = t; out[index[i][j]][j] += src[i][j] (dim 0), duplicates added in order. */
ct_tensor *ct_scatter_add(ct_tensor *t, int64_t dim, ct_tensor *index, ct_tensor *src);
#define ct_gather(t, dim, index) CT_AT(ct_gather(t, dim, index))
#define ct_scatter(t, dim, index, src) CT_AT(ct_scatter(t, dim, index, src))
#define ct_scatter_value(t, dim, index, value) CT_AT(ct_scatter_value(t, dim, index, value))
#define ct_scatter_add(t, dim, index, src) CT_AT(ct_scatter_add(t, dim, index, src))

/* ---- masks (bool, or uint8 as PyTorch still accepts) -------------------- */

/* out = mask ? value : t, mask broadcast with t (the result has the broadcast shape). */
ct_tensor *ct_masked_fill(ct_tensor *t, ct_tensor *mask, double value);
/* value is a 0-d tensor (differentiable: MaskedFillBackward1). */
ct_tensor *ct_masked_fill_tensor(ct_tensor *t, ct_tensor *mask, ct_tensor *value);
/* In place: mask must broadcast to t's shape.  Returns t. */
ct_tensor *ct_masked_fill_(ct_tensor *t, ct_tensor *mask, double value);
ct_tensor *ct_masked_fill_tensor_(ct_tensor *t, ct_tensor *mask, ct_tensor *value);
/* The elements of t where mask (both broadcast) is true, in C order: a 1-D tensor. */
ct_tensor *ct_masked_select(ct_tensor *t, ct_tensor *mask);
/* Coordinates of the nonzero elements: int64 [n, ndim(t)], in C order. */
ct_tensor *ct_nonzero(ct_tensor *t);
#define ct_masked_fill(t, mask, value) CT_AT(ct_masked_fill(t, mask, value))
#define ct_masked_fill_tensor(t, mask, value) CT_AT(ct_masked_fill_tensor(t, mask, value))
#define ct_masked_fill_(t, mask, value) CT_AT(ct_masked_fill_(t, mask, value))
#define ct_masked_fill_tensor_(t, mask, value) CT_AT(ct_masked_fill_tensor_(t, mask, value))
#define ct_masked_select(t, mask) CT_AT(ct_masked_select(t, mask))
#define ct_nonzero(t) CT_AT(ct_nonzero(t))

/* ---- advanced indexing: t[i, j], t[:, j] = v ------------------------------ *
 * A list of n index tensors, one per leading dim of t, as PyTorch's tuple: CT_ALL
 * stands for a whole dim (`:`), an int64 tensor picks along one dim (negative values
 * count from the end), a bool (or uint8) mask picks along as many dims as it has
 * (its shape must match them; it stands for its nonzero() coordinates).  Dims past
 * the list are whole.  The index tensors broadcast together to a shape B; the
 * result has t's whole dims in order with B where the indexed dims were when those
 * are adjacent (t[:, i, j] -> [t.size(0), *B]), else first (t[i, :, j] -> [*B,
 * t.size(1)]), as in PyTorch.  Index tensors are checked before anything is written;
 * an out-of-range index names the dim of t it indexes ("index 5 is out of bounds for
 * dimension 1 with size 4" for t[:, idx], where PyTorch says dimension 0).  With no
 * index tensor at all (n 0, or only CT_ALL) ct_index copies t and ct_index_put_ writes
 * all of t, where PyTorch's aten ops refuse.  A NULL entry is an input that failed:
 * the call returns NULL and keeps that error.
 *
 *     ct_tensor *m = ct_arange(12, .dtype = CT_F32);
 *     m = ct_view(m, CT_SHAPE(3, 4));
 *     ct_tensor *i = ct_tensor_i64(((int64_t[]){0, 2}), CT_SHAPE(2));
 *     ct_tensor *j = ct_tensor_i64(((int64_t[]){1, -1}), CT_SHAPE(2));
 *     ct_print(ct_index(m, CT_TENSORS(i, j)));      // tensor([ 1., 11.])
 *     ct_tensor *col[] = {CT_ALL, j};               // m[:, j]
 *     ct_index_put_(m, 2, col, ct_zeros(CT_SHAPE()));
 *     ct_print(ct_select(m, 0, 2));                 // tensor([ 8.,  0., 10.,  0.])
 */

/* `:` in an index list: a whole dim.  One tensor shared by all calls, never freed
 * (retain and release are harmless); used elsewhere it is an empty int64 tensor. */
ct_tensor *ct_index_all(void);
#define ct_index_all(...) CT_AT(ct_index_all(__VA_ARGS__))
#define CT_ALL ct_index_all() /* the whole dim (":") in an index list */

/* t[indices]: torch.ops.aten.index(t, indices), differentiable (IndexBackward0). */
ct_tensor *ct_index(ct_tensor *t, int n_indices, ct_tensor *const *indices);
/* Variadic so that CT_TENSORS(i, j) or a compound literal can pass through.  The
 * index_put macros below name their arguments: give them the count and a named array
 * (as in the example above) or a compound literal in parentheses,
 * ct_index_put_(t, 2, ((ct_tensor *[]){CT_ALL, j}), v). */
#define ct_index(...) CT_AT(ct_index(__VA_ARGS__))

typedef struct {
    bool accumulate; /* add values (duplicates add up, in index order); else write them */
} ct_index_put_options;
/* t.index_put_(indices, values, accumulate): t[indices] = values in place; returns t.
 * values (t's dtype) broadcasts to the shape ct_index(t, indices) would have.  With
 * duplicate indices and no accumulate, the last value written stays.  The options
 * follow values, by name or by position:
 *
 *     ct_tensor *acc = ct_zeros(CT_SHAPE(3));
 *     ct_tensor *dup[] = {ct_tensor_i64(((int64_t[]){2, 0, 2}), CT_SHAPE(3))};
 *     ct_index_put_(acc, 1, dup, ct_ones(CT_SHAPE(3)), .accumulate = true);
 *     ct_print(acc);                                // tensor([1., 0., 2.])
 *     ct_index_put_(acc, 1, dup, ct_ones(CT_SHAPE(1)), false);   // same as without
 *
 * Gradients (IndexPutBackward0): values get grad[indices] summed to their shape;
 * t gets grad with the written positions zeroed (all of grad with accumulate). */
ct_tensor *ct_index_put__with(ct_tensor *t, int n_indices, ct_tensor *const *indices,
                              ct_tensor *values, ct_index_put_options o);
/* torch.index_put(t, indices, values, accumulate): the same on a copy of t. */
ct_tensor *ct_index_put_with(ct_tensor *t, int n_indices, ct_tensor *const *indices,
                             ct_tensor *values, ct_index_put_options o);
#define ct_index_put_(t, n_indices, indices, values, ...)                                  \
    CT_AT(ct_index_put__with(t, n_indices, indices, values,                                \
                             CT_OPTIONS(ct_index_put_options, __VA_ARGS__)))
#define ct_index_put(t, n_indices, indices, values, ...)                                   \
    CT_AT(ct_index_put_with(t, n_indices, indices, values, CT_OPTIONS(ct_index_put_options, __VA_ARGS__)))

/* ---- one-hot, embedding ------------------------------------------------ */

/* F.one_hot: t int64 (non-negative); num_classes -1 means max(t) + 1.  int64 result
 * of shape t.shape + [num_classes]. */
ct_tensor *ct_one_hot(ct_tensor *t, int64_t num_classes);
#define ct_one_hot(t, num_classes) CT_AT(ct_one_hot(t, num_classes))

/* F.embedding and nn.Embedding's options (one struct for both). */
typedef struct {
    ct_opt_f64 padding_idx;  /* not given: None; CT_SOME(i), negative counts from the end */
    double max_norm;         /* 0: None; else the rows looked up are renormalized in place */
    double norm_type;        /* the p of max_norm's norm; 0: PyTorch's default 2 */
    bool scale_grad_by_freq; /* each row's gradient divided by its index's count in indices */
    bool sparse;             /* refused: ctorch has no sparse tensors (the gradient is dense) */
    ct_dtype dtype;          /* nn.Embedding's weight dtype; F.embedding refuses it */
} ct_embedding_options;
/* F.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq,
 * sparse): rows of weight [num, dim] picked by input (int64 or int32 indices, any
 * shape), result input.shape + [dim].  The gradient of row padding_idx stays zero.
 *
 *     ct_tensor *w = ct_randn(CT_SHAPE(10, 4), .requires_grad = true);
 *     ct_tensor *ids = ct_tensor_i64(((int64_t[]){1, 1, 7}), CT_SHAPE(3));
 *     ct_tensor *e = ct_embedding(ids, w, .scale_grad_by_freq = true);
 *     ct_backward(ct_sum(e));   // rows 1 and 7 of w's grad: 1 (2 / 2 and 1 / 1)
 *     ct_tensor *p = ct_embedding(ids, w, .padding_idx = CT_SOME(0));
 */
ct_tensor *ct_embedding_with(ct_tensor *input, ct_tensor *weight, ct_embedding_options o);
#define ct_embedding(input, weight, ...) \
    CT_AT(ct_embedding_with(input, weight, CT_OPTIONS(ct_embedding_options, __VA_ARGS__)))

/* ---- sorting ------------------------------------------------------------ */

/* Options of ct_sort. */
typedef struct {
    bool descending; /* largest first */
    bool stable;     /* ctorch's sort is always stable; accepted for PyTorch parity */
} ct_sort_options;
/* torch.sort(t, dim, descending, stable): values and int64 indices along dim; NaN
 * sorts as the largest value.  ct_sort(t, -1, .descending = true). */
ct_values_indices ct_sort_with(ct_tensor *t, int64_t dim, ct_sort_options o);
#define ct_sort(t, dim, ...) CT_AT(ct_sort_with(t, dim, CT_OPTIONS(ct_sort_options, __VA_ARGS__)))

/* Options of ct_topk. */
typedef struct {
    bool smallest;   /* largest=False: the k smallest */
    bool unsorted;   /* sorted=False (the results come sorted anyway) */
} ct_topk_options;
/* torch.topk(t, k, dim, largest, sorted): the k largest along dim, in order; equal
 * values keep index order.  ct_topk(t, 5, -1), ct_topk(t, 5, 0, .smallest = true). */
ct_values_indices ct_topk_with(ct_tensor *t, int64_t k, int64_t dim, ct_topk_options o);
#define ct_topk(t, k, dim, ...) CT_AT(ct_topk_with(t, k, dim, CT_OPTIONS(ct_topk_options, __VA_ARGS__)))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
