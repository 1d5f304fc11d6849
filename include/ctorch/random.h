/* ctorch/random.h — generators, random factories, in-place samplers and dropout.
 *
 *     ct_manual_seed(0);                                   // the default generator
 *     ct_tensor *w = ct_randn(CT_SHAPE(784, 10));          // N(0, 1), float32
 *     ct_generator *g = ct_generator_new(42);              // a private stream
 *     ct_tensor *u = ct_rand(CT_SHAPE(4), .dtype = CT_F64, .generator = g);
 *     ct_tensor *i = ct_randint(0, 10, CT_SHAPE(3));       // int64 in [0, 10)
 *     ct_normal_(w, 0, 0.01);                              // refill in place
 *     ct_tensor *h = ct_dropout(x, 0.5, true);             // training mode
 *
 * (inside a CT_SCOPE, g is freed with the tensors when the scope closes).
 *
 * Generators are counter-based (Philox4x32-10): every random op reserves one counter
 * per element and element i draws from counter (offset + i), so results are the same
 * for any thread count.  The numbers differ from PyTorch's cpu generator (mt19937);
 * the distributions are the same.  Every function taking a generator uses the default
 * one when it is NULL.
 */
#ifndef CTORCH_RANDOM_H
#define CTORCH_RANDOM_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* ---- generators ------------------------------------------------------- */

/* A new generator seeded with `seed`: reference counted and, like every object ctorch
 * returns, registered with the innermost CT_SCOPE; outside a scope ct_release frees it. */
ct_generator *ct_generator_new(uint64_t seed);
#define ct_generator_new(seed) CT_AT(ct_generator_new(seed))
/* The default generator (borrowed; lives as long as the program). */
ct_generator *ct_default_generator(void);
#define ct_default_generator(...) CT_AT(ct_default_generator(__VA_ARGS__))
/* torch.manual_seed: reseeds the default generator (thread-safe) and returns it. */
ct_generator *ct_manual_seed(uint64_t seed);
#define ct_manual_seed(seed) CT_AT(ct_manual_seed(seed))
/* torch.initial_seed: the default generator's seed. */
uint64_t ct_initial_seed(void);
#define ct_initial_seed(...) CT_AT(ct_initial_seed(__VA_ARGS__))
/* torch.seed: reseeds the default generator from a non-deterministic source (the
 * system's random bytes) and returns the seed. */
uint64_t ct_seed(void);
#define ct_seed(...) CT_AT(ct_seed(__VA_ARGS__))
/* generator.manual_seed / generator.initial_seed. */
void ct_generator_manual_seed(ct_generator *g, uint64_t seed);
#define ct_generator_manual_seed(g, seed) CT_AT(ct_generator_manual_seed(g, seed))
uint64_t ct_generator_initial_seed(ct_generator *g);
#define ct_generator_initial_seed(g) CT_AT(ct_generator_initial_seed(g))
/* The generator's state as a uint8 tensor (seed and counter offset, 16 bytes), to
 * save in a checkpoint; ct_generator_set_state restores it (0, or -1 with an error). */
ct_tensor *ct_generator_get_state(ct_generator *g);
int ct_generator_set_state(ct_generator *g, const ct_tensor *state);
#define ct_generator_get_state(g) CT_AT(ct_generator_get_state(g))
#define ct_generator_set_state(g, state) CT_AT(ct_generator_set_state(g, state))
/* torch.get_rng_state / torch.set_rng_state: the default generator's state. */
#define ct_get_rng_state() ct_generator_get_state(NULL)
#define ct_set_rng_state(state) ct_generator_set_state(NULL, state)

/* ---- random factories (options: dtype, device, requires_grad, generator) ---- */

/* Uniform on [0, 1) (floating dtypes; default dtype unless given). */
ct_tensor *ct_rand_with(ct_shape shape, ct_tensor_options o);
/* Standard normal N(0, 1) (floating dtypes). */
ct_tensor *ct_randn_with(ct_shape shape, ct_tensor_options o);
/* Integers uniform on [low, high) (default dtype int64). */
ct_tensor *ct_randint_with(int64_t low, int64_t high, ct_shape shape, ct_tensor_options o);
/* torch.normal(mean, std, size): N(mean, std^2) (floating dtypes; std >= 0). */
ct_tensor *ct_normal_with(double mean, double std, ct_shape shape, ct_tensor_options o);
/* A random permutation of 0 .. n-1 (default dtype int64). */
ct_tensor *ct_randperm_with(int64_t n, ct_tensor_options o);
/* The same with t's shape, dtype and device unless the options say otherwise. */
ct_tensor *ct_rand_like_with(const ct_tensor *t, ct_tensor_options o);
ct_tensor *ct_randn_like_with(const ct_tensor *t, ct_tensor_options o);
ct_tensor *ct_randint_like_with(const ct_tensor *t, int64_t low, int64_t high,
                                ct_tensor_options o);

#define ct_rand(shape, ...) CT_AT(ct_rand_with(shape, CT_OPTS(__VA_ARGS__)))
#define ct_randn(shape, ...) CT_AT(ct_randn_with(shape, CT_OPTS(__VA_ARGS__)))
#define ct_randint(low, high, shape, ...) \
    CT_AT(ct_randint_with(low, high, shape, CT_OPTS(__VA_ARGS__)))
#define ct_randperm(n, ...) CT_AT(ct_randperm_with(n, CT_OPTS(__VA_ARGS__)))
#define ct_normal(mean, std, shape, ...) \
    CT_AT(ct_normal_with(mean, std, shape, CT_OPTS(__VA_ARGS__)))
#define ct_rand_like(t, ...) CT_AT(ct_rand_like_with(t, CT_OPTS(__VA_ARGS__)))
#define ct_randn_like(t, ...) CT_AT(ct_randn_like_with(t, CT_OPTS(__VA_ARGS__)))
#define ct_randint_like(t, low, high, ...) \
    CT_AT(ct_randint_like_with(t, low, high, CT_OPTS(__VA_ARGS__)))

/* ---- sampling from tensors and in place ------------------------------- */

/* Options of the random samplers: ct_bernoulli, ct_bernoulli_p, ct_bernoulli_,
 * ct_normal_, ct_uniform_, ct_random_ and ct_exponential_. */
typedef struct {
    ct_generator *generator; /* NULL: the default generator */
} ct_random_options;

/* torch.bernoulli(p): 1 with probability p[i], else 0, in p's (floating) dtype; every
 * p[i] must lie in [0, 1]. */
ct_tensor *ct_bernoulli_with(ct_tensor *p, ct_random_options o);
/* torch.bernoulli(t, p): t's shape and dtype, 1 with probability p (0 <= p <= 1). */
ct_tensor *ct_bernoulli_p_with(ct_tensor *t, double p, ct_random_options o);
/* In place: t.bernoulli_(p), t.normal_(mean, std), t.uniform_(from, to),
 * t.random_(from, to) (integers in [from, to), any dtype), t.exponential_(lambd)
 * (density lambd exp(-lambd x)).  They bump t's version and return t. */
ct_tensor *ct_bernoulli__with(ct_tensor *t, double p, ct_random_options o);
ct_tensor *ct_normal__with(ct_tensor *t, double mean, double std, ct_random_options o);
ct_tensor *ct_uniform__with(ct_tensor *t, double from, double to, ct_random_options o);
ct_tensor *ct_random__with(ct_tensor *t, int64_t from, int64_t to, ct_random_options o);
ct_tensor *ct_exponential__with(ct_tensor *t, double lambd, ct_random_options o);

#define ct_bernoulli(p, ...) CT_AT(ct_bernoulli_with(p, CT_OPTIONS(ct_random_options, __VA_ARGS__)))
#define ct_bernoulli_p(t, p, ...) \
    CT_AT(ct_bernoulli_p_with(t, p, CT_OPTIONS(ct_random_options, __VA_ARGS__)))
#define ct_bernoulli_(t, p, ...) \
    CT_AT(ct_bernoulli__with(t, p, CT_OPTIONS(ct_random_options, __VA_ARGS__)))
#define ct_normal_(t, mean, std, ...) \
    CT_AT(ct_normal__with(t, mean, std, CT_OPTIONS(ct_random_options, __VA_ARGS__)))
#define ct_uniform_(t, from, to, ...) \
    CT_AT(ct_uniform__with(t, from, to, CT_OPTIONS(ct_random_options, __VA_ARGS__)))
#define ct_random_(t, from, to, ...) \
    CT_AT(ct_random__with(t, from, to, CT_OPTIONS(ct_random_options, __VA_ARGS__)))
#define ct_exponential_(t, lambd, ...) \
    CT_AT(ct_exponential__with(t, lambd, CT_OPTIONS(ct_random_options, __VA_ARGS__)))

/* torch.multinomial: n category indices (int64) per row of probs (1-D: [n], 2-D:
 * [rows, n]), drawn with probability proportional to the (finite, non-negative)
 * weights; without replacement (the default) n <= the number of categories. */
typedef struct {
    bool replacement;        /* draw with replacement */
    ct_generator *generator; /* NULL: the default generator */
} ct_multinomial_options;
ct_tensor *ct_multinomial_with(ct_tensor *probs, int64_t n, ct_multinomial_options o);
#define ct_multinomial(probs, n, ...) \
    CT_AT(ct_multinomial_with(probs, n, CT_OPTIONS(ct_multinomial_options, __VA_ARGS__)))

/* ---- dropout ---------------------------------------------------------- */

/* Options of ct_dropout, ct_dropout1d, ct_dropout2d, ct_dropout3d, ct_alpha_dropout and
 * ct_feature_alpha_dropout. */
typedef struct {
    ct_generator *generator; /* NULL: the default generator */
    bool inplace;            /* write into x (ct_dropout_) */
} ct_dropout_options;
/* torch.nn.functional.dropout: in training, zeroes each element with probability p
 * and scales the others by 1/(1-p); returns x itself when !training, p == 0 or x is
 * empty.  The gradient is multiplied by the same mask. */
ct_tensor *ct_dropout_with(ct_tensor *x, double p, bool training, ct_dropout_options o);
#define ct_dropout(x, p, training, ...) \
    CT_AT(ct_dropout_with(x, p, training, CT_OPTIONS(ct_dropout_options, __VA_ARGS__)))
#define ct_dropout_(x, p, training, ...) \
    CT_AT(ct_dropout_with(x, p, training, (ct_dropout_options){.inplace = true, __VA_ARGS__}))
/* Channel-wise (feature) dropout, as torch.nn.functional.dropout1d/2d/3d: one draw
 * per (sample, channel), zeroing whole feature maps.  dropout1d takes (N, C, L) or
 * (C, L), dropout3d (N, C, D, H, W) or (C, D, H, W); dropout2d takes any input of two
 * or more dims as (N, C, ...), a 3-D one too (PyTorch 1.13's behaviour).  Without the
 * batch dim the result's grad_fn is MulBackward0 (PyTorch's: SqueezeBackward1). */
ct_tensor *ct_dropout1d_with(ct_tensor *x, double p, bool training, ct_dropout_options o);
ct_tensor *ct_dropout2d_with(ct_tensor *x, double p, bool training, ct_dropout_options o);
ct_tensor *ct_dropout3d_with(ct_tensor *x, double p, bool training, ct_dropout_options o);
/* alpha_dropout (for SELU networks): dropped elements take SELU's negative saturation
 * value and the result is rescaled to keep zero mean and unit variance;
 * feature_alpha_dropout does it per (sample, channel). */
ct_tensor *ct_alpha_dropout_with(ct_tensor *x, double p, bool training, ct_dropout_options o);
ct_tensor *ct_feature_alpha_dropout_with(ct_tensor *x, double p, bool training,
                                         ct_dropout_options o);
#define ct_dropout1d(x, p, training, ...) \
    CT_AT(ct_dropout1d_with(x, p, training, CT_OPTIONS(ct_dropout_options, __VA_ARGS__)))
#define ct_dropout2d(x, p, training, ...) \
    CT_AT(ct_dropout2d_with(x, p, training, CT_OPTIONS(ct_dropout_options, __VA_ARGS__)))
#define ct_dropout3d(x, p, training, ...) \
    CT_AT(ct_dropout3d_with(x, p, training, CT_OPTIONS(ct_dropout_options, __VA_ARGS__)))
#define ct_alpha_dropout(x, p, training, ...) \
    CT_AT(ct_alpha_dropout_with(x, p, training, CT_OPTIONS(ct_dropout_options, __VA_ARGS__)))
#define ct_feature_alpha_dropout(x, p, training, ...) \
    CT_AT(ct_feature_alpha_dropout_with(x, p, training, CT_OPTIONS(ct_dropout_options, __VA_ARGS__)))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
