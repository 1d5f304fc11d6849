/* ctorch/reduce.h — reductions.
 *
 *     ct_sum(t);                                  // all elements, a 0-d tensor
 *     ct_sum(t, .dims = CT_DIMS(0, 2), .keepdim = true);
 *
 * Results never depend on the thread count: each output is reduced in a fixed order. */
#ifndef CTORCH_REDUCE_H
#define CTORCH_REDUCE_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    ct_dims dims;   /* dims to reduce; none given: all */
    bool keepdim;   /* keep reduced dims with size 1 */
    ct_dtype dtype; /* accumulate and return in this dtype (sum, mean, prod, cumsum) */
} ct_reduce_options;

ct_tensor *ct_sum_with(ct_tensor *t, ct_reduce_options o);
#define ct_sum(t, ...) CT_AT(ct_sum_with(t, (ct_reduce_options){__VA_ARGS__}))

#ifdef __cplusplus
}
#endif
#endif
