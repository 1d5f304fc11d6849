/* A character-level LSTM language model: embedding -> LSTM -> linear over the
 * characters of a text file (by default Debian's GPL-3 text, present on every Debian
 * system), trained on random windows with Adam and clipped gradients, then sampling
 * text from it.  Exits non-zero if the loss does not fall by a third.
 * `char_lstm --help` lists the flags. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli_options.h"
#include "ctorch.h"

#define SEQ 48
#define BATCH 16
#define HIDDEN 128

typedef struct {
    ct_module *embed, *lstm, *head;
} char_model;

/* A container for the three parts; forward is run() below. */
static const ct_module_class CHAR_LSTM = {.name = "CharLSTM"};

/* Draws an index from a probability vector. */
static int64_t sample(ct_tensor *probs, int vocab) {
    double p[256], u = ct_item(ct_rand(CT_SHAPE(), .dtype = CT_F64)), acc = 0;
    ct_copy_to_buffer(probs, p, CT_F64, sizeof p);
    for (int i = 0; i < vocab; i++)
        if ((acc += p[i]) > u) return i;
    return vocab - 1;
}

/* logits [B, T, V] for characters [B, T]; state in/out for sampling (may be NULL). */
static ct_tensor *run(const char_model *cm, ct_tensor *chars, ct_tensor **h, ct_tensor **c) {
    ct_tensor *in[3] = {ct_forward(cm->embed, chars), h ? *h : NULL, c ? *c : NULL}, *out[3];
    int n_in = h && *h ? 3 : 1;
    ct_forward_multi(cm->lstm, n_in, in, out, 3);
    if (h) {
        *h = out[1];
        *c = out[2];
    }
    return ct_forward(cm->head, out[0]);
}

int main(int argc, char **argv) {
    const char *path = "/usr/share/common-licenses/GPL-3";
    int steps = 150;
    cli_option opts[] = {
        CLI_OPT_STRING("text", &path, "FILE", "the text to learn (its first MiB)"),
        CLI_OPT_INT("steps", &steps, 1, 10000000, "N", "training steps"),
    };
    int status;
    if (!cli_parse(argc, argv, "Trains a character-level LSTM on a text file, then samples from it.",
                   opts, (int)(sizeof opts / sizeof *opts), &status))
        return status;
    ct_set_error_handler(ct_abort_on_error);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "char_lstm: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    static unsigned char text[1 << 20];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    if (len < SEQ + 2) {
        fprintf(stderr, "char_lstm: %s is too short: %zu bytes, at least %d needed\n", path, len,
                SEQ + 2);
        return 1;
    }
    /* The vocabulary: the bytes that occur. */
    int to_id[256], vocab = 0;
    unsigned char to_char[256];
    memset(to_id, -1, sizeof to_id);
    for (size_t i = 0; i < len; i++)
        if (to_id[text[i]] < 0) {
            to_id[text[i]] = vocab;
            to_char[vocab++] = text[i];
        }
    printf("%zu characters, %d distinct\n", len, vocab);
    ct_manual_seed(0);
    double first = 0, last = 0;
    CT_SCOPE {
        ct_module *model = ct_module_new(&CHAR_LSTM, 0);
        char_model cm = {ct_module_add(model, "embed", ct_nn_embedding(vocab, 32)),
                         ct_module_add(model, "lstm", ct_lstm(32, HIDDEN, .batch_first = true)),
                         ct_module_add(model, "head", ct_nn_linear(HIDDEN, vocab))};
        ct_module_print(model);
        ct_tensor *params[16];
        int n = ct_parameters(model, params, 16);
        ct_optim *opt = ct_adam(params, n, .lr = 3e-3);
        int64_t batch[BATCH * (SEQ + 1)];
        for (int step = 1; step <= steps; step++) {
            CT_SCOPE_HERE;
            ct_tensor *starts = ct_randint(0, (int64_t)(len - SEQ - 1), CT_SHAPE(BATCH));
            for (int b = 0; b < BATCH; b++) {
                int64_t s = ((const int64_t *)ct_data_ptr(starts))[b];
                for (int t = 0; t <= SEQ; t++) batch[b * (SEQ + 1) + t] = to_id[text[s + t]];
            }
            ct_tensor *all = ct_tensor_i64(batch, CT_SHAPE(BATCH, SEQ + 1));
            ct_tensor *x = ct_narrow(all, 1, 0, SEQ), *y = ct_narrow(all, 1, 1, SEQ);
            ct_tensor *logits = run(&cm, x, NULL, NULL);
            ct_tensor *loss = ct_cross_entropy(ct_reshape(logits, CT_SHAPE(-1, vocab)),
                                               ct_reshape(y, CT_SHAPE(-1)));
            ct_zero_grad(opt);
            ct_backward(loss);
            ct_clip_grad_norm_(params, n, 1.0);
            ct_step(opt);
            last = ct_item(loss);
            if (step == 1) first = last;
            if (step % 25 == 0) printf("step %4d  loss %.3f\n", step, last);
        }
        /* Sampling: feed the model its own output, one character at a time. */
        ct_module_eval(model);
        CT_NO_GRAD {
            ct_tensor *h = NULL, *c = NULL;
            int64_t ch = to_id[(unsigned char)'T'];
            printf("sample: T");
            for (int i = 0; i < 200; i++) {
                CT_SCOPE_HERE;
                ct_tensor *logits = run(&cm, ct_tensor_i64(&ch, CT_SHAPE(1, 1)), &h, &c);
                ct_keep(h);
                ct_keep(c);
                ct_tensor *probs =
                    ct_softmax(ct_div_scalar(ct_reshape(logits, CT_SHAPE(vocab)), 0.8), 0);
                ch = sample(probs, vocab);
                putchar(to_char[ch]);
            }
            putchar('\n');
        }
    }
    printf("loss %.3f -> %.3f\n", first, last);
    return last < first * 2 / 3 ? 0 : 1;
}
