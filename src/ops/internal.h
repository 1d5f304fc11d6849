/* Helpers shared by op implementations (not public). */
#ifndef CT_OPS_INTERNAL_H
#define CT_OPS_INTERNAL_H

#include "ctorch.h"
#include "core/tensor_impl.h"
#include "ops/op_table.h"
#include "ops/dtype_policy.h"

/* A new contiguous tensor holding t converted to dtype (unregistered, no graph). */
ct_tensor *ct_cast_new(const char *op, const ct_tensor *t, ct_dtype dtype);
/* t converted to dtype as ct_to does it (recorded: differentiable, reported to the
 * record hook as to_copy), but unregistered. */
ct_tensor *ct_to_dtype_new(const char *op, ct_tensor *t, ct_dtype dtype);
/* Sums g down to `sizes` (reverse broadcasting): the engine's reduction of broadcast
 * gradients.  Differentiable; registered with the scope. */
ct_tensor *ct_sum_to_size(ct_tensor *g, int ndim, const int64_t *sizes);

/* Factory plumbing (ops/factory.c): a new uninitialised tensor with the options' dtype
 * (default dtype when unset) and device (cpu when unset), unregistered; then the last
 * step that sets requires_grad (refusing non-floating dtypes) and registers it. */
ct_tensor *ct_factory_new(const char *op, ct_shape shape, ct_tensor_options o);
ct_tensor *ct_factory_finish(const char *op, ct_tensor *t, bool requires_grad);
/* *_like options: t's dtype and device unless o gives them. */
ct_tensor_options ct_like_options(const ct_tensor *t, ct_tensor_options o);
/* Fills t (any dtype, any strides) with value, without recording anything. */
void ct_fill_raw(ct_tensor *t, double value);

/* Losses (ops/loss.c): reduction= checked (kl_div alone accepts batchmean), and
 * applied (mean, sum, or l itself for none); nll_loss with `op` naming the caller
 * (ct_cross_entropy) in its messages. */
bool ct_loss_check_reduction(const char *op, ct_reduction r);
ct_tensor *ct_loss_reduce(const char *op, ct_tensor *l, ct_reduction r);
ct_tensor *ct_nll_loss_op(const char *op, ct_tensor *x, ct_tensor *t, ct_tensor *w,
                          ct_reduction red, int64_t ignore_index);
/* t with its grad_fn shown as `name`: PyTorch's name for the op a composite loss
 * ends with where ctorch's op differs in name only (clamp_min's ClampMinBackward0,
 * div by a C++ scalar's DivBackward1); t returned. */
ct_tensor *ct_loss_grad_fn_as(ct_tensor *t, const char *name);
/* The kernel entry of op (of family `family`) for dtype dt, computed in
 * ct_compute_dtype_for(op, dev, dt) (ops/dtype_policy.h); NULL with the error naming dt itself when there is none.
 * Typed forms, one per family: ct_compute_conv_kernel(op, dev, dt), ... */
const ct_kernel_entry *ct_compute_kernel(ct_kernel_family family, ct_op_id op, ct_device dev,
                                         ct_dtype dt);
#define CT_COMPUTE_KERNEL_(F, f, T)                                                      \
    CT_TYPED_LOOKUP(ct_compute_kernel, ct_compute_##f##_kernel, F, T)
CT_KERNEL_FAMILIES(CT_COMPUTE_KERNEL_)
#undef CT_COMPUTE_KERNEL_
/* A kernel's result (unregistered, compute dtype) as dtype dt: out itself, or a
 * converted copy (out released).  NULL stays NULL. */
ct_tensor *ct_cast_result(const char *op, ct_tensor *out, ct_dtype dt);
/* t as a contiguous tensor of dtype dt: t itself (retained) or a copy; unregistered. */
ct_tensor *ct_contiguous_as(const char *op, ct_tensor *t, ct_dtype dt);

#endif
