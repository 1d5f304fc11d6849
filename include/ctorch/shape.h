/* ctorch/shape.h — views and shape manipulation.
 *
 * Views share the input's storage (no copy): view, expand, transpose, permute, ...
 * reshape copies only when the input's strides make a view impossible. */
#ifndef CTORCH_SHAPE_H
#define CTORCH_SHAPE_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One size may be -1 (inferred). */
ct_tensor *ct_view(ct_tensor *t, ct_shape shape);
ct_tensor *ct_reshape(ct_tensor *t, ct_shape shape);
/* Sizes of -1 keep the input's size; new leading dims are broadcast (stride 0). */
ct_tensor *ct_expand(ct_tensor *t, ct_shape shape);
ct_tensor *ct_expand_as(ct_tensor *t, ct_tensor *other);
ct_tensor *ct_transpose(ct_tensor *t, int64_t dim0, int64_t dim1);
ct_tensor *ct_t(ct_tensor *t); /* 2-D transpose (0-D and 1-D returned as is) */
ct_tensor *ct_permute(ct_tensor *t, ct_dims dims);
#define ct_view(t, shape) CT_AT(ct_view(t, shape))
#define ct_reshape(t, shape) CT_AT(ct_reshape(t, shape))
#define ct_expand(t, shape) CT_AT(ct_expand(t, shape))
#define ct_expand_as(t, other) CT_AT(ct_expand_as(t, other))
#define ct_transpose(t, dim0, dim1) CT_AT(ct_transpose(t, dim0, dim1))
#define ct_t(t) CT_AT(ct_t(t))
#define ct_permute(t, dims) CT_AT(ct_permute(t, dims))

#ifdef __cplusplus
}
#endif
#endif
