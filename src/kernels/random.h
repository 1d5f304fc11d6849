/* Random kernels: fill a contiguous output from Philox blocks; see Note [Random
 * counters] in core/generator.h.  Element i uses block (seed, offset + i). */
#ifndef CT_KERNELS_RANDOM_H
#define CT_KERNELS_RANDOM_H

#include <stdbool.h>
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

/* multinomial: probs (rows, ncat) contiguous, finite, >= 0, each row summing to > 0;
 * out (rows, n) int64.  Without replacement row r, category c draws from counter
 * offset + r ncat + c; with replacement sample s of row r from offset + r n + s. */
typedef struct {
    uint64_t seed, offset;
    const double *probs;
    int64_t rows, ncat, n;
    bool replacement;
} ct_multinomial_args;
typedef void (*ct_multinomial_kernel)(int64_t *out, const ct_multinomial_args *args);

#endif
