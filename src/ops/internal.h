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

#endif
