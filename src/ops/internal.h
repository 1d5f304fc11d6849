/* Helpers shared by op implementations (not public). */
#ifndef CT_OPS_INTERNAL_H
#define CT_OPS_INTERNAL_H

#include "ctorch.h"
#include "core/tensor_impl.h"
#include "ops/op_table.h"

/* A new contiguous tensor holding t converted to dtype (unregistered, no graph). */
ct_tensor *ct_cast_new(const ct_tensor *t, ct_dtype dtype);
/* Sums g down to `sizes` (reverse broadcasting): the engine's reduction of broadcast
 * gradients.  Differentiable; registered with the scope. */
ct_tensor *ct_sum_to_size(ct_tensor *g, int ndim, const int64_t *sizes);

/* The dtype nn kernels compute in: float16/bfloat16 go through float32. */
ct_dtype ct_compute_dtype(ct_dtype t);
/* The kernel of op for dtype dt, computed in ct_compute_dtype(dt); NULL with the
 * error naming dt itself when there is none. */
ct_kernel ct_compute_kernel(ct_op_id op, ct_device dev, ct_dtype dt);
/* A kernel's result (unregistered, compute dtype) as dtype dt: out itself, or a
 * converted copy (out released).  NULL stays NULL. */
ct_tensor *ct_cast_result(ct_tensor *out, ct_dtype dt);
/* t as a contiguous tensor of dtype dt: t itself (retained) or a copy; unregistered. */
ct_tensor *ct_contiguous_as(ct_tensor *t, ct_dtype dt);

#endif
