/* Subset and random_split. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/data_impl.h"
#include "core/mem.h"

typedef struct {
    ct_dataset *base;
    int64_t n;
    int64_t *indices;
} subset_ds;

static int64_t subset_len(const ct_dataset *ds) { return ((subset_ds *)ct_dataset_state(ds))->n; }

static int subset_get(ct_dataset *ds, int64_t index, ct_sample *out) {
    subset_ds *s = ct_dataset_state(ds);
    return ct_dataset_get_seeded(s->base, s->indices[index], out->seed, out);
}

static void subset_destroy(ct_dataset *ds) {
    subset_ds *s = ct_dataset_state(ds);
    ct_release(s->base);
    free(s->indices);
}

static const ct_dataset_class SUBSET = {
    .name = "Subset", .len = subset_len, .get = subset_get, .destroy = subset_destroy};

ct_dataset *(ct_subset)(ct_dataset *ds, const int64_t *indices, int64_t n) {
    if (!ct_alive("ct_subset", 1, ds)) return NULL;
    if (!ds) return NULL;
    if (n < 0 || (n > 0 && !indices)) {
        ct_error("ct_subset: expected n >= 0 indices (got %lld)", (long long)n);
        return NULL;
    }
    int64_t len = ct_dataset_len(ds);
    for (int64_t i = 0; i < n; i++) {
        if (indices[i] < 0 || indices[i] >= len) {
            ct_error("ct_subset: index %lld (at position %lld) is out of range for %s of length %lld",
                     (long long)indices[i], (long long)i, ct_dataset_name(ds), (long long)len);
            return NULL;
        }
    }
    int64_t *copy = ct_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!copy) {
        ct_error("ct_subset: out of memory");
        return NULL;
    }
    if (n) memcpy(copy, indices, sizeof(int64_t) * (size_t)n);
    ct_dataset *sub = ct_dataset_new(&SUBSET, sizeof(subset_ds));
    if (!sub) {
        free(copy);
        return NULL;
    }
    subset_ds *s = ct_dataset_state(sub);
    *s = (subset_ds){.base = ct_retain(ds), .n = n, .indices = copy};
    return sub;
}

/* PyTorch's rule: lengths summing to 1 (and not more) are fractions; the counts are
 * their floors, and what is left is dealt one by one from the first subset on. */
static int split_counts(int n, const double *lengths, int64_t len, int64_t *counts) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += lengths[i];
    bool fractions = fabs(sum - 1) <= 1e-9 * fmax(1, fabs(sum)) && sum <= 1;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (fractions) {
            if (lengths[i] < 0 || lengths[i] > 1) {
                ct_error("ct_random_split: Fraction at index %d is not between 0 and 1", i);
                return -1;
            }
            counts[i] = (int64_t)floor((double)len * lengths[i]);
        } else {
            if (lengths[i] < 0 || lengths[i] != floor(lengths[i])) {
                ct_error("ct_random_split: length at index %d must be a non-negative integer "
                         "or a fraction (got %g)", i, lengths[i]);
                return -1;
            }
            counts[i] = (int64_t)lengths[i];
        }
        total += counts[i];
    }
    if (fractions)
        for (int64_t r = 0; r < len - total; r++) counts[r % n]++;
    else if (total != len) {
        ct_error("ct_random_split: Sum of input lengths does not equal the length of the input "
                 "dataset! (got %lld, expected %lld)", (long long)total, (long long)len);
        return -1;
    }
    return 0;
}

int (ct_random_split)(ct_dataset *ds, int n, const double *lengths, ct_generator *g,
                      ct_dataset **out) {
    if (!ct_alive("ct_random_split", 1, ds) || !ct_alive("ct_random_split", 4, g)) return -1;
    if (!ds || !out) return -1;
    if (n < 1 || !lengths) {
        ct_error("ct_random_split: expected at least one length (got %d)", n);
        return -1;
    }
    int64_t len = ct_dataset_len(ds);
    int64_t *counts = ct_malloc(sizeof(int64_t) * (size_t)n);
    int64_t *perm = ct_malloc(sizeof(int64_t) * (size_t)(len ? len : 1));
    int rc = -1;
    if (!counts || !perm)
        ct_error("ct_random_split: out of memory");
    else if (split_counts(n, lengths, len, counts) == 0 && data_randperm(g, len, perm) == 0) {
        rc = 0;
        int64_t at = 0;
        for (int i = 0; i < n; i++) {
            out[i] = rc == 0 ? ct_subset(ds, perm + at, counts[i]) : NULL;
            if (!out[i]) rc = -1;
            at += counts[i];
        }
        for (int i = 0; rc != 0 && i < n; i++) { /* no half-made result */
            if (!out[i]) continue;
            ct_scope_unregister(out[i]); /* then the reference is ours */
            ct_release(out[i]);
            out[i] = NULL;
        }
    }
    free(counts);
    free(perm);
    return rc;
}
