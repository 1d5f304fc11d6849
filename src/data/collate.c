/* default_collate: field k of the batch is the stack of field k of every sample. */
#include <stdlib.h>

#include "data/data_impl.h"
#include "core/mem.h"

int ct_default_collate(int n, const ct_sample *samples, ct_batch *out, void *ctx) {
    (void)ctx;
    if (n < 1 || !samples || !out) {
        ct_error("ct_default_collate: expected at least one sample (got %d)", n);
        return -1;
    }
    int fields = samples[0].n;
    for (int i = 1; i < n; i++) {
        if (samples[i].n != fields) {
            ct_error("ct_default_collate: each element in list of batch should be of equal size "
                     "(sample %d has %d tensors, sample 0 has %d)", i, samples[i].n, fields);
            return -1;
        }
    }
    ct_tensor **column = ct_malloc(sizeof *column * (size_t)n);
    if (!column) {
        ct_error("ct_default_collate: out of memory");
        return -1;
    }
    int rc = 0;
    out->n = fields;
    for (int k = 0; k < fields && rc == 0; k++) {
        for (int i = 0; i < n; i++) column[i] = samples[i].t[k];
        if (!(out->t[k] = ct_stack(n, column, 0))) rc = -1;
    }
    free(column);
    return rc;
}
