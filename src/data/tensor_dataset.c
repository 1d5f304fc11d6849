/* TensorDataset: sample i is (t0[i], t1[i], ...). */
#include "data/data_impl.h"

typedef struct {
    int n;
    ct_tensor *t[CT_SAMPLE_MAX];
} tensor_ds;

static int64_t tensor_len(const ct_dataset *ds) {
    const tensor_ds *s = ct_dataset_state(ds);
    return ct_size(s->t[0], 0);
}

static int tensor_get(ct_dataset *ds, int64_t index, ct_sample *out) {
    tensor_ds *s = ct_dataset_state(ds);
    return data_select_fields(s->n, s->t, index, out);
}

static void tensor_destroy(ct_dataset *ds) {
    tensor_ds *s = ct_dataset_state(ds);
    for (int k = 0; k < s->n; k++) ct_release(s->t[k]);
}

static const ct_dataset_class TENSOR_DATASET = {
    .name = "TensorDataset", .len = tensor_len, .get = tensor_get, .destroy = tensor_destroy};

ct_dataset *(ct_tensor_dataset)(int n, ct_tensor *const *tensors) {
    if (!ct_all_alive("ct_tensor_dataset", 2, tensors, n)) return NULL;
    if (n < 1 || n > CT_SAMPLE_MAX || !tensors) {
        ct_error("ct_tensor_dataset: expected 1 to %d tensors (got %d)", CT_SAMPLE_MAX, n);
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        if (!tensors[k]) return NULL;
        if (ct_ndim(tensors[k]) == 0) {
            ct_error("ct_tensor_dataset: tensor %d is 0-d (every tensor needs a dim 0 to index)", k);
            return NULL;
        }
        if (ct_size(tensors[k], 0) != ct_size(tensors[0], 0)) {
            ct_error("ct_tensor_dataset: Size mismatch between tensors (tensor %d has %lld rows, "
                     "tensor 0 has %lld)", k, (long long)ct_size(tensors[k], 0),
                     (long long)ct_size(tensors[0], 0));
            return NULL;
        }
    }
    ct_dataset *ds = ct_dataset_new(&TENSOR_DATASET, sizeof(tensor_ds));
    if (!ds) return NULL;
    tensor_ds *s = ct_dataset_state(ds);
    s->n = n;
    for (int k = 0; k < n; k++) s->t[k] = ct_retain(tensors[k]);
    return ds;
}
