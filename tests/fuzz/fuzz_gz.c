/* Fuzzes the gzip path of the file readers: the input is a (damaged) .gz file. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    CT_SCOPE {
        ct_tensor *t = ct_read_idx(fuzz_file("input.idx.gz", data, size));
        if (t) ct_sum(ct_to(t, .dtype = CT_F64));
    }
    ct_clear_error();
    return 0;
}
