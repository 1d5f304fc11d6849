/* Data-movement kernels of the shaping ops (cat, stack, repeat, flip, roll, pad,
 * tril/triu).  They move elements without looking at their values, so they depend
 * only on the element size, never on the dtype: one kernel serves every dtype. */
#ifndef CT_CPU_SHAPE_H
#define CT_CPU_SHAPE_H

#include "core/tensor_impl.h"

/* dst = src for tensors of one dtype, src broadcastable to dst (strides may be zero
 * or negative).  Contiguous runs are memcpy'd, reversed runs (flip) copied backwards;
 * large copies run in parallel.  Falls back to ct_copy_into when dtypes differ. */
void ct_cpu_copy_same(ct_tensor *dst, const ct_tensor *src);

/* out (B, R, C) = in (B, R, C) with the elements outside the band zeroed: tril keeps
 * column j of row i when j <= i + k, triu when j >= i + k.  Both contiguous. */
void ct_cpu_tril(char *out, const char *in, size_t es, int64_t B, int64_t R, int64_t C,
                 int64_t k, bool upper);

/* The geometry of a padding gather.  in is (B, D, H, W) contiguous, out (B, D', H', W')
 * contiguous, and out[b, z, y, x] = in[b, mz[z], my[y], mx[x]].  Output columns
 * [x_lo, x_hi) read the contiguous input run starting at column x_src (copied as one
 * block); the rest go through mx. */
typedef struct {
    int64_t B, in[3], out[3]; /* (D, H, W) and (D', H', W') */
    const int64_t *map[3];     /* mz, my, mx */
    int64_t x_lo, x_hi, x_src;
} ct_pad_geom;
void ct_cpu_pad_gather(char *out, const char *in, size_t es, const ct_pad_geom *g);
/* The adjoint: gin (B, D, H, W), zeroed by the caller, += gout (B, D', H', W') along
 * the same maps.  float32 or float64.  Parallel over B only, so each input element
 * sums its contributions in one fixed order (bitwise identical for any thread count). */
void ct_cpu_pad_scatter_add(char *gin, const char *gout, ct_dtype dtype, const ct_pad_geom *g);

#endif
