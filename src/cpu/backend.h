/* The cpu backend's parts, put together in cpu/backend.c. */
#ifndef CT_CPU_BACKEND_H
#define CT_CPU_BACKEND_H

#include "core/tensor_impl.h"
#include "kernels/kernel.h"

/* Registers the cpu backend (at start-up, from src/backends.c). */
void ct_cpu_backend_init(void);

/* dst = src elementwise over the iterator: any strides and dtypes (cpu/copy.c). */
void ct_cpu_copy(ct_tensor *dst, const ct_tensor *src);
/* Every element of dst = value, one element of dst's dtype (cpu/fill.c). */
void ct_cpu_fill(ct_tensor *dst, const void *value);
/* Every kernel table of src/cpu, NULL-terminated (cpu/kernels.c). */
extern const ct_kernel_entry *const ct_cpu_kernel_tables[];

#endif
