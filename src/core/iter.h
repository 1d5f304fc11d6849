/* The geometry of an elementwise op, device-neutral: what the loop runs over.
 *
 *     ct_tensor *ops[3] = {out, a, b};          // outputs first, broadcast to one shape
 *     ct_iter it;
 *     ct_iter_init(&it, 3, ops, ndim, shape);
 *     ct_iter_run(&it, kernel, &args);          // out's backend runs the loop
 *
 * The op layer builds the geometry: byte strides (0 on broadcast dims), dims ordered
 * so that the fastest moving one is innermost, dims that step as one merged, and the
 * deterministic split of the element range into chunks (a function of the geometry
 * alone, never of the thread count).  A backend only runs a loop over it
 * (core/backend.h's run_loop: the cpu over its threads, meta not at all); a kernel is
 * only the inner loop (ct_loop_fn, kernels/loop.h).
 *
 * Wrapped numbers (PyTorch's cpu scalars): a 0-d cpu input of an iterator on another
 * device reaches the kernel as a value, not as a host pointer: its element is copied
 * into the iterator's scalar slot, its data pointer is NULL and its strides are 0.  A
 * device backend hands the value to its kernel; on the cpu there are none. */
#ifndef CT_CORE_ITER_H
#define CT_CORE_ITER_H

#include "core/backend.h"
#include "core/tensor_impl.h"
#include "kernels/loop.h"

/* Elements per chunk of the split, at least (ATen's GRAIN_SIZE): below it, a loop is
 * one chunk, which a backend runs on the calling thread. */
#define CT_GRAIN 32768

struct ct_iter {
    int noperands;
    int ndim;                /* dims after reordering and merging; dim 0 innermost */
    int64_t shape[CT_MAX_DIMS];
    int64_t strides[CT_MAX_DIMS][CT_ITER_MAX_OPERANDS]; /* bytes, per dim per operand */
    char *data[CT_ITER_MAX_OPERANDS]; /* NULL for a cpu scalar */
    int64_t numel;
    ct_device device;        /* operand 0's: whose backend runs the loop */
    unsigned cpu_scalars;    /* bit k: operand k is a cpu scalar, its value in scalar[k] */
    _Alignas(8) unsigned char scalar[CT_ITER_MAX_OPERANDS][8]; /* in the operand's dtype */
};

/* Operands must already be broadcastable to (ndim, shape), and on operand 0's device
 * except 0-d cpu inputs (cpu scalars); no checks are made here. */
void ct_iter_init(ct_iter *it, int noperands, ct_tensor *const *operands, int ndim,
                  const int64_t *shape);
/* The same for a backend's copy between its device and the host when it can address
 * both memories (the cpu's copy reading or writing a host-visible device buffer): every
 * operand is addressed directly, none becomes a cpu scalar. */
void ct_iter_init_addressable(ct_iter *it, int noperands, ct_tensor *const *operands, int ndim,
                              const int64_t *shape);
/* The same for one output and n_in inputs all contiguous with numel elements on one
 * device (a flat run; the caller has checked it).  Inline: the per-op path builds one. */
static inline void ct_iter_init_flat(ct_iter *it, ct_tensor *out, int n_in,
                                     ct_tensor *const *inputs, int64_t numel) {
    it->noperands = n_in + 1;
    it->numel = numel;
    it->device = out->storage->device;
    it->cpu_scalars = 0;
    it->ndim = 1;
    it->shape[0] = numel;
    it->data[0] = ct_tensor_data(out);
    it->strides[0][0] = (int64_t)ct_dtype_sizes[out->dtype];
    for (int k = 0; k < n_in; k++) {
        it->data[k + 1] = ct_tensor_data(inputs[k]);
        it->strides[0][k + 1] = (int64_t)ct_dtype_sizes[inputs[k]->dtype];
    }
}

/* The split: [0, numel) in ceil(numel / CT_GRAIN) chunks (one when numel is smaller),
 * chunk c being [numel * c / n, numel * (c + 1) / n).  Backends run these chunks, in
 * any order and on any threads, each with one pass over its range: as every element
 * is visited once in a range that depends on the geometry alone, results never
 * depend on the thread count. */
static inline int64_t ct_iter_num_chunks(const ct_iter *it) {
    return it->numel > CT_GRAIN ? (it->numel + CT_GRAIN - 1) / CT_GRAIN : 1;
}
static inline void ct_iter_chunk(const ct_iter *it, int64_t c, int64_t n, int64_t *begin,
                                 int64_t *end) {
    *begin = it->numel * c / n;
    *end = it->numel * (c + 1) / n;
}

/* Runs loop over every element through the backend of the iterator's device. */
static inline void ct_iter_run(const ct_iter *it, ct_loop_fn loop, const void *ctx) {
    ct_backend_for_type((ct_device_type)it->device.type)->run_loop(it, loop, ctx);
}

/* Broadcasts shapes a and b (numpy rules) into out; false when they do not broadcast. */
bool ct_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                         int64_t *out);

#endif
