/* Kernels of the indexing ops (src/ops/index_*.c, gather_scatter.c, masked.c, sort.c).
 *
 * Every kernel runs after its op has checked all index values, so kernels cannot
 * fail.  Kernels that only move elements are chosen by element size and registered
 * for every dtype; kernels that add or compare are typed (float16/bfloat16 through
 * float32). */
#ifndef CT_KERNELS_INDEX_H
#define CT_KERNELS_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor_impl.h"

/* ---- rows along a dim: index_select, embedding, index_add -------------------
 * Contiguous tensors seen as [outer, n, inner]: `src` [outer, src_n, inner], `dst`
 * [outer, dst_n, inner]; index (int64, already in range) has nindex entries. */
typedef struct {
    int64_t outer, src_n, dst_n, inner;
    const int64_t *index;
    int64_t nindex;
    size_t elsize;
    double alpha; /* index_add: floats */
    int64_t ialpha; /* index_add: integers */
} ct_rows_args;
/* index_select (CT_OP_index_select): dst [outer, nindex, inner] = src[:, index, :]. */
/* index_add (CT_OP_index_add): dst[:, index[j], :] += alpha * src[:, j, :], j in order. */
typedef void (*ct_rows_fn)(char *dst, const char *src, const ct_rows_args *a);

/* ---- gather / scatter over the iterator ------------------------------------
 * gather: operands out, index, self restrided to index's shape with stride 0 on
 *   dim; out[i] = self[i + index[i] * self_stride].
 * scatter, scatter_value, scatter_add: operands out, index, src (not for value),
 *   each restrided to index's shape with size 1 on dim; the loop walks the
 *   `n` elements along dim itself, in order, so one column is never split across
 *   threads (no races, duplicates resolved in index order). */
typedef struct {
    int64_t self_stride;  /* bytes between elements of out/self along dim */
    int64_t index_stride; /* bytes, along dim (scatter) */
    int64_t src_stride;   /* bytes, along dim (scatter) */
    int64_t n;            /* index.size(dim) (scatter) */
    char value[16];       /* scatter_value, masked_fill: the value in out's dtype */
} ct_scatter_args;
/* Registered as ct_loop_fn for CT_OP_gather, CT_OP_scatter, CT_OP_scatter_value,
 * CT_OP_scatter_add, CT_OP_masked_fill (operands out, self, mask: out = mask ? value
 * : self). */

/* ---- index_put_ (CT_OP_index_put) and index (CT_OP_index) --------------------
 * t's indexed rows start at base + offsets[r] (elements); each row has the shape
 * (rest_ndim, rest_sizes) with t's strides rest_strides (elements).  vals / out is
 * contiguous [nrows, rest]. */
typedef struct {
    const int64_t *offsets;
    int64_t nrows;
    int rest_ndim;
    int64_t rest_sizes[CT_MAX_DIMS], rest_strides[CT_MAX_DIMS];
    bool accumulate;
} ct_put_args;
/* index_put_: the rows get vals (accumulate: += vals), rows in order. */
typedef void (*ct_put_fn)(char *base, const char *vals, const ct_put_args *a);
/* index: out gets the rows. */
typedef void (*ct_index_get_fn)(const char *base, char *out, const ct_put_args *a);

/* ---- sort / topk (CT_OP_sort) ------------------------------------------------
 * in [outer, n, inner] contiguous; the first k of each sorted row go to vals
 * [outer, k, inner] and idx (int64), rows in parallel.  Stable; NaN is largest. */
typedef struct {
    int64_t outer, n, inner, k;
    bool descending;
} ct_sort_args;
typedef void (*ct_sort_fn)(const char *in, char *vals, int64_t *idx, const ct_sort_args *a);

#endif
