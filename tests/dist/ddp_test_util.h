/* What the DDP tests share (with dist_test.h's DIST_TEST): deterministic data, models,
 * the single-process reference and the comparison of the ranks' parameters.
 * Every rank runs the same TESTs in the same order; each collective is reached by
 * every rank whatever a CHECK found. */
#ifndef CT_DDP_TEST_UTIL_H
#define CT_DDP_TEST_UTIL_H

#include <stdlib.h>

#include "dist_test.h"
#include "ctorch/distributed.h"

static inline int rank(void) { return ct_dist_rank(); }
static inline int world(void) { return ct_dist_world_size(); }

static inline ct_module *make_mlp(void) {
    return ct_sequential(CT_MODULES(ct_nn_linear(20, 32), ct_nn_relu(), ct_nn_linear(32, 10)));
}

/* A model of the same class as made by make, holding src's state: the reference. */
static inline ct_module *copy_model(ct_module *src, ct_module *(*make)(void)) {
    ct_module *m = make();
    if (ct_load_state_dict(m, ct_module_state_dict(src)) != 0) return NULL;
    return m;
}

/* n samples shaped like one row of shape (after the batch dim), labels in [0, 10),
 * the same on every rank. */
static inline void make_data(int64_t n, ct_shape row, uint64_t seed, ct_tensor **x, ct_tensor **y) {
    ct_generator *g = ct_generator_new(seed);
    ct_shape s = {.ndim = row.ndim + 1};
    s.d[0] = n;
    for (int i = 0; i < row.ndim; i++) s.d[i + 1] = row.d[i];
    *x = ct_randn(s, .generator = g);
    *y = ct_randint(0, 10, CT_SHAPE(n), .generator = g);
}

/* Rows [from, from + len) of every rank r's DistributedSampler share, concatenated in
 * rank order (ranks == world: the global batch), or of this rank only. */
static inline ct_tensor *batch_indices(int64_t n, int64_t from, int64_t len, bool all_ranks) {
    int w = world();
    int64_t *idx = malloc(sizeof *idx * (size_t)(len * w));
    int64_t *share = malloc(sizeof *share * (size_t)n);
    int k = 0;
    for (int r = 0; r < w; r++) {
        if (!all_ranks && r != rank()) continue;
        ct_sampler *s = ct_distributed_sampler(n, .num_replicas = w, .rank = r, .seed = 7);
        int64_t m = ct_sampler_indices(s, share, n);
        CHECK(m >= from + len);
        for (int64_t i = 0; i < len; i++) idx[k++] = share[from + i];
    }
    ct_tensor *t = ct_tensor_i64(idx, CT_SHAPE(k));
    free(idx);
    free(share);
    return t;
}

/* Every parameter of m, flattened into one float32 tensor. */
static inline ct_tensor *flat_params(ct_module *m) {
    ct_tensor *ps[64];
    int n = ct_parameters(m, ps, 64);
    for (int i = 0; i < n; i++) ps[i] = ct_reshape(ct_detach(ps[i]), CT_SHAPE(-1));
    return ct_cat(n, ps, 0);
}

/* Every parameter's .grad flattened (zeros for a missing one). */
static inline ct_tensor *flat_grads(ct_module *m) {
    ct_tensor *ps[64];
    int n = ct_parameters(m, ps, 64);
    for (int i = 0; i < n; i++)
        ps[i] = ct_reshape(ct_grad(ps[i]) ? ct_grad(ps[i]) : ct_zeros_like(ps[i]), CT_SHAPE(-1));
    return ct_cat(n, ps, 0);
}

/* Whether every rank holds bitwise the same t (gathered, compared byte by byte). */
static inline bool same_on_every_rank(ct_tensor *t) {
    int w = world();
    t = ct_reshape(ct_contiguous(t), CT_SHAPE(-1));
    ct_tensor *all = ct_empty(CT_SHAPE(w * ct_numel(t)), .dtype = ct_dtype_of(t));
    if (ct_dist_all_gather_into_tensor(all, t) != 0) return false;
    size_t bytes = (size_t)ct_numel(t) * ct_dtype_size(ct_dtype_of(t));
    const char *p = ct_data_ptr(all);
    for (int r = 1; r < w; r++)
        if (memcmp(p, p + (size_t)r * bytes, bytes)) return false;
    return true;
}

/* max |a - b| / max(1, max |b|): the relative size of the difference. */
static inline double rel_diff(ct_tensor *a, ct_tensor *b) {
    double scale = ct_item(ct_amax(ct_abs(b)));
    return ct_test_max_diff(a, b) / (scale > 1 ? scale : 1);
}

#endif
