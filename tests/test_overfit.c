/* The classic sanity check of a training stack: a model trained with Adam on a tiny
 * fixed subset (32 samples with random labels) must drive its loss to about zero.
 * A broken gradient, optimizer update or parameter registration shows up here as a
 * loss that stalls.  One test each for an MLP, the MNIST CNN and an LSTM classifier,
 * all built and trained through the public API only. */
#include "ct_test.h"

enum { N_SAMPLES = 32, N_CLASSES = 10 };

typedef struct {
    double first; /* the loss at the first step (before any update) */
    double last;  /* the loss of the trained model, evaluated afterwards */
    int correct;  /* training samples the trained model classifies right */
} overfit_result;

/* Trains model on (x, y) for steps Adam steps of full-batch cross-entropy. */
static overfit_result overfit(ct_module *model, ct_tensor *x, ct_tensor *y, int steps, double lr) {
    overfit_result r = {NAN, NAN, -1};
    ct_tensor *params[32];
    int n = ct_parameters(model, params, 32);
    CHECK(n > 0 && n <= 32);
    ct_optim *opt = ct_adam(params, n, .lr = lr);
    CHECK(opt != NULL);
    for (int step = 0; step < steps; step++) {
        CT_SCOPE_HERE;
        ct_tensor *loss = ct_cross_entropy(ct_forward(model, x), y);
        if (!loss) break;
        if (step == 0) r.first = ct_item(loss);
        ct_zero_grad(opt);
        CHECK(ct_backward(loss) == 0);
        CHECK(ct_step(opt) == 0);
    }
    CT_NO_GRAD {
        ct_tensor *logits = ct_forward(model, x);
        r.last = ct_item(ct_cross_entropy(logits, y));
        r.correct = (int)ct_item(ct_sum(ct_eq(ct_argmax(logits, .dims = CT_DIMS(1)), y)));
    }
    CHECK(ct_last_error() == NULL);
    return r;
}

/* Random labels hold no signal: only memorizing the 32 samples gets the loss down. */
static void check_overfit(const char *name, overfit_result r, double threshold) {
    printf("%s: cross-entropy %.4g before training, %.3g after\n", name, r.first, r.last);
    CHECK(r.first > 1.5); /* about log(10) = 2.3 for an untrained classifier */
    CHECK(r.last < threshold);
    CHECK(r.last < r.first * 1e-2);
    CHECK_INT_EQ(r.correct, N_SAMPLES);
}

TEST(overfit_mlp) {
    ct_manual_seed(1);
    ct_tensor *x = ct_randn(CT_SHAPE(N_SAMPLES, 64));
    ct_tensor *y = ct_randint(0, N_CLASSES, CT_SHAPE(N_SAMPLES));
    ct_module *mlp = ct_sequential(CT_MODULES(ct_nn_linear(64, 128), ct_nn_relu(),
                                              ct_nn_linear(128, N_CLASSES)));
    overfit_result r = overfit(mlp, x, y, 200, 1e-2);
    check_overfit("MLP", r, 1e-3);
}

TEST(overfit_cnn) {
    ct_manual_seed(2);
    /* The MNIST CNN, on MNIST-sized inputs. */
    ct_tensor *x = ct_randn(CT_SHAPE(N_SAMPLES, 1, 28, 28));
    ct_tensor *y = ct_randint(0, N_CLASSES, CT_SHAPE(N_SAMPLES));
    ct_module *cnn = ct_sequential(CT_MODULES(
        ct_nn_conv2d(1, 32, CT_DIMS(3), .padding = CT_DIMS(1)), ct_nn_relu(),
        ct_nn_max_pool2d(CT_DIMS(2)),
        ct_nn_conv2d(32, 64, CT_DIMS(3), .padding = CT_DIMS(1)), ct_nn_relu(),
        ct_nn_max_pool2d(CT_DIMS(2)),
        ct_nn_flatten(),
        ct_nn_linear(64 * 7 * 7, 128), ct_nn_relu(),
        ct_nn_linear(128, N_CLASSES)));
    overfit_result r = overfit(cnn, x, y, 100, 1e-3);
    check_overfit("CNN", r, 1e-2);
}

/* An LSTM over the sequence, then a linear layer on the last hidden state. */
typedef struct {
    ct_module *lstm, *fc;
} lstm_classifier;

static ct_tensor *lstm_classifier_forward(ct_module *m, ct_tensor *x) {
    lstm_classifier *s = ct_module_state(m);
    ct_tensor *out[3] = {NULL};
    if (ct_forward_multi(s->lstm, 1, &x, out, 3) != 3) return NULL;
    return ct_forward(s->fc, ct_select(out[1], 0, 0)); /* h_n of the only layer: [B, H] */
}

static const ct_module_class LSTM_CLASSIFIER = {.name = "LSTMClassifier",
                                                .forward = lstm_classifier_forward};

TEST(overfit_lstm) {
    ct_manual_seed(3);
    ct_tensor *x = ct_randn(CT_SHAPE(N_SAMPLES, 8, 6)); /* [B, T, input], batch_first */
    ct_tensor *y = ct_randint(0, N_CLASSES, CT_SHAPE(N_SAMPLES));
    ct_module *model = ct_module_new(&LSTM_CLASSIFIER, sizeof(lstm_classifier));
    lstm_classifier *s = ct_module_state(model);
    s->lstm = ct_module_add(model, "lstm", ct_lstm(6, 32, .batch_first = true));
    s->fc = ct_module_add(model, "fc", ct_nn_linear(32, N_CLASSES));
    CHECK_INT_EQ(ct_parameters(model, NULL, 0), 6); /* 4 of the LSTM, 2 of the head */
    overfit_result r = overfit(model, x, y, 300, 1e-2);
    check_overfit("LSTM", r, 1e-2);
}
