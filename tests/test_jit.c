/* Traced graphs (ctorch/jit.h): ct_trace of the demo models and the standard layers
 * gives a graph whose run equals the module's forward bit for bit; the printer, dynamic
 * dims, the warnings and the errors. */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"

/* The graph run on inputs gives the module's outputs, bitwise. */
static void check_run(ct_module *m, ct_graph *g, ct_tensor *const *in, int n) {
    ct_tensor *want[8], *got[8];
    int nw = -1;
    CT_NO_GRAD { nw = ct_forward_multi(m, n, in, want, 8); }
    int ng = ct_graph_run(g, in, n, got, 8);
    if (ng < 0) fprintf(stderr, "ct_graph_run: %s\n", ct_last_error());
    CHECK(nw >= 1);
    CHECK_INT_EQ(ng, nw);
    for (int i = 0; i < nw && i < ng; i++) CHECK(ct_test_same_bits(got[i], want[i]));
}

static ct_graph *trace_checked(ct_module *m, ct_tensor *const *in, int n) {
    ct_module_eval(m);
    ct_graph *g = ct_trace(m, in, n);
    CHECK(g);
    if (g) check_run(m, g, in, n);
    return g;
}

TEST(demo_cnn_runs_bitwise) {
    CT_SCOPE {
        ct_manual_seed(1);
        ct_module *m = ct_test_demo_cnn();
        ct_tensor *x = ct_randn(CT_SHAPE(3, 1, 28, 28));
        ct_graph *g = trace_checked(m, &x, 1);
        CHECK_INT_EQ(ct_graph_num_inputs(g), 1);
        CHECK_INT_EQ(ct_graph_num_outputs(g), 1);
        int params = 0;
        for (int v = 0; v < ct_graph_num_values(g); v++) {
            const ct_graph_value *gv = ct_graph_value_at(g, v);
            if (gv->kind == CT_GRAPH_PARAM) params++;
            if (gv->kind == CT_GRAPH_PARAM && params == 1) CHECK_STR_EQ(gv->name, "0.weight");
        }
        CHECK_INT_EQ(params, 8);
        CHECK_STR_EQ(ct_graph_node_at(g, 0)->schema->name, "convolution");
    }
}

TEST(mlp_runs_bitwise) {
    CT_SCOPE {
        ct_manual_seed(2);
        ct_module *m = ct_sequential(CT_MODULES(ct_nn_linear(20, 32), ct_nn_gelu(), ct_nn_dropout(0.5),
                                                ct_nn_linear(32, 16), ct_nn_silu(), ct_nn_tanh(),
                                                ct_nn_linear(16, 4, .bias = false), ct_nn_sigmoid(),
                                                ct_nn_log_softmax(1)));
        ct_tensor *x = ct_randn(CT_SHAPE(5, 20));
        trace_checked(m, &x, 1);
    }
}

TEST(lstm_runs_bitwise) {
    CT_SCOPE {
        ct_manual_seed(3);
        ct_module *m = ct_lstm(6, 8, .num_layers = 2, .batch_first = true);
        ct_tensor *x = ct_randn(CT_SHAPE(3, 5, 6));
        ct_graph *g = trace_checked(m, &x, 1);
        CHECK_INT_EQ(ct_graph_num_outputs(g), 3);
        ct_module *gru = ct_gru(6, 8);
        trace_checked(gru, &x, 1);
        /* The layer stack is one node (not unrolled steps), and runs at another batch
         * size and sequence length when those dims are dynamic. */
        ct_module_eval(m);
        ct_dynamic_dim dyn[2] = {{0, 0}, {0, 1}};
        ct_graph *d = ct_trace(m, &x, 1, .dynamic = dyn, .n_dynamic = 2);
        CHECK(d != NULL);
        int lstm_nodes = 0;
        for (int i = 0; d && i < ct_graph_num_nodes(d); i++)
            lstm_nodes += !strcmp(ct_graph_node_at(d, i)->schema->name, "lstm");
        CHECK_INT_EQ(lstm_nodes, 1);
        ct_tensor *x2 = ct_randn(CT_SHAPE(4, 9, 6));
        if (d) check_run(m, d, &x2, 1);
    }
}

TEST(transformer_encoder_layer_runs_bitwise) {
    CT_SCOPE {
        ct_manual_seed(4);
        ct_module *m = ct_nn_transformer_encoder_layer(16, 4, .dim_feedforward = 32, .batch_first = true);
        ct_tensor *x = ct_randn(CT_SHAPE(2, 7, 16));
        trace_checked(m, &x, 1);
        ct_module *post = ct_nn_transformer_encoder_layer(16, 2, .dim_feedforward = 24,
                                                          .activation = CT_ACT_GELU, .norm_first = true);
        ct_tensor *y = ct_randn(CT_SHAPE(5, 3, 16));
        trace_checked(post, &y, 1);
    }
}

/* conv-bn-relu-conv-bn, plus the input, relu: a ResNet basic block. */
typedef struct {
    ct_module *c1, *b1, *c2, *b2;
} block;
static ct_tensor *block_forward(ct_module *m, ct_tensor *x) {
    block *s = ct_module_state(m);
    ct_tensor *h = ct_relu(ct_forward(s->b1, ct_forward(s->c1, x)));
    return ct_relu(ct_add(ct_forward(s->b2, ct_forward(s->c2, h)), x));
}
static const ct_module_class BLOCK = {.name = "BasicBlock", .forward = block_forward};
static ct_module *block_new(int c) {
    ct_module *m = ct_module_new(&BLOCK, sizeof(block));
    block *s = ct_module_state(m);
    s->c1 = ct_module_add(m, "conv1", ct_nn_conv2d(c, c, CT_DIMS(3), .padding = CT_DIMS(1), .bias = false));
    s->b1 = ct_module_add(m, "bn1", ct_nn_batch_norm2d(c));
    s->c2 = ct_module_add(m, "conv2", ct_nn_conv2d(c, c, CT_DIMS(3), .padding = CT_DIMS(1), .bias = false));
    s->b2 = ct_module_add(m, "bn2", ct_nn_batch_norm2d(c));
    return m;
}

TEST(resnet_block_with_batch_norm_runs_bitwise) {
    CT_SCOPE {
        ct_manual_seed(5);
        ct_module *m = block_new(4);
        /* running statistics away from their initial values */
        CT_NO_GRAD { for (int i = 0; i < 3; i++) ct_forward(m, ct_randn(CT_SHAPE(2, 4, 6, 6))); }
        ct_tensor *x = ct_randn(CT_SHAPE(2, 4, 6, 6));
        ct_graph *g = trace_checked(m, &x, 1);
        int buffers = 0;
        for (int v = 0; v < ct_graph_num_values(g); v++) {
            const ct_graph_value *gv = ct_graph_value_at(g, v);
            if (gv->kind == CT_GRAPH_BUFFER) {
                buffers++;
                if (buffers == 1) CHECK_STR_EQ(gv->name, "bn1.running_mean");
            }
        }
        CHECK_INT_EQ(buffers, 4);
    }
}

TEST(print_one_line_per_node) {
    CT_SCOPE {
        ct_manual_seed(6);
        ct_module *m = ct_sequential(CT_MODULES(ct_nn_linear(3, 2), ct_nn_relu()));
        ct_module_eval(m);
        ct_tensor *x = ct_randn(CT_SHAPE(4, 3));
        ct_dynamic_dim batch = {0, 0};
        ct_graph *g = ct_trace(m, &x, 1, .dynamic = &batch, .n_dynamic = 1);
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        CHECK(ct_graph_print(g, f) == 0);
        fclose(f);
        CHECK_STR_EQ(buf, "%0: float32[4?, 3] = input input_0\n"
                          "%1: float32[2, 3] = param 0.weight\n"
                          "%3: float32[2] = param 0.bias\n"
                          "%2: float32[3, 2] = transpose(%1, dim0=0, dim1=1)\n"
                          "%4: float32[4?, 2] = addmm(%3, %0, %2, beta=1, alpha=1)\n"
                          "%5: float32[4?, 2] = relu(%4)\n"
                          "return (%5)\n");
        free(buf);
    }
}

TEST(dynamic_batch) {
    CT_SCOPE {
        ct_manual_seed(7);
        ct_module *cnn = ct_test_demo_cnn();
        ct_module_eval(cnn);
        ct_tensor *x = ct_randn(CT_SHAPE(4, 1, 28, 28));
        ct_dynamic_dim batch = {0, 0};
        ct_graph *g = ct_trace(cnn, &x, 1, .dynamic = &batch, .n_dynamic = 1);
        CHECK(g);
        for (int b = 1; b <= 7; b += 6) {
            ct_tensor *y = ct_randn(CT_SHAPE(b, 1, 28, 28));
            check_run(cnn, g, &y, 1);
        }
        ct_module *enc = ct_nn_transformer_encoder_layer(8, 2, .dim_feedforward = 16);
        ct_module_eval(enc);
        ct_tensor *s = ct_randn(CT_SHAPE(5, 4, 8)); /* [S, B, E]: batch is dim 1 */
        ct_dynamic_dim dims[] = {{0, 0}, {0, 1}};
        ct_graph *h = ct_trace(enc, &s, 1, .dynamic = dims, .n_dynamic = 2);
        CHECK(h);
        ct_tensor *s1 = ct_randn(CT_SHAPE(3, 1, 8)), *s7 = ct_randn(CT_SHAPE(6, 7, 8));
        check_run(enc, h, &s1, 1);
        check_run(enc, h, &s7, 1);
        /* a dim not marked dynamic is fixed */
        CHECK_ERROR(ct_graph_run(g, (ct_tensor *[]){ct_randn(CT_SHAPE(4, 1, 27, 28))}, 1,
                                 (ct_tensor *[1]){0}, 1),
                    "only dims marked dynamic may differ");
    }
}

static char warnings[2048];
static void collect_warning(const char *message) {
    size_t n = strlen(warnings);
    snprintf(warnings + n, sizeof warnings - n, "%s\n", message);
}

static ct_tensor *reads_a_value(ct_module *m, ct_tensor *x) {
    (void)m;
    return ct_item(ct_sum(x)) > 0 ? ct_relu(x) : ct_neg(x);
}
static const ct_module_class READS = {.name = "Reads", .forward = reads_a_value};

TEST(warnings_like_tracer_warning) {
    CT_SCOPE {
        ct_warning_handler old = ct_set_warning_handler(collect_warning);
        ct_module *m = ct_sequential(CT_MODULES(ct_nn_linear(3, 2)));
        ct_tensor *x = ct_randn(CT_SHAPE(4, 3));
        warnings[0] = 0;
        CHECK(ct_trace(m, &x, 1)); /* train mode */
        CHECK(strstr(warnings, "the module is in train mode"));
        ct_module_eval(m);
        warnings[0] = 0;
        CHECK(ct_trace(m, &x, 1));
        CHECK_STR_EQ(warnings, "");
        ct_module *r = ct_module_new(&READS, 0);
        ct_module_eval(r);
        CHECK(ct_trace(r, &x, 1));
        CHECK(strstr(warnings, "read a tensor's value"));
        ct_set_warning_handler(old);
    }
}

static ct_tensor *draws(ct_module *m, ct_tensor *x) {
    (void)m;
    return ct_add(x, ct_randn(CT_SHAPE(4, 3))); /* a factory: baked in as a constant */
}
static const ct_module_class DRAWS = {.name = "Draws", .forward = draws};

TEST(errors) {
    CT_SCOPE {
        ct_module *m = ct_sequential(CT_MODULES(ct_nn_linear(3, 2)));
        ct_module_eval(m);
        ct_tensor *x = ct_randn(CT_SHAPE(4, 3));
        CHECK_ERROR(ct_trace(NULL, &x, 1), "module is NULL");
        ct_dynamic_dim bad = {0, 2};
        CHECK_ERROR(ct_trace(m, &x, 1, .dynamic = &bad, .n_dynamic = 1),
                    "names input 0's dim 2, which does not exist");
        ct_graph *g = ct_trace(m, &x, 1);
        CHECK_ERROR(ct_graph_run(g, &x, 0, NULL, 0), "the graph takes 1 inputs (got 0)");
        CHECK_ERROR(ct_graph_run(g, (ct_tensor *[]){ct_randn(CT_SHAPE(5, 3))}, 1, (ct_tensor *[1]){0}, 1),
                    "only dims marked dynamic may differ");
        CHECK_ERROR(ct_graph_value_at(g, 99), "out of range");
        ct_module *d = ct_module_new(&DRAWS, 0);
        ct_module_eval(d);
        CHECK(ct_trace(d, &x, 1)); /* same constant both times */
    }
}


TEST(save_load_run_round_trip) {
    CT_SCOPE {
        ct_manual_seed(8);
        ct_module *cnn = ct_test_demo_cnn();
        ct_module_eval(cnn);
        ct_tensor *x = ct_randn(CT_SHAPE(2, 1, 28, 28));
        ct_dynamic_dim batch = {0, 0};
        ct_graph *g = ct_trace(cnn, &x, 1, .dynamic = &batch, .n_dynamic = 1);
        const char *path = "/tmp/ct_test_jit_model.ctm";
        CHECK(ct_graph_save(g, path) == 0);
        ct_graph *h = ct_graph_load(path);
        CHECK(h);
        ct_tensor *y = ct_randn(CT_SHAPE(5, 1, 28, 28));
        if (h) check_run(cnn, h, &y, 1);
        CHECK_ERROR(ct_graph_load("/nonexistent.ctm"), "cannot open");
        CHECK_ERROR(ct_graph_load_buffer("CTMODEL\0\0\0\0\0\0\0\0\0", 16), "the graph");
        remove(path);
    }
}

/* The whole file at path into a buffer the caller frees. */
static char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)n + 1);
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return data;
}

/* A saved file edited in place (same lengths, so the header stays right): the bytes
 * of first occurrence of from become to; then loaded from memory. */
static ct_graph *load_edited(const char *data, size_t size, const char *from, const char *to) {
    char *copy = malloc(size);
    memcpy(copy, data, size);
    char *at = memmem(copy, size, from, strlen(from));
    CHECK(at != NULL);
    if (at) memcpy(at, to, strlen(to));
    ct_graph *g = ct_graph_load_buffer(copy, size);
    free(copy);
    return g;
}

TEST(versions_unknown_ops_and_damaged_files_are_errors) {
    CT_SCOPE {
        ct_manual_seed(9);
        ct_module *m = ct_sequential(CT_MODULES(ct_nn_linear(4, 3), ct_nn_relu()));
        ct_module_eval(m);
        ct_tensor *x = ct_randn(CT_SHAPE(2, 4));
        const char *path = "/tmp/ct_test_jit_versions.ctm";
        CHECK(ct_graph_save(ct_trace(m, &x, 1), path) == 0);
        size_t size = 0;
        char *data = slurp(path, &size);
        CHECK(data != NULL);
        if (!data) break;
        CHECK(ct_graph_load_buffer(data, size) != NULL);
        CHECK_ERROR(load_edited(data, size, "\"version\":1", "\"version\":7"),
                    "format version 7 is newer than this ctorch reads");
        CHECK_ERROR(load_edited(data, size, "\"op\":\"relu\"", "\"op\":\"rel0\""), "unknown op 'rel0'");
        CHECK_ERROR(load_edited(data, size, "CTMODEL", "CTMODEX"), "not a .ctm file (no \"CTMODEL\" magic)");
        CHECK_ERROR(ct_graph_load_buffer(data, size - 10), "lies beyond the end of the file");
        /* A weight whose declared shape disagrees with the blob's tensor. */
        CHECK_ERROR(load_edited(data, size, "\"shape\":[3,4]", "\"shape\":[4,3]"),
                    "tensor '0.weight' is not of the dtype and shape the graph declares");
        free(data);
        remove(path);
    }
}
