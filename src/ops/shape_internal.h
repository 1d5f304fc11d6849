/* Helpers shared by the view, join and padding ops (src/ops/view*.c, join.c,
 * rearrange.c, pad.c); not public. */
#ifndef CT_OPS_SHAPE_INTERNAL_H
#define CT_OPS_SHAPE_INTERNAL_H

#include "autograd/node.h"
#include "kernels/shape.h"

/* Records a view op: a new tensor with the given geometry over t's storage (base t),
 * with a node for op when t requires grad (*node set to it, or NULL).  Unregistered;
 * NULL only when out of memory. */
ct_tensor *ct_view_make(ct_op_id op, ct_tensor *t, int ndim, const int64_t *sizes,
                        const int64_t *strides, int64_t offset, ct_node **node);

/* A view's geometry: sizes, strides (elements) and storage offset. */
typedef struct {
    int ndim;
    int64_t sizes[CT_MAX_DIMS];
    int64_t strides[CT_MAX_DIMS];
    int64_t offset;
} ct_geom;

/* The adjoint of a view: a new contiguous tensor of shape (ndim, sizes), zero except
 * where the view `g` (relative to that contiguous tensor) places the elements of src
 * (summed where the view overlaps itself).  Differentiable (its gradient is the view
 * again); registered with the scope.  Backward of slice, select, as_strided. */
ct_tensor *ct_strided_scatter(ct_tensor *src, int ndim, const int64_t *sizes, const ct_geom *g);

/* Copies the region (ndim, sizes) of src at (soff, sstrides) into the region of dst at
 * (doff, dstrides) with the copy kernel k, recording nothing. */
void ct_copy_region(ct_copy_kernel k, ct_tensor *dst, int64_t doff, const int64_t *dstrides, ct_tensor *src,
                    int64_t soff, const int64_t *sstrides, int ndim, const int64_t *sizes);

/* The backward of reflect/replicate padding as an op of its own (so that it is
 * differentiable: its gradient is the padding again): sums grad, shaped like the
 * padded output, back into a tensor of the input's shape (ndim, in_sizes).
 * Registered with the scope. */
ct_tensor *ct_pad_backward(ct_tensor *grad, int ndim, const int64_t *in_sizes,
                           ct_pad_mode mode, ct_dims pad);

#endif
