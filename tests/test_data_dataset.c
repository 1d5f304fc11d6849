/* Datasets: TensorDataset, Subset, random_split, ConcatDataset, custom classes,
 * transformed datasets. */
#include "ct_test.h"

/* x: float32 [6, 2] holding 0 .. 11, y: int64 [6] holding 0 .. 5. */
static ct_dataset *six(void) {
    ct_tensor *x = ct_view(ct_arange(12, .dtype = CT_F32), CT_SHAPE(6, 2));
    ct_tensor *y = ct_arange(6);
    return ct_tensor_dataset(CT_TENSORS(x, y));
}

/* The label (field 1) of ds[i] as an integer. */
static int64_t label_of(ct_dataset *ds, int64_t i) {
    ct_sample s;
    return ct_dataset_get(ds, i, &s) == 0 ? ct_item_int(s.t[1]) : -1;
}

TEST(tensor_dataset_indexes_dim_0) {
    ct_dataset *ds = six();
    CHECK_STR_EQ(ct_dataset_name(ds), "TensorDataset");
    CHECK_INT_EQ(ct_dataset_len(ds), 6);
    ct_sample s;
    CHECK(ct_dataset_get(ds, 2, &s) == 0);
    CHECK_INT_EQ(s.n, 2);
    CHECK_VALUES(s.t[0], 0, 4, 5);
    CHECK_INT_EQ(ct_ndim(s.t[1]), 0);
    CHECK_INT_EQ(ct_dtype_of(s.t[1]), CT_I64);
    CHECK_INT_EQ(label_of(ds, -1), 5); /* negative indexes count from the end */
    CHECK_ERROR(ct_dataset_get(ds, 6, &s), "index 6 is out of range for TensorDataset of length 6");
    CHECK_ERROR(ct_dataset_get(ds, -7, &s), "out of range");
}

TEST(tensor_dataset_errors) {
    ct_tensor *a = ct_zeros(CT_SHAPE(3, 2)), *b = ct_zeros(CT_SHAPE(4));
    CHECK_ERROR(ct_tensor_dataset(CT_TENSORS(a, b)), "Size mismatch between tensors");
    CHECK_ERROR(ct_tensor_dataset(CT_TENSORS(ct_scalar_tensor(1.0))), "0-d");
    CHECK_ERROR(ct_tensor_dataset(0, NULL), "expected 1 to 8 tensors");
    CHECK(ct_tensor_dataset(CT_TENSORS(a, NULL)) == NULL);
}

TEST(subset_maps_indices) {
    ct_dataset *ds = six();
    int64_t idx[] = {4, 1, 1};
    ct_dataset *sub = ct_subset(ds, idx, 3);
    CHECK_INT_EQ(ct_dataset_len(sub), 3);
    CHECK_INT_EQ(label_of(sub, 0), 4);
    CHECK_INT_EQ(label_of(sub, 2), 1);
    int64_t bad[] = {0, 6};
    CHECK_ERROR(ct_subset(ds, bad, 2), "index 6 (at position 1) is out of range");
    CHECK_INT_EQ(ct_dataset_len(ct_subset(ds, NULL, 0)), 0);
}

TEST(random_split_counts_and_fractions) {
    ct_dataset *ds = six();
    ct_dataset *parts[3];
    CHECK(ct_random_split(ds, 2, ((double[]){2, 4}), ct_generator_new(1), parts) == 0);
    CHECK_INT_EQ(ct_dataset_len(parts[0]), 2);
    CHECK_INT_EQ(ct_dataset_len(parts[1]), 4);
    int seen[6] = {0};
    for (int p = 0; p < 2; p++)
        for (int64_t i = 0; i < ct_dataset_len(parts[p]); i++) seen[label_of(parts[p], i)]++;
    for (int i = 0; i < 6; i++) CHECK_INT_EQ(seen[i], 1); /* a partition */
    /* Fractions: floors, then the remainder dealt from the first (PyTorch: [4, 3, 3]). */
    ct_dataset *ten = ct_tensor_dataset(CT_TENSORS(ct_arange(10)));
    CHECK(ct_random_split(ten, 3, ((double[]){0.33, 0.33, 0.34}), NULL, parts) == 0);
    CHECK_INT_EQ(ct_dataset_len(parts[0]), 4);
    CHECK_INT_EQ(ct_dataset_len(parts[1]), 3);
    CHECK_INT_EQ(ct_dataset_len(parts[2]), 3);
    /* The same seed gives the same split. */
    ct_dataset *a[2], *b[2];
    ct_random_split(ds, 2, ((double[]){3, 3}), ct_generator_new(7), a);
    ct_random_split(ds, 2, ((double[]){3, 3}), ct_generator_new(7), b);
    for (int i = 0; i < 3; i++) CHECK_INT_EQ(label_of(a[0], i), label_of(b[0], i));
    CHECK_ERROR(ct_random_split(ds, 2, ((double[]){2, 3}), NULL, parts),
                "Sum of input lengths does not equal the length of the input dataset!");
    CHECK_ERROR(ct_random_split(ds, 2, ((double[]){1.5, 4.5}), NULL, parts), "non-negative integer");
}

TEST(concat_dataset_spans_parts) {
    ct_dataset *a = ct_tensor_dataset(CT_TENSORS(ct_arange(2)));
    ct_dataset *empty = ct_tensor_dataset(CT_TENSORS(ct_zeros(CT_SHAPE(0), .dtype = CT_I64)));
    ct_dataset *b = ct_tensor_dataset(CT_TENSORS(ct_arange_range(10, 13, 1)));
    ct_dataset *c = ct_concat_dataset(3, (ct_dataset *[]){a, empty, b});
    CHECK_INT_EQ(ct_dataset_len(c), 5);
    int64_t want[] = {0, 1, 10, 11, 12};
    for (int i = 0; i < 5; i++) {
        ct_sample s;
        CHECK(ct_dataset_get(c, i, &s) == 0);
        CHECK_INT_EQ(ct_item_int(s.t[0]), want[i]);
    }
    CHECK_ERROR(ct_concat_dataset(0, NULL), "should not be an empty iterable");
}

/* A custom dataset: sample i is (i * i, i even) computed on demand. */
typedef struct {
    int64_t n;
} squares;
static int64_t squares_len(const ct_dataset *ds) { return ((squares *)ct_dataset_state(ds))->n; }
static int squares_get(ct_dataset *ds, int64_t i, ct_sample *out) {
    (void)ds;
    out->n = 2;
    out->t[0] = ct_scalar_tensor((double)(i * i));
    out->t[1] = ct_scalar_tensor(i % 2 == 0, .dtype = CT_BOOL);
    return 0;
}
static const ct_dataset_class SQUARES = {.name = "Squares", .len = squares_len, .get = squares_get};

TEST(custom_dataset_class) {
    ct_dataset *ds = ct_dataset_new(&SQUARES, sizeof(squares));
    ((squares *)ct_dataset_state(ds))->n = 5;
    CHECK_STR_EQ(ct_dataset_name(ds), "Squares");
    ct_sample s;
    CHECK(ct_dataset_get(ds, 3, &s) == 0);
    CHECK_CLOSE(ct_item(s.t[0]), 9, 0);
    CHECK_CLOSE(ct_item(s.t[1]), 0, 0);
    CHECK_ERROR(ct_dataset_new(NULL, 0), "needs len and get");
}

/* A dataset whose get forgets to fill the sample. */
static int empty_get(ct_dataset *ds, int64_t i, ct_sample *out) {
    (void)ds, (void)i, (void)out;
    return 0;
}
static const ct_dataset_class EMPTY = {.name = "Empty", .len = squares_len, .get = empty_get};

TEST(bad_samples_are_errors) {
    ct_dataset *ds = ct_dataset_new(&EMPTY, sizeof(squares));
    ((squares *)ct_dataset_state(ds))->n = 1;
    ct_sample s;
    CHECK_ERROR(ct_dataset_get(ds, 0, &s), "Empty returned a sample of 0 tensors");
}

TEST(transformed_dataset_applies_to_one_field) {
    ct_dataset *ds = six();
    ct_transform *tf = ct_tf_normalize(1, (double[]){1}, (double[]){2});
    /* Normalize wants an image [C, H, W]: view the rows as [1, 1, 2] first. */
    ct_tensor *x = ct_view(ct_arange(12, .dtype = CT_F32), CT_SHAPE(6, 1, 1, 2));
    ct_dataset *img = ct_tensor_dataset(CT_TENSORS(x, ct_arange(6)));
    ct_dataset *m = ct_dataset_transform(img, 0, tf);
    CHECK_INT_EQ(ct_dataset_len(m), 6);
    ct_sample s;
    CHECK(ct_dataset_get(m, 1, &s) == 0);
    CHECK_VALUES(s.t[0], 0, 0.5, 1.0); /* (2 - 1) / 2, (3 - 1) / 2 */
    CHECK_INT_EQ(ct_item_int(s.t[1]), 1);
    CHECK_ERROR(ct_dataset_get(ct_dataset_transform(ds, 2, tf), 0, &s), "no tensor 2 to transform");
    /* Errors of the transform surface from get. */
    CHECK_ERROR(ct_dataset_get(ct_dataset_transform(ds, 1, tf), 0, &s), "float tensor");
}
