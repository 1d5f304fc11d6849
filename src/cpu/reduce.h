/* Reduction kernels see a contiguous input as [M1, R, M2] and write [M1, M2]:
 * M2 == 1 is a row reduction (the reduced dims are innermost), M1 == 1 a column
 * reduction (out[c] op= x[r, c], the reduced dims lead).  Either way no copy is made.
 *
 * Note [Fixed reduction order]: a row is cut into chunks of CT_REDUCE_CHUNK elements,
 * each reduced with CT_REDUCE_LANES accumulators combined as a tree; columns are cut
 * into chunks of CT_REDUCE_COLCHUNK rows, each reduced in order.  Chunk results are
 * combined in chunk order.  The split depends only on the shape, never on the number
 * of threads, so results are bitwise identical for any ct_set_num_threads. */
#ifndef CT_CPU_REDUCE_H
#define CT_CPU_REDUCE_H

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernel_util.h"
#include "kernels/reduce.h"
#include "core/mem.h"
#include "cpu/kernel_oom.h"

#define CT_REDUCE_CHUNK 16384
#define CT_REDUCE_COLCHUNK 512
#define CT_REDUCE_LANES 16
#define CT_REDUCE_COLBLOCK 64

/* Defines `static void NAME(in, out, M1, R, M2, ctx)` reducing T into ACC:
 * INIT the identity, STEP(a, x) folds one element in, COMB(a, b) combines partials
 * (b comes after a), FIN(a) gives the value stored as TO (assigned, so arithmetic
 * types convert; a bfloat16 FIN rounds itself).  STEP/COMB/FIN may read `ctx`. */
#define CT_DEFINE_REDUCE(NAME, T, ACC, TO, INIT, STEP, COMB, FIN)                          \
    CT_DEFINE_REDUCE_CHUNK(NAME, T, ACC, INIT, STEP, COMB)                                 \
    CT_DEFINE_REDUCE_DRIVER(NAME, T, ACC, TO, INIT, STEP, COMB, FIN)

/* NAME##_chunk: one row chunk in CT_REDUCE_LANES accumulators, combined as a tree. */
#define CT_DEFINE_REDUCE_CHUNK(NAME, T, ACC, INIT, STEP, COMB)                             \
    CT_SIMD_FN(ACC, NAME##_chunk, (const T *restrict x, int64_t n, const void *ctx), (x, n, ctx), {     \
        (void)ctx;                                                                         \
        ACC l[CT_REDUCE_LANES];                                                            \
        for (int j = 0; j < CT_REDUCE_LANES; j++) l[j] = (INIT);                           \
        int64_t i = 0;                                                                     \
        for (; i + CT_REDUCE_LANES <= n; i += CT_REDUCE_LANES)                             \
            for (int j = 0; j < CT_REDUCE_LANES; j++) STEP(l[j], x[i + j]);                \
        for (int j = 0; i < n; i++, j++) STEP(l[j], x[i]);                                 \
        for (int w = CT_REDUCE_LANES / 2; w > 0; w /= 2)                                   \
            for (int j = 0; j < w; j++) l[j] = COMB(l[j], l[j + w]);                       \
        return l[0];                                                                       \
    })

/* CT_DEFINE_REDUCE for float16 input, whose rows are widened a tile at a time
 * (cpu/reduced_cvt.h: F16C) and folded in by FSTEP(a, float x): the same lanes in the
 * same order as STEP element by element (a tile is a whole number of lane rounds). */
#define CT_DEFINE_REDUCE_TILED(NAME, T, ACC, TO, INIT, STEP, FSTEP, COMB, FIN)             \
    CT_SIMD_FN(ACC, NAME##_chunk, (const T *restrict x, int64_t n, const void *ctx), (x, n, ctx), {     \
        (void)ctx;                                                                         \
        _Static_assert(CT_REDUCED_TILE % CT_REDUCE_LANES == 0, "whole lane rounds");       \
        ACC l[CT_REDUCE_LANES];                                                            \
        float buf[CT_REDUCED_TILE];                                                        \
        for (int j = 0; j < CT_REDUCE_LANES; j++) l[j] = (INIT);                           \
        for (int64_t b = 0; b < n; b += CT_REDUCED_TILE) {                                 \
            int64_t len = n - b < CT_REDUCED_TILE ? n - b : CT_REDUCED_TILE, i = 0;        \
            CT_REDUCED_TO_FLOAT_N(buf, x + b, len);                                        \
            for (; i + CT_REDUCE_LANES <= len; i += CT_REDUCE_LANES)                       \
                for (int j = 0; j < CT_REDUCE_LANES; j++) FSTEP(l[j], buf[i + j]);         \
            for (int j = 0; i < len; i++, j++) FSTEP(l[j], buf[i]);                        \
        }                                                                                  \
        for (int w = CT_REDUCE_LANES / 2; w > 0; w /= 2)                                   \
            for (int j = 0; j < w; j++) l[j] = COMB(l[j], l[j + w]);                       \
        return l[0];                                                                       \
    })                                                                                     \
    CT_DEFINE_REDUCE_DRIVER(NAME, T, ACC, TO, INIT, STEP, COMB, FIN)

/* NAME: the kernel over [M1, R, M2], given NAME##_chunk. */
#define CT_DEFINE_REDUCE_DRIVER(NAME, T, ACC, TO, INIT, STEP, COMB, FIN)                   \
    /* Rows [r0, r1) of columns [0, nc) of a [*, ld] block, into acc[0, nc).  Rows are    \
     * read whole (sequential memory); narrow blocks take k rows at once into k * nc      \
     * lanes, folded at the end (a fixed order that depends only on the shape). */        \
    CT_SIMD_PROC(NAME##_colchunk, (const T *restrict x, ACC *restrict acc, int64_t r0, \
                                        int64_t r1, int64_t ld, int64_t nc,               \
                                        const void *ctx), (x, acc, r0, r1, ld, nc, ctx), {                                \
        (void)ctx;                                                                         \
        if (nc >= CT_REDUCE_COLBLOCK / 2 || nc != ld) {                                    \
            for (int64_t c = 0; c < nc; c++) acc[c] = (INIT);                              \
            for (int64_t r = r0; r < r1; r++) {                                            \
                const T *restrict row = x + r * ld;                                        \
                for (int64_t c = 0; c < nc; c++) STEP(acc[c], row[c]);                     \
            }                                                                              \
            return;                                                                        \
        }                                                                                  \
        ACC l[CT_REDUCE_COLBLOCK];                                                         \
        int64_t k = CT_REDUCE_COLBLOCK / nc, w = k * nc, r = r0;                           \
        for (int64_t c = 0; c < w; c++) l[c] = (INIT);                                     \
        for (; r + k <= r1; r += k) {                                                      \
            const T *restrict p = x + r * nc;                                              \
            for (int64_t c = 0; c < w; c++) STEP(l[c], p[c]);                              \
        }                                                                                  \
        for (; r < r1; r++)                                                                \
            for (int64_t c = 0; c < nc; c++) STEP(l[c], x[r * nc + c]);                    \
        for (int64_t c = 0; c < nc; c++) {                                                 \
            ACC a = l[c];                                                                  \
            for (int64_t j = 1; j < k; j++) a = COMB(a, l[j * nc + c]);                    \
            acc[c] = a;                                                                    \
        }                                                                                  \
    })                                                                                      \
    static void NAME(const char *in, char *out, int64_t M1, int64_t R, int64_t M2,         \
                     const void *ctx) {                                                    \
        const T *x = (const T *)in;                                                        \
        TO *o = (TO *)out;                                                                 \
        int nt = ct_get_num_threads();                                                     \
        bool par = M1 * R * M2 >= CT_GRAIN && nt > 1;                                      \
        if (M1 * M2 == 0) return; /* no outputs */                                         \
        if (M2 == 1) {                                                                     \
            int64_t nch = R > CT_REDUCE_CHUNK ? (R + CT_REDUCE_CHUNK - 1) / CT_REDUCE_CHUNK : 1; \
            if (nch == 1) {                                                                \
                _Pragma("omp parallel for if (par) num_threads(nt)")                       \
                for (int64_t m = 0; m < M1; m++) {                                         \
                    ACC a = NAME##_chunk(x + m * R, R, ctx);                               \
                    o[m] = FIN(a);                                                       \
                }                                                                          \
                return;                                                                    \
            }                                                                              \
            ACC *part = ct_malloc(sizeof(ACC) * (size_t)(M1 * nch));                       \
            if (!part) {                                                                   \
                ct_kernel_out_of_memory("a reduction");                                    \
                return;                                                                    \
            }                                                                              \
            _Pragma("omp parallel for if (par) num_threads(nt)")                           \
            for (int64_t k = 0; k < M1 * nch; k++) {                                       \
                int64_t m = k / nch, b = (k % nch) * CT_REDUCE_CHUNK;                      \
                int64_t e = b + CT_REDUCE_CHUNK < R ? b + CT_REDUCE_CHUNK : R;             \
                part[k] = NAME##_chunk(x + m * R + b, e - b, ctx);                         \
            }                                                                              \
            for (int64_t m = 0; m < M1; m++) {                                             \
                ACC a = part[m * nch];                                                     \
                for (int64_t c = 1; c < nch; c++) a = COMB(a, part[m * nch + c]);          \
                o[m] = FIN(a);                                                           \
            }                                                                              \
            free(part);                                                                    \
            return;                                                                        \
        }                                                                                  \
        /* Columns: row chunks fixed by R; column blocks only add parallelism (each       \
         * column is reduced the same way whatever the split). */                          \
        int64_t nrc = R > CT_REDUCE_COLCHUNK ? (R + CT_REDUCE_COLCHUNK - 1) / CT_REDUCE_COLCHUNK : 1; \
        int64_t cw = M2;                                                                   \
        if (par && M1 * nrc < 4 * nt && M2 >= 2 * CT_REDUCE_COLBLOCK) cw = 4 * CT_REDUCE_COLBLOCK; \
        int64_t ncb = (M2 + cw - 1) / cw;                                                  \
        ACC *part = ct_malloc(sizeof(ACC) * (size_t)(M1 * nrc * M2 + 1));                  \
        if (!part) {                                                                       \
            ct_kernel_out_of_memory("a reduction");                                        \
            return;                                                                        \
        }                                                                                  \
        _Pragma("omp parallel for if (par) num_threads(nt)")                               \
        for (int64_t k = 0; k < M1 * nrc * ncb; k++) {                                     \
            int64_t m = k / (nrc * ncb), rc = k / ncb % nrc, c0 = k % ncb * cw;            \
            int64_t nc = M2 - c0 < cw ? M2 - c0 : cw;                                      \
            int64_t r0 = rc * CT_REDUCE_COLCHUNK;                                          \
            int64_t r1 = r0 + CT_REDUCE_COLCHUNK < R ? r0 + CT_REDUCE_COLCHUNK : R;        \
            if (nrc == 1) r1 = R;                                                          \
            NAME##_colchunk(x + m * R * M2 + c0, part + (m * nrc + rc) * M2 + c0, r0, r1,  \
                            M2, nc, ctx);                                                  \
        }                                                                                  \
        _Pragma("omp parallel for if (par) num_threads(nt)")                               \
        for (int64_t k = 0; k < M1 * M2; k++) {                                            \
            int64_t m = k / M2, c = k % M2;                                                \
            ACC a = part[m * nrc * M2 + c];                                                \
            for (int64_t rc = 1; rc < nrc; rc++) a = COMB(a, part[(m * nrc + rc) * M2 + c]); \
            o[k] = FIN(a);                                                             \
        }                                                                                  \
        free(part);                                                                        \
    }

/* NaN-propagating max / min steps for floats (plain compares for integers); `|` rather
 * than `||` keeps them branch-free, so the lane loops vectorize. */
#define CT_MAX_OF(a, b) ((((b) > (a)) | ((b) != (b))) ? (b) : (a))
#define CT_MIN_OF(a, b) ((((b) < (a)) | ((b) != (b))) ? (b) : (a))

/* NAME##_chunk for float max / min (OP: > or <) with GCC vector extensions: the
 * compare-and-select as bit masks vectorizes where the scalar ?: does not. */
#define CT_DEFINE_EXTREME_CHUNK(NAME, T, IT, INIT, OP)                                     \
    CT_SIMD_FN(T, NAME##_chunk, (const T *restrict x, int64_t n, const void *ctx), (x, n, ctx), {       \
        (void)ctx;                                                                         \
        typedef T vt __attribute__((vector_size(32)));                                     \
        typedef IT vi __attribute__((vector_size(32)));                                    \
        enum { W = 32 / sizeof(T) };                                                       \
        vt a0, a1;                                                                         \
        for (int j = 0; j < W; j++) a0[j] = a1[j] = (INIT);                                \
        int64_t i = 0;                                                                     \
        for (; i + 2 * W <= n; i += 2 * W) {                                               \
            vt b0, b1;                                                                     \
            memcpy(&b0, x + i, sizeof b0);                                                 \
            memcpy(&b1, x + i + W, sizeof b1);                                             \
            vi m0 = (b0 OP a0) | (b0 != b0), m1 = (b1 OP a1) | (b1 != b1);                 \
            a0 = (vt)(((vi)b0 & m0) | ((vi)a0 & ~m0));                                     \
            a1 = (vt)(((vi)b1 & m1) | ((vi)a1 & ~m1));                                     \
        }                                                                                  \
        T r = (INIT);                                                                      \
        for (int j = 0; j < W; j++) {                                                      \
            r = (((a0[j] OP r) | (a0[j] != a0[j])) ? a0[j] : r);                           \
            r = (((a1[j] OP r) | (a1[j] != a1[j])) ? a1[j] : r);                           \
        }                                                                                  \
        for (; i < n; i++) r = (((x[i] OP r) | (x[i] != x[i])) ? x[i] : r);                \
        return r;                                                                          \
    })

#endif
