/* Random number generators (private side of ctorch/random.h).
 *
 * Note [Random counters]: a generator is a seed and a 64-bit counter offset.  A random
 * op reserves as many counters as it has elements (ct_generator_reserve, under the
 * generator's lock) and element i draws its bits from Philox block (seed, offset + i).
 * The numbers therefore depend only on the seed and on the sequence of ops, never on
 * how the elements are split across threads. */
#ifndef CT_CORE_GENERATOR_H
#define CT_CORE_GENERATOR_H

#include "ctorch/random.h"

/* The generator to use for options naming `g` (NULL: the default one). */
ct_generator *ct_generator_or_default(ct_generator *g);
/* Reserves n counters: returns the first, and the seed they go with, atomically. */
uint64_t ct_generator_reserve(ct_generator *g, uint64_t n, uint64_t *seed);

#endif
