/* Loss kernels (cpu/loss.c): nll_loss forward and backward. */
#ifndef CT_KERNELS_LOSS_H
#define CT_KERNELS_LOSS_H

#include <stdint.h>

/* x [N, C, S] contiguous (S: the product of the dims after the class dim), targets
 * t [N, S] int64 already checked to be in [0, C) or ignore_index, w [C] or NULL. */
typedef struct {
    int64_t N, C, S, ignore_index;
} ct_nll_dims;

/* With out (x's dtype, [N, S]) the unreduced losses -w[t] x[n, t, s] (0 where
 * ignored); without, sums (two float64 elements on the device, like out) gets
 * sums[0] = their sum and sums[1] = the sum of w[t], each added in a fixed order
 * (independent of the thread count).  The op reads them on the host when it needs
 * them (ops/host.h). */
typedef void (*ct_nll_fwd_fn)(const char *x, const int64_t *t, const char *w, char *out,
                              double *sums, ct_nll_dims d);
/* gi [N, C, S] = 0 except gi[n, t, s] = -w[t] (g[n, s] / div) (g a scalar when
 * g_scalar). */
typedef void (*ct_nll_bwd_fn)(const char *g, bool g_scalar, const int64_t *t, const char *w,
                              char *gi, double div, ct_nll_dims d);

#endif
