/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11):
 * a counter-based generator.  Block (key, counter) -> 128 random bits, with no state
 * carried from one block to the next, so any element of any op can be computed on any
 * thread in any order.  See Note [Random counters] in core/generator.h. */
#ifndef CT_CORE_PHILOX_H
#define CT_CORE_PHILOX_H

#include <stdint.h>

typedef struct { uint32_t w[4]; } ct_philox_block;

static inline ct_philox_block ct_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u; /* the Weyl key schedule */
        k1 += 0xBB67AE85u;
    }
    return (ct_philox_block){{c0, c1, c2, c3}};
}

/* The block for 64-bit counter `ctr` under a 64-bit seed (counter words 2, 3 are 0). */
static inline ct_philox_block ct_philox(uint64_t seed, uint64_t ctr) {
    const uint32_t c[4] = {(uint32_t)ctr, (uint32_t)(ctr >> 32), 0, 0};
    const uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    return ct_philox4x32_10(c, k);
}

/* Uniform doubles in [0, 1) from 53 random bits. */
static inline double ct_u53(uint32_t hi, uint32_t lo) {
    return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1.0p-53;
}

#endif
