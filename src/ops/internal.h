/* Helpers shared by op implementations (not public). */
#ifndef CT_OPS_INTERNAL_H
#define CT_OPS_INTERNAL_H

#include "ctorch.h"
#include "core/tensor_impl.h"

/* A new contiguous tensor holding t converted to dtype (unregistered, no graph). */
ct_tensor *ct_cast_new(const ct_tensor *t, ct_dtype dtype);
/* Sums g down to `sizes` (reverse broadcasting): the engine's reduction of broadcast
 * gradients.  Differentiable; registered with the scope. */
ct_tensor *ct_sum_to_size(ct_tensor *g, int ndim, const int64_t *sizes);

/* Factory plumbing (ops/factory.c): a new uninitialised tensor with the options' dtype
 * (default dtype when unset) and device (cpu when unset), unregistered; then the last
 * step that sets requires_grad (refusing non-floating dtypes) and registers it. */
ct_tensor *ct_factory_new(ct_shape shape, ct_tensor_options o);
ct_tensor *ct_factory_finish(const char *op, ct_tensor *t, bool requires_grad);
/* *_like options: t's dtype and device unless o gives them. */
ct_tensor_options ct_like_options(const ct_tensor *t, ct_tensor_options o);
/* Fills t (any dtype, any strides) with value, without recording anything. */
void ct_fill_raw(ct_tensor *t, double value);
/* The dtype nn kernels compute in: float16/bfloat16 go through float32. */
ct_dtype ct_compute_dtype(ct_dtype t);
/* t as a contiguous tensor of dtype dt: t itself (retained) or a copy; unregistered. */
ct_tensor *ct_contiguous_as(ct_tensor *t, ct_dtype dt);
/* For backward formulas computed by kernels (not ops): false with an error naming
 * grad_name when the backward is recording a graph (create_graph). */
bool ct_check_no_double_backward(const char *grad_name);

#endif
