/* Fill: every element of data[0] set to the value in ctx (converted to its dtype). */
#include "cpu/kernel_util.h"

#define FILL(DT, T, SFX)                                                                 \
    CT_SIMD_PROC(fill_##SFX, (char **d, const int64_t *s, int64_t n, const void *ctx), (d, s, n, ctx), { \
        T v;                                                                             \
        ct_store_f64(&v, DT, ((const ct_pw_args *)ctx)->a);                              \
        if (DT == CT_I64 && ((const ct_pw_args *)ctx)->has_b)                            \
            ct_store_i64(&v, DT, ((const ct_pw_args *)ctx)->i); /* exact big ints */     \
        if (s[0] == sizeof(T)) {                                                         \
            T *restrict o = (T *)d[0];                                                   \
            for (int64_t i = 0; i < n; i++) o[i] = v;                                    \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) memcpy(d[0] + i * s[0], &v, sizeof v);       \
        }                                                                                \
    })
CT_FOREACH_DTYPE_SFX(FILL)

#define ENTRY(DT, T, SFX) CT_KERNEL(LOOP, CT_OP_fill, DT, fill_##SFX),
const ct_kernel_entry ct_cpu_fill_kernels[] = {CT_FOREACH_DTYPE_SFX(ENTRY) CT_KERNEL_END};
