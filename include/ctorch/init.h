/* ctorch/init.h — parameter initialization (torch.nn.init).
 *
 *     ct_tensor *w = ct_empty(CT_SHAPE(128, 784));
 *     ct_init_kaiming_uniform_(w, .a = sqrt(5));              // what Linear does
 *     ct_init_xavier_normal_(w, .gain = ct_init_calculate_gain("tanh"));
 *     ct_init_orthogonal_(w);
 *
 * Every function fills its tensor in place without recording a graph (as under
 * torch.no_grad()), bumps its version and returns it (borrowed: no new reference;
 * NULL on error).  The random
 * ones draw from .generator (the default generator when NULL).  Distributions are
 * PyTorch's; the numbers are not (see random.h).
 */
#ifndef CTORCH_INIT_H
#define CTORCH_INIT_H

#include <math.h>

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* kaiming's mode: keep the variance of the forward (fan_in) or of the backward (fan_out). */
typedef enum { CT_FAN_IN = 0, CT_FAN_OUT = 1 } ct_fan_mode;

/* Options of the ct_init_ functions that draw random numbers. */
typedef struct {
    double gain;               /* xavier / orthogonal; 0: PyTorch's default 1 */
    double a;                  /* kaiming: negative slope of the rectifier; default 0 */
    ct_fan_mode mode;          /* kaiming: default CT_FAN_IN */
    const char *nonlinearity;  /* kaiming: NULL: PyTorch's default "leaky_relu" */
    ct_generator *generator;   /* NULL: the default generator */
} ct_init_options;

/* U(a, b), N(mean, std), a constant, zeros, ones. */
ct_tensor *ct_init_uniform__with(ct_tensor *t, double a, double b, ct_init_options o);
ct_tensor *ct_init_normal__with(ct_tensor *t, double mean, double std, ct_init_options o);
ct_tensor *ct_init_constant_(ct_tensor *t, double value);
ct_tensor *ct_init_zeros_(ct_tensor *t);
ct_tensor *ct_init_ones_(ct_tensor *t);
/* N(mean, std) truncated to [a, b] (values outside are redrawn). */
ct_tensor *ct_init_trunc_normal__with(ct_tensor *t, double mean, double std, double a, double b,
                                      ct_init_options o);
/* Glorot: U(-g*sqrt(6/(fan_in+fan_out)), ..) and N(0, g*sqrt(2/(fan_in+fan_out))). */
ct_tensor *ct_init_xavier_uniform__with(ct_tensor *t, ct_init_options o);
ct_tensor *ct_init_xavier_normal__with(ct_tensor *t, ct_init_options o);
/* He: bound sqrt(3) * gain / sqrt(fan), gain = calculate_gain(nonlinearity, a). */
ct_tensor *ct_init_kaiming_uniform__with(ct_tensor *t, ct_init_options o);
ct_tensor *ct_init_kaiming_normal__with(ct_tensor *t, ct_init_options o);
/* A (semi-)orthogonal matrix (t viewed as [size(0), numel/size(0)]) times gain: the Q
 * of the QR of a standard normal matrix, signs fixed so that R has a positive
 * diagonal, as PyTorch does. */
ct_tensor *ct_init_orthogonal__with(ct_tensor *t, ct_init_options o);

#define ct_init_uniform_(t, a, b, ...) \
    CT_AT(ct_init_uniform__with(t, a, b, CT_OPTIONS(ct_init_options, __VA_ARGS__)))
#define ct_init_normal_(t, mean, std, ...) \
    CT_AT(ct_init_normal__with(t, mean, std, CT_OPTIONS(ct_init_options, __VA_ARGS__)))
#define ct_init_trunc_normal_(t, mean, std, a, b, ...) \
    CT_AT(ct_init_trunc_normal__with(t, mean, std, a, b, CT_OPTIONS(ct_init_options, __VA_ARGS__)))
#define ct_init_xavier_uniform_(t, ...) \
    CT_AT(ct_init_xavier_uniform__with(t, CT_OPTIONS(ct_init_options, __VA_ARGS__)))
#define ct_init_xavier_normal_(t, ...) \
    CT_AT(ct_init_xavier_normal__with(t, CT_OPTIONS(ct_init_options, __VA_ARGS__)))
#define ct_init_kaiming_uniform_(t, ...) \
    CT_AT(ct_init_kaiming_uniform__with(t, CT_OPTIONS(ct_init_options, __VA_ARGS__)))
#define ct_init_kaiming_normal_(t, ...) \
    CT_AT(ct_init_kaiming_normal__with(t, CT_OPTIONS(ct_init_options, __VA_ARGS__)))
#define ct_init_orthogonal_(t, ...) \
    CT_AT(ct_init_orthogonal__with(t, CT_OPTIONS(ct_init_options, __VA_ARGS__)))
#define ct_init_constant_(t, value) CT_AT(ct_init_constant_(t, value))
#define ct_init_zeros_(t) CT_AT(ct_init_zeros_(t))
#define ct_init_ones_(t) CT_AT(ct_init_ones_(t))

/* nn.init.calculate_gain: "linear", "conv1d".. "conv_transpose3d", "sigmoid" -> 1,
 * "tanh" -> 5/3, "relu" -> sqrt(2), "leaky_relu" -> sqrt(2 / (1 + param^2)) (param
 * not given: 0.01), "selu" -> 3/4.  NAN and an error for another name.
 *     double g = ct_init_calculate_gain("tanh");
 *     double g_leaky = ct_init_calculate_gain("leaky_relu", .param = CT_SOME(0.2));
 */
typedef struct {
    ct_opt_f64 param; /* leaky_relu's negative slope */
} ct_gain_options;
double ct_init_calculate_gain_with(const char *nonlinearity, ct_gain_options o);
#define ct_init_calculate_gain(nonlinearity, ...) \
    CT_AT(ct_init_calculate_gain_with(nonlinearity, CT_OPTIONS(ct_gain_options, __VA_ARGS__)))
/* _calculate_fan_in_and_fan_out: fan_in = size(1) * receptive field, fan_out =
 * size(0) * receptive field.  0, or -1 with an error for fewer than 2 dims. */
int ct_init_calculate_fan(const ct_tensor *t, int64_t *fan_in, int64_t *fan_out);
#define ct_init_calculate_fan(t, fan_in, fan_out) CT_AT(ct_init_calculate_fan(t, fan_in, fan_out))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
