/* Random kernels: fill a contiguous output from Philox blocks; see Note [Random
 * counters] in core/generator.h.  Element i uses block (seed, offset + i). */
#ifndef CT_CPU_RANDOM_H
#define CT_CPU_RANDOM_H

#include <stdint.h>

typedef struct {
    uint64_t seed, offset;
    double a, b;      /* uniform [a, b); normal mean a, std b; bernoulli p = a, value b */
    int64_t low;      /* randint: low + [0, range) */
    uint64_t range;
    const double *p;  /* bernoulli with a tensor of probabilities (contiguous) */
} ct_rng_args;

/* out (n) contiguous, of the kernel's dtype. */
typedef void (*ct_rng_kernel)(void *out, int64_t n, const ct_rng_args *args);

#endif
