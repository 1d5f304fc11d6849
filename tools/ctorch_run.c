/* ctorch-run — runs a traced model (.ctm) on tensors from a safetensors file.
 *
 *     ctorch-run model.ctm --input x.safetensors --output y.safetensors
 *     ctorch-run model.ctm --print        # the graph, one line per node
 *     ctorch-run --help
 *
 * The inputs are the tensors of --input named as the graph's inputs (their names in
 * the .ctm); a file with exactly one tensor feeds a graph with one input whatever its
 * name.  The outputs are written to --output under the graph's output names, with
 * ct_save_safetensors.  --print may be given with --input/--output (printed first).
 *
 * Exit status: 0 on success, 1 when a file cannot be read or written, an input is
 * missing or the graph rejects it (the message on stderr is ctorch's error), 2 on a
 * usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctorch.h>

static const char usage[] =
    "usage: ctorch-run MODEL.ctm [--input X.safetensors --output Y.safetensors] [--print]\n"
    "  --input FILE   the graph's inputs, tensors named as the graph's input names\n"
    "                 (one tensor of any name when the graph has one input)\n"
    "  --output FILE  where the outputs go, named as the graph's output names\n"
    "  --print        print the graph to stdout, one line per node\n"
    "  --help         this message\n";

static int usage_error(const char *what) {
    fprintf(stderr, "ctorch-run: %s\n%s", what, usage);
    return 2;
}

static int fail(const char *context) {
    const char *e = ct_last_error();
    fprintf(stderr, "ctorch-run: %s%s%s\n", context, e ? ": " : "", e ? e : "");
    return 1;
}

/* Fills inputs[] from sd by the graph's input names; 0 or 1 after a message. */
static int gather_inputs(const ct_graph *g, const ct_state_dict *sd, const char *path,
                         ct_tensor **inputs, int n_inputs) {
    if (n_inputs == 1 && ct_state_dict_len(sd) == 1) {
        inputs[0] = ct_state_dict_value(sd, 0);
        return 0;
    }
    for (int i = 0; i < n_inputs; i++) {
        const char *name = ct_graph_value_at(g, ct_graph_input(g, i))->name;
        inputs[i] = ct_state_dict_get(sd, name);
        if (!inputs[i]) {
            fprintf(stderr, "ctorch-run: %s has no tensor named '%s' (input %d of the graph)\n",
                    path, name, i);
            return 1;
        }
    }
    return 0;
}

static int run(ct_graph *g, const char *in_path, const char *out_path) {
    ct_state_dict *in = ct_load_safetensors(in_path);
    if (!in) return fail("cannot read the inputs");
    int n_in = ct_graph_num_inputs(g), n_out = ct_graph_num_outputs(g);
    ct_tensor **inputs = calloc((size_t)n_in + 1, sizeof *inputs);
    ct_tensor **outputs = calloc((size_t)n_out + 1, sizeof *outputs);
    ct_state_dict *out = NULL;
    int rc = 1;
    if (!inputs || !outputs) {
        fprintf(stderr, "ctorch-run: out of memory\n");
        goto done;
    }
    if (gather_inputs(g, in, in_path, inputs, n_in) != 0) goto done;
    if (ct_graph_run(g, inputs, n_in, outputs, n_out) < 0) {
        rc = fail("cannot run the graph");
        goto done;
    }
    out = ct_state_dict_new();
    for (int i = 0; out && i < n_out; i++)
        if (ct_state_dict_set(out, ct_graph_value_at(g, ct_graph_output(g, i))->name, outputs[i]) != 0) {
            rc = fail("cannot collect the outputs");
            goto done;
        }
    if (!out || ct_save_safetensors(out, out_path, NULL) != 0) {
        rc = fail("cannot write the outputs");
        goto done;
    }
    rc = 0;
done:
    for (int i = 0; outputs && i < n_out; i++) ct_release(outputs[i]);
    free(inputs);
    free(outputs);
    ct_release(out);
    ct_release(in);
    return rc;
}

int main(int argc, char **argv) {
    const char *model = NULL, *in_path = NULL, *out_path = NULL;
    int print = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--print")) {
            print = 1;
        } else if (!strcmp(a, "--input") || !strcmp(a, "--output")) {
            if (i + 1 >= argc) {
                char m[64];
                snprintf(m, sizeof m, "%s needs a file name", a);
                return usage_error(m);
            }
            *(a[2] == 'i' ? &in_path : &out_path) = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            char m[256];
            snprintf(m, sizeof m, "unknown option '%.200s'", a);
            return usage_error(m);
        } else if (model) {
            return usage_error("more than one model file given");
        } else {
            model = a;
        }
    }
    if (!model) return usage_error("no model file given");
    if (!in_path != !out_path) return usage_error("--input and --output go together");
    if (!in_path && !print) return usage_error("nothing to do: give --input/--output or --print");

    ct_graph *g = ct_graph_load(model);
    if (!g) return fail("cannot load the model");
    int rc = 0;
    if (print && ct_graph_print(g, stdout) != 0) rc = fail("cannot print the graph");
    if (rc == 0 && in_path) rc = run(g, in_path, out_path);
    ct_release(g);
    return rc;
}
