/* Host access to tensor values: the one way code above the backends reads a tensor's
 * elements on the host (values that decide an output's shape, as nonzero's; checks of
 * index ranges and divisors; item) and writes host-computed results into a tensor.
 *
 *     ct_host_buf hb;
 *     const int64_t *v = ct_host_read("ct_nonzero", idx, CT_I64, &hb);
 *     if (!v) return NULL; // meta: "ct_nonzero: cannot be called on meta tensors: ..."
 *     ... v[0 .. numel) in C order ...
 *     ct_host_release(&hb);
 *
 *     int64_t *o = ct_host_write("ct_nonzero", out, &hb); // host memory for out's elements
 *     ... fill o[0 .. numel) ...
 *     ct_host_release(&hb);                               // the values go into out
 *
 * A contiguous cpu tensor is read and written in place (no copy); any other tensor
 * goes through a contiguous host copy made by its backend's copy.  A check of values
 * that PyTorch's meta device skips (index ranges, integer division by zero) asks
 * ct_has_values first; a tensor without memory (meta) makes both calls fail with an
 * error naming the op, as in PyTorch. */
#ifndef CT_OPS_HOST_H
#define CT_OPS_HOST_H

#include "core/tensor_impl.h"

/* What a read or write holds until ct_host_release; zero-initialise nothing, the calls
 * fill it. */
typedef struct {
    ct_tensor *copy; /* the host copy, when one was needed */
    ct_tensor *dst;  /* a write's tensor, that the copy goes back into */
} ct_host_buf;

/* Whether t's elements can be read (false on the meta device: no memory). */
bool ct_has_values(const ct_tensor *t);
/* t's numel elements in C order and converted to dtype (CT_DTYPE_UNSET: t's own),
 * readable on the host until ct_host_release(buf); never NULL for an empty t.  NULL
 * with "<op>: cannot be called on meta tensors: ..." for a tensor without memory, or
 * an out-of-memory error. */
const void *ct_host_read(const char *op, const ct_tensor *t, ct_dtype dtype, ct_host_buf *buf);
/* Host memory for t's numel elements (t's dtype, C order, contents undefined unless t
 * is a contiguous cpu tensor), to be filled before ct_host_release(buf) copies them
 * into t.  NULL with ct_host_read's errors. */
void *ct_host_write(const char *op, ct_tensor *t, ct_host_buf *buf);
/* Ends a read or a write (a write's values go into its tensor first); buf is then free. */
void ct_host_release(ct_host_buf *buf);

#endif
