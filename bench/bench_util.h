/* Helpers shared by the benchmark programs. */
#ifndef CT_BENCH_UTIL_H
#define CT_BENCH_UTIL_H

#include <time.h>

/* Wall-clock seconds (monotonic). */
static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Process CPU seconds, all threads (robust on a loaded machine; waiting threads may
 * spin, so with several threads it also counts their waits). */
static inline double bench_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
