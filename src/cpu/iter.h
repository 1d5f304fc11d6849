/* The strided, broadcasting iterator behind every elementwise kernel.
 *
 * An op lists its operands (outputs first), all broadcast to one shape.  The iterator
 * turns strides into byte strides (0 on broadcast dims), orders dims so the fastest
 * moving one is innermost, merges dims that are contiguous with each other, and
 * splits the work across threads.  A kernel is only the inner loop (ct_loop_fn,
 * kernels/loop.h). */
#ifndef CT_CPU_ITER_H
#define CT_CPU_ITER_H

#include "core/tensor_impl.h"
#include "kernels/loop.h"

typedef struct {
    int noperands;
    int ndim;                /* dims after reordering and merging; dim 0 innermost */
    int64_t shape[CT_MAX_DIMS];
    int64_t strides[CT_MAX_DIMS][CT_ITER_MAX_OPERANDS]; /* bytes, per dim per operand */
    char *data[CT_ITER_MAX_OPERANDS];
    int64_t numel;
} ct_iter;

/* Operands must already be broadcastable to (ndim, shape); no checks are made here. */
void ct_iter_init(ct_iter *it, int noperands, ct_tensor *const *operands, int ndim,
                  const int64_t *shape);
/* Runs loop over every element; in parallel when the work is large enough.  Each
 * element is visited exactly once, so results never depend on the thread count. */
void ct_iter_run(const ct_iter *it, ct_loop_fn loop, const void *ctx);
/* Runs over linear element range [begin, end) (in iteration order) on this thread. */
void ct_iter_run_range(const ct_iter *it, int64_t begin, int64_t end, ct_loop_fn loop,
                       const void *ctx);

/* Broadcasts shapes a and b (numpy rules) into out; false when they do not broadcast. */
bool ct_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                         int64_t *out);

/* Elements below which a kernel stays on the calling thread. */
#define CT_GRAIN 32768

#endif
