/* The batch sampler base, the epoch plan it fills, and BatchSampler. */
#include <stdlib.h>
#include <string.h>

#include "core/lifetime.h"
#include "data/data_impl.h"
#include "core/mem.h"

static void batch_sampler_destroy(ct_object *o) {
    ct_batch_sampler *bs = (ct_batch_sampler *)o;
    if (bs->cls->destroy) bs->cls->destroy(bs);
    ct_lifetime_free(bs); /* the debug lifetime mode keeps it in quarantine */
}

ct_batch_sampler *ct_batch_sampler_new(const ct_batch_sampler_class *cls, size_t state_size) {
    if (!cls || !cls->len || !cls->plan) {
        ct_error("ct_batch_sampler_new: the class needs len and plan");
        return NULL;
    }
    ct_batch_sampler *bs =
        data_object_new("ct_batch_sampler_new", sizeof *bs, state_size, batch_sampler_destroy);
    if (bs) bs->cls = cls;
    return bs;
}

void *ct_batch_sampler_state(const ct_batch_sampler *bs) {
    if (!ct_alive("ct_batch_sampler_state", 1, bs)) return NULL;
    return bs ? (void *)bs->state : NULL;
}
int64_t ct_batch_sampler_len(const ct_batch_sampler *bs) {
    if (!ct_alive("ct_batch_sampler_len", 1, bs)) return -1;
    return bs ? bs->cls->len(bs) : -1;
}

static bool grow(int64_t **v, int64_t *cap, int64_t need) {
    if (need <= *cap) return true;
    int64_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    int64_t *g = ct_realloc(*v, sizeof(int64_t) * (size_t)c);
    if (!g) return false;
    *v = g;
    *cap = c;
    return true;
}

int ct_batch_plan_add(ct_batch_plan *p, int64_t n, const int64_t *indices) {
    if (!p || n < 1 || !indices) {
        ct_error("ct_batch_plan_add: a batch needs at least one index (got %lld)", (long long)n);
        return -1;
    }
    if (!grow(&p->idx, &p->cap_idx, p->n_idx + n) || !grow(&p->off, &p->cap_off, p->n_batches + 2)) {
        ct_error("ct_batch_plan_add: out of memory");
        return -1;
    }
    memcpy(p->idx + p->n_idx, indices, sizeof(int64_t) * (size_t)n);
    p->off[p->n_batches] = p->n_idx;
    p->n_idx += n;
    p->off[++p->n_batches] = p->n_idx;
    return 0;
}

void data_plan_free(ct_batch_plan *p) {
    free(p->idx);
    free(p->off);
    *p = (ct_batch_plan){0};
}

/* ---- BatchSampler ------------------------------------------------------------------ */

typedef struct {
    ct_sampler *sampler;
    int64_t batch_size;
    bool drop_last;
} batching_state;

static int64_t batching_len(const ct_batch_sampler *bs) {
    batching_state *s = ct_batch_sampler_state(bs);
    int64_t n = ct_sampler_len(s->sampler);
    return s->drop_last ? n / s->batch_size : (n + s->batch_size - 1) / s->batch_size;
}

static int batching_plan(ct_batch_sampler *bs, uint64_t epoch, ct_batch_plan *out) {
    batching_state *s = ct_batch_sampler_state(bs);
    int64_t n = ct_sampler_len(s->sampler);
    int64_t *idx = ct_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!idx) {
        ct_error("ct_batch_sampler: out of memory");
        return -1;
    }
    int rc = s->sampler->cls->indices(s->sampler, epoch, idx);
    for (int64_t at = 0; rc == 0 && at < n; at += s->batch_size) {
        int64_t size = n - at < s->batch_size ? n - at : s->batch_size;
        if (size < s->batch_size && s->drop_last) break;
        rc = ct_batch_plan_add(out, size, idx + at);
    }
    free(idx);
    return rc;
}

static void batching_destroy(ct_batch_sampler *bs) {
    ct_release(((batching_state *)ct_batch_sampler_state(bs))->sampler);
}

static const ct_batch_sampler_class BATCHING = {
    .name = "BatchSampler", .len = batching_len, .plan = batching_plan, .destroy = batching_destroy};

ct_batch_sampler *(ct_batch_sampler_from)(ct_sampler *s, int64_t batch_size, bool drop_last) {
    if (!ct_alive("ct_batch_sampler_from", 1, s)) return NULL;
    if (!s) return NULL;
    if (batch_size <= 0) {
        ct_error("ct_batch_sampler: batch_size should be a positive integer value, but got "
                 "batch_size=%lld", (long long)batch_size);
        return NULL;
    }
    ct_batch_sampler *bs = ct_batch_sampler_new(&BATCHING, sizeof(batching_state));
    if (bs) *(batching_state *)ct_batch_sampler_state(bs) =
        (batching_state){ct_retain(s), batch_size, drop_last};
    return bs;
}
