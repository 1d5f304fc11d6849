/* ONNX export checked by others: ONNX's own checker (Debian's python3-onnx, with its
 * shape inference) and ONNX Runtime (npm's onnxruntime-node, installed by the
 * onnxruntime_install fixture) run each exported model — the demo CNN, an MLP, a
 * 2-layer batch_first LSTM, a bidirectional GRU, a transformer encoder layer, a
 * ResNet-style block with batch norm — traced at batch 3 and run at batches 2 and 5
 * (the batch dim is dynamic), at opsets 13 and 17; every output must match ctorch's
 * forward within 1e-5 relative.  Then the op types of each opset-17 model are compared
 * with those torch.onnx.export (PyTorch 1.13) writes for the same model
 * (tests/fixtures/onnx_torch_ops.txt, from gen_onnx.py).
 *
 * The models, inputs and outputs go to $CT_ONNX_WORK; the scripts are tests/onnx/.
 * Skipped (77) when neither the checker nor the runtime is there. */
#include <stdlib.h>
#include <sys/stat.h>

#include "ct_test.h"
#include "onnx/load_model.h"

#define MAX_IO 4

/* ---- the models ---- */

typedef struct {
    ct_module *conv1, *bn1, *conv2, *bn2, *head;
} res_block;

/* relu(bn2(conv2(relu(bn1(conv1(x))))) + x), then global pooling and a linear head. */
static ct_tensor *res_block_forward(ct_module *m, ct_tensor *x) {
    res_block *s = ct_module_state(m);
    ct_tensor *h = ct_relu(ct_forward(s->bn1, ct_forward(s->conv1, x)));
    h = ct_relu(ct_add(ct_forward(s->bn2, ct_forward(s->conv2, h)), x));
    return ct_forward(s->head, ct_flatten(ct_adaptive_avg_pool2d(h, CT_DIMS(1, 1)), 1, -1));
}
static const ct_module_class RES_BLOCK = {.name = "ResBlock", .forward = res_block_forward};

static ct_module *make_res_block(void) {
    ct_module *m = ct_module_new(&RES_BLOCK, sizeof(res_block));
    res_block *s = ct_module_state(m);
    s->conv1 = ct_module_add(m, "conv1", ct_nn_conv2d(4, 4, CT_DIMS(3), .padding = CT_DIMS(1), .bias = false));
    s->bn1 = ct_module_add(m, "bn1", ct_nn_batch_norm2d(4));
    s->conv2 = ct_module_add(m, "conv2", ct_nn_conv2d(4, 4, CT_DIMS(3), .padding = CT_DIMS(1), .bias = false));
    s->bn2 = ct_module_add(m, "bn2", ct_nn_batch_norm2d(4));
    s->head = ct_module_add(m, "fc", ct_nn_linear(4, 3));
    /* Running statistics that are not the initial zeros and ones. */
    CT_NO_GRAD {
        for (int i = 0; i < 3; i++) ct_forward(m, ct_add_scalar(ct_randn(CT_SHAPE(6, 4, 8, 8)), 0.5));
    }
    return m;
}

static ct_module *make_mlp(void) {
    return ct_sequential(CT_MODULES(ct_nn_linear(12, 32), ct_nn_gelu(), ct_nn_dropout(0.2),
                                    ct_nn_linear(32, 16), ct_nn_tanh(), ct_nn_linear(16, 16, .bias = false),
                                    ct_nn_silu(), ct_nn_linear(16, 5), ct_nn_log_softmax(1)));
}

static ct_module *make_lstm(void) { return ct_lstm(6, 8, .num_layers = 2, .batch_first = true); }
static ct_module *make_gru(void) { return ct_gru(6, 8, .bidirectional = true); }
static ct_module *make_encoder(void) {
    return ct_nn_transformer_encoder_layer(16, 4, .dim_feedforward = 32, .batch_first = true);
}

typedef struct {
    const char *name;
    ct_module *(*make)(void);
    ct_shape (*input_shape)(int64_t batch);
    int n_out;
    const char *outputs[MAX_IO];
    int out_batch_dim[MAX_IO]; /* where each output has the batch */
    double rtol;               /* relative to the output's largest magnitude */
} model_case;

static ct_shape image28(int64_t b) { return CT_SHAPE(b, 1, 28, 28); }
static ct_shape features(int64_t b) { return CT_SHAPE(b, 12); }
static ct_shape sequence(int64_t b) { return CT_SHAPE(b, 7, 6); }
static ct_shape time_major(int64_t b) { return CT_SHAPE(7, b, 6); }
static ct_shape tokens(int64_t b) { return CT_SHAPE(b, 5, 16); }
static ct_shape image8(int64_t b) { return CT_SHAPE(b, 4, 8, 8); }

static ct_module *make_cnn(void) { return ct_test_demo_cnn(); }

static const model_case cases[] = {
    {"cnn", make_cnn, image28, 1, {"logits"}, {0}, 1e-5},
    {"mlp", make_mlp, features, 1, {"log_probs"}, {0}, 1e-5},
    {"lstm", make_lstm, sequence, 3, {"output", "h_n", "c_n"}, {0, 1, 1}, 1e-5},
    {"gru", make_gru, time_major, 2, {"output", "h_n"}, {1, 1}, 1e-5},
    {"encoder", make_encoder, tokens, 1, {"output"}, {0}, 1e-5},
    {"resblock", make_res_block, image8, 1, {"logits"}, {0}, 1e-5},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))
static const int opsets[] = {13, 17};
static const int64_t batches[] = {2, 5};

/* ---- files ---- */

static const char *work_dir(void) {
    const char *d = getenv("CT_ONNX_WORK");
    return d && d[0] ? d : "/tmp";
}

static bool write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static bool write_tensor(const char *path, ct_tensor *t) {
    ct_tensor *c = ct_contiguous(t);
    return c && write_file(path, ct_data_ptr(c), (size_t)ct_numel(c) * sizeof(float));
}

/* A float32 tensor shaped like `like` from a raw file; NULL when the size differs. */
static ct_tensor *read_tensor(const char *path, const ct_tensor *like) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t n = (size_t)ct_numel(like);
    float *buf = malloc((n + 1) * sizeof *buf);
    size_t got = buf ? fread(buf, sizeof *buf, n + 1, f) : 0;
    fclose(f);
    ct_tensor *t = NULL;
    if (got == n) t = ct_tensor_f32(buf, ct_shape_of(like));
    free(buf);
    return t;
}

/* The sorted, distinct op types of an ONNX file, space-separated, into out. */
static bool op_types(const char *path, char *out, size_t size) {
    Onnx__ModelProto *m = onnx_test_load(path);
    if (!m) return false;
    const char *types[256];
    int nt = 0;
    for (size_t i = 0; i < m->graph->n_node; i++) {
        const char *t = m->graph->node[i]->op_type;
        int k = 0;
        while (k < nt && strcmp(types[k], t) < 0) k++;
        if (k < nt && !strcmp(types[k], t)) continue;
        if (nt == 256) break;
        memmove(&types[k + 1], &types[k], (nt - k) * sizeof *types);
        types[k] = t, nt++;
    }
    out[0] = 0;
    for (int k = 0; k < nt; k++) {
        if (k) strncat(out, " ", size - strlen(out) - 1);
        strncat(out, types[k], size - strlen(out) - 1);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    return true;
}

/* ---- exporting and running ---- */

typedef struct {
    char want[MAX_IO][512], got[MAX_IO][512];
    ct_tensor *expected[MAX_IO];
    const model_case *c;
    int opset;
    int64_t batch;
} run;

static void export_case(const model_case *c, int opset, FILE *manifest, bool *first, run *runs, int *n_runs) {
    const char *dir = work_dir();
    ct_module *m = c->make();
    ct_module_eval(m);
    char model[512];
    snprintf(model, sizeof model, "%s/%s_opset%d.onnx", dir, c->name, opset);
    const char *in_names[] = {"input"};
    ct_shape s1 = c->input_shape(1), s2 = c->input_shape(2);
    int batch_dim = 0;
    while (s1.d[batch_dim] == s2.d[batch_dim]) batch_dim++;
    ct_onnx_dynamic_axis axes[1 + MAX_IO] = {{"input", batch_dim, "batch"}};
    for (int k = 0; k < c->n_out; k++) axes[1 + k] = (ct_onnx_dynamic_axis){c->outputs[k], c->out_batch_dim[k], "batch"};
    ct_tensor *example = ct_randn(c->input_shape(3));
    int rc = ct_onnx_export(m, &example, 1, model, .opset = opset, .input_names = in_names,
                            .output_names = c->outputs, .dynamic_axes = axes, .n_dynamic_axes = 1 + c->n_out);
    CHECK(rc == 0);
    if (rc) {
        printf("%s opset %d: %s\n", c->name, opset, ct_last_error());
        return;
    }
    for (int bi = 0; bi < 2; bi++) {
        run *r = &runs[(*n_runs)++];
        r->c = c, r->opset = opset, r->batch = batches[bi];
        char in_file[512];
        snprintf(in_file, sizeof in_file, "%s/%s_opset%d_run%d.in.bin", dir, c->name, opset, bi);
        ct_tensor *x = ct_randn(c->input_shape(r->batch)), *out[MAX_IO] = {0};
        CHECK(write_tensor(in_file, x));
        CHECK_INT_EQ(ct_forward_multi(m, 1, &x, out, c->n_out), c->n_out);
        ct_shape s = ct_shape_of(x);
        fprintf(manifest, "%s{\"model\": \"%s\", \"inputs\": [{\"name\": \"input\", \"dtype\": \"float32\", \"dims\": [",
                *first ? "" : ",\n", model);
        for (int d = 0; d < s.ndim; d++) fprintf(manifest, "%s%lld", d ? ", " : "", (long long)s.d[d]);
        fprintf(manifest, "], \"file\": \"%s\"}], \"outputs\": [", in_file);
        for (int k = 0; k < c->n_out; k++) {
            snprintf(r->got[k], sizeof r->got[k], "%s/%s_opset%d_run%d.out%d.bin", dir, c->name, opset, bi, k);
            r->expected[k] = out[k]; /* in the test's scope */
            remove(r->got[k]);       /* no stale output from an earlier run */
            fprintf(manifest, "%s{\"name\": \"%s\", \"file\": \"%s\"}", k ? ", " : "", c->outputs[k], r->got[k]);
        }
        fprintf(manifest, "]}");
        *first = false;
    }
}

static bool have_runtime(void) {
    const char *nm = getenv("CT_ONNX_NODE_MODULES");
    char p[1024];
    snprintf(p, sizeof p, "%s/onnxruntime-node/package.json", nm ? nm : "");
    struct stat st;
    return nm && stat(p, &st) == 0 && system("node --version > /dev/null 2>&1") == 0;
}

/* The op types torch.onnx.export writes for model name (fixtures/onnx_torch_ops.txt). */
static bool torch_ops(const char *name, char *out, size_t size) {
    FILE *f = fopen("fixtures/onnx_torch_ops.txt", "r");
    if (!f) return false;
    char line[2048];
    bool found = false;
    size_t len = strlen(name);
    while (!found && fgets(line, sizeof line, f))
        if (!strncmp(line, name, len) && line[len] == ':') {
            snprintf(out, size, "%s", line + len + 2);
            out[strcspn(out, "\n")] = 0;
            found = true;
        }
    fclose(f);
    return found;
}

/* Ops torch.onnx.export writes to compute shapes at run time (a dynamic batch's
 * Reshape) and constants as nodes: ctorch writes constants and shapes as
 * initializers (0 and -1 in Reshape's shape), so it has none of these. */
static const char *torch_plumbing = "Constant ConstantOfShape Shape Gather Unsqueeze Concat Cast Identity";

/* Where ctorch's export differs from torch.onnx.export's otherwise, by design (the
 * README lists why): op types only one side writes. */
static const struct {
    const char *model, *only_ctorch, *only_torch;
} known[] = {
    /* flatten: ctorch's trace has a view (Reshape), torch writes Flatten. */
    {"cnn", "Reshape", "Flatten"},
    /* Linear without bias: ctorch Gemm (transB=1, no C), torch MatMul of the
     * transposed weight. */
    {"mlp", "", "MatMul"},
    /* torch builds zero initial states and slices one per layer; ctorch leaves them
     * out (ONNX's default is zeros). */
    {"lstm", "", "Slice"},
    {"gru", "", ""},
    /* MultiheadAttention: torch scales q by Mul, ctorch's composite divides. */
    {"encoder", "", "Mul"},
    /* torch folds eval-mode batch norm into the convolution's weights. */
    {"resblock", "Reshape BatchNormalization", "Flatten"},
};

/* Compares the op types of the opset-17 models with torch.onnx.export's. */
static void compare_with_torch(void) {
    const char *dir = work_dir();
    for (int c = 0; c < N_CASES; c++) {
        char path[512], ours[2048], theirs[2048];
        snprintf(path, sizeof path, "%s/%s_opset17.onnx", dir, cases[c].name);
        if (!op_types(path, ours, sizeof ours)) continue; /* not exported: the test above failed */
        CHECK(torch_ops(cases[c].name, theirs, sizeof theirs));
        printf("%-9s ctorch: %s\n          torch:  %s\n", cases[c].name, ours, theirs);
        /* Each side's types, less the known differences, must be the other's. */
        for (int side = 0; side < 2; side++) {
            char copy[2048];
            snprintf(copy, sizeof copy, "%s", side ? theirs : ours);
            const char *mine_only = side ? known[c].only_torch : known[c].only_ctorch;
            const char *other = side ? ours : theirs;
            for (char *t = strtok(copy, " "); t; t = strtok(NULL, " ")) {
                char padded[64], hay[2100];
                snprintf(padded, sizeof padded, " %s ", t);
                snprintf(hay, sizeof hay, " %s ", other);
                char known_hay[256];
                snprintf(known_hay, sizeof known_hay, " %s %s ", mine_only, side ? torch_plumbing : "");
                if (!strstr(hay, padded) && !strstr(known_hay, padded))
                    ct_test_fail(__FILE__, __LINE__, "%s: %s writes %s, %s does not", cases[c].name,
                                 side ? "torch.onnx.export" : "ctorch", t, side ? "ctorch" : "torch.onnx.export");
            }
        }
    }
}

TEST(onnx_models_check_and_run_in_onnxruntime) {
    const char *dir = work_dir();
    mkdir(dir, 0755);
    bool runtime = have_runtime();
    int checker = system("/usr/bin/python3 -c 'import onnx' > /dev/null 2>&1") == 0;
    if (!runtime && !checker) {
        printf("neither onnx (python3-onnx) nor onnxruntime-node is installed: skipped\n");
        exit(77);
    }
    ct_manual_seed(7);
    char manifest_path[512];
    snprintf(manifest_path, sizeof manifest_path, "%s/manifest.json", dir);
    FILE *manifest = fopen(manifest_path, "w");
    CHECK(manifest != NULL);
    if (!manifest) return;
    fprintf(manifest, "[\n");
    static run runs[N_CASES * 2 * 2];
    int n_runs = 0;
    bool first = true;
    for (int c = 0; c < N_CASES; c++)
        for (int o = 0; o < 2; o++) export_case(&cases[c], opsets[o], manifest, &first, runs, &n_runs);
    fprintf(manifest, "\n]\n");
    fclose(manifest);

    char cmd[8192];
    if (checker) {
        int len = snprintf(cmd, sizeof cmd, "/usr/bin/python3 onnx/check_model.py");
        for (int c = 0; c < N_CASES; c++)
            for (int o = 0; o < 2; o++)
                len += snprintf(cmd + len, sizeof cmd - len, " %s/%s_opset%d.onnx", dir, cases[c].name, opsets[o]);
        CHECK(system(cmd) == 0);
    } else {
        printf("onnx (python3-onnx) is not installed: onnx.checker skipped\n");
    }
    compare_with_torch();
    if (!runtime) {
        printf("onnxruntime-node is not installed (onnxruntime_install needs npm and its registry): "
               "runs skipped\n");
        return;
    }
    snprintf(cmd, sizeof cmd, "node onnx/run_ort.js '%s' '%s'", getenv("CT_ONNX_NODE_MODULES"), manifest_path);
    CHECK(system(cmd) == 0);
    for (int i = 0; i < n_runs; i++) {
        const run *r = &runs[i];
        for (int k = 0; k < r->c->n_out; k++) {
            char what[160];
            snprintf(what, sizeof what, "%s opset %d batch %lld output %s", r->c->name, r->opset,
                     (long long)r->batch, r->c->outputs[k]);
            ct_tensor *got = read_tensor(r->got[k], r->expected[k]);
            CHECK(got != NULL);
            if (!got) continue;
            double scale = 0;
            CT_SCOPE { scale = ct_item(ct_amax(ct_abs(r->expected[k]))); }
            double err = ct_test_max_diff(got, r->expected[k]);
            printf("%-40s max |ort - ctorch| / max |ctorch| = %.2e\n", what, err / scale);
            CHECK_TENSOR_CLOSE(what, got, r->expected[k], .rtol = 0, .atol = r->c->rtol, .atol_of_max = true);
        }
    }
}
