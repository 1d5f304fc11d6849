/* The cpu's loop over the iterator (cpu/iter.h). */
#include "cpu/iter.h"

/* Runs loop over the linear element range [begin, end) (in iteration order). */
static void run_range(const ct_iter *it, int64_t begin, int64_t end, ct_loop_fn loop,
                      const void *ctx) {
    if (begin >= end) return;
    int nops = it->noperands, ndim = it->ndim;
    int64_t idx[CT_MAX_DIMS];
    char *ptr[CT_ITER_MAX_OPERANDS];
    int64_t inner_strides[CT_ITER_MAX_OPERANDS];
    for (int k = 0; k < nops; k++) inner_strides[k] = it->strides[0][k];
    /* Position of `begin` as a multi-index. */
    int64_t rem = begin;
    for (int d = 0; d < ndim; d++) {
        idx[d] = rem % it->shape[d];
        rem /= it->shape[d];
    }
    for (int k = 0; k < nops; k++) {
        /* A cpu scalar (none on the cpu's own iterators, but any iterator runs here)
         * is read from its slot, with strides 0. */
        ptr[k] = it->data[k] ? it->data[k] : (char *)it->scalar[k];
        for (int d = 0; d < ndim; d++) ptr[k] += idx[d] * it->strides[d][k];
    }
    int64_t left = end - begin;
    while (left > 0) {
        int64_t run = it->shape[0] - idx[0];
        if (run > left) run = left;
        loop(ptr, inner_strides, run, ctx);
        left -= run;
        if (left == 0) break;
        /* Advance to the start of the next inner run. */
        for (int k = 0; k < nops; k++) ptr[k] -= idx[0] * it->strides[0][k];
        idx[0] = 0;
        for (int d = 1; d < ndim; d++) {
            idx[d]++;
            for (int k = 0; k < nops; k++) ptr[k] += it->strides[d][k];
            if (idx[d] < it->shape[d]) break;
            for (int k = 0; k < nops; k++) ptr[k] -= it->shape[d] * it->strides[d][k];
            idx[d] = 0;
        }
    }
}

/* The chunks of the split, on the OpenMP threads (apart from the fast path, so that
 * the per-op call stays a leaf). */
static __attribute__((noinline)) void run_chunks(const ct_iter *it, ct_loop_fn loop,
                                                 const void *ctx) {
    int64_t chunks = ct_iter_num_chunks(it);
    if (chunks == 1) {
        run_range(it, 0, it->numel, loop, ctx);
        return;
    }
    int nthreads = ct_get_num_threads();
    if (nthreads > chunks) nthreads = (int)chunks;
#pragma omp parallel for num_threads(nthreads) schedule(static) if (nthreads > 1)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t begin, end;
        ct_iter_chunk(it, c, chunks, &begin, &end);
        run_range(it, begin, end, loop, ctx);
    }
}

void ct_cpu_run_loop(const ct_iter *it, ct_loop_fn loop, const void *ctx) {
    if (it->ndim == 1 && it->numel <= CT_GRAIN && it->numel > 0 && !it->cpu_scalars) {
        /* One flat chunk (the per-op case): the kernel once, as run_range would call
         * it.  Kernels do not change data[] (kernels/loop.h). */
        loop((char **)it->data, it->strides[0], it->numel, ctx);
        return;
    }
    run_chunks(it, loop, ctx);
}
