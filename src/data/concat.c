/* ConcatDataset: datasets one after the other. */
#include <stdlib.h>

#include "data/data_impl.h"
#include "core/mem.h"

typedef struct {
    int n;
    ct_dataset **parts;
    int64_t *ends; /* cumulative sizes: part i holds [ends[i - 1], ends[i]) */
} concat_ds;

static int64_t concat_len(const ct_dataset *ds) {
    const concat_ds *s = ct_dataset_state(ds);
    return s->n ? s->ends[s->n - 1] : 0;
}

static int concat_get(ct_dataset *ds, int64_t index, ct_sample *out) {
    concat_ds *s = ct_dataset_state(ds);
    int lo = 0, hi = s->n - 1; /* the first part whose end lies beyond index */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (s->ends[mid] > index) hi = mid;
        else lo = mid + 1;
    }
    int64_t start = lo ? s->ends[lo - 1] : 0;
    return ct_dataset_get_seeded(s->parts[lo], index - start, out->seed, out);
}

static void concat_destroy(ct_dataset *ds) {
    concat_ds *s = ct_dataset_state(ds);
    for (int i = 0; i < s->n; i++) ct_release(s->parts[i]);
    free(s->parts);
    free(s->ends);
}

static const ct_dataset_class CONCAT = {
    .name = "ConcatDataset", .len = concat_len, .get = concat_get, .destroy = concat_destroy};

ct_dataset *(ct_concat_dataset)(int n, ct_dataset *const *datasets) {
    if (n < 1 || !datasets) {
        ct_error("ct_concat_dataset: datasets should not be an empty iterable");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!datasets[i]) return NULL;
    ct_dataset **parts = ct_malloc(sizeof *parts * (size_t)n);
    int64_t *ends = ct_malloc(sizeof *ends * (size_t)n);
    ct_dataset *ds = parts && ends ? ct_dataset_new(&CONCAT, sizeof(concat_ds)) : NULL;
    if (!ds) {
        if (!parts || !ends) ct_error("ct_concat_dataset: out of memory");
        free(parts);
        free(ends);
        return NULL;
    }
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        parts[i] = ct_retain(datasets[i]);
        total += ct_dataset_len(datasets[i]);
        ends[i] = total;
    }
    *(concat_ds *)ct_dataset_state(ds) = (concat_ds){n, parts, ends};
    return ds;
}
