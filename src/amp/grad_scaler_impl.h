/* The gradient scaler's side for training checkpoints (src/io/checkpoint.c). */
#ifndef CT_AMP_GRAD_SCALER_IMPL_H
#define CT_AMP_GRAD_SCALER_IMPL_H

#include "ctorch/grad_scaler.h"

/* The checks of ct_grad_scaler_load_state_dict without the load: 0, or -1 with the
 * error the load would give, its keys named with `prefix` in front ("scaler." in a
 * checkpoint), so that a checkpoint can check every part before changing any. */
int ct_grad_scaler_check_state_dict(const ct_grad_scaler *s, const ct_state_dict *sd,
                                    const char *prefix);

#endif
