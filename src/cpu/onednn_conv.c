/* float16 / bfloat16 convolution jobs (kernels/conv.h) as oneDNN convolution
 * primitives, in the layouts oneDNN's fastest kernels choose (blocked channels, the
 * operands reordered from and to ctorch's nchw / oihw / goihw around each run):
 *   FORWARD      forward_training, the bias added in float before the one rounding
 *   GRAD_INPUT   backward_data (a transposed conv's bias is the reduced kernel's)
 *   GRAD_WEIGHT  backward_weights into float, the weight only (the caller sums the bias)
 * Every sum is float, rounded once to the dtype, as cpu/conv_reduced.c computes it;
 * the batch runs in fixed chunks (Note [oneDNN determinism] below). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "cpu/conv_cols.h"
#include "cpu/onednn_prim.h"

typedef struct {
    dnnl_data_type_t dt, wdt; /* the operands', the weight gradient's */
    const ct_conv_job *job;
    int64_t N; /* the batch of the primitive: the job's, or a chunk's */
} conv_ctx;

typedef struct {
    dnnl_memory_desc_t x, w, y, bias;
    dnnl_dims_t strides, dilates, pad_l, pad_r;
} conv_descs;

/* The descriptors of a batch of N: ctorch's plain layouts, or (any) whatever layouts
 * oneDNN's fastest kernel wants (blocked channels: operands are reordered to them and
 * back, which costs far less than the GEMM-based kernels of the plain layouts lose). */
static void descs(const conv_ctx *c, int64_t N, conv_descs *d, dnnl_data_type_t wdt, bool any) {
    const ct_conv_geom *g = c->job->g;
    dnnl_dims_t x = {N, g->C, g->H, g->W}, y = {N, g->O, g->OH, g->OW}, b = {g->O};
    dnnl_memory_desc_init_by_tag(&d->x, 4, x, c->dt, any ? dnnl_format_tag_any : dnnl_nchw);
    dnnl_memory_desc_init_by_tag(&d->y, 4, y, c->dt, any ? dnnl_format_tag_any : dnnl_nchw);
    dnnl_memory_desc_init_by_tag(&d->bias, 1, b, c->dt, dnnl_a);
    if (g->groups > 1) {
        dnnl_dims_t w = {g->groups, g->O / g->groups, g->C / g->groups, g->KH, g->KW};
        dnnl_memory_desc_init_by_tag(&d->w, 5, w, wdt, any ? dnnl_format_tag_any : dnnl_goihw);
    } else {
        dnnl_dims_t w = {g->O, g->C, g->KH, g->KW};
        dnnl_memory_desc_init_by_tag(&d->w, 4, w, wdt, any ? dnnl_format_tag_any : dnnl_oihw);
    }
    /* oneDNN's dilation counts the gaps (0: none); the padding after the last element
     * is what makes the output size come out (negative where rows are left over) */
    int64_t s[2] = {g->sh, g->sw}, dl[2] = {g->dh, g->dw}, p[2] = {g->ph, g->pw};
    int64_t in[2] = {g->H, g->W}, k[2] = {g->KH, g->KW}, out[2] = {g->OH, g->OW};
    for (int i = 0; i < 2; i++) {
        d->strides[i] = s[i];
        d->dilates[i] = dl[i] - 1;
        d->pad_l[i] = p[i];
        d->pad_r[i] = (out[i] - 1) * s[i] + (k[i] - 1) * dl[i] + 1 - in[i] - p[i];
    }
}

/* The forward's descriptor: the FORWARD job's, and the hint of the backward ones. */
static dnnl_status_t forward_pd(conv_descs *d, bool bias,
                                const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd) {
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(
        &cd, dnnl_forward_training, dnnl_convolution_direct, &d->x, &d->w, bias ? &d->bias : NULL,
        &d->y, d->strides, d->dilates, d->pad_l, d->pad_r);
    if (st != dnnl_success) return st;
    return dnnl_primitive_desc_create(pd, &cd, attr, ct_onednn_engine(), NULL);
}

static dnnl_status_t make_pd(const void *vctx, const_dnnl_primitive_attr_t attr,
                             dnnl_primitive_desc_t *pd) {
    const conv_ctx *c = vctx;
    conv_descs d, dw; /* dw: the weight gradient's (its dtype wdt) */
    descs(c, c->N, &d, c->dt, true);
    descs(c, c->N, &dw, c->wdt, true);
    if (c->job->kind == CT_CONV_FORWARD) return forward_pd(&d, c->job->bias != NULL, attr, pd);
    dnnl_primitive_desc_t hint;
    dnnl_status_t st = forward_pd(&d, false, NULL, &hint);
    if (st != dnnl_success) return st;
    dnnl_convolution_desc_t cd;
    if (c->job->kind == CT_CONV_GRAD_INPUT)
        st = dnnl_dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &d.x, &d.w,
                                                              &d.y, d.strides, d.dilates, d.pad_l, d.pad_r);
    else
        st = dnnl_dilated_convolution_backward_weights_desc_init(
            &cd, dnnl_convolution_direct, &d.x, &dw.w, NULL, &d.y, d.strides, d.dilates, d.pad_l, d.pad_r);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &cd, attr, ct_onednn_engine(), hint);
    dnnl_primitive_desc_destroy(hint);
    return st;
}

/* The primitive of job with a batch of N, made for `threads` threads (the calling
 * thread's OpenMP setting must say the same), or NULL (none, or *failed: the error
 * set). */
static ct_onednn_prim *conv_prim(conv_ctx *c, int64_t N, int threads, bool *failed) {
    const ct_conv_job *job = c->job;
    c->N = N;
    const ct_conv_geom *g = job->g;
    ct_onednn_key key = {{0}};
    int64_t v[] = {2 /* conv */, c->dt, c->wdt, threads, job->kind,
                   job->kind == CT_CONV_FORWARD && job->bias, N, g->C, g->H, g->W, g->O, g->KH,
                   g->KW, g->OH, g->OW, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, g->groups};
    _Static_assert(sizeof v <= sizeof key.v, "the key holds the geometry");
    memcpy(key.v, v, sizeof v);
    const char *op = job->kind == CT_CONV_FORWARD ? "conv" : "conv backward";
    return ct_onednn_lookup(&key, make_pd, NULL, c, op, failed);
}

/* Note [oneDNN determinism]: oneDNN's convolutions split their work by the thread
 * count they are made for (backward-weights sums the batch in per-thread parts, the
 * GEMM-based kernels of a small batch split the product), so their bits would change
 * with it.  Instead every job runs the batch's fixed chunks (a function of N only),
 * each through a one-thread primitive, the chunks spread over the threads: each output
 * element of FORWARD / GRAD_INPUT is one chunk's sum, and GRAD_WEIGHT's float chunk
 * sums (diff_weights in float) are added in chunk order, as cpu/conv.c does
 * (conv_weight_chunks), and rounded once. */
static int64_t data_chunks(const ct_conv_geom *g) { return g->N < 16 ? g->N : 16; }

#define ROUND_SUMS(T)                                                                    \
    for (int64_t i = 0; i < wn; i++) {                                                   \
        float s = acc[i];                                                                \
        for (int64_t ch = 1; ch < nc; ch++) s += acc[ch * wn + i];                       \
        ((T *)job->out)[i] = CT_STORE_REDUCED(T, s);                                     \
    }

/* A primitive with the reorders between ctorch's layouts and the ones it chose: arg i
 * of the job (ARGS) is staged at off[i] of the thread's staging buffer when re[i]. */
enum { NARGS = 4 };
typedef struct {
    ct_onednn_prim *main, *re[NARGS];
    size_t off[NARGS], bytes;
} staged;

typedef struct {
    int arg;
    char what; /* x, w, y (the job's tensors), b (bias: always plain) */
    bool out;
} conv_arg;

/* The arguments of each job, in the order chunked_job passes their buffers. */
static int job_args(const ct_conv_job *job, conv_arg *a) {
    int n = 0;
    if (job->kind == CT_CONV_FORWARD) {
        a[n++] = (conv_arg){DNNL_ARG_SRC, 'x', false};
        a[n++] = (conv_arg){DNNL_ARG_WEIGHTS, 'w', false};
        if (job->bias) a[n++] = (conv_arg){DNNL_ARG_BIAS, 'b', false};
        a[n++] = (conv_arg){DNNL_ARG_DST, 'y', true};
    } else if (job->kind == CT_CONV_GRAD_INPUT) {
        a[n++] = (conv_arg){DNNL_ARG_DIFF_DST, 'y', false};
        a[n++] = (conv_arg){DNNL_ARG_WEIGHTS, 'w', false};
        a[n++] = (conv_arg){DNNL_ARG_DIFF_SRC, 'x', true};
    } else {
        a[n++] = (conv_arg){DNNL_ARG_SRC, 'x', false};
        a[n++] = (conv_arg){DNNL_ARG_DIFF_DST, 'y', false};
        a[n++] = (conv_arg){DNNL_ARG_DIFF_WEIGHTS, 'w', true};
    }
    return n;
}

typedef struct {
    const dnnl_memory_desc_t *from, *to;
} reorder_ctx;

static dnnl_status_t reorder_pd(const void *vctx, const_dnnl_primitive_attr_t attr,
                                dnnl_primitive_desc_t *pd) {
    const reorder_ctx *r = vctx;
    return dnnl_reorder_primitive_desc_create(pd, r->from, ct_onednn_engine(), r->to,
                                              ct_onednn_engine(), attr);
}

static void staged_release(staged *s) {
    ct_onednn_release(s->main);
    for (int i = 0; i < NARGS; i++) ct_onednn_release(s->re[i]);
    memset(s, 0, sizeof *s);
}

/* The one-thread primitive of a chunk of N and its reorders; false when there is none
 * (s empty; *failed when for want of memory). */
static bool staged_make(conv_ctx *c, int64_t N, staged *s, bool *failed) {
    memset(s, 0, sizeof *s);
    if (!(s->main = conv_prim(c, N, 1, failed))) return false;
    conv_descs plain;
    descs(c, N, &plain, c->dt, false);
    conv_descs plain_w;
    descs(c, N, &plain_w, c->wdt, false);
    conv_arg a[NARGS];
    int n = job_args(c->job, a);
    for (int i = 0; i < n; i++) {
        if (a[i].what == 'b') continue;
        const dnnl_memory_desc_t *p = a[i].what == 'x' ? &plain.x : a[i].what == 'y' ? &plain.y
                                      : a[i].out ? &plain_w.w : &plain.w;
        const dnnl_memory_desc_t *chosen =
            dnnl_primitive_desc_query_md(s->main->pd, dnnl_query_exec_arg_md, a[i].arg);
        if (!chosen || dnnl_memory_desc_equal(p, chosen)) continue;
        ct_onednn_key key = s->main->key;
        key.v[0] = 3; /* a reorder of the conv's argument */
        key.v[CT_ONEDNN_KEY_LEN - 1] = a[i].arg;
        reorder_ctx r = {a[i].out ? chosen : p, a[i].out ? p : chosen};
        if (!(s->re[i] = ct_onednn_lookup(&key, reorder_pd, NULL, &r, "conv", failed))) {
            staged_release(s);
            return false;
        }
        s->off[i] = s->bytes;
        s->bytes += (dnnl_memory_desc_get_size(chosen) + 63) / 64 * 64;
    }
    return true;
}

/* Runs one chunk: inputs reordered into the staging buffer, the convolution, outputs
 * reordered back.  ptr: the job's buffers of the chunk, in job_args' order. */
static bool staged_run(const conv_ctx *c, const staged *s, void *const *ptr, const char *op) {
    conv_arg a[NARGS];
    int n = job_args(c->job, a);
    char *stage = s->bytes ? ct_onednn_buffer(CT_ONEDNN_STAGING, s->bytes) : NULL;
    if (s->bytes && !stage) return false;
    ct_onednn_arg args[NARGS];
    for (int i = 0; i < n; i++) {
        args[i] = (ct_onednn_arg){a[i].arg, s->re[i] ? stage + s->off[i] : ptr[i]};
        if (s->re[i] && !a[i].out) {
            ct_onednn_arg r[] = {{DNNL_ARG_FROM, ptr[i]}, {DNNL_ARG_TO, args[i].ptr}};
            if (!ct_onednn_run(s->re[i], r, 2, op, false)) return false;
        }
    }
    if (!ct_onednn_run(s->main, args, n, op, false)) return false;
    for (int i = 0; i < n; i++)
        if (s->re[i] && a[i].out) {
            ct_onednn_arg r[] = {{DNNL_ARG_FROM, args[i].ptr}, {DNNL_ARG_TO, ptr[i]}};
            if (!ct_onednn_run(s->re[i], r, 2, op, false)) return false;
        }
    return true;
}

static bool chunked_job(conv_ctx *c, ct_dtype dt) {
    const ct_conv_job *job = c->job;
    const ct_conv_geom *g = job->g;
    bool gw = job->kind == CT_CONV_GRAD_WEIGHT, fwd = job->kind == CT_CONV_FORWARD;
    const char *op = fwd ? "conv" : "conv backward";
    int64_t nc = gw ? conv_weight_chunks(g) : data_chunks(g);
    int64_t wn = g->O * (g->C / g->groups) * g->KH * g->KW;
    int64_t xs = g->C * g->H * g->W * 2, ys = g->O * g->OH * g->OW * 2; /* bytes a sample */
    if (gw) c->wdt = dnnl_f32;
    /* the chunks have two sizes at most: N / nc and one more; oneDNN reads the thread
     * count when it makes a primitive */
    bool failed = false, two = g->N % nc != 0;
    staged small, large = {0};
    int saved = ct_onednn_threads_begin(1);
    bool have = staged_make(c, g->N / nc, &small, &failed);
    if (have && two) have = staged_make(c, g->N / nc + 1, &large, &failed);
    ct_onednn_threads_end(saved);
    float *acc = NULL;
    if (have && gw && !(acc = ct_malloc(sizeof(float) * (size_t)(wn * nc)))) {
        ct_error_fail_result("out of memory in %s", op);
        failed = true;
    }
    if (!have || failed) {
        staged_release(&small);
        staged_release(&large);
        return failed;
    }
    int nt = ct_onednn_threads();
    nt = nt < nc ? nt : (int)nc;
    atomic_bool ok = true;
    _Pragma("omp parallel for num_threads(nt) if (nt > 1) schedule(dynamic)")
    for (int64_t ch = 0; ch < nc; ch++) {
        int64_t n0 = ch * g->N / nc, n1 = (ch + 1) * g->N / nc;
        int before = ct_onednn_threads_begin(1);
        char *a = (char *)job->a, *b = (char *)job->b, *out = job->out;
        void *ptr[NARGS];
        int n = 0;
        if (fwd) {
            ptr[n++] = a + n0 * xs;
            ptr[n++] = b;
            if (job->bias) ptr[n++] = (void *)job->bias;
            ptr[n++] = out + n0 * ys;
        } else if (!gw) {
            ptr[n++] = a + n0 * ys;
            ptr[n++] = b;
            ptr[n++] = out + n0 * xs;
        } else {
            ptr[n++] = a + n0 * xs;
            ptr[n++] = b + n0 * ys;
            ptr[n++] = acc + ch * wn;
        }
        if (!staged_run(c, n1 - n0 == g->N / nc ? &small : &large, ptr, op)) atomic_store(&ok, false);
        ct_onednn_buffers_trim();
        ct_onednn_threads_end(before);
    }
    if (!ok) ct_error_fail_result("%s: oneDNN failed to run the convolution", op);
    else if (gw && dt == CT_BF16) ROUND_SUMS(ct_bf16)
    else if (gw) ROUND_SUMS(ct_half)
    free(acc);
    staged_release(&small);
    staged_release(&large);
    return true;
}

bool ct_onednn_conv(ct_dtype dt, const ct_conv_job *job) {
    if (!ct_onednn_enabled() || (dt != CT_BF16 && dt != CT_F16)) return false;
    ct_conv_kind kind = job->kind;
    if (kind != CT_CONV_FORWARD && kind != CT_CONV_GRAD_INPUT && kind != CT_CONV_GRAD_WEIGHT)
        return false;
    if (kind == CT_CONV_GRAD_INPUT && job->bias) return false;
    const ct_conv_geom *g = job->g;
    if (g->N == 0 || g->C == 0 || g->O == 0 || g->OH <= 0 || g->OW <= 0) return false;
    conv_ctx c = {.dt = dt == CT_BF16 ? dnnl_bf16 : dnnl_f16, .job = job};
    c.wdt = c.dt;
    return chunked_job(&c, dt);
}
