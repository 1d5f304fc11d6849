/* GEMM kernels: OpenBLAS for float32/float64, a generic loop for integers.
 * See Note [GEMM determinism] in cpu/gemm.h. */
#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cpu/gemm.h"
#include "cpu/kernel_util.h"

/* OpenBLAS's thread count is process-wide.  ctorch's calls need it at 1 while any of
 * them runs (Note [GEMM determinism]); the program's own setting comes back when the
 * last one ends, so its own cblas calls keep their threads. */
static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_users, blas_saved_threads;

static void blas_single_begin(void) {
    pthread_mutex_lock(&blas_lock);
    if (blas_users++ == 0) {
        blas_saved_threads = openblas_get_num_threads();
        if (blas_saved_threads != 1) openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&blas_lock);
}

static void blas_single_end(void) {
    pthread_mutex_lock(&blas_lock);
    if (--blas_users == 0 && blas_saved_threads != 1) openblas_set_num_threads(blas_saved_threads);
    pthread_mutex_unlock(&blas_lock);
}

/* Note [OpenBLAS buffers]: each thread that runs OpenBLAS concurrently with others
 * takes a working buffer from OpenBLAS's table, mapping a new one (BUFFER_SIZE of its
 * build, 128 MiB in Debian's) when all are in use, and keeping it; when that mapping
 * fails OpenBLAS retries forever, so an address-space limit (ulimit -v) would hang the
 * process.  So under such a limit, BLAS regions run one at a time, and before a region
 * runs on more threads than OpenBLAS has buffers, the address space of the missing
 * ones is tried (mapped and unmapped again): threads that would not get one are not
 * started, and with none at all the product fails with an out-of-memory error.  A
 * region's own working memory (convolutions' column buffers, the reduced products'
 * tiles) is allocated before it reserves, so that what the probe found is left for
 * OpenBLAS.  The buffers OpenBLAS holds are counted from the growth of the address
 * space across regions (small products map none).  Every BLAS caller (the GEMM
 * kernels, the convolutions of cpu/conv.c and cpu/conv_reduced.c) reserves this way;
 * test_blas_address_space sweeps limits.
 * OpenBLAS's own worker threads map their buffers when the library loads and cannot
 * be helped here: under such a limit run with OPENBLAS_NUM_THREADS=1 (ctorch's calls
 * use one OpenBLAS thread anyway, Note [GEMM determinism]). */
static pthread_mutex_t limited_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_buffers;            /* buffers OpenBLAS is known to hold (limited_lock) */
static long vm_before;              /* address space at the region's start (limited_lock) */
static _Thread_local bool in_limited_region;

static bool address_space_limited(void) {
    struct rlimit r;
    return getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
}

static bool address_space_for(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    munmap(p, bytes);
    return true;
}

static long address_space_now(void) {
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld", &pages) != 1) pages = 0;
        fclose(f);
    }
    return pages * sysconf(_SC_PAGESIZE);
}

int ct_blas_reserve(int threads) {
    if (!address_space_limited()) {
        blas_single_begin();
        return threads;
    }
    pthread_mutex_lock(&limited_lock);
    int granted = threads;
    while (granted > 0 && granted > blas_buffers &&
           !address_space_for((size_t)(granted - blas_buffers) * CT_BLAS_BUFFER_BYTES))
        granted--;
    if (granted == 0) {
        pthread_mutex_unlock(&limited_lock);
        return 0;
    }
    in_limited_region = true;
    vm_before = address_space_now();
    blas_single_begin();
    return granted;
}

void ct_blas_unreserve(int threads) {
    if (threads <= 0) return;
    blas_single_end();
    if (!in_limited_region) return;
    in_limited_region = false;
    long grown = address_space_now() - vm_before;
    if (grown > 0) blas_buffers += (int)(grown / (128l << 20));
    pthread_mutex_unlock(&limited_lock);
}

int ct_blas_threads(int64_t items) {
    int nt = ct_get_num_threads();
    return items < nt ? (items > 1 ? (int)items : 1) : nt;
}

#define TR(t) ((t) ? CblasTrans : CblasNoTrans)
void ct_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
              int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, TR(ta), TR(tb), (int)m, (int)n, (int)k, alpha, a, (int)lda, b,
                (int)ldb, beta, c, (int)ldc);
}
void ct_dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
              int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
    cblas_dgemm(CblasRowMajor, TR(ta), TR(tb), (int)m, (int)n, (int)k, alpha, a, (int)lda, b,
                (int)ldb, beta, c, (int)ldc);
}

/* k == 0: c = beta * c (nothing to multiply). */
#define SCALE_ONLY(T)                                                                   \
    for (int64_t bi = 0; bi < g->batch; bi++)                                            \
        for (int64_t i = 0; i < g->m; i++) {                                             \
            T *c = (T *)g->c + bi * g->c_bs + i * g->c_rs;                               \
            for (int64_t j = 0; j < g->n; j++) c[j] = g->beta == 0 ? 0 : (T)(g->beta * c[j]); \
        }

/* The fixed tiles of c that threads compute, a function of the shape only: slices
 * of the longer side (each tile re-packs the operand it shares with the others, so
 * fewer, longer tiles copy less). */
static void tile_shape(int64_t m, int64_t n, int64_t *tm, int64_t *tn) {
    int64_t ts = (m > n ? m : n) <= 512 ? 128 : 256;
    *tm = m >= n ? ts : (m > 0 ? m : 1);
    *tn = m >= n ? (n > 0 ? n : 1) : ts;
}

/* c = alpha * a @ b + beta * c over the batch, as tiles of c computed by
 * single-threaded BLAS calls on OpenMP threads (no OpenBLAS threads at all, so the
 * two thread pools never compete for the cores). */
#define TILED(T, GEMM)                                                                  \
    int64_t tm, tn;                                                                      \
    tile_shape(g->m, g->n, &tm, &tn);                                                    \
    int64_t gm = (g->m + tm - 1) / tm, gn = (g->n + tn - 1) / tn, items = g->batch * gm * gn; \
    int nt = ct_blas_reserve(ct_blas_threads(items));                                    \
    if (nt == 0) return false; /* Note [OpenBLAS buffers] */                             \
    _Pragma("omp parallel for if (nt > 1) num_threads(nt) schedule(dynamic)")            \
    for (int64_t it = 0; it < items; it++) {                                             \
        int64_t bi = it / (gm * gn), r0 = it / gn % gm * tm, c0 = it % gn * tn;           \
        int64_t mb = g->m - r0 < tm ? g->m - r0 : tm, nb = g->n - c0 < tn ? g->n - c0 : tn; \
        GEMM(ta, tb, mb, nb, g->k, (T)g->alpha, A + bi * g->a_bs + r0 * g->a_rs, lda,      \
             B + bi * g->b_bs + c0 * g->b_cs, ldb, (T)g->beta,                            \
             C + bi * g->c_bs + r0 * g->c_rs + c0, g->c_rs);                              \
    }                                                                                    \
    ct_blas_unreserve(nt);

#define BLAS_PROLOGUE(T)                                                                \
    if (g->m == 0 || g->n == 0 || g->batch == 0) return true;                            \
    if (g->k == 0) {                                                                     \
        SCALE_ONLY(T)                                                                    \
        return true;                                                                     \
    }                                                                                    \
    bool ta, tb;                                                                         \
    int64_t lda, ldb;                                                                    \
    CT_ASSERT(ct_blas_layout(g->m, g->k, g->a_rs, g->a_cs, &ta, &lda));                  \
    CT_ASSERT(ct_blas_layout(g->k, g->n, g->b_rs, g->b_cs, &tb, &ldb));                  \
    const T *A = (const T *)g->a, *B = (const T *)g->b;                                  \
    T *C = (T *)g->c;

static bool gemm_f32(const ct_gemm_args *g) {
    BLAS_PROLOGUE(float)
    TILED(float, ct_sgemm)
    return true;
}

static bool gemm_f64(const ct_gemm_args *g) {
    BLAS_PROLOGUE(double)
    TILED(double, ct_dgemm)
    return true;
}

/* Integers: rows of c in parallel, each accumulated over k in order (c row += a[i,p]
 * * b row p), wrapping like PyTorch's integer matmul. */
#define GENERIC_KERNEL(DT, T, SFX)                                                      \
    static bool gemm_##SFX(const ct_gemm_args *g) {                                      \
        int64_t rows = g->batch * g->m;                                                  \
        int nt = ct_get_num_threads();                                                   \
        T alpha = (T)g->alpha, beta = (T)g->beta;                                        \
        _Pragma("omp parallel for if (rows * g->n * g->k >= CT_GRAIN && nt > 1) num_threads(nt)") \
        for (int64_t r = 0; r < rows; r++) {                                             \
            int64_t bi = r / g->m, i = r % g->m;                                         \
            T *c = (T *)g->c + bi * g->c_bs + i * g->c_rs;                               \
            const T *a = (const T *)g->a + bi * g->a_bs + i * g->a_rs;                   \
            const T *b = (const T *)g->b + bi * g->b_bs;                                 \
            for (int64_t j = 0; j < g->n; j++) c[j] = g->beta == 0 ? 0 : (T)(beta * c[j]); \
            for (int64_t p = 0; p < g->k; p++) {                                         \
                T av = (T)(alpha * a[p * g->a_cs]);                                      \
                const T *brow = b + p * g->b_rs;                                         \
                for (int64_t j = 0; j < g->n; j++) c[j] = (T)(c[j] + av * brow[j * g->b_cs]); \
            }                                                                            \
        }                                                                                \
        return true;                                                                     \
    }
CT_INT_TYPES(GENERIC_KERNEL)

#define ENTRY_OPS(DT, SFX) CT_GEMM_ENTRIES(DT, gemm_##SFX)
#define INT_ENTRIES(DT, T, SFX) ENTRY_OPS(DT, SFX)
const ct_kernel_entry ct_cpu_gemm_kernels[] = {
    ENTRY_OPS(CT_F32, f32) ENTRY_OPS(CT_F64, f64) CT_INT_TYPES(INT_ENTRIES) CT_KERNEL_END,
};
