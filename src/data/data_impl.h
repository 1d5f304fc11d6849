/* The data objects' structs and helpers, private to src/data. */
#ifndef CT_DATA_IMPL_H
#define CT_DATA_IMPL_H

#include <stdalign.h>
#include <stddef.h>

#include "ctorch.h"
#include "core/error.h"
#include "core/object.h"

struct ct_dataset {
    ct_object obj;
    const ct_dataset_class *cls;
    alignas(max_align_t) char state[];
};

struct ct_transform {
    ct_object obj;
    const ct_transform_class *cls;
    alignas(max_align_t) char state[];
};

struct ct_sampler {
    ct_object obj;
    const ct_sampler_class *cls;
    uint64_t epoch;
    alignas(max_align_t) char state[];
};

struct ct_batch_sampler {
    ct_object obj;
    const ct_batch_sampler_class *cls;
    alignas(max_align_t) char state[];
};

/* An epoch's batches: batch b is idx[off[b] .. off[b + 1] - 1]. */
struct ct_batch_plan {
    int64_t *idx, *off;
    int64_t n_batches, n_idx, cap_idx, cap_off;
};
void data_plan_free(ct_batch_plan *p);

/* A new object with a zeroed state of `state_size` bytes after a header of
 * `header_size` bytes, registered with the scope; NULL with an error naming `op`. */
void *data_object_new(const char *op, size_t header_size, size_t state_size, ct_destroy_fn destroy);

/* Takes over the reference a constructor handed out, whether the innermost scope
 * holds it or (outside scopes) the caller: the object is then ours to release. */
static inline void *data_adopt(void *obj) {
    ct_scope_unregister(obj);
    return obj;
}

/* A base seed drawn from g (NULL: the default generator). */
uint64_t data_draw_seed(ct_generator *g);
/* One integer uniform on [lo, hi) and one double uniform on [0, 1) drawn from g. */
int64_t data_randint(ct_generator *g, int64_t lo, int64_t hi);
double data_rand(ct_generator *g);
/* Writes a random permutation of 0 .. n-1 drawn from g to out; 0 or -1. */
int data_randperm(ct_generator *g, int64_t n, int64_t *out);

/* Sample i of tensors t[0 .. n-1] (a view t[k][i] each) into out. */
int data_select_fields(int n, ct_tensor *const *t, int64_t index, ct_sample *out);
/* Applies tf to out->t[field] with the sample's generator (from out->seed). */
int data_apply_transform(ct_transform *tf, ct_sample *out, int field);

/* Whole-file reading, plain or gzip'd (zlib reads both): a malloc'd buffer of *len
 * bytes (plus a zero byte), or NULL with an error naming op and path.  Bounded, so
 * that a decompression bomb is an error, not the machine's memory exhausted: a
 * content larger than the machine's physical memory is refused, and when `expected`
 * is given, a content larger than expected(head, n) bytes, which it returns from the
 * first n bytes read (at least its header; SIZE_MAX: no bound it can tell). */
typedef size_t (*data_expected_size)(const unsigned char *head, size_t n);
char *data_read_file(const char *op, const char *path, size_t *len, data_expected_size expected);

#endif
