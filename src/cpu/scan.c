/* cumsum, cumprod and cumprod's zero-safe gradient over [M1, L, M2] (the scanned dim
 * in the middle, contiguous).  ctx: ct_scan_args (reverse / exclusive scans serve
 * the backward formulas).  Floats accumulate in double, float16 / bfloat16 in float,
 * integers in int64 (ct_acc_type). */
#include "cpu/reduce.h"
#include "kernels/scan.h"
#include "core/mem.h"
#include "cpu/kernel_oom.h"

#define ADD_STEP(a, x) ((a) += (__typeof__(a))(x))
#define MUL_STEP(a, x) ((a) *= (__typeof__(a))(x))

/* STORE(TO, a): the running value a as a TO element. */
#define CAST_STORE(TO, a) ((TO)(a))
#define SCAN_KERNEL(NAME, T, ACC, TO, INIT, STEP, STORE)                                 \
    CT_SIMD_PROC(NAME##_block, (const T *restrict x, TO *restrict o, int64_t L,     \
                                     int64_t M2, int64_t nc, bool rev, bool excl), (x, o, L, M2, nc, rev, excl), {      \
        if (nc == 1 && M2 == 1 && !rev) { /* a contiguous row: one running value */     \
            ACC a = (INIT);                                                              \
            if (excl)                                                                    \
                for (int64_t l = 0; l < L; l++) {                                        \
                    o[l] = STORE(TO, a);                                                 \
                    STEP(a, x[l]);                                                       \
                }                                                                        \
            else                                                                         \
                for (int64_t l = 0; l < L; l++) {                                        \
                    STEP(a, x[l]);                                                       \
                    o[l] = STORE(TO, a);                                                 \
                }                                                                        \
            return;                                                                      \
        }                                                                                \
        ACC acc[CT_REDUCE_COLBLOCK];                                                     \
        for (int64_t c = 0; c < nc; c++) acc[c] = (INIT);                                \
        for (int64_t p = 0; p < L; p++) {                                                \
            int64_t l = rev ? L - 1 - p : p;                                             \
            const T *restrict xr = x + l * M2;                                           \
            TO *restrict orow = o + l * M2;                                              \
            if (excl) {                                                                  \
                for (int64_t c = 0; c < nc; c++) {                                       \
                    orow[c] = STORE(TO, acc[c]);                                                \
                    STEP(acc[c], xr[c]);                                                 \
                }                                                                        \
            } else {                                                                     \
                for (int64_t c = 0; c < nc; c++) {                                       \
                    STEP(acc[c], xr[c]);                                                 \
                    orow[c] = STORE(TO, acc[c]);                                                \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    })                                                                                    \
    static void NAME(const char *in, char *out, int64_t M1, int64_t L, int64_t M2,       \
                     const void *ctx) {                                                  \
        const ct_scan_args *a = ctx;                                                     \
        int64_t ncb = (M2 + CT_REDUCE_COLBLOCK - 1) / CT_REDUCE_COLBLOCK;                \
        int nt = ct_get_num_threads();                                                   \
        _Pragma("omp parallel for if (M1 * L * M2 >= CT_GRAIN && nt > 1) num_threads(nt)") \
        for (int64_t k = 0; k < M1 * ncb; k++) {                                         \
            int64_t m = k / ncb, c0 = (k % ncb) * CT_REDUCE_COLBLOCK;                    \
            int64_t nc = M2 - c0 < CT_REDUCE_COLBLOCK ? M2 - c0 : CT_REDUCE_COLBLOCK;    \
            NAME##_block((const T *)in + m * L * M2 + c0, (TO *)out + m * L * M2 + c0, L, \
                         M2, nc, a->reverse, a->exclusive);                              \
        }                                                                                \
    }

#define SCAN_KERNELS(T, SFX, ACC, TO)                                                    \
    SCAN_KERNEL(cumsum_##SFX, T, ACC, TO, 0, ADD_STEP, CAST_STORE)                       \
    SCAN_KERNEL(cumprod_##SFX, T, ACC, TO, 1, MUL_STEP, CAST_STORE)
SCAN_KERNELS(float, f32, double, float)
SCAN_KERNELS(double, f64, double, double)
/* Integers wrap around on overflow, as in PyTorch (unsigned arithmetic). */
SCAN_KERNELS(int64_t, i64, uint64_t, int64_t)
SCAN_KERNELS(int32_t, i32, uint64_t, int64_t)
SCAN_KERNELS(int16_t, i16, uint64_t, int64_t)
SCAN_KERNELS(uint8_t, u8, uint64_t, int64_t)
SCAN_KERNELS(int8_t, i8, uint64_t, int64_t)
SCAN_KERNELS(bool, b8, uint64_t, int64_t)
/* float16 / bfloat16 accumulate in float (ct_acc_type), each element widened in
 * registers and each running value rounded to nearest even on its store. */
#define R_ADD_STEP(a, x) ((a) += CT_LOAD_REDUCED(x))
#define R_MUL_STEP(a, x) ((a) *= CT_LOAD_REDUCED(x))
#define R_STORE(TO, a) CT_STORE_REDUCED(TO, a)
#define REDUCED_SCANS(DT, T, SFX)                                                        \
    SCAN_KERNEL(cumsum_##SFX, T, float, T, 0, R_ADD_STEP, R_STORE)                       \
    SCAN_KERNEL(cumprod_##SFX, T, float, T, 1, R_MUL_STEP, R_STORE)
CT_REDUCED_TYPES(REDUCED_SCANS)

/* Note [cumprod gradient with zeros]: for y_p = prod_{q<=p} x_q (in scan order),
 *   dL/dx_p = (prod_{q<p} x_q) * T_p,   T_p = g_p + x_{p+1} T_{p+1},
 * which never divides by x, so zeros need no special case.  An exclusive scan is the
 * inclusive scan of x shifted by one (a leading 1).  in: x then g, both [M1, L, M2]. */
#define CUMPROD_GRAD(T, SFX)                                                             \
    static void cumprod_grad_##SFX(const char *in, const char *gin, char *out, int64_t M1, \
                                   int64_t L, int64_t M2, const ct_scan_args *a) {       \
        int nt = ct_get_num_threads();                                                   \
        atomic_bool failed = false;                                                      \
        _Pragma("omp parallel for if (M1 * L * M2 >= CT_GRAIN && nt > 1) num_threads(nt)") \
        for (int64_t k = 0; k < M1 * M2; k++) {                                          \
            const T *x = (const T *)in + (k / M2) * L * M2 + k % M2;                     \
            const T *g = (const T *)gin + (k / M2) * L * M2 + k % M2;                    \
            T *o = (T *)out + (k / M2) * L * M2 + k % M2;                                \
            double *buf = ct_malloc(sizeof(double) * (size_t)(2 * L + 1));                  \
            if (!buf) {                                                                  \
                atomic_store(&failed, true);                                             \
                continue;                                                                \
            }                                                                            \
            double *xs = buf, *tp = buf + L;                                             \
            for (int64_t p = 0; p < L; p++) {                                            \
                int64_t l = a->reverse ? L - 1 - p : p;                                  \
                int64_t lp = a->reverse ? l + 1 : l - 1; /* the element before l */      \
                xs[p] = !a->exclusive ? (double)x[l * M2] : p == 0 ? 1.0 : (double)x[lp * M2]; \
            }                                                                            \
            double t = 0;                                                                \
            for (int64_t p = L - 1; p >= 0; p--) {                                       \
                int64_t l = a->reverse ? L - 1 - p : p;                                  \
                t = (double)g[l * M2] + (p + 1 < L ? xs[p + 1] * t : 0.0);               \
                tp[p] = t;                                                               \
            }                                                                            \
            double pre = 1;                                                              \
            for (int64_t p = 0; p < L; p++) {                                            \
                double gp = pre * tp[p];                                                 \
                pre *= xs[p];                                                            \
                int64_t l = a->reverse ? L - 1 - p : p;                                  \
                if (!a->exclusive) {                                                     \
                    o[l * M2] = (T)gp;                                                   \
                } else if (p > 0) {                                                      \
                    o[(a->reverse ? l + 1 : l - 1) * M2] = (T)gp;                        \
                }                                                                        \
            }                                                                            \
            if (a->exclusive && L > 0) o[(a->reverse ? 0 : L - 1) * M2] = 0;             \
            free(buf);                                                                   \
        }                                                                                \
        if (failed) ct_kernel_out_of_memory("cumprod's backward");                       \
    }
CUMPROD_GRAD(float, f32)
CUMPROD_GRAD(double, f64)

#define ENTRIES(DT, T, SFX) \
    CT_KERNEL(SCAN, CT_OP_cumsum, DT, cumsum_##SFX),                                     \
    CT_KERNEL(SCAN, CT_OP_cumprod, DT, cumprod_##SFX),
const ct_kernel_entry ct_cpu_scan_kernels[] = {
    CT_FLOAT_TYPES(ENTRIES) CT_REDUCED_TYPES(ENTRIES) CT_INT_TYPES(ENTRIES) CT_BOOL_TYPE(ENTRIES)
    CT_KERNEL(CUMPROD_GRAD, CT_OP_cumprod_grad, CT_F32, cumprod_grad_f32),
    CT_KERNEL(CUMPROD_GRAD, CT_OP_cumprod_grad, CT_F64, cumprod_grad_f64),
    CT_KERNEL_END,
};
