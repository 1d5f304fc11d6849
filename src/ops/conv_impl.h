/* Shared by the convolution-family ops (src/ops/conv.c, src/ops/fold.c). */
#ifndef CT_OPS_CONV_IMPL_H
#define CT_OPS_CONV_IMPL_H

#include "kernels/conv.h"
#include "ops/internal.h"

/* Runs one convolution-kernel job (cpu/conv.h) on contiguous copies of a, b (and
 * bias) in the compute dtype of dt; the result has `shape` and dtype dt.  Returns an
 * unregistered tensor, or NULL with the error set. */
ct_tensor *ct_conv_run(ct_conv_kind kind, const ct_conv_geom *g, ct_tensor *a, ct_tensor *b,
                       ct_tensor *bias, ct_shape shape, ct_dtype dt);

#endif
