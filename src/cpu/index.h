/* Kernels of the indexing ops (src/ops/index_*.c, gather_scatter.c, masked.c, sort.c).
 *
 * Every kernel runs after its op has checked all index values, so kernels cannot
 * fail.  Kernels that only move elements are chosen by element size and registered
 * for every dtype; kernels that add or compare are typed (float16/bfloat16 through
 * float32). */
#ifndef CT_CPU_INDEX_H
#define CT_CPU_INDEX_H

#include "cpu/iter.h"
#include "ops/op_table.h"

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

/* ---- helpers that only read indices or masks (any backend's data on the cpu) -- */

/* Position (C order) of the first of n int64 values outside [lo, hi), or -1. */
int64_t ct_cpu_find_out_of_range(const int64_t *v, int64_t n, int64_t lo, int64_t hi);
/* For count positions and k index columns (cols[j][r]: the index into a dim of size
 * sizes[j] and stride strides[j], already checked against [-size, size); negative
 * ones count from the end): each position's element offset (offsets) and its linear
 * position in C order over the k dims (linear). */
void ct_cpu_index_offsets(int k, const int64_t *const *cols, int64_t count, const int64_t *sizes,
                          const int64_t *strides, int64_t *offsets, int64_t *linear);
/* Largest of n > 0 int64 values. */
int64_t ct_cpu_max_i64(const int64_t *v, int64_t n);
/* out [n, classes] (zeroed) gets out[i, v[i]] = 1; values already checked. */
void ct_cpu_one_hot(const int64_t *v, int64_t n, int64_t classes, int64_t *out);
/* out [outer, n, inner] (contiguous) = the position along the middle dim. */
void ct_cpu_arange_along(int64_t *out, int64_t outer, int64_t n, int64_t inner);
/* out[i] = v[i] == x (bool bytes). */
void ct_cpu_eq_i64(const int64_t *v, int64_t n, int64_t x, uint8_t *out);
/* Number of true entries of a bool/uint8 array. */
int64_t ct_cpu_count_true(const uint8_t *m, int64_t n);
/* Copies the elements of src whose mask byte is nonzero to dst, in order. */
void ct_cpu_masked_compact(char *dst, const char *src, const uint8_t *m, int64_t n,
                           size_t elsize);
/* Coordinates of the nonzero bytes of m (shape ndim/sizes, C order) into out
 * [count, ndim]. */
void ct_cpu_nonzero_coords(const uint8_t *m, int ndim, const int64_t *sizes, int64_t *out);

#endif
