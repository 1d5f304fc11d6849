/* Fuzzes the JSON parser through the public API: the input is a safetensors header
 * (the 8-byte length is added here), so every byte reaches the parser. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size + 8);
    if (!buf) return 0;
    uint64_t n = size;
    memcpy(buf, &n, 8);
    if (size) memcpy(buf + 8, data, size);
    CT_SCOPE {
        ct_metadata m = {0};
        ct_safetensors_from_buffer(buf, size + 8, (ct_load_file_options){.metadata = &m});
        ct_metadata_free(&m);
    }
    ct_clear_error();
    free(buf);
    return 0;
}
