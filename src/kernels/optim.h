/* The fused optimizer-step kernel ABI (family OPTIM: sgd_step, adam_step, ...). */
#ifndef CT_KERNELS_OPTIM_H
#define CT_KERNELS_OPTIM_H

#include <stdint.h>

/* data = {param, grad, buf0, buf1, buf2} (contiguous, the param's dtype), n elements,
 * scalar args as the optimizer's kernel_args wrote them (src/optim/kinds.c). */
typedef void (*ct_optim_kernel)(char **data, int64_t n, const double *args);

#endif
