/* BatchNorm1d/2d's state and the decisions of its forward (PyTorch's _BatchNorm),
 * shared with SyncBatchNorm (src/dist/sync_batch_norm.c), which converts BatchNorm
 * modules and behaves like them outside synchronised training. */
#ifndef CT_NN_BATCH_NORM_H
#define CT_NN_BATCH_NORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctorch/nn.h"

/* The options of a BatchNorm module (the first field of its class's state). */
typedef struct {
    int64_t num_features;
    double eps, momentum; /* momentum NAN: None (a cumulative moving average) */
    bool affine, track, is2d;
} ct_bn_state;

/* m's options when m is a BatchNorm1d or BatchNorm2d, else NULL. */
const ct_bn_state *ct_nn_batch_norm_state(const ct_module *m);

/* A new module of class cls (state_size bytes, starting with a copy of bn's
 * ct_bn_state) in bn's training mode, sharing bn's parameters and buffers: the same
 * tensors under the same names, in the same order, with their requires_grad and
 * persistence.  bn is a BatchNorm (ct_nn_batch_norm_state); NULL with an error. */
ct_module *ct_nn_batch_norm_like(const ct_module *bn, const ct_module_class *cls,
                                 size_t state_size);

/* What one forward of a BatchNorm-like module m (options s) normalizes with. */
typedef struct {
    bool use_batch;     /* batch statistics (training, or no running statistics) */
    double factor;      /* exponential_average_factor: the momentum of the update */
    ct_tensor *rm, *rv; /* the running statistics to read or update, or NULL */
} ct_bn_plan;
/* _BatchNorm.forward before F.batch_norm: counts the batch in num_batches_tracked
 * when training with tracked statistics, and decides the rest. */
ct_bn_plan ct_nn_batch_norm_plan(ct_module *m, const ct_bn_state *s);

/* "16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True" */
void ct_nn_batch_norm_repr(const ct_bn_state *s, char *buf, size_t size);

#endif
