/* The thread split of the softmax-family kernels (cpu/softmax.c, cpu/softmax_reduced.c)
 * over [M1, L, M2]: one block per (m, column range), each computed by one thread in a
 * fixed order; columns are cut into ranges only for parallelism, and each column is
 * computed the same way whatever the cut, so results never depend on threads.
 *
 *     CT_SOFTMAX_DRIVER(softmax_f32, float, block_f32, sizeof(float) + sizeof(double))
 *
 * defines softmax_f32 (a ct_softmax_fn) calling
 *     BLOCK(kind, x, g, o, L, M2, nc, scratch)
 * for nc columns starting at x, g, o (typed T *); scratch holds nc * SCRATCH bytes
 * when M2 > 1 and SCRATCH > 0, else is NULL. */
#ifndef CT_CPU_SOFTMAX_DRIVER_H
#define CT_CPU_SOFTMAX_DRIVER_H

#include <stdlib.h>

#include "cpu/kernel_util.h"
#include "kernels/softmax.h"
#include "core/mem.h"
#include "cpu/kernel_oom.h"

#define CT_SOFTMAX_DRIVER(NAME, T, BLOCK, SCRATCH)                                       \
    static void NAME(ct_softmax_kind kind, const char *x, const char *g, char *o,        \
                     int64_t M1, int64_t L, int64_t M2) {                                \
        int nt = ct_get_num_threads();                                                   \
        bool par = M1 * L * M2 >= CT_GRAIN && nt > 1;                                    \
        int64_t cw = M2;                                                                 \
        if (M2 > 1 && par && M1 < nt) cw = ((M2 + nt - 1) / nt + 15) / 16 * 16;          \
        int64_t ncb = M2 ? (M2 + cw - 1) / cw : 0;                                       \
        int64_t ostride = kind == CT_LOGSUMEXP ? M2 : L * M2;                            \
        atomic_bool failed = false;                                                      \
        _Pragma("omp parallel for if (par) num_threads(nt)")                             \
        for (int64_t k = 0; k < M1 * ncb; k++) {                                         \
            int64_t m = k / ncb, c0 = (k % ncb) * cw;                                    \
            int64_t nc = M2 - c0 < cw ? M2 - c0 : cw;                                    \
            double *scratch = NULL;                                                      \
            if (M2 > 1 && (SCRATCH) > 0) {                                               \
                scratch = ct_malloc((size_t)nc * (SCRATCH) + 16);                        \
                if (!scratch) {                                                          \
                    atomic_store(&failed, true);                                         \
                    continue;                                                            \
                }                                                                        \
            }                                                                            \
            BLOCK(kind, (const T *)x + m * L * M2 + c0,                                  \
                  g ? (const T *)g + m * L * M2 + c0 : NULL, (T *)o + m * ostride + c0,  \
                  L, M2, nc, scratch);                                                   \
            free(scratch);                                                               \
        }                                                                                \
        if (failed) ct_kernel_out_of_memory("softmax");                                  \
    }

#endif
