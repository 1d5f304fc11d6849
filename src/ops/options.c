/* Integer options held in a ct_opt_f64 (ctorch/base.h's convention). */
#include <math.h>

#include "core/error.h"
#include "ops/options.h"

bool ct_opt_int(const char *op, const char *name, ct_opt_f64 o, int64_t dflt, int64_t *out) {
    if (!o.set || o.none) {
        *out = dflt;
        return true;
    }
    if (!(o.v == floor(o.v)) || fabs(o.v) > 9007199254740992.0) {
        ct_error("%s: %s must be an integer (got %g)", op, name, o.v);
        return false;
    }
    *out = (int64_t)o.v;
    return true;
}

bool ct_embedding_padding(const char *op, ct_opt_f64 padding_idx, int64_t num, int64_t *pad) {
    if (!ct_opt_int(op, "padding_idx", padding_idx, -1, pad)) return false;
    if (!padding_idx.set || padding_idx.none) return true;
    if (*pad >= num || *pad < -num) {
        ct_error("%s: Padding_idx must be within num_embeddings (got %lld for %lld embeddings)", op,
                 (long long)*pad, (long long)num);
        return false;
    }
    if (*pad < 0) *pad += num;
    return true;
}
