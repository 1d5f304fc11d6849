/* Gradient checkpointing (ctorch/checkpoint.h): same gradients, less memory. */
#include "ct_test.h"

enum { LAYERS = 50, SEGMENT = 5, N = 256 };

/* One elementwise layer, tanh(x * w)-like: exp(-(h w)^2) * h. */
static ct_tensor *layer(ct_tensor *h, ct_tensor *w) {
    ct_tensor *a = ct_mul(h, w);
    return ct_mul(ct_exp(ct_neg(ct_mul(a, a))), h);
}

typedef struct {
    ct_tensor **w; /* the segment's weights, reached through ctx (like a module's) */
    int count;
} segment_ctx;

static ct_tensor *segment(ct_tensor *const *in, void *c) {
    const segment_ctx *s = c;
    ct_tensor *h = in[0];
    for (int i = 0; i < s->count; i++) h = layer(h, s->w[i]);
    return h;
}

/* Runs the chain keeping only what the graph keeps (each step's temporaries die with
 * its scope, as Python frees them); returns the output (owned).  segs must outlive
 * the backward: checkpoints call segment() again with them. */
static ct_tensor *chain(ct_tensor *x, ct_tensor **w, bool checkpointed, segment_ctx *segs) {
    ct_tensor *h = ct_retain(x);
    for (int i = 0; i < LAYERS; i += checkpointed ? SEGMENT : 1) {
        ct_tensor *next = NULL;
        CT_SCOPE {
            if (checkpointed) {
                segs[i / SEGMENT] = (segment_ctx){w + i, SEGMENT};
                next = ct_retain(ct_checkpoint(segment, &segs[i / SEGMENT], 1, &h));
            } else {
                next = ct_retain(layer(h, w[i]));
            }
        }
        ct_release(h);
        h = next;
    }
    return h;
}

typedef struct {
    ct_tensor *x, *w[LAYERS];
    segment_ctx segs[LAYERS / SEGMENT];
} model;

static void model_init(model *m) {
    m->x = ct_empty(CT_SHAPE(N, N));
    float *p = ct_data_ptr(m->x);
    for (int i = 0; i < N * N; i++) p[i] = (float)((i * 7919 % 2001) - 1000) / 1000.0f;
    ct_set_requires_grad(m->x, true);
    for (int l = 0; l < LAYERS; l++) m->w[l] = ct_full(CT_SHAPE(N), 0.5 + 0.01 * l, .requires_grad = true);
}

/* Peak bytes allocated above the starting point during forward + backward. */
static int64_t train_step_peak(model *m, bool checkpointed) {
    ct_set_grad(m->x, NULL);
    for (int l = 0; l < LAYERS; l++) ct_set_grad(m->w[l], NULL);
    int64_t base = ct_memory_allocated(CT_CPU);
    ct_reset_peak_memory_stats(CT_CPU);
    CT_SCOPE {
        ct_tensor *out = chain(m->x, m->w, checkpointed, m->segs);
        ct_tensor *loss = ct_sum(out);
        ct_release(out);
        CHECK(ct_backward(loss) == 0);
    }
    return ct_max_memory_allocated(CT_CPU) - base;
}

TEST(checkpointed_chain_same_gradients_less_memory) {
    model m;
    model_init(&m);
    int64_t plain = train_step_peak(&m, false);
    ct_tensor *gx = ct_clone(ct_grad(m.x)), *gw[LAYERS];
    for (int l = 0; l < LAYERS; l++) gw[l] = ct_clone(ct_grad(m.w[l]));
    int64_t ckpt = train_step_peak(&m, true);
    CHECK(ct_grad(m.x) && ct_test_max_diff(ct_grad(m.x), gx) == 0);
    for (int l = 0; l < LAYERS; l++) {
        CHECK(ct_grad(m.w[l]) != NULL);
        if (ct_test_max_diff(ct_grad(m.w[l]), gw[l]) != 0)
            ct_test_fail(__FILE__, __LINE__, "w[%d].grad differs with checkpointing", l);
    }
    printf("peak bytes during forward+backward of %d layers on [%d, %d]: %lld without, %lld "
           "with checkpointing every %d layers (%.1fx less)\n", LAYERS, N, N, (long long)plain,
           (long long)ckpt, SEGMENT, (double)plain / (double)ckpt);
    CHECK(ckpt * 3 < plain);
}

TEST(checkpoint_records_one_node_over_its_inputs) {
    ct_tensor *x = ct_ones(CT_SHAPE(3), .requires_grad = true);
    ct_tensor *w = ct_full(CT_SHAPE(3), 2);
    ct_tensor *ws[] = {w};
    segment_ctx s = {ws, 1};
    ct_tensor *y = ct_checkpoint(segment, &s, 1, &x);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(y)), "CheckpointFunctionBackward");
    CHECK_STR_EQ(ct_node_name(ct_node_next(ct_grad_fn(y), 0, NULL)), "AccumulateGrad");
    CHECK_VALUES(y, 1e-6, exp(-4), exp(-4), exp(-4));
    CT_NO_GRAD { CHECK(ct_grad_fn(ct_checkpoint(segment, &s, 1, &x)) == NULL); }
    /* ct_autograd_grad through a checkpoint: only the inputs, .grad untouched. */
    ct_tensor *loss = ct_sum(y), *g = NULL;
    CHECK(ct_autograd_grad(1, &loss, 1, &x, &g, .retain_graph = true) == 0);
    CHECK_VALUES(g, 1e-6, -7 * exp(-4), -7 * exp(-4), -7 * exp(-4)); /* (1 - 8x^2) e^{-4x^2} */
    CHECK(ct_grad(x) == NULL);
}

static ct_tensor *times_two(ct_tensor *const *in, void *c) {
    (void)c;
    return ct_mul_scalar(in[0], 2);
}

TEST(checkpoint_errors) {
    ct_tensor *x = ct_ones(CT_SHAPE(2), .requires_grad = true);
    ct_tensor *h = ct_mul_scalar(x, 1);
    ct_tensor *y = ct_sum(ct_checkpoint(times_two, NULL, 1, &h));
    ct_tensor *g = NULL;
    CHECK_ERROR(ct_autograd_grad(1, &y, 1, &x, &g, .create_graph = true),
                "create_graph through a checkpoint is not supported");
    ct_mul_scalar_(h, 2);
    CHECK_ERROR(ct_backward(y), "which is an input of CheckpointFunctionBackward");
    ct_tensor *z = ct_sum(ct_checkpoint(times_two, NULL, 1, &x));
    CHECK(ct_backward(z) == 0);
    CHECK_VALUES(ct_grad(x), 0, 2, 2);
    CHECK_ERROR(ct_backward(z), "Trying to backward through the graph a second time");
    ct_tensor *seven[7] = {x, x, x, x, x, x, x};
    CHECK_ERROR(ct_checkpoint(times_two, NULL, 7, seven), "at most 6 tensor inputs");
}
