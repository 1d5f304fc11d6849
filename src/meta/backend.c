/* The meta backend (PyTorch's `meta` device): tensors with shapes, dtypes and strides
 * but no memory.  Every op runs its checks and computes its output's geometry as on
 * the cpu, then reaches a kernel here that does nothing: users get shape inference
 * and model sizes without allocating data.
 *
 * Its storages hold no memory: alloc gives every one the same placeholder address,
 * which nothing may read or write (the backend is marked no_memory, so the allocation
 * statistics of ctorch/memory.h are not kept for it, and ops/host.h, the one way to
 * read or write values on the host, refuses it).  Its kernel slots are the cpu's: one
 * no-op kernel per family, registered for every (op, dtype) the cpu backend has
 * (core/backend.h's family_kernels and slots_of), so the meta device accepts and
 * refuses exactly what the cpu does. */
#include <sys/mman.h>

#include "core/backend.h"
#include "meta/backend.h"

/* The data address of every meta storage: a reserved range of address space that may
 * not be read or written (PROT_NONE), so that a host access to meta data by mistake
 * stops at once instead of touching other memory; a small static buffer if the range
 * cannot be reserved.  Non-NULL (NULL would mean out of memory). */
static _Alignas(64) char fallback[64];
static void *placeholder;

static void reserve_placeholder(void) {
    void *p = mmap(NULL, (size_t)1 << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    placeholder = p == MAP_FAILED ? fallback : p;
}

static void *meta_alloc(ct_device d, size_t nbytes) {
    (void)d, (void)nbytes;
    return placeholder;
}
static void meta_free(ct_device d, void *p, size_t nbytes) { (void)d, (void)p, (void)nbytes; }
/* Copies between meta tensors, and from the cpu into one, move no data; copies out of
 * a meta tensor are refused above the backends (ops/copy.c). */
static void meta_copy(ct_tensor *dst, const ct_tensor *src) { (void)dst, (void)src; }
/* Fills have no data to set. */
static void meta_fill(ct_tensor *dst, const void *value) { (void)dst, (void)value; }
/* Elementwise loops have no data to run over. */
static void meta_run_loop(const ct_iter *it, ct_loop_fn loop, const void *ctx) {
    (void)it, (void)loop, (void)ctx;
}
static void meta_synchronize(ct_device d) { (void)d; }

/* One kernel per family, of the family's type, doing nothing. */
static void loop_k(char **data, const int64_t *strides, int64_t n, const void *ctx) {
    (void)data, (void)strides, (void)n, (void)ctx;
}
static void reduce_k(const char *in, char *out, int64_t M1, int64_t R, int64_t M2,
                     const void *ctx) {
    (void)in, (void)out, (void)M1, (void)R, (void)M2, (void)ctx;
}
static void argreduce_k(const char *in, char *vals, int64_t *idx, int64_t M1, int64_t R,
                        int64_t M2) {
    (void)in, (void)vals, (void)idx, (void)M1, (void)R, (void)M2;
}
static void scan_k(const char *in, char *out, int64_t M1, int64_t L, int64_t M2,
                   const void *ctx) {
    (void)in, (void)out, (void)M1, (void)L, (void)M2, (void)ctx;
}
static void cumprod_grad_k(const char *x, const char *g, char *out, int64_t M1, int64_t L,
                           int64_t M2, const ct_scan_args *a) {
    (void)x, (void)g, (void)out, (void)M1, (void)L, (void)M2, (void)a;
}
static void softmax_k(ct_softmax_kind kind, const char *x, const char *g, char *o, int64_t M1,
                      int64_t L, int64_t M2) {
    (void)kind, (void)x, (void)g, (void)o, (void)M1, (void)L, (void)M2;
}
static bool gemm_k(const ct_gemm_args *g) {
    (void)g;
    return true;
}
static void conv_k(const ct_conv_job *job) { (void)job; }
static void pool_k(const ct_pool_job *job) { (void)job; }
static void norm_k(const ct_norm_job *job) { (void)job; }
static void rnn_cell_k(bool backward, const ct_rnn_cell_args *a) { (void)backward, (void)a; }
static void random_k(void *out, int64_t n, const ct_rng_args *args) {
    (void)out, (void)n, (void)args;
}
static void multinomial_k(int64_t *out, const ct_multinomial_args *args) {
    (void)out, (void)args;
}
static void range_k(void *out, int64_t n, const ct_range_args *args) {
    (void)out, (void)n, (void)args;
}
static void copy_k(ct_tensor *dst, const ct_tensor *src) { (void)dst, (void)src; }
static void band_k(char *out, const char *in, size_t es, int64_t B, int64_t R, int64_t C,
                   int64_t k, bool upper) {
    (void)out, (void)in, (void)es, (void)B, (void)R, (void)C, (void)k, (void)upper;
}
static void pad_gather_k(char *out, const char *in, size_t es, const ct_pad_geom *g) {
    (void)out, (void)in, (void)es, (void)g;
}
static void pad_scatter_k(char *gin, const char *gout, const ct_pad_geom *g) {
    (void)gin, (void)gout, (void)g;
}
static void rows_k(char *dst, const char *src, const ct_rows_args *a) {
    (void)dst, (void)src, (void)a;
}
static void index_put_k(char *base, const char *vals, const ct_put_args *a) {
    (void)base, (void)vals, (void)a;
}
static void index_get_k(const char *base, char *out, const ct_put_args *a) {
    (void)base, (void)out, (void)a;
}
static void sort_k(const char *in, char *vals, int64_t *idx, const ct_sort_args *a) {
    (void)in, (void)vals, (void)idx, (void)a;
}
static void nll_k(const char *x, const int64_t *t, const char *w, char *out, double *sums,
                  ct_nll_dims d) {
    (void)x, (void)t, (void)w, (void)out, (void)sums, (void)d;
}
static void nll_backward_k(const char *g, bool g_scalar, const int64_t *t, const char *w,
                           char *gi, double div, ct_nll_dims d) {
    (void)g, (void)g_scalar, (void)t, (void)w, (void)gi, (void)div, (void)d;
}
static void optim_k(char **data, int64_t n, const double *args) {
    (void)data, (void)n, (void)args;
}

static const ct_kernel_fn family_kernels[CT_NUM_FAMILIES] = {
    [CT_FAMILY_LOOP] = {.LOOP = loop_k},
    [CT_FAMILY_REDUCE] = {.REDUCE = reduce_k},
    [CT_FAMILY_ARGREDUCE] = {.ARGREDUCE = argreduce_k},
    [CT_FAMILY_SCAN] = {.SCAN = scan_k},
    [CT_FAMILY_CUMPROD_GRAD] = {.CUMPROD_GRAD = cumprod_grad_k},
    [CT_FAMILY_SOFTMAX] = {.SOFTMAX = softmax_k},
    [CT_FAMILY_GEMM] = {.GEMM = gemm_k},
    [CT_FAMILY_CONV] = {.CONV = conv_k},
    [CT_FAMILY_POOL] = {.POOL = pool_k},
    [CT_FAMILY_NORM] = {.NORM = norm_k},
    [CT_FAMILY_RNN_CELL] = {.RNN_CELL = rnn_cell_k},
    [CT_FAMILY_RANDOM] = {.RANDOM = random_k},
    [CT_FAMILY_MULTINOMIAL] = {.MULTINOMIAL = multinomial_k},
    [CT_FAMILY_RANGE] = {.RANGE = range_k},
    [CT_FAMILY_COPY] = {.COPY = copy_k},
    [CT_FAMILY_BAND] = {.BAND = band_k},
    [CT_FAMILY_PAD_GATHER] = {.PAD_GATHER = pad_gather_k},
    [CT_FAMILY_PAD_SCATTER] = {.PAD_SCATTER = pad_scatter_k},
    [CT_FAMILY_ROWS] = {.ROWS = rows_k},
    [CT_FAMILY_INDEX_PUT] = {.INDEX_PUT = index_put_k},
    [CT_FAMILY_INDEX_GET] = {.INDEX_GET = index_get_k},
    [CT_FAMILY_SORT] = {.SORT = sort_k},
    [CT_FAMILY_NLL] = {.NLL = nll_k},
    [CT_FAMILY_NLL_BACKWARD] = {.NLL_BACKWARD = nll_backward_k},
    [CT_FAMILY_OPTIM] = {.OPTIM = optim_k},
};

static const ct_backend meta_backend = {
    .name = "meta",
    .type = CT_DEV_META,
    .no_memory = true,
    .alloc = meta_alloc,
    .free = meta_free,
    .copy = meta_copy,
    .fill = meta_fill,
    .run_loop = meta_run_loop,
    .synchronize = meta_synchronize,
    .family_kernels = family_kernels,
    .slots_of = CT_DEV_CPU,
};

void ct_meta_backend_init(void) {
    reserve_placeholder();
    if (!ct_backend_register(&meta_backend)) ct_fatal("%s", ct_last_error());
}
