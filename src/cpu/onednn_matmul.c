/* float16 / bfloat16 GEMM (kernels/gemm.h) as one oneDNN matmul primitive:
 *   dst = alpha * src @ weights + beta * dst     (output scale alpha, a sum post-op beta)
 * accumulated in float and rounded once to the dtype, as cpu/gemm_reduced.c does.  The
 * operands' strides go to oneDNN as they are (row- or column-major with a leading
 * dimension, kernels/gemm.h); a batch stride 0 is a broadcast batch dimension of 1.
 *
 * Note [oneDNN determinism], matmul: oneDNN 2.6 has two bf16 matmuls.  Its brgemm
 * kernels (AVX512-BF16 and AMX CPUs) split c into blocks of rows and columns between
 * threads and keep each dot product's k on one thread, so the float sums, and the
 * results, are the same for any thread count (checked on their float accumulators,
 * 1 against 3 threads, for every shape of tests/test_onednn.c's thread_counts).  Its
 * GEMM-based kernel (plain AVX-512: bf16 emulated) splits k between threads when m*n
 * is small (4x65536x4, 16x8192x16, 10x3136x10: most float sums differ), so there the
 * reduced kernel runs instead (it is not slower: both widen to float for sgemm-like
 * kernels). */
#include <string.h>

#include "cpu/onednn_prim.h"

typedef struct {
    dnnl_data_type_t dt;
    const ct_gemm_args *g;
    int64_t a_rs, a_cs, b_rs, b_cs; /* of a valid BLAS layout, size-1 dims normalized */
} matmul_ctx;

/* A rows x cols operand's strides as oneDNN takes them: the BLAS layout's (size-1
 * dims get the stride that layout implies). */
static bool layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t *ors, int64_t *ocs) {
    bool tr;
    int64_t ld;
    if (!ct_blas_layout(rows, cols, rs, cs, &tr, &ld)) return false;
    *ors = tr ? 1 : ld;
    *ocs = tr ? ld : 1;
    return true;
}

static void md3(dnnl_memory_desc_t *md, dnnl_data_type_t dt, int64_t batch, int64_t bs,
                int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    if (batch == 1) bs = rows * cols; /* any stride is valid for a dim of one */
    dnnl_dims_t dims = {batch, rows, cols}, strides = {bs, rs, cs};
    dnnl_memory_desc_init_by_strides(md, 3, dims, dt, strides);
}

static dnnl_status_t make_pd(const void *vctx, const_dnnl_primitive_attr_t attr,
                             dnnl_primitive_desc_t *pd) {
    const matmul_ctx *c = vctx;
    const ct_gemm_args *g = c->g;
    dnnl_memory_desc_t a, b, d;
    md3(&a, c->dt, g->a_bs == 0 ? 1 : g->batch, g->a_bs, g->m, g->k, c->a_rs, c->a_cs);
    md3(&b, c->dt, g->b_bs == 0 ? 1 : g->batch, g->b_bs, g->k, g->n, c->b_rs, c->b_cs);
    md3(&d, c->dt, g->batch, g->c_bs, g->m, g->n, g->c_rs, 1);
    dnnl_matmul_desc_t desc;
    dnnl_status_t st = dnnl_matmul_desc_init(&desc, &a, &b, NULL, &d);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &desc, attr, ct_onednn_engine(), NULL);
    if (st != dnnl_success) return st;
    /* Note [oneDNN determinism]: only the brgemm kernels (AVX512-BF16, AMX) keep k
     * whole on one thread; the GEMM-based one splits k between threads for small
     * products, by their number */
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
        !impl || strncmp(impl, "brg", 3) != 0) {
        dnnl_primitive_desc_destroy(*pd);
        return dnnl_unimplemented;
    }
    return dnnl_success;
}

static dnnl_status_t attr_of(const void *vctx, dnnl_primitive_attr_t attr) {
    const ct_gemm_args *g = ((const matmul_ctx *)vctx)->g;
    dnnl_status_t st = dnnl_success;
    if (g->alpha != 1) {
        float alpha = (float)g->alpha;
        st = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha);
    }
    if (st == dnnl_success && g->beta != 0) {
        dnnl_post_ops_t po;
        st = dnnl_post_ops_create(&po);
        if (st != dnnl_success) return st;
        st = dnnl_post_ops_append_sum(po, (float)g->beta);
        if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
        dnnl_post_ops_destroy(po);
    }
    return st;
}

bool ct_onednn_gemm(ct_dtype dt, const ct_gemm_args *g) {
    if (!ct_onednn_enabled() || (dt != CT_BF16 && dt != CT_F16)) return false;
    if (g->m == 0 || g->n == 0 || g->batch == 0) return true;
    /* k == 0 (c = beta * c) and both operands broadcast over the batch: the reduced
     * kernel's business */
    if (g->k == 0 || (g->batch > 1 && g->a_bs == 0 && g->b_bs == 0)) return false;
    matmul_ctx c = {.dt = dt == CT_BF16 ? dnnl_bf16 : dnnl_f16, .g = g};
    if (!layout(g->m, g->k, g->a_rs, g->a_cs, &c.a_rs, &c.a_cs) ||
        !layout(g->k, g->n, g->b_rs, g->b_cs, &c.b_rs, &c.b_cs))
        return false;
    int threads = ct_onednn_threads();
    double alpha = g->alpha, beta = g->beta;
    ct_onednn_key key = {{0}};
    int64_t *k = key.v;
    *k++ = 1; /* matmul */
    *k++ = c.dt;
    *k++ = threads;
    *k++ = g->batch, *k++ = g->m, *k++ = g->n, *k++ = g->k;
    *k++ = g->a_bs == 0 ? 0 : g->a_bs, *k++ = c.a_rs, *k++ = c.a_cs;
    *k++ = g->b_bs == 0 ? 0 : g->b_bs, *k++ = c.b_rs, *k++ = c.b_cs;
    *k++ = g->c_bs, *k++ = g->c_rs;
    memcpy(k++, &alpha, sizeof alpha);
    memcpy(k++, &beta, sizeof beta);
    if (g->batch == 1) key.v[7] = key.v[10] = key.v[13] = 0;
    int saved = ct_onednn_threads_begin(threads);
    bool failed;
    ct_onednn_prim *p = ct_onednn_lookup(&key, make_pd, attr_of, &c, "matmul", &failed);
    if (p) {
        ct_onednn_arg args[] = {{DNNL_ARG_SRC, (void *)g->a}, {DNNL_ARG_WEIGHTS, (void *)g->b},
                                {DNNL_ARG_DST, g->c}};
        ct_onednn_run(p, args, 3, "matmul", true);
        ct_onednn_buffers_trim();
        ct_onednn_release(p);
    }
    ct_onednn_threads_end(saved);
    return p || failed;
}
