/* Fuzzes the IDX reader: the input is a whole (uncompressed) file. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    CT_SCOPE {
        ct_tensor *t = ct_read_idx(fuzz_file("input.idx", data, size));
        if (t) ct_sum(ct_to(t, .dtype = CT_F64));
    }
    ct_clear_error();
    return 0;
}
