/* Files: IDX (plain and gzip'd), MNIST-layout directories, CSV.  Every test writes
 * small files into a fresh temporary directory, and damaged copies of them: a damaged
 * file must give a clear error, never a crash (the suite runs under ASan). */
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "ct_test.h"

static char dir[64];

/* A fresh directory for this test's files. */
static const char *temp_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/ct_data_XXXXXX");
    return mkdtemp(dir);
}

static const char *path_in(const char *name) {
    static char p[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void write_file(const char *name, const void *data, size_t n) {
    FILE *f = fopen(path_in(name), "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void write_gz(const char *name, const void *data, size_t n) {
    gzFile f = gzopen(path_in(name), "wb");
    if (f) {
        gzwrite(f, data, (unsigned)n);
        gzclose(f);
    }
}

static char *read_whole(const char *name, size_t *n) {
    FILE *f = fopen(path_in(name), "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*n + 1);
    if (b && fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

static void remove_files(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* An IDX header: magic (type, ndim) and big-endian sizes; returns its length. */
static size_t idx_header(unsigned char *b, int type, int ndim, const uint32_t *sizes) {
    b[0] = b[1] = 0;
    b[2] = (unsigned char)type;
    b[3] = (unsigned char)ndim;
    for (int d = 0; d < ndim; d++)
        for (int k = 0; k < 4; k++) b[4 + 4 * d + k] = (unsigned char)(sizes[d] >> (24 - 8 * k));
    return 4 + 4 * (size_t)ndim;
}

/* MNIST-style files: n images of 2x3 pixels (image i's pixels i*10 + p) and labels. */
static size_t images_file(unsigned char *b, uint32_t n) {
    size_t h = idx_header(b, 0x08, 3, (uint32_t[]){n, 2, 3});
    for (uint32_t i = 0; i < n; i++)
        for (int p = 0; p < 6; p++) b[h + 6 * i + (uint32_t)p] = (unsigned char)(i * 10 + (uint32_t)p);
    return h + 6 * n;
}
static size_t labels_file(unsigned char *b, uint32_t n) {
    size_t h = idx_header(b, 0x08, 1, (uint32_t[]){n});
    for (uint32_t i = 0; i < n; i++) b[h + i] = (unsigned char)(9 - i);
    return h + n;
}

TEST(idx_reads_plain_and_gzip) {
    temp_dir();
    unsigned char b[256];
    size_t n = images_file(b, 4);
    write_file("img", b, n);
    write_gz("img.gz", b, n);
    for (int gz = 0; gz < 2; gz++) {
        ct_tensor *t = ct_read_idx(path_in(gz ? "img.gz" : "img"));
        CHECK(t != NULL);
        if (!t) continue;
        CHECK_INT_EQ(ct_dtype_of(t), CT_U8);
        CHECK_INT_EQ(ct_ndim(t), 3);
        CHECK_INT_EQ(ct_size(t, 0), 4);
        CHECK_INT_EQ(ct_size(t, 2), 3);
        CHECK_VALUES(ct_select(t, 0, 3), 0, 30, 31, 32, 33, 34, 35);
    }
    remove_files();
}

TEST(idx_multibyte_types_are_big_endian) {
    temp_dir();
    unsigned char b[64];
    /* int32 [2] = {1, -2}, float64 [1] = {1.5}, int16 [1] = {258}. */
    size_t h = idx_header(b, 0x0C, 1, (uint32_t[]){2});
    unsigned char i32[] = {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe};
    memcpy(b + h, i32, 8);
    write_file("i32", b, h + 8);
    CHECK_VALUES(ct_read_idx(path_in("i32")), 0, 1, -2);
    h = idx_header(b, 0x0E, 1, (uint32_t[]){1});
    unsigned char f64[] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0};
    memcpy(b + h, f64, 8);
    write_gz("f64.gz", b, h + 8);
    ct_tensor *f = ct_read_idx(path_in("f64.gz"));
    CHECK(f && ct_dtype_of(f) == CT_F64);
    CHECK_VALUES(f, 0, 1.5);
    h = idx_header(b, 0x0B, 1, (uint32_t[]){1});
    b[h] = 1, b[h + 1] = 2;
    write_file("i16", b, h + 2);
    CHECK_VALUES(ct_read_idx(path_in("i16")), 0, 258);
    /* An empty dim is fine. */
    h = idx_header(b, 0x08, 2, (uint32_t[]){0, 28});
    write_file("empty", b, h);
    ct_tensor *e = ct_read_idx(path_in("empty"));
    CHECK(e && ct_numel(e) == 0 && ct_size(e, 1) == 28);
    remove_files();
}

TEST(idx_damaged_files_are_errors) {
    temp_dir();
    unsigned char b[256];
    size_t n = images_file(b, 4);
    CHECK_ERROR(ct_read_idx(path_in("missing")), "cannot open");
    write_file("short", b, 3);
    CHECK_ERROR(ct_read_idx(path_in("short")), "not an IDX file (3 bytes");
    b[0] = 0x1f; /* wrong magic */
    write_file("magic", b, n);
    CHECK_ERROR(ct_read_idx(path_in("magic")), "bad magic number 0x1f000803");
    b[0] = 0, b[2] = 0x07; /* unknown type */
    write_file("type", b, n);
    CHECK_ERROR(ct_read_idx(path_in("type")), "bad magic number");
    b[2] = 0x08, b[3] = 0; /* no dims */
    write_file("dims", b, n);
    CHECK_ERROR(ct_read_idx(path_in("dims")), "declares 0 dims");
    b[3] = 3;
    write_file("header", b, 10);
    CHECK_ERROR(ct_read_idx(path_in("header")), "truncated (10 bytes: the header of 3 dims needs 16)");
    write_file("data", b, n - 1);
    CHECK_ERROR(ct_read_idx(path_in("data")), "is truncated: its shape [4, 2, 3] of uint8 needs 24 bytes of data, the file has 23");
    write_gz("data.gz", b, n - 5);
    CHECK_ERROR(ct_read_idx(path_in("data.gz")), "is truncated");
    write_file("extra", b, n + 2);
    CHECK_ERROR(ct_read_idx(path_in("extra")), "has 2 bytes after the data");
    /* Sizes whose product overflows 64 bits. */
    idx_header(b, 0x0E, 3, (uint32_t[]){0xffffffffu, 0xffffffffu, 0xffffffffu});
    write_file("huge", b, 40);
    CHECK_ERROR(ct_read_idx(path_in("huge")), "is truncated");
    remove_files();
}

TEST(idx_damaged_gzip_is_an_error) {
    temp_dir();
    unsigned char b[256];
    size_t n = images_file(b, 4), len;
    write_gz("ok.gz", b, n);
    char *gz = read_whole("ok.gz", &len);
    CHECK(gz && len > 20);
    /* Every truncation of the compressed file fails cleanly. */
    for (size_t cut = 1; gz && cut < len; cut++) {
        write_file("cut.gz", gz, cut);
        ct_clear_error();
        CHECK(ct_read_idx(path_in("cut.gz")) == NULL);
        CHECK(ct_last_error() != NULL);
    }
    /* A damaged checksum, and damaged deflate data. */
    if (gz) {
        gz[len - 6] ^= 0x55;
        write_file("crc.gz", gz, len);
        CHECK_ERROR(ct_read_idx(path_in("crc.gz")), "corrupt gzip file");
        gz[len - 6] ^= 0x55;
        gz[10] = (char)0xff; /* a reserved block type */
        write_file("bad.gz", gz, len);
        CHECK_ERROR(ct_read_idx(path_in("bad.gz")), "corrupt gzip file");
    }
    free(gz);
    remove_files();
}

/* A gzip bomb: an IDX header for 10 bytes followed by 64 MiB of zeros (64 KiB
 * compressed) is refused once the read passes the header's size, holding a buffer of
 * about a MiB, instead of decompressing it all. */
TEST(idx_gzip_bomb_is_refused_early) {
    temp_dir();
    gzFile f = gzopen(path_in("bomb.gz"), "wb9");
    CHECK(f != NULL);
    if (!f) return;
    const unsigned char header[] = {0, 0, 0x08, 1, 0, 0, 0, 10};
    gzwrite(f, header, sizeof header);
    static unsigned char zeros[1 << 20];
    for (int i = 0; i < 64; i++) gzwrite(f, zeros, sizeof zeros);
    gzclose(f);
    CHECK_ERROR(ct_read_idx(path_in("bomb.gz")),
                "holds more than the 18 bytes its header gives (a damaged file or a "
                "decompression bomb)");
    remove_files();
}

TEST(idx_fuzz_random_byte_flips) {
    temp_dir();
    unsigned char b[256];
    size_t n = images_file(b, 4), len;
    write_gz("ok.gz", b, n);
    char *gz = read_whole("ok.gz", &len);
    uint64_t r = 12345;
    for (int trial = 0; gz && trial < 300; trial++) {
        char *copy = malloc(len);
        memcpy(copy, gz, len);
        char *src = trial % 2 ? copy : (char *)b; /* damage the gzip or the plain file */
        size_t size = trial % 2 ? len : n;
        unsigned char *plain = trial % 2 ? NULL : malloc(n);
        if (plain) memcpy(plain, b, n), src = (char *)plain;
        for (int k = 0; k < 1 + trial % 3; k++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            src[(r >> 33) % size] ^= (char)(1 + (r >> 13) % 255);
        }
        write_file("fuzz", src, size);
        CT_SCOPE {
            ct_clear_error();
            ct_tensor *t = ct_read_idx(path_in("fuzz"));
            /* Either a consistent tensor or an error. */
            if (t) CHECK(ct_numel(t) >= 0 && ct_last_error() == NULL);
            else CHECK(ct_last_error() != NULL);
            ct_clear_error();
        }
        free(copy);
        free(plain);
    }
    free(gz);
    remove_files();
}

/* A directory in MNIST's layout with n_img training images and n_lab labels. */
static void mnist_dir(uint32_t n_img, uint32_t n_lab) {
    unsigned char b[512];
    write_gz("train-images-idx3-ubyte.gz", b, images_file(b, n_img));
    write_gz("train-labels-idx1-ubyte.gz", b, labels_file(b, n_lab));
    write_file("t10k-images-idx3-ubyte", b, images_file(b, 2)); /* plain files work too */
    write_file("t10k-labels-idx1-ubyte", b, labels_file(b, 2));
}

TEST(mnist_from_a_directory) {
    temp_dir();
    mnist_dir(5, 5);
    ct_dataset *ds = ct_mnist(.root = dir);
    CHECK_STR_EQ(ct_dataset_name(ds), "MNIST");
    CHECK_INT_EQ(ct_dataset_len(ds), 5);
    ct_sample s;
    CHECK(ct_dataset_get(ds, 3, &s) == 0);
    CHECK_INT_EQ(ct_dtype_of(s.t[0]), CT_U8);
    CHECK_INT_EQ(ct_ndim(s.t[0]), 3); /* [1, 2, 3] */
    CHECK_INT_EQ(ct_size(s.t[0], 0), 1);
    CHECK_VALUES(s.t[0], 0, 30, 31, 32, 33, 34, 35);
    CHECK_INT_EQ(ct_dtype_of(s.t[1]), CT_I64);
    CHECK_INT_EQ(ct_item_int(s.t[1]), 6);
    ct_dataset *test = ct_fashion_mnist(.root = dir, .train = false, .transform = ct_tf_to_float());
    CHECK_STR_EQ(ct_dataset_name(test), "FashionMNIST");
    CHECK_INT_EQ(ct_dataset_len(test), 2);
    CHECK(ct_dataset_get(test, 1, &s) == 0);
    CHECK_INT_EQ(ct_dtype_of(s.t[0]), CT_F32);
    CHECK_CLOSE(ct_item(ct_sum(s.t[0])), (10. + 11 + 12 + 13 + 14 + 15) / 255, 1e-6);
    remove_files();
}

TEST(mnist_mismatched_or_missing_files) {
    temp_dir();
    CHECK_ERROR(ct_mnist(.root = dir), "dataset not found: no train-images-idx3-ubyte(.gz) in");
    mnist_dir(5, 4);
    CHECK_ERROR(ct_mnist(.root = dir), "holds 5 images but");
    /* Labels file holding images. */
    unsigned char b[512];
    write_gz("train-labels-idx1-ubyte.gz", b, images_file(b, 5));
    CHECK_ERROR(ct_mnist(.root = dir), "should hold labels [N] as uint8 with 1 dims (got uint8 with 3 dims)");
    write_file("train-labels-idx1-ubyte.gz", "garbage!", 8);
    CHECK_ERROR(ct_mnist(.root = dir), "not an IDX file");
    remove_files();
}

TEST(csv_header_and_label_column) {
    temp_dir();
    const char *text = "sepal,petal,species\n1.5, 2,0\r\n\n3,4.25,2\n-1e-1,nan,1\n";
    write_file("iris.csv", text, strlen(text));
    ct_dataset *ds = ct_csv_dataset(path_in("iris.csv"));
    CHECK_INT_EQ(ct_dataset_len(ds), 3);
    ct_sample s;
    CHECK(ct_dataset_get(ds, 1, &s) == 0);
    CHECK_INT_EQ(ct_dtype_of(s.t[0]), CT_F32);
    CHECK_VALUES(s.t[0], 0, 3, 4.25);
    CHECK_INT_EQ(ct_dtype_of(s.t[1]), CT_I64);
    CHECK_INT_EQ(ct_item_int(s.t[1]), 2);
    CHECK(ct_dataset_get(ds, 2, &s) == 0);
    CHECK_VALUES(s.t[0], 1e-7, -0.1, NAN);
    /* By name, by index, none; float labels. */
    ct_dataset *by_name = ct_csv_dataset(path_in("iris.csv"), .label_name = "sepal", .label_dtype = CT_F32);
    CHECK(ct_dataset_get(by_name, 0, &s) == 0);
    CHECK_CLOSE(ct_item(s.t[1]), 1.5, 0);
    CHECK_VALUES(s.t[0], 0, 2, 0);
    ct_dataset *first = ct_csv_dataset(path_in("iris.csv"), .label_column = CT_SOME(0), .label_dtype = CT_F64);
    CHECK(ct_dataset_get(first, 0, &s) == 0 && ct_dtype_of(s.t[1]) == CT_F64);
    ct_dataset *all = ct_csv_dataset(path_in("iris.csv"), .no_label = true);
    CHECK(ct_dataset_get(all, 0, &s) == 0);
    CHECK_INT_EQ(s.n, 1);
    CHECK_VALUES(s.t[0], 0, 1.5, 2, 0);
    /* No header; another delimiter. */
    write_file("plain.csv", "1;2\n3;4\n", 8);
    ct_dataset *plain = ct_csv_dataset(path_in("plain.csv"), .delimiter = ';');
    CHECK_INT_EQ(ct_dataset_len(plain), 2);
    CHECK(ct_dataset_get(plain, -1, &s) == 0);
    CHECK_INT_EQ(ct_item_int(s.t[1]), 4);
    /* gzip'd CSV. */
    write_gz("plain.csv.gz", "5,6\n", 4);
    CHECK_INT_EQ(ct_dataset_len(ct_csv_dataset(path_in("plain.csv.gz"))), 1);
    remove_files();
}

static ct_dataset *csv_of(const char *text, ct_csv_options o) {
    write_file("t.csv", text, strlen(text));
    return ct_csv_dataset_with(path_in("t.csv"), o);
}
#define CSV(text, ...) csv_of(text, CT_OPTIONS(ct_csv_options, __VA_ARGS__))

TEST(csv_bad_rows_name_the_line) {
    temp_dir();
    CHECK_ERROR(CSV("a,b,c\n1,2,3\n\n4,5\n"), "t.csv:4: expected 3 fields, got 2");
    CHECK_ERROR(CSV("1,2,3\n4,5,6,7\n"), "t.csv:2: expected 3 fields, got 4");
    CHECK_ERROR(CSV("a,b\n1,2\n3,x\n"), "t.csv:3:3: field 2 (\"x\") is not a number");
    CHECK_ERROR(CSV("1,2\n3,\n"), "t.csv:2:3: field 2 (\"\") is not a number");
    CHECK_ERROR(CSV("1,2\n3,4abc\n"), "t.csv:2:3: field 2 (\"4abc\") is not a number");
    CHECK_ERROR(CSV("1,2.5\n"), "t.csv:1:3: label 2.5 is not an integer");
    CHECK_ERROR(CSV(""), "holds no rows");
    CHECK_ERROR(CSV("\n\n"), "holds no rows");
    CHECK_ERROR(CSV("a,b\n"), "a header but no data rows");
    CHECK_ERROR(CSV("a,b\n1,2\n", .label_name = "c"), "no column named 'c'");
    CHECK_ERROR(CSV("1,2\n", .label_name = "c"), "no header row");
    CHECK_ERROR(CSV("1,2\n", .label_column = CT_SOME(5)), "label_column 5 is out of range for 2 columns");
    CHECK_ERROR(CSV("1\n2\n"), "one column is a label without features");
    CHECK_ERROR(CSV("1,2\n", .header = CT_CSV_HEADER_YES), "a header but no data rows");
    write_file("bin.csv", "1,2\0\n", 5);
    CHECK_ERROR(ct_csv_dataset(path_in("bin.csv")), "not a text file");
    CHECK_ERROR(ct_csv_dataset(path_in("nope.csv")), "cannot open");
    remove_files();
}

/* Random byte changes to good (and truncations): a dataset or an error, never a crash. */
static void csv_fuzz(const char *good, const char *alphabet, uint64_t r) {
    size_t n = strlen(good), n_alphabet = strlen(alphabet);
    char text[128];
    CHECK(n <= sizeof text);
    for (int trial = 0; trial < 300 && n <= sizeof text; trial++) {
        memcpy(text, good, n);
        for (int k = 0; k < 1 + trial % 4; k++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            text[(r >> 33) % n] = alphabet[(r >> 17) % n_alphabet];
        }
        size_t len = trial % 5 == 4 ? (r >> 40) % n : n; /* some truncated too */
        write_file("f.csv", text, len);
        CT_SCOPE {
            ct_clear_error();
            ct_dataset *ds = ct_csv_dataset(path_in("f.csv"));
            if (ds) {
                ct_sample s;
                CHECK(ct_dataset_len(ds) >= 1 && ct_dataset_get(ds, -1, &s) == 0);
            } else {
                CHECK(ct_last_error() != NULL);
            }
            ct_clear_error();
        }
    }
}

TEST(csv_fuzz_random_byte_changes) {
    temp_dir();
    csv_fuzz("a,b,label\n1.5,2,0\n3,4e2,1\n-5,6.25,2\n", "0123456789.,-+eE\n\r x;\"", 99);
    /* Quoted fields with delimiters, newlines and doubled quotes, mutated mostly into
     * quoting characters. */
    csv_fuzz("\"a,1\",\"b\"\"\",\"la\nbel\"\r\n\"1.5\", 2 ,\"0\"\n3,\"4e2\",1\n", "\"\",\n\r 1", 7);
    remove_files();
}

/* RFC 4180: quoted fields hold delimiters, newlines and doubled quotes, in the header
 * too; a label column is found by its unquoted name. */
TEST(csv_quoted_fields) {
    temp_dir();
    ct_sample s;
    ct_dataset *iris = CSV("\"sepal length\",\"species\"\n5.1,0\n\"4.9\",1\n", .label_name = "species");
    CHECK_INT_EQ(ct_dataset_len(iris), 2);
    CHECK(ct_dataset_get(iris, 1, &s) == 0);
    CHECK_VALUES(s.t[0], 1e-6, 4.9);
    CHECK_INT_EQ(ct_item_int(s.t[1]), 1);
    ct_dataset *comma = CSV("\"a,b\",c\n1,2\n", .label_name = "a,b");
    CHECK(ct_dataset_get(comma, 0, &s) == 0);
    CHECK_INT_EQ(ct_item_int(s.t[1]), 1);
    CHECK_VALUES(s.t[0], 0, 2);
    ct_dataset *quotes = CSV("x,\"say \"\"hi\"\"\"\n1,2\n", .label_name = "say \"hi\"");
    CHECK(ct_dataset_get(quotes, 0, &s) == 0);
    CHECK_INT_EQ(ct_item_int(s.t[1]), 2);
    /* A newline inside quotes; CRLF rows; blanks around quotes; an empty row skipped. */
    ct_dataset *lines = CSV("\"two\nlines\",y\r\n \"1\" , 2 \r\n\r\n3,\"4\"\n", .label_name = "y");
    CHECK_INT_EQ(ct_dataset_len(lines), 2);
    CHECK(ct_dataset_get(lines, 1, &s) == 0);
    CHECK_VALUES(s.t[0], 0, 3);
    CHECK_INT_EQ(ct_item_int(s.t[1]), 4);
    ct_dataset *tabs = CSV("\"a b\"\t\"c\"\n1\t2\n", .delimiter = '\t', .label_name = "c");
    CHECK(ct_dataset_get(tabs, 0, &s) == 0);
    CHECK_VALUES(s.t[0], 0, 1);
    /* No newline at the end; a quoted last field. */
    CHECK_INT_EQ(ct_dataset_len(CSV("1,\"2\"")), 1);
    remove_files();
}

/* Bad quoting is an error at its line and column; lines count the newlines inside
 * quoted fields. */
TEST(csv_bad_quoting_names_line_and_column) {
    temp_dir();
    CHECK_ERROR(CSV("a,b\n1,\"2\n"), "t.csv:2:3: the quoted field that starts here is not closed");
    CHECK_ERROR(CSV("a,b\n\"1\"x,2\n"), "t.csv:2:4: a quoted field must end at its closing quote");
    CHECK_ERROR(CSV("a,b\n1,2\"3\n"), "t.csv:2:4: a quote inside an unquoted field");
    CHECK_ERROR(CSV("\"x\ny\",z\n1,2\n3\n"), "t.csv:4: expected 2 fields, got 1");
    CHECK_ERROR(CSV("\"h\n1\",b\n1,x\n"), "t.csv:3:3: field 2 (\"x\") is not a number");
    CHECK_ERROR(CSV("a,b\n\"\",1\n"), "t.csv:2:1: field 1 (\"\") is not a number");
    CHECK_ERROR(CSV("1;2\n", .delimiter = '"'), "the delimiter cannot be a quote");
    remove_files();
}
