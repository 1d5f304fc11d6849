/* The profiler's cost per op event: a tight loop of small ops (add and relu of
 * 4-element float32 tensors, temporaries freed every 1000 ops) timed with no profiler,
 * inside CT_PROFILE, and inside CT_PROFILE with record_shapes, profile_memory and
 * with_stack; nanoseconds of process CPU time per op (best of 7 runs of 200k ops) and, for the profiled
 * runs, the extra nanoseconds per op event.  Built with -DCT_BENCH_NO_PROFILER it
 * runs the first figure alone, against a library without a profiler (the figure with
 * none must be that one's):
 *     gcc -O2 -DCT_BENCH_NO_PROFILER -Iinclude bench/bench_profiler.c OTHER/libctorch.a ... */
#include <stdio.h>
#include <stdlib.h>

#include "ctorch.h"
#include "bench_util.h"

enum { OPS = 200000, PER_SCOPE = 1000, REPS = 7 };

/* ns per op of OPS ops. */
static double run(ct_tensor *a, ct_tensor *b) {
    double t0 = bench_cpu(); /* CPU time: robust on a loaded machine */
    for (int i = 0; i < OPS; i += PER_SCOPE) {
        CT_SCOPE {
            ct_tensor *x = a;
            for (int k = 0; k < PER_SCOPE; k += 2) x = ct_relu(ct_add(x, b));
        }
    }
    return (bench_cpu() - t0) * 1e9 / OPS;
}

static int n_events = 0;

#ifndef CT_BENCH_NO_PROFILER
static double run_profiled(ct_tensor *a, ct_tensor *b, bool everything) {
    ct_profiler *prof = NULL;
    double ns = 0;
    if (everything) {
        CT_PROFILE(prof, .record_shapes = true, .profile_memory = true, .with_stack = true) {
            ns = run(a, b);
        }
    } else {
        CT_PROFILE(prof) { ns = run(a, b); }
    }
    ct_profiler_events(prof, &n_events);
    ct_release(prof);
    return ns;
}
#endif

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    bool quick = getenv("CT_BENCH_QUICK") != NULL;
    int reps = quick ? 1 : REPS;
    ct_set_num_threads(1);
    ct_tensor *a = ct_ones(CT_SHAPE(4)), *b = ct_full(CT_SHAPE(4), 0.5);
    double off = 1e30, on = 1e30, all = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = run(a, b);
        if (t < off) off = t;
#ifndef CT_BENCH_NO_PROFILER
        t = run_profiled(a, b, false);
        if (t < on) on = t;
        t = run_profiled(a, b, true);
        if (t < all) all = t;
#endif
    }
    printf("no profiler:                       %7.1f ns per op\n", off);
#ifndef CT_BENCH_NO_PROFILER
    printf("profiled:                          %7.1f ns per op (+%.1f ns per op event; %d events)\n",
           on, on - off, n_events);
    printf("profiled, shapes + memory + stack: %7.1f ns per op (+%.1f ns per op event)\n", all,
           all - off);
#endif
    ct_release(a);
    ct_release(b);
    return 0;
}
