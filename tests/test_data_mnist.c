/* Fashion-MNIST from Debian's dataset-fashion-mnist package (skipped when it is not
 * installed): sizes, dtypes and values known from the files (checked with PyTorch; pixels are float32 here, float64 there). */
#include <unistd.h>

#include "ct_test.h"

static bool installed(void) {
    if (access("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", R_OK) == 0) return true;
    printf("skip: dataset-fashion-mnist is not installed\n");
    return false;
}

TEST(fashion_mnist_test_split) {
    if (!installed()) return;
    ct_dataset *ds = ct_fashion_mnist(.train = false);
    CHECK_INT_EQ(ct_dataset_len(ds), 10000);
    ct_sample s;
    CHECK(ct_dataset_get(ds, 0, &s) == 0);
    CHECK_INT_EQ(ct_dtype_of(s.t[0]), CT_U8);
    CHECK(ct_ndim(s.t[0]) == 3 && ct_size(s.t[0], 0) == 1 && ct_size(s.t[0], 1) == 28 &&
          ct_size(s.t[0], 2) == 28);
    CHECK_CLOSE(ct_item(ct_sum(s.t[0])), 33456, 0);
    int64_t want[] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
    for (int i = 0; i < 10; i++) {
        CT_SCOPE {
            ct_dataset_get(ds, i, &s);
            CHECK_INT_EQ(ct_item_int(s.t[1]), want[i]);
        }
    }
}

TEST(fashion_mnist_train_mean_and_std) {
    if (!installed()) return;
    ct_dataset *ds = ct_fashion_mnist(.transform = ct_tf_to_float());
    CHECK_INT_EQ(ct_dataset_len(ds), 60000);
    ct_loader *l = ct_dataloader(ds, .batch_size = 10000, .num_workers = 2);
    ct_batch b;
    double sum = 0, sq = 0;
    int64_t n = 0;
    while (ct_loader_next(l, &b)) {
        CT_SCOPE_HERE;
        ct_tensor *x = ct_to(b.t[0], .dtype = CT_F64);
        sum += ct_item(ct_sum(x));
        sq += ct_item(ct_sum(ct_mul(x, x)));
        n += ct_numel(x);
    }
    double mean = sum / (double)n, std = sqrt(sq / (double)n - mean * mean);
    CHECK_CLOSE(mean, 0.2860405969887955, 1e-7); /* the usual Normalize((0.2860,), (0.3530,)) */
    CHECK_CLOSE(std, 0.35302424833042156, 1e-6);
}
