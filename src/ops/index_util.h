/* Helpers shared by the indexing ops (index_select.c, gather_scatter.c, masked.c,
 * sort.c, index.c): index dtype and range checks, restrided views. */
#ifndef CT_OPS_INDEX_UTIL_H
#define CT_OPS_INDEX_UTIL_H

#include "ops/internal.h"

/* Size of t along dim, a 0-d tensor counting as [1]. */
static inline int64_t ct_index_dim_size(const ct_tensor *t, int dim) {
    return t->ndim ? t->sizes[dim] : 1;
}

/* index as a contiguous int64 tensor (index itself, retained, when it already is one;
 * else a converted copy), unregistered.  int32 is accepted when allow_int32; any other
 * dtype fails with "<op>: <expect> (got <dtype>)". */
ct_tensor *ct_index_i64(const char *op, ct_tensor *index, bool allow_int32, const char *expect);

/* Checks every value of idx (contiguous int64) against [-size, size) when
 * allow_negative, else [0, size): "<op>: index 5 is out of bounds for dimension 0
 * with size 3", prefixed by `what` (PyTorch's own wording for that op) when given. */
bool ct_index_check_range(const char *op, const ct_tensor *idx, int dim, int64_t size,
                          bool allow_negative, const char *what);

/* A view of t (unregistered) with at least one dim: a 0-d tensor becomes [1]. */
ct_tensor *ct_index_at_least_1d(ct_tensor *t);

/* A view of t (unregistered) with index's sizes, except size dim_size and stride
 * dim_stride (elements) at dim; t's own strides elsewhere. */
ct_tensor *ct_index_restride(ct_tensor *t, const ct_tensor *index, int dim, int64_t dim_size,
                             int64_t dim_stride);

/* A contiguous copy of t broadcast to (ndim, sizes) and converted to dtype,
 * unregistered; t must broadcast to that shape. */
ct_tensor *ct_index_broadcast_copy(ct_tensor *t, int ndim, const int64_t *sizes, ct_dtype dtype);

/* The shape of a recorded node's input i (for zeros shaped like it in backward). */
struct ct_node;
ct_shape ct_index_input_shape(const struct ct_node *n, int i);

/* Contiguous copy of t with t's dtype, or t itself (retained) when contiguous. */
ct_tensor *ct_index_contig(ct_tensor *t);

#endif
