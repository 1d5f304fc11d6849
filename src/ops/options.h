/* Reading options by the convention of ctorch/base.h: a zero field or an unset
 * ct_opt_f64 is PyTorch's default.  Each layer's resolver fills its defaults in one
 * place, for the functional form and for the module that prints them. */
#ifndef CT_OPS_OPTIONS_H
#define CT_OPS_OPTIONS_H

#include "ctorch.h"

/* o's value, or dflt when o is not given (CT_NONE reads as not given). */
static inline double ct_opt_or(ct_opt_f64 o, double dflt) { return o.set && !o.none ? o.v : dflt; }
/* v, or dflt when v is zero. */
static inline double ct_zero_or(double v, double dflt) { return v != 0 ? v : dflt; }
/* An integer option held in a ct_opt_f64: *out = its value (dflt when not given);
 * false with an error naming op and name when it is not an integer. */
bool ct_opt_int(const char *op, const char *name, ct_opt_f64 o, int64_t dflt, int64_t *out);

/* The options with PyTorch's defaults filled in. */
ct_leaky_relu_options ct_leaky_relu_resolve(ct_leaky_relu_options o);
ct_elu_options ct_elu_resolve(ct_elu_options o);
ct_softplus_options ct_softplus_resolve(ct_softplus_options o);
ct_hardtanh_options ct_hardtanh_resolve(ct_hardtanh_options o);

/* Embedding's padding_idx for num rows: *pad in [0, num), or -1 when not given; false
 * with op's error when it is out of range or not an integer. */
bool ct_embedding_padding(const char *op, ct_opt_f64 padding_idx, int64_t num, int64_t *pad);

#endif
