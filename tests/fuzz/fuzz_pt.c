/* Fuzzes the .pt loader (the zip or legacy container and the restricted unpickler):
 * the input is a whole file; what loads is walked and its tensors read. */
#include "fuzz.h"

static void walk(const ct_pt_value *v) {
    if (ct_pt_kind_of(v) == CT_PT_TENSOR) ct_sum(ct_to(ct_pt_as_tensor(v), .dtype = CT_F64));
    for (int64_t i = 0; i < ct_pt_len(v); i++) {
        if (ct_pt_kind_of(v) == CT_PT_DICT) walk(ct_pt_key_at(v, i));
        walk(ct_pt_at(v, i));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    CT_SCOPE {
        ct_pt_value *v = ct_pt_from_buffer(data, size, (ct_pt_load_options){0});
        walk(v);
        if (ct_pt_kind_of(v) == CT_PT_DICT) ct_pt_state_dict(v);
    }
    ct_clear_error();
    return 0;
}
