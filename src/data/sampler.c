/* The sampler base and SequentialSampler, RandomSampler, WeightedRandomSampler.
 * Random samplers draw a base seed when created; epoch e's order comes from a
 * generator seeded with ct_data_seed(base seed, e, 0), so any epoch can be replayed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/lifetime.h"
#include "data/data_impl.h"
#include "core/mem.h"

static void sampler_destroy(ct_object *o) {
    ct_sampler *s = (ct_sampler *)o;
    if (s->cls->destroy) s->cls->destroy(s);
    ct_lifetime_free(s); /* the debug lifetime mode keeps it in quarantine */
}

ct_sampler *ct_sampler_new(const ct_sampler_class *cls, size_t state_size) {
    if (!cls || !cls->len || !cls->indices) {
        ct_error("ct_sampler_new: the class needs len and indices");
        return NULL;
    }
    ct_sampler *s = data_object_new("ct_sampler_new", sizeof *s, state_size, sampler_destroy);
    if (s) s->cls = cls;
    return s;
}

void *ct_sampler_state(const ct_sampler *s) {
    if (!ct_alive("ct_sampler_state", 1, s)) return NULL;
    return s ? (void *)s->state : NULL;
}
int64_t ct_sampler_len(const ct_sampler *s) {
    if (!ct_alive("ct_sampler_len", 1, s)) return -1;
    return s ? s->cls->len(s) : -1;
}
void ct_sampler_set_epoch(ct_sampler *s, uint64_t epoch) {
    if (!ct_alive("ct_sampler_set_epoch", 1, s)) return;
    if (s) s->epoch = epoch;
}

int64_t ct_sampler_indices(ct_sampler *s, int64_t *out, int64_t max) {
    if (!ct_alive("ct_sampler_indices", 1, s)) return -1;
    if (!s || (max > 0 && !out)) return -1;
    int64_t n = s->cls->len(s);
    int64_t *all = ct_malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!all) {
        ct_error("ct_sampler_indices: out of memory");
        return -1;
    }
    int rc = s->cls->indices(s, s->epoch, all);
    if (rc == 0) memcpy(out, all, sizeof(int64_t) * (size_t)(n < max ? n : max > 0 ? max : 0));
    free(all);
    return rc == 0 ? n : -1;
}

/* A generator for one epoch of a sampler seeded with `seed` (registered with the scope). */
static ct_generator *epoch_generator(uint64_t seed, uint64_t epoch) {
    return ct_generator_new(ct_data_seed(seed, epoch, 0));
}

/* ---- SequentialSampler --------------------------------------------------------- */

static int64_t seq_len(const ct_sampler *s) { return *(int64_t *)ct_sampler_state(s); }
static int seq_indices(ct_sampler *s, uint64_t epoch, int64_t *out) {
    (void)epoch;
    for (int64_t i = 0, n = seq_len(s); i < n; i++) out[i] = i;
    return 0;
}
static const ct_sampler_class SEQUENTIAL = {
    .name = "SequentialSampler", .len = seq_len, .indices = seq_indices};

ct_sampler *ct_sequential_sampler(int64_t n) {
    if (n < 0) {
        ct_error("ct_sequential_sampler: n must be >= 0 (got %lld)", (long long)n);
        return NULL;
    }
    ct_sampler *s = ct_sampler_new(&SEQUENTIAL, sizeof(int64_t));
    if (s) *(int64_t *)ct_sampler_state(s) = n;
    return s;
}

/* ---- RandomSampler ---------------------------------------------------------------- */

typedef struct {
    int64_t n, num_samples;
    bool replacement;
    uint64_t seed;
} random_state;

static int64_t random_len(const ct_sampler *s) {
    return ((random_state *)ct_sampler_state(s))->num_samples;
}

static int random_indices(ct_sampler *s, uint64_t epoch, int64_t *out) {
    random_state *r = ct_sampler_state(s);
    int rc = 0;
    CT_SCOPE {
        ct_generator *g = epoch_generator(r->seed, epoch);
        if (r->replacement) {
            ct_tensor *t = ct_randint(0, r->n, CT_SHAPE(r->num_samples), .generator = g);
            rc = t ? ct_copy_to_buffer(t, out, CT_I64, sizeof(int64_t) * (size_t)r->num_samples) : -1;
            break;
        }
        /* Whole permutations, then the head of one more (PyTorch's order). */
        int64_t full = r->num_samples / r->n, rest = r->num_samples % r->n;
        for (int64_t k = 0; k < full && rc == 0; k++) rc = data_randperm(g, r->n, out + k * r->n);
        if (rc == 0 && rest) {
            int64_t *tmp = ct_malloc(sizeof(int64_t) * (size_t)r->n);
            if (!tmp) ct_error("ct_random_sampler: out of memory");
            rc = tmp ? data_randperm(g, r->n, tmp) : -1;
            if (rc == 0) memcpy(out + full * r->n, tmp, sizeof(int64_t) * (size_t)rest);
            free(tmp);
        }
    }
    return rc;
}

static const ct_sampler_class RANDOM = {
    .name = "RandomSampler", .len = random_len, .indices = random_indices};

ct_sampler *ct_random_sampler_with(int64_t n, ct_random_sampler_options o) {
    if (!ct_option_alive("ct_random_sampler", "generator", o.generator)) return NULL;
    int64_t num = o.num_samples ? o.num_samples : n;
    if (num <= 0 || n <= 0) {
        ct_error("ct_random_sampler: num_samples should be a positive integer value, but got "
                 "num_samples=%lld", (long long)num);
        return NULL;
    }
    ct_sampler *s = ct_sampler_new(&RANDOM, sizeof(random_state));
    if (s) *(random_state *)ct_sampler_state(s) =
        (random_state){n, num, o.replacement, data_draw_seed(o.generator)};
    return s;
}

/* ---- WeightedRandomSampler ----------------------------------------------------------- */

typedef struct {
    int64_t num_samples;
    bool replacement;
    uint64_t seed;
    ct_tensor *weights; /* float64 copy, owned */
} weighted_state;

static int64_t weighted_len(const ct_sampler *s) {
    return ((weighted_state *)ct_sampler_state(s))->num_samples;
}

/* torch.multinomial over the weights, from the epoch's generator. */
static int weighted_indices(ct_sampler *s, uint64_t epoch, int64_t *out) {
    weighted_state *r = ct_sampler_state(s);
    int rc = -1;
    CT_SCOPE {
        ct_tensor *t = ct_multinomial(r->weights, r->num_samples, .replacement = r->replacement,
                                      .generator = epoch_generator(r->seed, epoch));
        if (t && ct_copy_to_buffer(t, out, CT_I64, sizeof(int64_t) * (size_t)r->num_samples) == 0)
            rc = 0;
    }
    return rc;
}

static void weighted_destroy(ct_sampler *s) { ct_release(((weighted_state *)ct_sampler_state(s))->weights); }

static const ct_sampler_class WEIGHTED = {.name = "WeightedRandomSampler", .len = weighted_len,
                                          .indices = weighted_indices, .destroy = weighted_destroy};

/* Checks the weights as torch.multinomial does; 0 or -1. */
static int check_weights(const double *w, int64_t n, int64_t num, bool replacement) {
    const char *op = "ct_weighted_random_sampler";
    int64_t positive = 0;
    double total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(w[i]) || w[i] < 0) {
            ct_error("%s: probability tensor contains either `inf`, `nan` or element < 0 (weight "
                     "%lld is %g)", op, (long long)i, w[i]);
            return -1;
        }
        positive += w[i] > 0;
        total += w[i];
    }
    if (!(total > 0)) {
        ct_error("%s: invalid multinomial distribution (sum of probabilities <= 0)", op);
        return -1;
    }
    if (!replacement && num > n) {
        ct_error("%s: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                 "(%lld > %lld)", op, (long long)num, (long long)n);
        return -1;
    }
    if (!replacement && num > positive) {
        ct_error("%s: invalid multinomial distribution (with replacement=False, not enough "
                 "non-negative category to sample)", op);
        return -1;
    }
    return 0;
}

ct_sampler *ct_weighted_random_sampler_with(ct_tensor *weights, int64_t num_samples,
                                            ct_weighted_sampler_options o) {
    if (!ct_alive("ct_weighted_random_sampler", 1, weights) ||
        !ct_option_alive("ct_weighted_random_sampler", "generator", o.generator))
        return NULL;
    if (!weights) return NULL;
    if (ct_ndim(weights) != 1) {
        ct_error("ct_weighted_random_sampler: weights should be a 1d sequence but given weights "
                 "have %d dims", ct_ndim(weights));
        return NULL;
    }
    if (num_samples <= 0) {
        ct_error("ct_weighted_random_sampler: num_samples should be a positive integer value, "
                 "but got num_samples=%lld", (long long)num_samples);
        return NULL;
    }
    int64_t n = ct_numel(weights);
    double *w = ct_malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!w) {
        ct_error("ct_weighted_random_sampler: out of memory");
        return NULL;
    }
    ct_sampler *s = NULL;
    if (ct_copy_to_buffer(weights, w, CT_F64, sizeof(double) * (size_t)n) == 0 &&
        check_weights(w, n, num_samples, o.replacement) == 0)
        s = ct_sampler_new(&WEIGHTED, sizeof(weighted_state));
    free(w);
    if (!s) return NULL;
    weighted_state *st = ct_sampler_state(s);
    *st = (weighted_state){num_samples, o.replacement, data_draw_seed(o.generator), NULL};
    CT_SCOPE { st->weights = ct_retain(ct_to(weights, .dtype = CT_F64, .copy = true)); }
    return s;
}
