/* arange and linspace, following PyTorch's formulas (RangeFactoriesKernel.cpp):
 * arange computes start + i * step in int64 for integral dtypes and in double for
 * floating ones; linspace fills the first half from start and the second half back
 * from end, so that both endpoints are exact. */
#include <omp.h>

#include "cpu/kernel_util.h"
#include "kernels/range.h"

#define PAR_FOR(n) \
    _Pragma("omp parallel for schedule(static) num_threads(ct_get_num_threads()) if((n) > CT_GRAIN)") \
    for (int64_t i = 0; i < (n); i++)

static inline void put(void *o, ct_dtype dt, int64_t i, double v) {
    ct_store_f64((char *)o + i * (int64_t)ct_dtype_size(dt), dt, v);
}

#define FLOAT_KERNELS(DT, T, SFX)                                                        \
    static void arange_##SFX(void *o, int64_t n, const ct_range_args *a) {              \
        T *out = o;                                                                      \
        PAR_FOR(n) out[i] = (T)(a->start + a->step * (double)i);                         \
    }                                                                                    \
    static void linspace_##SFX(void *o, int64_t n, const ct_range_args *a) {            \
        T *out = o;                                                                      \
        const T start = (T)a->start, end = (T)a->end;                                    \
        const T step = n > 1 ? (end - start) / (T)(n - 1) : 0;                           \
        const int64_t half = n / 2;                                                      \
        PAR_FOR(n) out[i] = i < half ? start + step * (T)i : end - step * (T)(n - i - 1); \
    }
CT_FLOAT_TYPES(FLOAT_KERNELS)

/* float16 / bfloat16 compute in float32. */
#define REDUCED_KERNELS(DT, T, SFX)                                                      \
    static void arange_##SFX(void *o, int64_t n, const ct_range_args *a) {              \
        PAR_FOR(n) put(o, DT, i, a->start + a->step * (double)i);                        \
    }                                                                                    \
    static void linspace_##SFX(void *o, int64_t n, const ct_range_args *a) {            \
        const float start = (float)a->start, end = (float)a->end;                        \
        const float step = n > 1 ? (end - start) / (float)(n - 1) : 0;                   \
        const int64_t half = n / 2;                                                      \
        PAR_FOR(n) put(o, DT, i, i < half ? start + step * (float)i                      \
                                          : end - step * (float)(n - i - 1));            \
    }
CT_REDUCED_TYPES(REDUCED_KERNELS)

/* Integers: arange in int64 (wrapping like C++), linspace with a double step and the
 * result truncated toward zero, as a static_cast does. */
#define INT_KERNELS(DT, T, SFX)                                                          \
    static void arange_##SFX(void *o, int64_t n, const ct_range_args *a) {              \
        T *out = o;                                                                      \
        PAR_FOR(n) out[i] = (T)(int64_t)((uint64_t)a->istart + (uint64_t)a->istep * (uint64_t)i); \
    }                                                                                    \
    static void linspace_##SFX(void *o, int64_t n, const ct_range_args *a) {            \
        T *out = o;                                                                      \
        const T start = (T)a->start, end = (T)a->end;                                    \
        const double step = n > 1 ? ((double)end - (double)start) / (double)(n - 1) : 0; \
        const int64_t half = n / 2;                                                      \
        PAR_FOR(n) out[i] = (T)(i < half ? start + step * (double)i                      \
                                         : end - step * (double)(n - i - 1));           \
    }
CT_INT_TYPES(INT_KERNELS)

#define ENTRY(DT, T, SFX) \
    CT_KERNEL(RANGE, CT_OP_arange, DT, arange_##SFX),                                    \
    CT_KERNEL(RANGE, CT_OP_linspace, DT, linspace_##SFX),
const ct_kernel_entry ct_cpu_range_kernels[] = {
    CT_FLOAT_TYPES(ENTRY) CT_REDUCED_TYPES(ENTRY) CT_INT_TYPES(ENTRY) CT_KERNEL_END};
