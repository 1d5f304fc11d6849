/* What a classifier's training run shows in TensorBoard (--tensorboard DIR of the
 * examples): per epoch the losses, accuracies and learning rate as scalars, each
 * parameter's values and gradient as histograms, and a grid of misclassified test
 * images. */
#ifndef CT_EXAMPLES_TENSORBOARD_LOG_H
#define CT_EXAMPLES_TENSORBOARD_LOG_H

#include "ctorch.h"

/* One epoch's numbers. */
typedef struct {
    double train_loss, train_accuracy, test_loss, test_accuracy, lr;
} epoch_metrics;

/* Writes epoch's scalars ("loss/train", "loss/test", "accuracy/train",
 * "accuracy/test", "lr") and model's histograms ("weights/<name>", "grads/<name>") at
 * step epoch; 0, or -1 with ct_last_error(). */
int tb_log_epoch(ct_summary_writer *w, int epoch, const epoch_metrics *m, ct_module *model);

/* Copies a batch's misclassified images (argmax(logits) != target) into buf
 * ([max, C, H, W]) after the *count already there, while there is room. */
int tb_collect_misclassified(ct_tensor *buf, int64_t *count, ct_tensor *images, ct_tensor *logits,
                             ct_tensor *target);

/* The first count images of buf as one grid "misclassified" at step epoch, mapped
 * back to [0, 1] from a normalisation by mean and std. */
int tb_log_misclassified(ct_summary_writer *w, int epoch, ct_tensor *buf, int64_t count, double mean,
                         double std);

#endif
