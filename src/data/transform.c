/* The transform base, Compose, and the dataset applying a transform to a sample. */
#include <stdlib.h>

#include "core/lifetime.h"
#include "data/data_impl.h"
#include "core/mem.h"

static void transform_destroy(ct_object *o) {
    ct_transform *tf = (ct_transform *)o;
    if (tf->cls->destroy) tf->cls->destroy(tf);
    ct_lifetime_free(tf); /* the debug lifetime mode keeps it in quarantine */
}

ct_transform *ct_transform_new(const ct_transform_class *cls, size_t state_size) {
    if (!cls || !cls->apply) {
        ct_error("ct_transform_new: the class needs apply");
        return NULL;
    }
    ct_transform *tf = data_object_new("ct_transform_new", sizeof *tf, state_size, transform_destroy);
    if (tf) tf->cls = cls;
    return tf;
}

void *ct_transform_state(const ct_transform *tf) {
    if (!ct_alive("ct_transform_state", 1, tf)) return NULL;
    return tf ? (void *)tf->state : NULL;
}

ct_tensor *ct_transform_apply(ct_transform *tf, ct_tensor *x, ct_generator *g) {
    if (!ct_alive("ct_transform_apply", 1, tf) || !ct_alive("ct_transform_apply", 2, x) ||
        !ct_alive("ct_transform_apply", 3, g))
        return NULL;
    if (!tf || !x) return NULL;
    return tf->cls->apply(tf, x, g ? g : ct_default_generator());
}

int data_apply_transform(ct_transform *tf, ct_sample *out, int field) {
    if (field < 0 || field >= out->n) {
        ct_error("ct_dataset_transform: the sample has %d tensors, no tensor %d to transform",
                 out->n, field);
        return -1;
    }
    ct_tensor *y = NULL;
    CT_SCOPE {
        /* The field's own stream: a transform of the label never mirrors the image's. */
        ct_generator *g = ct_generator_new(ct_data_seed(out->seed, 0x7472616e73666f72ull, (uint64_t)field));
        y = ct_keep(ct_transform_apply(tf, out->t[field], g));
    }
    if (!y) return -1;
    out->t[field] = y;
    return 0;
}

/* ---- Compose ------------------------------------------------------------ */

typedef struct {
    int n;
    ct_transform **tfs;
} compose_state;

static ct_tensor *compose_apply(ct_transform *tf, ct_tensor *x, ct_generator *g) {
    compose_state *s = ct_transform_state(tf);
    for (int i = 0; i < s->n && x; i++) x = ct_transform_apply(s->tfs[i], x, g);
    return x;
}

static void compose_destroy(ct_transform *tf) {
    compose_state *s = ct_transform_state(tf);
    for (int i = 0; i < s->n; i++) ct_release(s->tfs[i]);
    free(s->tfs);
}

static const ct_transform_class COMPOSE = {
    .name = "Compose", .apply = compose_apply, .destroy = compose_destroy};

ct_transform *(ct_tf_compose)(int n, ct_transform *const *tfs) {
    if (n < 0 || (n > 0 && !tfs)) {
        ct_error("ct_tf_compose: expected n >= 0 transforms (got %d)", n);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!tfs[i]) return NULL;
    ct_transform **copy = ct_malloc(sizeof *copy * (size_t)(n ? n : 1));
    ct_transform *tf = copy ? ct_transform_new(&COMPOSE, sizeof(compose_state)) : NULL;
    if (!tf) {
        if (!copy) ct_error("ct_tf_compose: out of memory");
        free(copy);
        return NULL;
    }
    for (int i = 0; i < n; i++) copy[i] = ct_retain(tfs[i]);
    *(compose_state *)ct_transform_state(tf) = (compose_state){n, copy};
    return tf;
}

/* ---- the transformed dataset ---------------------------------------------- */

typedef struct {
    ct_dataset *base;
    int field;
    ct_transform *tf;
} mapped_ds;

static int64_t mapped_len(const ct_dataset *ds) {
    return ct_dataset_len(((mapped_ds *)ct_dataset_state(ds))->base);
}

static int mapped_get(ct_dataset *ds, int64_t index, ct_sample *out) {
    mapped_ds *s = ct_dataset_state(ds);
    if (ct_dataset_get_seeded(s->base, index, out->seed, out) != 0) return -1;
    return data_apply_transform(s->tf, out, s->field);
}

static void mapped_destroy(ct_dataset *ds) {
    mapped_ds *s = ct_dataset_state(ds);
    ct_release(s->base);
    ct_release(s->tf);
}

static const ct_dataset_class MAPPED = {
    .name = "TransformedDataset", .len = mapped_len, .get = mapped_get, .destroy = mapped_destroy};

ct_dataset *(ct_dataset_transform)(ct_dataset *ds, int field, ct_transform *tf) {
    if (!ct_alive("ct_dataset_transform", 1, ds) || !ct_alive("ct_dataset_transform", 3, tf))
        return NULL;
    if (!ds || !tf) return NULL;
    if (field < 0 || field >= CT_SAMPLE_MAX) {
        ct_error("ct_dataset_transform: field must be in [0, %d) (got %d)", CT_SAMPLE_MAX, field);
        return NULL;
    }
    ct_dataset *m = ct_dataset_new(&MAPPED, sizeof(mapped_ds));
    if (m) *(mapped_ds *)ct_dataset_state(m) = (mapped_ds){ct_retain(ds), field, ct_retain(tf)};
    return m;
}
