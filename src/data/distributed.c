/* DistributedSampler: each of num_replicas ranks takes every num_replicas-th index of
 * the epoch's order (a permutation seeded by seed + epoch, as in PyTorch), padded by
 * repeating indices from the start, or cut, to the same length on every rank. */
#include <stdlib.h>

#include "data/data_impl.h"
#include "core/mem.h"

typedef struct {
    int64_t n, num_samples, total;
    int num_replicas, rank;
    bool shuffle;
    uint64_t seed;
} dist_state;

static int64_t dist_len(const ct_sampler *s) { return ((dist_state *)ct_sampler_state(s))->num_samples; }

static int dist_indices(ct_sampler *s, uint64_t epoch, int64_t *out) {
    dist_state *d = ct_sampler_state(s);
    if (d->n == 0) return 0;
    int64_t *order = ct_malloc(sizeof(int64_t) * (size_t)d->n);
    if (!order) {
        ct_error("ct_distributed_sampler: out of memory");
        return -1;
    }
    int rc = 0;
    if (d->shuffle) {
        CT_SCOPE { rc = data_randperm(ct_generator_new(d->seed + epoch), d->n, order); }
    } else {
        for (int64_t i = 0; i < d->n; i++) order[i] = i;
    }
    /* Position p of the padded order is order[p % n]; this rank has p = rank + k * world. */
    for (int64_t k = 0; rc == 0 && k < d->num_samples; k++)
        out[k] = order[(d->rank + k * d->num_replicas) % d->n];
    free(order);
    return rc;
}

static const ct_sampler_class DISTRIBUTED = {
    .name = "DistributedSampler", .len = dist_len, .indices = dist_indices};

ct_sampler *ct_distributed_sampler_with(int64_t n, ct_distributed_sampler_options o) {
    /* PyTorch's default: the world size and rank of the default process group. */
    if (o.num_replicas == 0 && ct_dist_is_initialized()) {
        o.num_replicas = ct_dist_world_size();
        o.rank = ct_dist_rank();
    }
    int world = o.num_replicas ? o.num_replicas : 1;
    if (world < 1 || n < 0) {
        ct_error("ct_distributed_sampler: expected num_replicas >= 1 and n >= 0 (got %d, %lld)",
                 world, (long long)n);
        return NULL;
    }
    if (o.rank < 0 || o.rank >= world) {
        ct_error("ct_distributed_sampler: Invalid rank %d, rank should be in the interval [0, %d]",
                 o.rank, world - 1);
        return NULL;
    }
    /* PyTorch's lengths: with drop_last the tail beyond a multiple of world is cut,
     * else the order is padded up to the next multiple. */
    int64_t per = o.drop_last ? n / world : (n + world - 1) / world;
    ct_sampler *s = ct_sampler_new(&DISTRIBUTED, sizeof(dist_state));
    if (s) *(dist_state *)ct_sampler_state(s) =
        (dist_state){n, per, per * world, world, o.rank, o.shuffle, o.seed};
    return s;
}
