/* Helpers shared by the layer modules (src/nn). */
#ifndef CT_NN_LAYER_UTIL_H
#define CT_NN_LAYER_UTIL_H

#include <stddef.h>

#include "ctorch.h"
#include "core/error.h"
#include "ctorch/init.h"
#include "ctorch/layers.h"

/* A new parameter of `shape` (uninitialized; dtype 0: the default) registered as
 * `name`; NULL on error. */
ct_tensor *ct_layer_param(ct_module *m, const char *name, ct_shape shape, ct_dtype dtype);
/* Frees a module its constructor gives up on: ct_module_new registered it with the
 * innermost open scope, so a plain ct_release would leave the scope a dangling
 * reference to release again. */
void ct_layer_discard(ct_module *m);
/* The registered parameter or buffer `name`, or NULL (no error). */
ct_tensor *ct_layer_tensor(const ct_module *m, const char *name);
/* Linear/Conv reset_parameters: weight ~ kaiming_uniform_(a=sqrt(5)), bias ~
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)); bias may be NULL.  0 or -1. */
int ct_layer_reset_kaiming(ct_tensor *weight, ct_tensor *bias);
/* Python's tuple repr of n values: "(3,)", "(3, 3)"; as_int: "3" when n == 1. */
void ct_layer_fmt_dims(char *buf, size_t size, const int64_t *d, int n, bool as_int);
/* Python's repr of a float: "1e-05", "0.1", "1.0", "None" for NAN when nan_is_none. */
void ct_layer_fmt_float(char *buf, size_t size, double v, bool nan_is_none);
/* Python's repr of a shape as a list "[2, 3]" (for messages). */
void ct_layer_fmt_shape(char *buf, size_t size, ct_shape s);
/* A Linear printed as PyTorch's NonDynamicallyQuantizableLinear (the class of
 * MultiheadAttention's out_proj). */
ct_module *ct_nn_out_proj_linear(int64_t in, int64_t out, ct_linear_options o);

#endif
