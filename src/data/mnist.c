/* MNIST and FashionMNIST: the four IDX files read once into two tensors (images
 * uint8 [N, 1, 28, 28], labels int64 [N]); sample i is a view of both. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "data/data_impl.h"

typedef struct {
    ct_tensor *t[2]; /* images, labels */
    ct_transform *transform, *target_transform;
} mnist_ds;

static int64_t mnist_len(const ct_dataset *ds) {
    return ct_size(((mnist_ds *)ct_dataset_state(ds))->t[1], 0);
}

static int mnist_get(ct_dataset *ds, int64_t index, ct_sample *out) {
    mnist_ds *s = ct_dataset_state(ds);
    if (data_select_fields(2, s->t, index, out) != 0) return -1;
    if (s->transform && data_apply_transform(s->transform, out, 0) != 0) return -1;
    if (s->target_transform && data_apply_transform(s->target_transform, out, 1) != 0) return -1;
    return 0;
}

static void mnist_destroy(ct_dataset *ds) {
    mnist_ds *s = ct_dataset_state(ds);
    ct_release(s->t[0]);
    ct_release(s->t[1]);
    ct_release(s->transform);
    ct_release(s->target_transform);
}

static const ct_dataset_class MNIST = {
    .name = "MNIST", .len = mnist_len, .get = mnist_get, .destroy = mnist_destroy};
static const ct_dataset_class FASHION_MNIST = {
    .name = "FashionMNIST", .len = mnist_len, .get = mnist_get, .destroy = mnist_destroy};

/* Finds `file` in root, as .gz or plain, also in torchvision's root/<name>/raw/. */
static bool find_file(const char *root, const char *name, const char *file, char *path, size_t size) {
    const char *layouts[] = {"%s/%s.gz", "%s/%s", "%s/%s/raw/%s.gz", "%s/%s/raw/%s"};
    for (int i = 0; i < 4; i++) {
        if (i < 2) snprintf(path, size, layouts[i], root, file);
        else snprintf(path, size, layouts[i], root, name, file);
        if (access(path, R_OK) == 0) return true;
    }
    return false;
}

/* Reads an IDX file expected to hold `ndim` dims of uint8; NULL with an error. */
static ct_tensor *read_part(const char *op, const char *path, int ndim, const char *what) {
    ct_tensor *t = ct_read_idx(path);
    if (t && (ct_ndim(t) != ndim || ct_dtype_of(t) != CT_U8)) {
        ct_error("%s: '%s' should hold %s as uint8 with %d dims (got %s with %d dims)", op, path,
                 what, ndim, ct_dtype_name(ct_dtype_of(t)), ct_ndim(t));
        return NULL;
    }
    return t;
}

static ct_dataset *mnist_new(const char *op, const ct_dataset_class *cls, const char *default_root,
                             ct_mnist_options o) {
    if (!ct_option_alive(op, "transform", o.transform) ||
        !ct_option_alive(op, "target_transform", o.target_transform))
        return NULL;
    const char *root = o.root ? o.root : default_root;
    const char *split = o.train ? "train" : "t10k";
    char files[2][64], paths[2][4096];
    snprintf(files[0], sizeof files[0], "%s-images-idx3-ubyte", split);
    snprintf(files[1], sizeof files[1], "%s-labels-idx1-ubyte", split);
    for (int k = 0; k < 2; k++) {
        if (!find_file(root, cls->name, files[k], paths[k], sizeof paths[k])) {
            ct_error("%s: dataset not found: no %s(.gz) in '%s'%s", op, files[k], root,
                     o.root ? "" : " (install Debian's package or give .root)");
            return NULL;
        }
    }
    ct_dataset *ds = NULL;
    CT_SCOPE {
        ct_tensor *images = read_part(op, paths[0], 3, "images [N, H, W]");
        ct_tensor *labels = read_part(op, paths[1], 1, "labels [N]");
        if (!images || !labels) break;
        if (ct_size(images, 0) != ct_size(labels, 0)) {
            ct_error("%s: '%s' holds %lld images but '%s' holds %lld labels", op, paths[0],
                     (long long)ct_size(images, 0), paths[1], (long long)ct_size(labels, 0));
            break;
        }
        ct_tensor *t[2] = {ct_unsqueeze(images, 1), ct_to(labels, .dtype = CT_I64)};
        if (!t[0] || !t[1] || !(ds = ct_dataset_new(cls, sizeof(mnist_ds)))) break;
        mnist_ds *s = ct_dataset_state(ds);
        s->t[0] = ct_retain(t[0]);
        s->t[1] = ct_retain(t[1]);
        s->transform = ct_retain(o.transform);
        s->target_transform = ct_retain(o.target_transform);
        ds = ct_keep(ds);
    }
    return ds;
}

ct_dataset *ct_mnist_with(ct_mnist_options o) {
    return mnist_new("ct_mnist", &MNIST, "/usr/share/datasets/mnist", o);
}

ct_dataset *ct_fashion_mnist_with(ct_mnist_options o) {
    return mnist_new("ct_fashion_mnist", &FASHION_MNIST, "/usr/share/datasets/fashion-mnist", o);
}
