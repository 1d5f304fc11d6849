#include <omp.h>
#include <stdatomic.h>

#include "ctorch/base.h"
#include "core/error.h"
#include "core/threads.h"

static atomic_int num_threads; /* 0: not set, use OpenMP's default */
static _Thread_local int thread_num_threads; /* 0: none; see ct_set_thread_num_threads */

void ct_set_thread_num_threads(int n) { thread_num_threads = n > 0 ? n : 0; }

void ct_set_num_threads(int n) {
    if (n < 1) {
        ct_error("ct_set_num_threads: number of threads must be positive (got %d)", n);
        return;
    }
    num_threads = n;
}

int ct_get_num_threads(void) {
    if (thread_num_threads) return thread_num_threads;
    int n = num_threads;
    if (n > 0) return n;
    n = omp_get_max_threads();
    return n > 0 ? n : 1;
}
