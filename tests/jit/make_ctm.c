/* The fixture program of the ctorch-run tests (run.sh):
 *
 *     make_ctm make DIR      traces a small MLP; writes DIR/model.ctm, DIR/x.safetensors
 *                            (its input, named as the graph's input) and DIR/want.safetensors
 *                            (ct_forward's output, named as the graph's output); for the
 *                            error cases DIR/unnamed.safetensors (two tensors, neither
 *                            named as the input) and DIR/wide.safetensors (the input, 9
 *                            features instead of 8)
 *     make_ctm compare A B   exit 0 when the safetensors files A and B hold the same
 *                            names, dtypes, shapes and bytes; 1 otherwise */
#include <stdio.h>
#include <string.h>

#include "../ct_test.h"

static int make(const char *dir) {
    char path[4096];
    int rc = 1;
    CT_SCOPE {
        ct_manual_seed(3);
        ct_module *m = ct_sequential(CT_MODULES(ct_nn_linear(8, 16), ct_nn_relu(), ct_nn_linear(16, 4)));
        ct_module_eval(m);
        ct_tensor *x = ct_randn(CT_SHAPE(5, 8));
        ct_graph *g = ct_keep(ct_trace(m, &x, 1));
        ct_tensor *y = NULL;
        CT_NO_GRAD { y = ct_forward(m, x); }
        if (!g || !y) break;
        ct_state_dict *in = ct_keep(ct_state_dict_new()), *want = ct_keep(ct_state_dict_new());
        if (ct_state_dict_set(in, ct_graph_value_at(g, ct_graph_input(g, 0))->name, x) != 0 ||
            ct_state_dict_set(want, ct_graph_value_at(g, ct_graph_output(g, 0))->name, y) != 0)
            break;
        snprintf(path, sizeof path, "%s/model.ctm", dir);
        if (ct_graph_save(g, path) != 0) break;
        snprintf(path, sizeof path, "%s/x.safetensors", dir);
        if (ct_save_safetensors(in, path, NULL) != 0) break;
        snprintf(path, sizeof path, "%s/want.safetensors", dir);
        if (ct_save_safetensors(want, path, NULL) != 0) break;
        ct_state_dict *unnamed = ct_keep(ct_state_dict_new()), *wide = ct_keep(ct_state_dict_new());
        if (ct_state_dict_set(unnamed, "a", x) != 0 || ct_state_dict_set(unnamed, "b", x) != 0 ||
            ct_state_dict_set(wide, ct_graph_value_at(g, ct_graph_input(g, 0))->name,
                              ct_randn(CT_SHAPE(5, 9))) != 0)
            break;
        snprintf(path, sizeof path, "%s/unnamed.safetensors", dir);
        if (ct_save_safetensors(unnamed, path, NULL) != 0) break;
        snprintf(path, sizeof path, "%s/wide.safetensors", dir);
        if (ct_save_safetensors(wide, path, NULL) != 0) break;
        rc = 0;
    }
    if (rc) fprintf(stderr, "make_ctm: %s\n", ct_last_error() ? ct_last_error() : "failed");
    return rc;
}

static int compare(const char *a_path, const char *b_path) {
    int rc = 1;
    CT_SCOPE {
        ct_state_dict *a = ct_keep(ct_load_safetensors(a_path)), *b = ct_keep(ct_load_safetensors(b_path));
        if (!a || !b) {
            fprintf(stderr, "make_ctm: %s\n", ct_last_error());
            break;
        }
        if (ct_state_dict_len(a) != ct_state_dict_len(b)) {
            fprintf(stderr, "make_ctm: %d tensors in %s, %d in %s\n", ct_state_dict_len(a), a_path,
                    ct_state_dict_len(b), b_path);
            break;
        }
        rc = 0;
        for (int i = 0; i < ct_state_dict_len(a); i++) {
            const char *k = ct_state_dict_key(a, i);
            if (!ct_test_same_bits(ct_state_dict_value(a, i), ct_state_dict_get(b, k))) {
                fprintf(stderr, "make_ctm: '%s' differs between %s and %s\n", k, a_path, b_path);
                rc = 1;
            }
        }
    }
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "make")) return make(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "compare")) return compare(argv[2], argv[3]);
    fprintf(stderr, "usage: make_ctm make DIR | make_ctm compare A.safetensors B.safetensors\n");
    return 2;
}
