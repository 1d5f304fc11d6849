/* Host helpers of the indexing ops that only read indices or masks; the kernel ABI
 * of the indexing ops is kernels/index.h. */
#ifndef CT_CPU_INDEX_H
#define CT_CPU_INDEX_H

#include "cpu/iter.h"
#include "kernels/index.h"

/* ---- helpers that only read indices or masks (any backend's data on the cpu) -- */

/* Position (C order) of the first of n int64 values outside [lo, hi), or -1. */
int64_t ct_cpu_find_out_of_range(const int64_t *v, int64_t n, int64_t lo, int64_t hi);
/* For count positions and k index columns (cols[j][r]: the index into a dim of size
 * sizes[j] and stride strides[j], already checked against [-size, size); negative
 * ones count from the end): each position's element offset (offsets) and its linear
 * position in C order over the k dims (linear). */
void ct_cpu_index_offsets(int k, const int64_t *const *cols, int64_t count, const int64_t *sizes,
                          const int64_t *strides, int64_t *offsets, int64_t *linear);
/* Largest of n > 0 int64 values. */
int64_t ct_cpu_max_i64(const int64_t *v, int64_t n);
/* out [n, classes] (zeroed) gets out[i, v[i]] = 1; values already checked. */
void ct_cpu_one_hot(const int64_t *v, int64_t n, int64_t classes, int64_t *out);
/* out [outer, n, inner] (contiguous) = the position along the middle dim. */
void ct_cpu_arange_along(int64_t *out, int64_t outer, int64_t n, int64_t inner);
/* out[i] = v[i] == x (bool bytes). */
void ct_cpu_eq_i64(const int64_t *v, int64_t n, int64_t x, uint8_t *out);
/* Number of true entries of a bool/uint8 array. */
int64_t ct_cpu_count_true(const uint8_t *m, int64_t n);
/* Copies the elements of src whose mask byte is nonzero to dst, in order. */
void ct_cpu_masked_compact(char *dst, const char *src, const uint8_t *m, int64_t n,
                           size_t elsize);
/* Coordinates of the nonzero bytes of m (shape ndim/sizes, C order) into out
 * [count, ndim]. */
void ct_cpu_nonzero_coords(const uint8_t *m, int ndim, const int64_t *sizes, int64_t *out);

#endif
