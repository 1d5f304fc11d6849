/* Running one graph node: the op called from its input tensors and attribute values.
 * One row per runnable op in io/graph_ops.c, keyed by the op's name in the op table
 * (src/ops/ops.def); each row calls the op's public function. */
#ifndef CT_IO_GRAPH_OPS_H
#define CT_IO_GRAPH_OPS_H

#include "ctorch/ops.h"

/* Runs the op on in[0..n_in) (NULL: an absent optional input) and attrs (one per
 * schema attribute); writes its results into out (n_out slots, NULL where the op
 * gives none); returns 0, or -1 with an error. */
typedef int (*graph_op_fn)(ct_tensor *const *in, int n_in, const ct_value *a, ct_tensor **out, int n_out);

/* The runner of op s, or NULL when a graph cannot run it. */
graph_op_fn graph_op_runner(const ct_schema *s);

#endif
