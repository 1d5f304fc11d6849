/* Data-movement kernels of the shaping ops (cat, stack, repeat, flip, roll, pad,
 * tril/triu).  They move elements without looking at their values, so they depend
 * only on the element size, never on the dtype: one kernel serves every dtype. */
#ifndef CT_KERNELS_SHAPE_H
#define CT_KERNELS_SHAPE_H

#include "core/tensor_impl.h"

/* The kernels are looked up per (op, device, dtype) with the typed lookups of
 * ops/op_table.h (families COPY, BAND, PAD_GATHER, PAD_SCATTER); their signatures: */

/* Copy (cat, stack, repeat, flip, roll, constant_pad_nd, strided_scatter):
 * dst = src for tensors of one shape (src may broadcast: strides zero or negative).
 * Contiguous runs are memcpy'd, reversed runs (flip) copied backwards; large copies
 * run in parallel.  A src of another dtype is converted (ct_copy_into). */
typedef void (*ct_copy_kernel)(ct_tensor *dst, const ct_tensor *src);

/* tril, triu: out (B, R, C) = in (B, R, C) with the elements outside the band zeroed:
 * tril keeps column j of row i when j <= i + k, triu when j >= i + k.  Contiguous. */
typedef void (*ct_band_kernel)(char *out, const char *in, size_t es, int64_t B, int64_t R,
                               int64_t C, int64_t k, bool upper);

/* The geometry of a padding gather.  in is (B, D, H, W) contiguous, out (B, D', H', W')
 * contiguous, and out[b, z, y, x] = in[b, mz[z], my[y], mx[x]].  Output columns
 * [x_lo, x_hi) read the contiguous input run starting at column x_src (copied as one
 * block); the rest go through mx.  The inverse maps of mz and my, for the backward:
 * input index i of axis a (0: D, 1: H) is read by the output indices
 * inv[a][start[a][i] .. start[a][i + 1]), ascending. */
typedef struct {
    int64_t B, in[3], out[3]; /* (D, H, W) and (D', H', W') */
    const int64_t *map[3];     /* mz, my, mx */
    const int64_t *start[2], *inv[2];
    int64_t x_lo, x_hi, x_src;
} ct_pad_geom;
/* reflection_pad, replication_pad */
typedef void (*ct_pad_gather_kernel)(char *out, const char *in, size_t es, const ct_pad_geom *g);
/* pad_backward, the adjoint: every element of gin (B, D, H, W) is written, the sum of
 * the gout (B, D', H', W') elements that read it, gathered (the inverse maps of z and
 * y, then the columns) in ascending output order (z, then y, then x) from zero: one
 * fixed order, bitwise identical for any thread count.  float32 and float64 sum in their own type,
 * float16 and bfloat16 in float, rounded once. */
typedef void (*ct_pad_scatter_kernel)(char *gin, const char *gout, const ct_pad_geom *g);

#endif
