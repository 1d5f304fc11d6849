/* A cache of large cpu blocks (tensor storages of CT_BLOCK_CACHE_MIN bytes or more).
 *
 * A training step frees and allocates the same large buffers every iteration.  Given
 * back to malloc, they are unmapped (glibc serves large blocks with mmap and trims the
 * heap top), and the next step page-faults every page in again: a third of a conv2d
 * forward+backward.  Freed large blocks are kept instead, per size class (sizes
 * rounded up to 1/8 of their power of two), and handed out again for the same class.
 *
 * The cache holds at most ct_block_cache_set_limit bytes (256 MiB by default; 0 turns
 * it off); a block that does not fit is freed.  ct_block_cache_trim(0) frees every
 * cached block; an allocation that fails empties the cache and tries once more.  Under
 * AddressSanitizer and in the debug lifetime mode (core/lifetime.h) the cache is off,
 * so every block is a malloc/free ASan sees. */
#ifndef CT_CPU_BLOCK_CACHE_H
#define CT_CPU_BLOCK_CACHE_H

#include <stddef.h>

#define CT_BLOCK_CACHE_MIN ((size_t)128 << 10)

/* A 64-byte aligned block of at least `size` bytes; NULL when out of memory.
 * Give it back with ct_block_free and the same size. */
void *ct_block_alloc(size_t size);
void ct_block_free(void *p, size_t size);

/* Frees the cached blocks beyond `keep` bytes (smallest size classes first). */
void ct_block_cache_trim(size_t keep);
/* Bytes held by the cache. */
size_t ct_block_cache_held(void);
/* The most bytes the cache holds from now on; trims it to that. */
void ct_block_cache_set_limit(size_t bytes);

#endif
