/* Drawing a tensor's elements from a generator: shared by the random ops
 * (ops/random.c) and dropout (ops/dropout.c). */
#ifndef CT_OPS_SAMPLE_H
#define CT_OPS_SAMPLE_H

#include "kernels/random.h"
#include "ops/op_table.h"

/* Runs op's random kernel over every element of t (any strides) with t->numel
 * counters reserved from g (NULL: the default generator).  False with the error set
 * when no kernel exists for t's dtype and device. */
bool ct_draw_random(ct_op_id op, ct_tensor *t, ct_rng_args *a, ct_generator *g);

#endif
