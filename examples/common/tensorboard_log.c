#include <stdio.h>

#include "common/tensorboard_log.h"

#define MAX_PARAMS 64

int tb_log_epoch(ct_summary_writer *w, int epoch, const epoch_metrics *m, ct_module *model) {
    const char *tags[] = {"loss/train", "loss/test", "accuracy/train", "accuracy/test", "lr"};
    const double values[] = {m->train_loss, m->test_loss, m->train_accuracy, m->test_accuracy, m->lr};
    for (int i = 0; i < 5; i++)
        if (ct_tb_add_scalar(w, tags[i], values[i], epoch) != 0) return -1;
    const char *names[MAX_PARAMS];
    ct_tensor *params[MAX_PARAMS];
    int n = ct_named_parameters(model, names, params, MAX_PARAMS);
    for (int i = 0; i < n && i < MAX_PARAMS; i++) {
        char tag[256];
        snprintf(tag, sizeof tag, "weights/%s", names[i]);
        if (ct_tb_add_histogram(w, tag, params[i], epoch) != 0) return -1;
        if (!ct_grad(params[i])) continue;
        snprintf(tag, sizeof tag, "grads/%s", names[i]);
        if (ct_tb_add_histogram(w, tag, ct_grad(params[i]), epoch) != 0) return -1;
    }
    return n < 0 ? -1 : 0;
}

int tb_collect_misclassified(ct_tensor *buf, int64_t *count, ct_tensor *images, ct_tensor *logits,
                             ct_tensor *target) {
    int64_t room = ct_size(buf, 0) - *count;
    if (room <= 0) return 0;
    ct_tensor *wrong = ct_nonzero(ct_ne(ct_argmax(logits, .dims = CT_DIMS(1)), target)); /* [K, 1] */
    if (!wrong) return -1;
    int64_t k = ct_size(wrong, 0) < room ? ct_size(wrong, 0) : room;
    if (k == 0) return 0;
    ct_tensor *rows = ct_index_select(images, 0, ct_narrow(ct_reshape(wrong, CT_SHAPE(-1)), 0, 0, k));
    if (!rows || !ct_copy_(ct_narrow(buf, 0, *count, k), rows)) return -1;
    *count += k;
    return 0;
}

int tb_log_misclassified(ct_summary_writer *w, int epoch, ct_tensor *buf, int64_t count, double mean,
                         double std) {
    if (count == 0) return 0;
    ct_tensor *images = ct_add_scalar(ct_mul_scalar(ct_narrow(buf, 0, 0, count), std), mean);
    return ct_tb_add_images(w, "misclassified", ct_clamp(images, .min = CT_SOME(0), .max = CT_SOME(1)), epoch);
}
