/* Fuzzes the .ctm loader (ct_graph_load_buffer: the header, the JSON graph checked
 * against the op table, the safetensors weights): the input is a whole file; a graph
 * that loads is printed and, when its inputs are small, run on zeros of the traced
 * sizes. */
#include <stdio.h>

#include "fuzz.h"

enum { MAX_RUN_NUMEL = 4096 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    CT_SCOPE {
        ct_graph *g = ct_graph_load_buffer(data, size);
        if (!g) break;
        FILE *sink = fopen("/dev/null", "w");
        if (sink) {
            ct_graph_print(g, sink);
            fclose(sink);
        }
        int n = ct_graph_num_inputs(g);
        if (n < 0 || n > 8) break;
        ct_tensor *in[8], *out[8];
        bool small = true;
        for (int i = 0; i < n && small; i++) {
            const ct_graph_value *v = ct_graph_value_at(g, ct_graph_input(g, i));
            int64_t numel = 1;
            for (int d = 0; v && d < v->ndim; d++) numel *= v->sizes[d] > 0 ? v->sizes[d] : 1;
            small = v && numel <= MAX_RUN_NUMEL;
            if (small) {
                ct_shape s = {.ndim = v->ndim};
                for (int d = 0; d < v->ndim; d++) s.d[d] = v->sizes[d];
                in[i] = ct_zeros(s, .dtype = v->dtype);
            }
        }
        if (small) ct_graph_run(g, in, n, out, 8);
    }
    ct_clear_error();
    return 0;
}
