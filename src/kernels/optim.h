/* The fused optimizer-step kernel ABI (family OPTIM: sgd_step, adam_step, ..., and the
 * gradient scaler's check-and-unscale). */
#ifndef CT_KERNELS_OPTIM_H
#define CT_KERNELS_OPTIM_H

#include <stdint.h>

/* data = {param, grad, buf0, buf1, buf2} (contiguous, the param's dtype), n elements,
 * scalar args as the optimizer's kernel_args wrote them (src/optim/kinds.c).  The
 * gradient scaler's amp_non_finite_check_and_unscale takes data = {grad (contiguous),
 * found_inf, inv_scale (float32, one element each)} and no args (src/amp/). */
typedef void (*ct_optim_kernel)(char **data, int64_t n, const double *args);

#endif
