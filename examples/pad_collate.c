/* Variable-length sequences through a DataLoader: a custom collate function pads each
 * batch to its longest sequence and returns the lengths and a mask, and a bag-of-
 * embeddings classifier (Embedding, masked mean over the real tokens, Linear) learns
 * whether a sequence of digits 1..9 averages above 5.  PyTorch's version would pass
 * collate_fn=pad_collate to DataLoader; this is the same program in C.
 *
 * `pad_collate --help` lists the flags.  Exits non-zero when the test accuracy is below
 * --min-accuracy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli_options.h"
#include "common/progress.h"
#include "ctorch.h"

#define PAD 0      /* token 0 is padding; the digits are 1..9 */
#define VOCAB 10
#define MIN_LEN 2
#define MAX_LEN 16

/* ---- the corpus: n sequences of digits, stored back to back ------------------ */

typedef struct {
    int64_t n;
    int64_t *start;  /* sequence i is tokens[start[i] .. start[i + 1]) */
    int64_t *tokens;
    int64_t *labels; /* 1 when the sequence's mean is above 5 */
} corpus;

static uint64_t next_random(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void corpus_fill(corpus *c, int64_t n, uint64_t seed) {
    c->n = n;
    c->start = malloc(sizeof(int64_t) * (n + 1));
    c->tokens = malloc(sizeof(int64_t) * n * MAX_LEN);
    c->labels = malloc(sizeof(int64_t) * n);
    if (!c->start || !c->tokens || !c->labels) {
        fprintf(stderr, "out of memory for %lld sequences\n", (long long)n);
        exit(1);
    }
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t len = MIN_LEN + (int64_t)(next_random(&seed) % (MAX_LEN - MIN_LEN + 1)), sum = 0;
        c->start[i] = at;
        for (int64_t j = 0; j < len; j++) {
            c->tokens[at] = 1 + (int64_t)(next_random(&seed) % 9);
            sum += c->tokens[at++];
        }
        c->labels[i] = sum > 5 * len;
    }
    c->start[n] = at;
}

/* The dataset: sample i is (tokens int64 [len_i], label int64). */
static int64_t corpus_len(const ct_dataset *ds) { return ((const corpus *)ct_dataset_state(ds))->n; }

static int corpus_get(ct_dataset *ds, int64_t i, ct_sample *out) {
    const corpus *c = ct_dataset_state(ds);
    out->n = 2;
    out->t[0] = ct_tensor_i64(c->tokens + c->start[i], CT_SHAPE(c->start[i + 1] - c->start[i]));
    out->t[1] = ct_tensor_i64(&c->labels[i], CT_SHAPE());
    return out->t[0] && out->t[1] ? 0 : -1;
}

static void corpus_destroy(ct_dataset *ds) {
    corpus *c = ct_dataset_state(ds);
    free(c->start);
    free(c->tokens);
    free(c->labels);
}

static const ct_dataset_class CORPUS = {
    .name = "DigitSequences", .len = corpus_len, .get = corpus_get, .destroy = corpus_destroy};

static ct_dataset *digit_sequences(int64_t n, uint64_t seed) {
    ct_dataset *ds = ct_dataset_new(&CORPUS, sizeof(corpus));
    corpus_fill(ct_dataset_state(ds), n, seed);
    return ds;
}

/* ---- the collate function --------------------------------------------------------
 * Batch tensors: t[0] tokens int64 [B, L] padded with *(int64_t *)ctx up to the longest
 * sequence L, t[1] lengths int64 [B], t[2] mask bool [B, L] (true on real tokens),
 * t[3] labels int64 [B].  It runs in the loader's worker threads. */
static int pad_collate(int n, const ct_sample *samples, ct_batch *out, void *ctx) {
    const double pad_value = (double)*(const int64_t *)ctx;
    int64_t lengths[n], longest = 0;
    for (int i = 0; i < n; i++) {
        lengths[i] = ct_size(samples[i].t[0], 0);
        if (lengths[i] > longest) longest = lengths[i];
    }
    ct_tensor *padded[n], *labels[n];
    for (int i = 0; i < n; i++) {
        padded[i] = ct_pad(samples[i].t[0], CT_DIMS(0, longest - lengths[i]), .value = pad_value);
        labels[i] = samples[i].t[1];
    }
    ct_tensor *len = ct_tensor_i64(lengths, CT_SHAPE(n));
    /* mask[b, j] = j < lengths[b] */
    ct_tensor *mask = ct_lt(ct_unsqueeze(ct_arange(longest), 0), ct_unsqueeze(len, 1));
    *out = (ct_batch){.n = 4, .t = {ct_stack(n, padded, 0), len, mask, ct_stack(n, labels, 0)}};
    return out->t[0] && out->t[1] && out->t[2] && out->t[3] ? 0 : -1;
}

/* ---- the model: Embedding, masked mean, Linear --------------------------------- */

typedef struct {
    ct_module *embed, *head;
} bag_model;

/* logits [B, 2] of padded tokens [B, L]: the mean of the real tokens' embeddings.  The
 * mask keeps the padding out of the sum and the lengths divide it (padding_idx also
 * keeps the padding row at zero, but the mean would still be over L, not the length). */
static ct_tensor *classify(bag_model *m, ct_tensor *tokens, ct_tensor *lengths, ct_tensor *mask) {
    ct_tensor *e = ct_forward(m->embed, tokens);                     /* [B, L, D] */
    ct_tensor *keep = ct_unsqueeze(ct_to(mask, .dtype = CT_F32), -1); /* [B, L, 1] */
    ct_tensor *sum = ct_sum(ct_mul(e, keep), .dims = CT_DIMS(1));      /* [B, D] */
    ct_tensor *mean = ct_div(sum, ct_unsqueeze(ct_to(lengths, .dtype = CT_F32), 1));
    return ct_forward(m->head, mean);
}

/* The fraction of test sequences classified right. */
static double accuracy(bag_model *m, ct_loader *test) {
    int64_t right = 0, seen = 0;
    ct_batch b;
    CT_NO_GRAD {
        while (true) {
            CT_SCOPE_HERE;
            if (!ct_loader_next(test, &b)) break;
            ct_tensor *pred = ct_argmax(classify(m, b.t[0], b.t[1], b.t[2]), .dims = CT_DIMS(1));
            right += ct_item_int(ct_sum(ct_eq(pred, b.t[3])));
            seen += b.size;
        }
    }
    return seen ? (double)right / (double)seen : 0;
}

int main(int argc, char **argv) {
    int epochs = 6, workers = 2;
    int64_t samples = 4000;
    double min_accuracy = 0.9;
    cli_option opts[] = {
        CLI_OPT_INT("epochs", &epochs, 1, 1000000, "N", "epochs to train"),
        CLI_OPT_INT64("samples", &samples, 4, 1e8, "N", "training sequences (a quarter as many to test)"),
        CLI_OPT_INT("workers", &workers, 0, 256, "N", "DataLoader worker threads"),
        CLI_OPT_DOUBLE("min-accuracy", &min_accuracy, 0, 1, "A", "exit 1 unless the test accuracy reaches A"),
    };
    int status;
    if (!cli_parse(argc, argv,
                   "Classifies variable-length digit sequences through a DataLoader whose collate "
                   "function pads each batch.",
                   opts, (int)(sizeof opts / sizeof *opts), &status))
        return status;
    ct_set_error_handler(ct_abort_on_error);
    ct_manual_seed(0);
    double acc = 0;
    CT_SCOPE {
        int64_t pad = PAD;
        ct_loader *train = ct_dataloader(digit_sequences(samples, 1), .batch_size = 32, .shuffle = true,
                                         .num_workers = workers, .collate = pad_collate, .collate_ctx = &pad,
                                         .generator = ct_generator_new(0));
        ct_loader *test = ct_dataloader(digit_sequences(samples / 4, 2), .batch_size = 256,
                                        .num_workers = workers, .collate = pad_collate, .collate_ctx = &pad);

        /* What a batch looks like: the first two of a small loader (batches of 4). */
        ct_loader *peek = ct_dataloader(digit_sequences(8, 3), .batch_size = 4, .collate = pad_collate,
                                        .collate_ctx = &pad);
        ct_batch b;
        for (int i = 0; i < 2 && ct_loader_next(peek, &b); i++) {
            printf("batch %d: tokens, lengths, mask, labels\n", i);
            ct_print(b.t[0]);
            ct_print(b.t[1]);
            ct_print(b.t[2]);
            ct_print(b.t[3]);
        }

        bag_model m = {ct_nn_embedding(VOCAB, 16, .padding_idx = CT_SOME(PAD)), ct_nn_linear(16, 2)};
        ct_tensor *params[4];
        int n = ct_parameters(m.embed, params, 2);
        n += ct_parameters(m.head, params + n, 2);
        ct_optim *opt = ct_adam(params, n, .lr = 0.03);
        for (int epoch = 1; epoch <= epochs; epoch++) {
            double total = 0;
            int64_t batches = 0;
            char desc[32], postfix[32];
            snprintf(desc, sizeof desc, "epoch %d/%d", epoch, epochs);
            progress_bar bar;
            progress_start(&bar, desc, ct_loader_len(train), 0, "batches");
            while (true) {
                CT_SCOPE_HERE;
                if (!ct_loader_next(train, &b)) break;
                ct_tensor *loss = ct_cross_entropy(classify(&m, b.t[0], b.t[1], b.t[2]), b.t[3]);
                ct_zero_grad(opt);
                ct_backward(loss);
                ct_step(opt);
                total += ct_item(loss);
                batches++;
                snprintf(postfix, sizeof postfix, "loss=%.4f", total / (double)batches);
                progress_update(&bar, 1, postfix);
            }
            progress_close(&bar);
            acc = accuracy(&m, test);
            printf("epoch %d  loss %.4f  test accuracy %.3f\n", epoch, total / (double)batches, acc);
        }
    }
    if (acc < min_accuracy) {
        fprintf(stderr, "test accuracy %.3f is below %.3f\n", acc, min_accuracy);
        return 1;
    }
    return 0;
}
