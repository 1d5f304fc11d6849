/* The cpu backend's run_loop (core/backend.h): an elementwise kernel over the
 * iterator's geometry (core/iter.h), its chunks spread over the OpenMP threads.
 *
 *     ct_iter it;
 *     ct_iter_init(&it, 2, ops, dst->ndim, dst->sizes);
 *     ct_cpu_run_loop(&it, copy_kernel, NULL); // cpu code; ops call ct_iter_run
 *
 * Code above the backends runs loops through ct_iter_run, which reaches this through
 * the cpu's ct_backend; kernels of the cpu backend that loop over an iterator
 * themselves (copies, casts) call it directly. */
#ifndef CT_CPU_ITER_H
#define CT_CPU_ITER_H

#include "core/iter.h"

/* Runs loop over every element: the iterator's chunks (ct_iter_num_chunks), in
 * parallel when there are several and ct_get_num_threads() > 1, else one after the
 * other on this thread.  The chunks depend on the geometry alone, so results are
 * bitwise the same for every thread count. */
void ct_cpu_run_loop(const ct_iter *it, ct_loop_fn loop, const void *ctx);

#endif
