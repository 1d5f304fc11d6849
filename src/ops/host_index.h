/* Computations of the indexing ops on values read to the host (ops/host.h): range
 * checks, counts, compaction, coordinates.  Plain C over host memory, for any device.
 *
 *     ct_host_buf hb;
 *     const int64_t *v = ct_host_read(op, idx, CT_I64, &hb);
 *     int64_t bad = v ? ct_host_find_out_of_range(v, idx->numel, 0, size) : -1;
 *     ct_host_release(&hb);
 */
#ifndef CT_OPS_HOST_INDEX_H
#define CT_OPS_HOST_INDEX_H

#include <stddef.h>
#include <stdint.h>

/* Position (C order) of the first of n int64 values outside [lo, hi), or -1. */
int64_t ct_host_find_out_of_range(const int64_t *v, int64_t n, int64_t lo, int64_t hi);
/* For count positions and k index columns (cols[j][r]: the index into a dim of size
 * sizes[j] and stride strides[j], already checked against [-size, size); negative
 * ones count from the end): each position's element offset (offsets) and its linear
 * position in C order over the k dims (linear). */
void ct_host_index_offsets(int k, const int64_t *const *cols, int64_t count, const int64_t *sizes,
                           const int64_t *strides, int64_t *offsets, int64_t *linear);
/* Largest of n > 0 int64 values. */
int64_t ct_host_max_i64(const int64_t *v, int64_t n);
/* out [n, classes] = one_hot(v): zeros, and out[i, v[i]] = 1; values already checked. */
void ct_host_one_hot(const int64_t *v, int64_t n, int64_t classes, int64_t *out);
/* Number of true entries of a bool array. */
int64_t ct_host_count_true(const uint8_t *m, int64_t n);
/* Copies the elements of src whose mask byte is nonzero to dst, in order. */
void ct_host_masked_compact(char *dst, const char *src, const uint8_t *m, int64_t n,
                            size_t elsize);
/* Coordinates of the nonzero bytes of m (shape ndim/sizes, C order) into out
 * [count, ndim]. */
void ct_host_nonzero_coords(const uint8_t *m, int ndim, const int64_t *sizes, int64_t *out);

#endif
