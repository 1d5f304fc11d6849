/* Fuzzes the MNIST dataset: the input is the images file and the labels file, the
 * first two bytes (little-endian) giving the images file's length. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    size_t split = (size_t)(data[0] | data[1] << 8);
    if (split > size - 2) split = size - 2;
    fuzz_file("train-images-idx3-ubyte", data + 2, split);
    const char *labels = fuzz_file("train-labels-idx1-ubyte", data + 2 + split, size - 2 - split);
    char root[160];
    snprintf(root, sizeof root, "%.*s", (int)(strrchr(labels, '/') - labels), labels);
    CT_SCOPE {
        ct_dataset *ds = ct_mnist(.root = root);
        if (ds) fuzz_walk_dataset(ds);
    }
    ct_clear_error();
    return 0;
}
