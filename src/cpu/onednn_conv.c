/* float16 / bfloat16 convolution jobs (kernels/conv.h) as oneDNN convolution
 * primitives on the plain layouts ctorch keeps (x, y: nchw; w: oihw, goihw with
 * groups), so nothing is reordered:
 *   FORWARD      forward_training, the bias added in float before the one rounding
 *   GRAD_INPUT   backward_data (a transposed conv's bias is the reduced kernel's)
 *   GRAD_WEIGHT  backward_weights, the weight only (the caller sums the bias)
 * Every sum is float, rounded once to the dtype, as cpu/conv_reduced.c computes it. */
#include <string.h>

#include "cpu/onednn_prim.h"

typedef struct {
    dnnl_data_type_t dt;
    const ct_conv_job *job;
} conv_ctx;

typedef struct {
    dnnl_memory_desc_t x, w, y, bias;
    dnnl_dims_t strides, dilates, pad_l, pad_r;
} conv_descs;

static void descs(const conv_ctx *c, conv_descs *d) {
    const ct_conv_geom *g = c->job->g;
    dnnl_dims_t x = {g->N, g->C, g->H, g->W}, y = {g->N, g->O, g->OH, g->OW}, b = {g->O};
    dnnl_memory_desc_init_by_tag(&d->x, 4, x, c->dt, dnnl_nchw);
    dnnl_memory_desc_init_by_tag(&d->y, 4, y, c->dt, dnnl_nchw);
    dnnl_memory_desc_init_by_tag(&d->bias, 1, b, c->dt, dnnl_a);
    if (g->groups > 1) {
        dnnl_dims_t w = {g->groups, g->O / g->groups, g->C / g->groups, g->KH, g->KW};
        dnnl_memory_desc_init_by_tag(&d->w, 5, w, c->dt, dnnl_goihw);
    } else {
        dnnl_dims_t w = {g->O, g->C, g->KH, g->KW};
        dnnl_memory_desc_init_by_tag(&d->w, 4, w, c->dt, dnnl_oihw);
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
    conv_descs d;
    descs(c, &d);
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
            &cd, dnnl_convolution_direct, &d.x, &d.w, NULL, &d.y, d.strides, d.dilates, d.pad_l, d.pad_r);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &cd, attr, ct_onednn_engine(), hint);
    dnnl_primitive_desc_destroy(hint);
    return st;
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
    int threads = ct_onednn_threads();
    ct_onednn_key key = {{0}};
    int64_t v[] = {2 /* conv */, c.dt, threads, kind, kind == CT_CONV_FORWARD && job->bias,
                   g->N, g->C, g->H, g->W, g->O, g->KH, g->KW, g->OH, g->OW,
                   g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, g->groups};
    _Static_assert(sizeof v <= sizeof key.v, "the key holds the geometry");
    memcpy(key.v, v, sizeof v);
    int saved = ct_onednn_threads_begin(threads);
    bool failed;
    const char *op = kind == CT_CONV_FORWARD ? "conv" : "conv backward";
    ct_onednn_prim *p = ct_onednn_lookup(&key, make_pd, NULL, &c, op, &failed);
    if (p) {
        ct_onednn_arg args[4];
        int n = 0;
        if (kind == CT_CONV_FORWARD) {
            args[n++] = (ct_onednn_arg){DNNL_ARG_SRC, (void *)job->a};
            args[n++] = (ct_onednn_arg){DNNL_ARG_WEIGHTS, (void *)job->b};
            if (job->bias) args[n++] = (ct_onednn_arg){DNNL_ARG_BIAS, (void *)job->bias};
            args[n++] = (ct_onednn_arg){DNNL_ARG_DST, job->out};
        } else if (kind == CT_CONV_GRAD_INPUT) {
            args[n++] = (ct_onednn_arg){DNNL_ARG_DIFF_DST, (void *)job->a};
            args[n++] = (ct_onednn_arg){DNNL_ARG_WEIGHTS, (void *)job->b};
            args[n++] = (ct_onednn_arg){DNNL_ARG_DIFF_SRC, job->out};
        } else {
            args[n++] = (ct_onednn_arg){DNNL_ARG_SRC, (void *)job->a};
            args[n++] = (ct_onednn_arg){DNNL_ARG_DIFF_DST, (void *)job->b};
            args[n++] = (ct_onednn_arg){DNNL_ARG_DIFF_WEIGHTS, job->out};
        }
        ct_onednn_run(p, args, n, op);
        ct_onednn_release(p);
    }
    ct_onednn_threads_end(saved);
    return p || failed;
}
