/* TensorBoard event files (ctorch/tensorboard.h): CRC-32C against known vectors, the
 * TFRecord framing read back record by record, buffering, file names, and the errors.
 *
 * With CT_TB_DIR set, test_write_all leaves its files there for
 * tests/tensorboard/check_events.py, which checks every field against numpy's (and
 * PyTorch's, where it imports) values; the inputs below are made by formulas that
 * script repeats. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct_test.h"
#include "io/tensorboard/crc32c.h"
#include "io/tensorboard/writer.h"
#include "tensorboard/event.pb-c.h"

/* ---- reading records back ------------------------------------------------ */

static uint64_t get_le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The events of the file at path, each record's CRCs checked (NULL on a bad one). */
typedef struct {
    Tensorboard__Event *ev[256];
    int n;
} events;

static void free_events(events *e) {
    for (int i = 0; i < e->n; i++) tensorboard__event__free_unpacked(e->ev[i], NULL);
    e->n = 0;
}

static int read_events(const char *path, events *out) {
    out->n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    static uint8_t buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t at = 0;
    while (at < len) {
        if (len - at < 12 || out->n == 256) return -1;
        uint64_t n = get_le(buf + at, 8);
        if ((uint32_t)get_le(buf + at + 8, 4) != tb_masked_crc32c(buf + at, 8)) return -1;
        if (len - at - 12 < n + 4) return -1;
        if ((uint32_t)get_le(buf + at + 12 + n, 4) != tb_masked_crc32c(buf + at + 12, n)) return -1;
        Tensorboard__Event *ev = tensorboard__event__unpack(NULL, n, buf + at + 12);
        if (!ev) return -1;
        out->ev[out->n++] = ev;
        at += 16 + n;
    }
    return 0;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static char *temp_dir(void) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/ct_tb_XXXXXX");
    return mkdtemp(dir);
}

static void remove_tree(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* ---- CRC-32C and framing -------------------------------------------------- */

TEST(test_crc32c_vectors) {
    CHECK_INT_EQ(tb_crc32c("123456789", 9), 0xE3069283u);
    CHECK_INT_EQ(tb_crc32c("", 0), 0);
    uint8_t zeros[32] = {0}, ones[32];
    memset(ones, 0xFF, sizeof ones);
    CHECK_INT_EQ(tb_crc32c(zeros, 32), 0x8A9136AAu); /* RFC 3720, B.4 */
    CHECK_INT_EQ(tb_crc32c(ones, 32), 0x62A8AB43u);
    uint8_t inc[32];
    for (int i = 0; i < 32; i++) inc[i] = (uint8_t)i;
    CHECK_INT_EQ(tb_crc32c(inc, 32), 0x46DD794Eu);
    uint32_t c = 0xE3069283u;
    CHECK_INT_EQ(tb_masked_crc32c("123456789", 9), (((c >> 15) | (c << 17)) + 0xa282ead8u) & 0xFFFFFFFFu);
}

TEST(test_file_framing_and_first_record) {
    char *dir = temp_dir();
    CHECK(dir != NULL);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/a/b/c", dir); /* made like mkdir -p */
    double t0 = tb_wall_time();
    ct_summary_writer *w = ct_summary_writer(sub, .filename_suffix = ".x");
    CHECK(w != NULL);
    if (!w) return;
    const char *path = ct_summary_writer_file(w);
    CHECK_STR_EQ(ct_summary_writer_log_dir(w), sub);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char want[512];
    snprintf(want, sizeof want, ".%s.%d.", host, (int)getpid());
    CHECK(strstr(path, "/events.out.tfevents.") != NULL && strstr(path, want) != NULL);
    CHECK(strlen(path) > 2 && strcmp(path + strlen(path) - 2, ".x") == 0);
    /* the file_version record is on disk at once; the next records wait for a flush */
    events e;
    CHECK(read_events(path, &e) == 0);
    CHECK_INT_EQ(e.n, 1);
    if (e.n == 1) {
        CHECK_INT_EQ(e.ev[0]->what_case, TENSORBOARD__EVENT__WHAT_FILE_VERSION);
        CHECK_STR_EQ(e.ev[0]->file_version, "brain.Event:2");
        CHECK(fabs(e.ev[0]->wall_time - t0) < 5);
    }
    free_events(&e);
    long size0 = file_size(path);
    CHECK_INT_EQ(size0, 16 + 8 + 2 + 13 + 1 + 0); /* 16 framing + wall_time + file_version */
    CHECK_INT_EQ(ct_tb_add_scalar(w, "loss", 0.5, 7, .walltime = 123.25), 0);
    CHECK_INT_EQ(file_size(path), size0);
    CHECK_INT_EQ(ct_summary_writer_flush(w), 0);
    CHECK(file_size(path) > size0);
    CHECK(read_events(path, &e) == 0);
    CHECK_INT_EQ(e.n, 2);
    if (e.n == 2) {
        Tensorboard__Event *ev = e.ev[1];
        CHECK_INT_EQ(ev->step, 7);
        CHECK_CLOSE(ev->wall_time, 123.25, 0);
        CHECK(ev->what_case == TENSORBOARD__EVENT__WHAT_SUMMARY && ev->summary->n_value == 1);
        if (ev->what_case == TENSORBOARD__EVENT__WHAT_SUMMARY && ev->summary->n_value == 1) {
            CHECK_STR_EQ(ev->summary->value[0]->tag, "loss");
            CHECK_CLOSE(ev->summary->value[0]->simple_value, 0.5, 0);
        }
    }
    free_events(&e);
    /* a second writer of the same directory has a file of its own */
    ct_summary_writer *w2 = ct_summary_writer(sub, .filename_suffix = ".x");
    CHECK(w2 != NULL && strcmp(ct_summary_writer_file(w2), path) != 0);
    CHECK_INT_EQ(ct_summary_writer_close(w2), 0);
    CHECK_INT_EQ(ct_summary_writer_close(w), 0);
    remove_tree(dir);
}

TEST(test_flush_secs_and_close) {
    char *dir = temp_dir();
    CHECK(dir != NULL);
    /* flush_secs tiny: every add reaches the file */
    ct_summary_writer *w = ct_summary_writer(dir, .flush_secs = 1e-9);
    CHECK(w != NULL);
    if (!w) return;
    char path[512];
    snprintf(path, sizeof path, "%s", ct_summary_writer_file(w));
    long size0 = file_size(path);
    CHECK_INT_EQ(ct_tb_add_scalar(w, "a", 1, 0), 0);
    CHECK(file_size(path) > size0);
    CHECK_INT_EQ(ct_summary_writer_close(w), 0);
    /* a long flush_secs: nothing is written until close writes what is buffered */
    w = ct_summary_writer(dir, .flush_secs = 3600);
    CHECK(w != NULL);
    if (!w) return;
    snprintf(path, sizeof path, "%s", ct_summary_writer_file(w));
    size0 = file_size(path);
    for (int i = 0; i < 100; i++) CHECK_INT_EQ(ct_tb_add_scalar(w, "b", i, i), 0);
    CHECK_INT_EQ(file_size(path), size0);
    CHECK_INT_EQ(ct_summary_writer_close(w), 0);
    events e;
    CHECK(read_events(path, &e) == 0);
    CHECK_INT_EQ(e.n, 101);
    if (e.n == 101) CHECK_INT_EQ(e.ev[100]->step, 99);
    free_events(&e);
    remove_tree(dir);
}

TEST(test_add_scalars_writers) {
    char *dir = temp_dir();
    CHECK(dir != NULL);
    ct_summary_writer *w = ct_summary_writer(dir);
    CHECK(w != NULL);
    if (!w) return;
    const char *tags[] = {"train", "test"};
    double values[] = {0.75, 0.5};
    CHECK_INT_EQ(ct_tb_add_scalars(w, "acc/top1", tags, values, 2, 3), 0);
    CHECK_INT_EQ(ct_tb_add_scalars(w, "acc/top1", tags, values, 2, 4), 0);
    CHECK_INT_EQ(w->n_children, 2);
    CHECK_INT_EQ(ct_summary_writer_close(w), 0);
    char sub[256];
    snprintf(sub, sizeof sub, "%s/acc_top1_test", dir);
    struct stat st;
    CHECK(stat(sub, &st) == 0 && S_ISDIR(st.st_mode));
    remove_tree(dir);
}

/* ---- errors ----------------------------------------------------------------- */

TEST(test_errors) {
    char *dir = temp_dir();
    CHECK(dir != NULL);
    char file[256], bad[300];
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    snprintf(bad, sizeof bad, "%s/sub", file); /* under a regular file */
    CHECK(ct_summary_writer(bad) == NULL);
    CHECK(ct_last_error() && strstr(ct_last_error(), "ct_summary_writer: cannot create the directory"));
    ct_clear_error();
    CHECK(ct_summary_writer(file) == NULL);
    CHECK(ct_last_error() && strstr(ct_last_error(), "is not a directory"));
    ct_clear_error();

    CHECK_INT_EQ(ct_tb_add_scalar(NULL, "x", 1, 0), -1);
    CHECK(ct_last_error() && strstr(ct_last_error(), "ct_tb_add_scalar: the writer is NULL"));
    ct_clear_error();

    ct_summary_writer *w = ct_summary_writer(dir);
    CHECK(w != NULL);
    if (!w) return;
    CT_SCOPE {
        ct_tensor *empty = ct_zeros(CT_SHAPE(0));
        CHECK_INT_EQ(ct_tb_add_histogram(w, "h", empty, 0), -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "ct_tb_add_histogram: The input has no element"));
        ct_clear_error();
        ct_tensor *nan = ct_tensor_f32(((float[]){1, NAN}), CT_SHAPE(2));
        CHECK_INT_EQ(ct_tb_add_histogram(w, "h", nan, 0), -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "must be finite"));
        ct_clear_error();
        ct_tensor *flags = ct_tensor_bool(((bool[]){true, false, true}), CT_SHAPE(1, 1, 3));
        CHECK_INT_EQ(ct_tb_add_image(w, "i", flags, 0), -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "ct_tb_add_image: images must be uint8 or floating point"));
        ct_clear_error();
        ct_tensor *two = ct_zeros(CT_SHAPE(2, 4, 4));
        CHECK_INT_EQ(ct_tb_add_image(w, "i", two, 0), -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "1, 3 or 4 channels (got 2"));
        ct_clear_error();
        CHECK_INT_EQ(ct_tb_add_image(w, "i", two, 0, .dataformats = "HW"), -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "dataformats \"HW\" does not fit a tensor of 3 dims"));
        ct_clear_error();
        CHECK_INT_EQ(ct_tb_add_image(w, "i", two, 0, .dataformats = "CHH"), -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "does not fit"));
        ct_clear_error();
        ct_tensor *four = ct_zeros(CT_SHAPE(2, 4, 3, 3));
        CHECK_INT_EQ(ct_tb_add_images(w, "i", four, 0), -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "ct_tb_add_images: a batch of images has 1 or 3 channels (got 4"));
        ct_clear_error();
    }
    const char *tags[] = {"a", NULL};
    double values[] = {1, 2};
    CHECK_INT_EQ(ct_tb_add_scalars(w, "m", tags, values, 2, 0), -1);
    CHECK(ct_last_error() && strstr(ct_last_error(), "tags[1] is NULL"));
    ct_clear_error();
    ct_tb_hparam hp[] = {{.name = NULL}};
    CHECK_INT_EQ(ct_tb_add_hparams(w, hp, 1, NULL, NULL, 0), -1);
    CHECK(ct_last_error() && strstr(ct_last_error(), "hparams[0] must have a name"));
    ct_clear_error();

    /* an I/O error surfaces at the call that hits it, and the records are kept */
    int full = open("/dev/full", O_WRONLY);
    if (full >= 0) {
        int fd = w->fd;
        w->fd = full;
        CHECK_INT_EQ(ct_tb_add_scalar(w, "x", 1, 0), 0); /* buffered */
        CHECK_INT_EQ(ct_summary_writer_flush(w), -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "ct_summary_writer_flush: writing") &&
              strstr(ct_last_error(), strerror(ENOSPC)));
        ct_clear_error();
        CHECK(w->len > 0);
        w->flush_secs = 1e-9;
        CHECK_INT_EQ(ct_tb_add_scalar(w, "x", 2, 1), -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "ct_tb_add_scalar: writing"));
        ct_clear_error();
        w->fd = fd;
        close(full);
        CHECK_INT_EQ(ct_summary_writer_flush(w), 0);
        events e;
        CHECK(read_events(ct_summary_writer_file(w), &e) == 0);
        CHECK_INT_EQ(e.n, 3); /* file_version and both scalars */
        free_events(&e);
    }
    CHECK_INT_EQ(ct_summary_writer_close(w), 0);
    CHECK_INT_EQ(ct_summary_writer_close(NULL), 0);
    remove_tree(dir);
}

/* ---- every method, for check_events.py ------------------------------------- */

/* The inputs (check_events.py makes the same):
 *   hist/float: float32 [1000], x_i = ((i * 7919) % 1000 - 500) / 37
 *   hist/int:   int64 [77],     x_i = i % 11 - 5
 *   hist/one:   float64 [1],    0
 *   hist/wide:  float64 [6],    -3e19, -1e-13, 0, 5e-13, 1e-12, 2.5e15
 *   img/chw:    float32 [3, 5, 7], x_k = (k % 97) / 96           (k the C-order index)
 *   img/hwc:    uint8 [4, 6, 4],  x_k = (k * 37 + 11) % 256      (RGBA)
 *   img/hw:     float64 [5, 3],   x_k = k / 14
 *   img/gray:   uint8 [1, 4, 5],  x_k = k * 12
 *   imgs/grid:  float32 [10, 1, 4, 3] NCHW, x_k = (k % 50) / 49
 *   imgs/nhwc:  uint8 [3, 2, 2, 3] NHWC, x_k = k * 7 */
static void write_all(const char *dir) {
    ct_summary_writer *w = ct_summary_writer(dir, .filename_suffix = ".ctorch");
    CHECK(w != NULL);
    if (!w) return;
    for (int s = 0; s < 5; s++) CHECK_INT_EQ(ct_tb_add_scalar(w, "loss", 1.0 / (s + 1), s, .walltime = 1000 + s), 0);
    CHECK_INT_EQ(ct_tb_add_scalar(w, "now", -2.5, 9), 0);
    const char *tags[] = {"train", "test"};
    double values[] = {0.5, 0.25};
    CHECK_INT_EQ(ct_tb_add_scalars(w, "run/acc", tags, values, 2, 3, .walltime = 2000), 0);
    CT_SCOPE {
        float xf[1000];
        for (int i = 0; i < 1000; i++) xf[i] = (float)((i * 7919) % 1000 - 500) / 37.0f;
        CHECK_INT_EQ(ct_tb_add_histogram(w, "hist/float", ct_tensor_f32(xf, CT_SHAPE(1000)), 1, .walltime = 3000), 0);
        int64_t xi[77];
        for (int i = 0; i < 77; i++) xi[i] = i % 11 - 5;
        CHECK_INT_EQ(ct_tb_add_histogram(w, "hist/int", ct_tensor_i64(xi, CT_SHAPE(7, 11)), 2, .walltime = 3001), 0);
        CHECK_INT_EQ(ct_tb_add_histogram(w, "hist/one", ct_tensor_f64(((double[]){0}), CT_SHAPE(1)), 3,
                                         .walltime = 3002), 0);
        double wide[] = {-3e19, -1e-13, 0, 5e-13, 1e-12, 2.5e15};
        CHECK_INT_EQ(ct_tb_add_histogram(w, "hist/wide", ct_tensor_f64(wide, CT_SHAPE(6)), 4, .walltime = 3003), 0);

        float chw[3 * 5 * 7];
        for (int k = 0; k < 3 * 5 * 7; k++) chw[k] = (float)(k % 97) / 96.0f;
        CHECK_INT_EQ(ct_tb_add_image(w, "img/chw", ct_tensor_f32(chw, CT_SHAPE(3, 5, 7)), 5, .walltime = 4000), 0);
        uint8_t hwc[4 * 6 * 4];
        for (int k = 0; k < 4 * 6 * 4; k++) hwc[k] = (uint8_t)((k * 37 + 11) % 256);
        CHECK_INT_EQ(ct_tb_add_image(w, "img/hwc", ct_tensor_u8(hwc, CT_SHAPE(4, 6, 4)), 6, .walltime = 4001,
                                     .dataformats = "HWC"), 0);
        double hw[15];
        for (int k = 0; k < 15; k++) hw[k] = k / 14.0;
        CHECK_INT_EQ(ct_tb_add_image(w, "img/hw", ct_tensor_f64(hw, CT_SHAPE(5, 3)), 7, .walltime = 4002,
                                     .dataformats = "HW"), 0);
        uint8_t gray[20];
        for (int k = 0; k < 20; k++) gray[k] = (uint8_t)(k * 12);
        CHECK_INT_EQ(ct_tb_add_image(w, "img/gray", ct_tensor_u8(gray, CT_SHAPE(1, 4, 5)), 8, .walltime = 4003), 0);
        float grid[10 * 4 * 3];
        for (int k = 0; k < 120; k++) grid[k] = (float)(k % 50) / 49.0f;
        CHECK_INT_EQ(ct_tb_add_images(w, "imgs/grid", ct_tensor_f32(grid, CT_SHAPE(10, 1, 4, 3)), 9, .walltime = 4004), 0);
        uint8_t nhwc[36];
        for (int k = 0; k < 36; k++) nhwc[k] = (uint8_t)(k * 7);
        CHECK_INT_EQ(ct_tb_add_images(w, "imgs/nhwc", ct_tensor_u8(nhwc, CT_SHAPE(3, 2, 2, 3)), 10, .walltime = 4005,
                                      .dataformats = "NHWC"), 0);
    }
    CHECK_INT_EQ(ct_tb_add_text(w, "notes", "hello *markdown* \xc3\xbc", 11, .walltime = 5000), 0);
    ct_tb_hparam hp[] = {CT_TB_HPARAM_NUM("lr", 0.01), CT_TB_HPARAM_STR("optimizer", "adam"),
                         CT_TB_HPARAM_BOOL("nesterov", true)};
    const char *metrics[] = {"hparam/accuracy", "hparam/loss"};
    double metric_values[] = {0.875, 0.125};
    CHECK_INT_EQ(ct_tb_add_hparams(w, hp, 3, metrics, metric_values, 2, .run_name = "hp"), 0);
    CT_SCOPE {
        ct_module *net = ct_sequential(CT_MODULES(ct_nn_linear(4, 3), ct_nn_relu()));
        ct_module_eval(net);
        ct_tensor *in = ct_randn(CT_SHAPE(2, 4));
        ct_graph *g = ct_trace(net, &in, 1);
        CHECK(g != NULL);
        CHECK_INT_EQ(ct_tb_add_graph(w, g), 0);
    }
    CHECK_INT_EQ(ct_summary_writer_close(w), 0);
}

TEST(test_write_all) {
    const char *keep = getenv("CT_TB_DIR");
    char *dir = keep && keep[0] ? (char *)keep : temp_dir();
    CHECK(dir != NULL);
    if (!dir) return;
    write_all(dir);
    /* what C can check without Python: every record's CRCs, and the count */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls %s/events.out.tfevents.*.ctorch", dir);
    FILE *p = popen(cmd, "r");
    char path[512];
    int files = 0;
    while (p && fgets(path, sizeof path, p)) {
        path[strcspn(path, "\n")] = '\0';
        events e;
        CHECK(read_events(path, &e) == 0);
        /* file_version, 6 scalars, 4 histograms, 6 images, text, graph */
        CHECK_INT_EQ(e.n, 19);
        if (e.n == 19) CHECK_INT_EQ(e.ev[18]->what_case, TENSORBOARD__EVENT__WHAT_GRAPH_DEF);
        free_events(&e);
        files++;
    }
    if (p) pclose(p);
    CHECK_INT_EQ(files, 1);
    if (!(keep && keep[0])) remove_tree(dir);
}
