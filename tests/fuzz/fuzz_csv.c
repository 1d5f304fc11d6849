/* Fuzzes the CSV dataset: the first byte picks the options, the rest is the file. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const ct_dtype label_dtypes[] = {CT_I64, CT_U8, CT_F32, CT_I32};
    ct_csv_options o = {.header = (ct_csv_header)(data[0] % 3),
                        .label_dtype = label_dtypes[(data[0] >> 2) & 3],
                        .no_label = (data[0] >> 4) & 1,
                        .delimiter = (data[0] >> 5) & 1 ? ';' : 0,
                        .label_name = (data[0] >> 6) & 1 ? "label" : NULL};
    const char *path = fuzz_file("input.csv", data + 1, size - 1);
    CT_SCOPE {
        ct_dataset *ds = ct_csv_dataset_with(path, o);
        if (ds) fuzz_walk_dataset(ds);
    }
    ct_clear_error();
    return 0;
}
