/* Shared by pooling (src/ops/pool.c) and interpolation (src/ops/interpolate.c). */
#ifndef CT_OPS_POOL_IMPL_H
#define CT_OPS_POOL_IMPL_H

#include "autograd/node.h"
#include "kernels/pool.h"
#include "ops/internal.h"

typedef enum { CT_POOL_FORWARD, CT_POOL_BACKWARD, CT_POOL_GATHER } ct_pool_mode;

/* Runs op's kernel on a contiguous copy of `in` (compute dtype of dt): forward
 * (x -> shape, argmax indices into *idx_out when given), backward (gy -> gx of shape)
 * or gather (in[idx_in] -> shape).  Returns an unregistered tensor of dtype dt. */
ct_tensor *ct_pool_run(ct_op_id op, ct_pool_geom *g, ct_pool_mode mode, ct_tensor *in,
                       ct_tensor *idx_in, ct_shape shape, ct_dtype dt, ct_tensor **idx_out);
/* The geometry of an input of shape `in` ([..., H, W]) and an output [..., OH, OW]. */
ct_pool_geom ct_pool_geom_of(const ct_shape *in, int64_t OH, int64_t OW);
/* An option of one or two values (two defaults when empty); false with an error. */
bool ct_pool_pair(const char *op, const char *what, ct_dims d, int64_t dflt_a, int64_t dflt_b,
                  int64_t *out);
/* Records gx = backward(gy) as the backward op of fwd's op (only when building a
 * graph), with fwd's arguments and the max indices. */
void ct_pool_record_backward(const ct_node *fwd, ct_tensor *gy, ct_tensor *gx, ct_tensor *idx);
/* An input's shape as recorded by its node. */
ct_shape ct_meta_shape(const ct_input_meta *m);

#endif
