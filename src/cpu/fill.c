/* Fill: every element of a tensor set to one value (the cpu backend's fill member).
 * The value arrives as the bits of one element of the tensor's dtype, so a loop per
 * element size serves every dtype. */
#include "cpu/backend.h"
#include "cpu/iter.h"
#include "cpu/kernel_util.h"

#define FILL(U)                                                                          \
    CT_SIMD_PROC(fill_##U, (char **d, const int64_t *s, int64_t n, const void *ctx),      \
                 (d, s, n, ctx), {                                                       \
        U v;                                                                             \
        memcpy(&v, ctx, sizeof v);                                                       \
        if (s[0] == sizeof(U)) {                                                         \
            U *restrict o = (U *)d[0];                                                   \
            for (int64_t i = 0; i < n; i++) o[i] = v;                                    \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) *(U *)(d[0] + i * s[0]) = v;                 \
        }                                                                                \
    })
FILL(uint8_t)
FILL(uint16_t)
FILL(uint32_t)
FILL(uint64_t)

void ct_cpu_fill(ct_tensor *dst, const void *value) {
    size_t es = ct_dtype_size(dst->dtype);
    ct_loop_fn loop = es == 1 ? fill_uint8_t : es == 2 ? fill_uint16_t
                    : es == 4 ? fill_uint32_t : fill_uint64_t;
    CT_ASSERT(es == 1 || es == 2 || es == 4 || es == 8);
    ct_iter it;
    ct_iter_init(&it, 1, &dst, dst->ndim, dst->sizes);
    ct_cpu_run_loop(&it, loop, value);
}
