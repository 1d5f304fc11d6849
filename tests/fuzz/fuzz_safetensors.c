/* Fuzzes the safetensors loader: the input is a whole file. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    CT_SCOPE {
        ct_metadata m = {0};
        ct_state_dict *sd = ct_safetensors_from_buffer(data, size, (ct_load_file_options){.metadata = &m});
        for (int i = 0; sd && i < ct_state_dict_len(sd); i++) ct_sum(ct_to(ct_state_dict_value(sd, i), .dtype = CT_F64));
        ct_metadata_free(&m);
    }
    ct_clear_error();
    return 0;
}
