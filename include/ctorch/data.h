/* ctorch/data.h — datasets, transforms, samplers and the DataLoader (torch.utils.data).
 *
 * A dataset maps an index to a sample: a few tensors (an image and its label).  A
 * loader draws indices from a sampler, groups them into batches, loads each batch (in
 * worker threads when num_workers > 0) and stacks the samples ("collate"):
 *
 *     ct_transform *tf = ct_tf_compose(CT_TRANSFORM_LIST(ct_tf_to_float(),
 *                                      ct_tf_normalize(1, (double[]){0.2860}, (double[]){0.3530})));
 *     ct_dataset *train = ct_fashion_mnist(.train = true, .transform = tf);
 *     ct_loader *loader = ct_dataloader(train, .batch_size = 64, .shuffle = true,
 *                                       .num_workers = 2, .generator = ct_generator_new(0));
 *     ct_batch batch;
 *     int64_t seen = 0;
 *     while (true) {
 *         CT_SCOPE_HERE;                    // the batch is freed at the end of the body
 *         if (!ct_loader_next(loader, &batch)) break;
 *         seen += ct_size(batch.t[1], 0);   // t[0]: float32 [64, 1, 28, 28], t[1]: int64 [64]
 *     }
 *
 * Constructors register what they return with the innermost scope, like ops.
 * Containers (a subset, a loader, a composed transform) retain what they are given;
 * the caller's reference stays the caller's.
 *
 * Determinism: the loader draws one base seed from its generator when it is created.
 * Epoch e's order comes from (base seed, e), and sample i's random transforms draw from
 * a generator seeded with ct_data_seed(base seed, e, i), never from which worker loaded
 * it: the batches are bitwise identical for every num_workers.
 */
#ifndef CTORCH_DATA_H
#define CTORCH_DATA_H

#include "random.h"
#include "shape.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* ---- samples and batches ------------------------------------------------- */

#define CT_SAMPLE_MAX 8 /* the most tensors a sample or a batch holds */
/* One sample: t[0 .. n-1] (e.g. image, label).  seed is the sample's randomness: the
 * caller of get sets it; random transforms draw from a generator made from it. */
typedef struct {
    int n;                       /* how many tensors */
    ct_tensor *t[CT_SAMPLE_MAX]; /* the sample's tensors */
    uint64_t seed;               /* the sample's randomness */
} ct_sample;

/* One batch from a loader: t[0 .. n-1] (e.g. images [B, 1, 28, 28], labels [B]), with
 * B = size samples; index is the batch's position in the epoch. */
typedef struct {
    int n;                       /* how many tensors */
    ct_tensor *t[CT_SAMPLE_MAX]; /* the batched tensors, [B, ...] each */
    int64_t size;                /* B, the number of samples */
    int64_t index;               /* the batch's position in the epoch */
} ct_batch;

/* The seed of sample `index` in `epoch` for a loader seeded with `seed` (a hash). */
uint64_t ct_data_seed(uint64_t seed, uint64_t epoch, uint64_t index);
#define ct_data_seed(seed, epoch, index) CT_AT(ct_data_seed(seed, epoch, index))

/* ---- datasets ------------------------------------------------------------ */

typedef struct ct_dataset ct_dataset; /* a dataset: its class and state */

/* A dataset class.  get fills out->t[0 .. out->n-1] with tensors registered with the
 * caller's scope (run ops as usual) and returns 0, or -1 on failure (the failing op's
 * message, or "failed to load sample i", reaches the loader's caller).  get runs in
 * several loader threads at once: it must only read the state.  Random choices draw
 * from ct_generator_new(out->seed), so they do not depend on the thread. */
typedef struct ct_dataset_class {
    const char *name; /* "TensorDataset" */
    int64_t (*len)(const ct_dataset *ds); /* len(ds) */
    int (*get)(ct_dataset *ds, int64_t index, ct_sample *out); /* ds[index] into out */
    /* Frees what the class allocated in its state (may be NULL). */
    void (*destroy)(ct_dataset *ds);
} ct_dataset_class;

/* A new dataset of class cls with state_size zeroed bytes of state (ct_dataset_state). */
ct_dataset *ct_dataset_new(const ct_dataset_class *cls, size_t state_size);
#define ct_dataset_new(cls, state_size) CT_AT(ct_dataset_new(cls, state_size))
void *ct_dataset_state(const ct_dataset *ds); /* the class's state */
#define ct_dataset_state(ds) CT_AT(ct_dataset_state(ds))
const char *ct_dataset_name(const ct_dataset *ds); /* the class name */
#define ct_dataset_name(ds) CT_AT(ct_dataset_name(ds))
int64_t ct_dataset_len(const ct_dataset *ds);      /* len(ds); -1 when ds is NULL */
#define ct_dataset_len(ds) CT_AT(ct_dataset_len(ds))
/* ds[index] (negative indexes count from the end) with seed ct_data_seed(0, 0, index);
 * 0 or -1.  The tensors are registered with the innermost scope. */
int ct_dataset_get(ct_dataset *ds, int64_t index, ct_sample *out);
#define ct_dataset_get(ds, index, out) CT_AT(ct_dataset_get(ds, index, out))
/* The same with the sample's seed given (what loaders and wrapping datasets call). */
int ct_dataset_get_seeded(ct_dataset *ds, int64_t index, uint64_t seed, ct_sample *out);
#define ct_dataset_get_seeded(ds, index, seed, out) \
    CT_AT(ct_dataset_get_seeded(ds, index, seed, out))

/* TensorDataset(*tensors): sample i is (t0[i], t1[i], ...); all share their size 0. */
ct_dataset *ct_tensor_dataset(int n, ct_tensor *const *tensors);
/* Subset(ds, indices): sample i is ds[indices[i]] (indices are checked). */
ct_dataset *ct_subset(ct_dataset *ds, const int64_t *indices, int64_t n);
/* random_split(ds, lengths, generator): n subsets of a random permutation.  lengths
 * are counts summing to len(ds), or fractions summing to 1 (the remainder is dealt
 * round-robin, as in PyTorch).  Writes out[0 .. n-1]; returns 0 or -1. */
int ct_random_split(ct_dataset *ds, int n, const double *lengths, ct_generator *g,
                    ct_dataset **out);
/* ConcatDataset(datasets): the samples of datasets[0], then datasets[1], ... */
ct_dataset *ct_concat_dataset(int n, ct_dataset *const *datasets);
#define ct_tensor_dataset(...) CT_AT(ct_tensor_dataset(__VA_ARGS__))
#define ct_subset(ds, indices, n) CT_AT(ct_subset(ds, indices, n))
#define ct_random_split(ds, n, lengths, g, out) CT_AT(ct_random_split(ds, n, lengths, g, out))
#define ct_concat_dataset(...) CT_AT(ct_concat_dataset(__VA_ARGS__))

/* ---- transforms ------------------------------------------------------------ */

typedef struct ct_transform ct_transform; /* a transform: its class and state */

/* A transform class: apply returns the transformed sample tensor (registered with the
 * scope) or NULL with an error; random choices draw from g, the sample's generator. */
typedef struct ct_transform_class {
    const char *name; /* "Normalize" */
    ct_tensor *(*apply)(ct_transform *tf, ct_tensor *x, ct_generator *g); /* tf(x) */
    void (*destroy)(ct_transform *tf); /* frees what the class allocated (may be NULL) */
} ct_transform_class;
/* A new transform of class cls with state_size zeroed bytes of state. */
ct_transform *ct_transform_new(const ct_transform_class *cls, size_t state_size);
#define ct_transform_new(cls, state_size) CT_AT(ct_transform_new(cls, state_size))
void *ct_transform_state(const ct_transform *tf); /* the class's state */
#define ct_transform_state(tf) CT_AT(ct_transform_state(tf))
/* tf(x) with randomness from g (NULL: the default generator). */
ct_tensor *ct_transform_apply(ct_transform *tf, ct_tensor *x, ct_generator *g);
#define ct_transform_apply(tf, x, g) CT_AT(ct_transform_apply(tf, x, g))

/* ConvertImageDtype(float): uint8 images become float32 / 255; floating ones pass. */
ct_transform *ct_tf_to_float(void);
/* Normalize(mean, std): (x - mean[c]) / std[c] per channel c of a float [..., C, H, W]
 * image; n is C (or 1 for every channel). */
ct_transform *ct_tf_normalize(int n, const double *mean, const double *std);
/* Options of ct_tf_random_crop (RandomCrop). */
typedef struct {
    int64_t padding;         /* pad every border first (RandomCrop's padding=) */
    double fill;             /* the value of constant padding */
    ct_pad_mode padding_mode; /* default constant */
} ct_random_crop_options;
/* RandomCrop((height, width), padding): a random height x width window of the
 * (padded) image [..., H, W]. */
ct_transform *ct_tf_random_crop_with(int64_t height, int64_t width, ct_random_crop_options o);
/* RandomHorizontalFlip(p): reverses the last dim with probability p. */
ct_transform *ct_tf_random_horizontal_flip(double p);
/* Compose(transforms): applies them in order (they are retained). */
ct_transform *ct_tf_compose(int n, ct_transform *const *tfs);
/* `n, array` for ct_tf_compose: ct_tf_compose(CT_TRANSFORM_LIST(a, b)). */
#define CT_TRANSFORM_LIST(...)                                                     \
    (int)(sizeof((ct_transform *[]){__VA_ARGS__}) / sizeof(ct_transform *)),        \
        (ct_transform *[]){__VA_ARGS__}
#define ct_tf_to_float() CT_AT(ct_tf_to_float())
#define ct_tf_normalize(...) CT_AT(ct_tf_normalize(__VA_ARGS__))
/* ct_tf_random_crop(28, .padding = 4): a square crop. */
#define ct_tf_random_crop(size, ...) \
    CT_AT(ct_tf_random_crop_with(size, size, CT_OPTIONS(ct_random_crop_options, __VA_ARGS__)))
#define ct_tf_random_horizontal_flip(p) CT_AT(ct_tf_random_horizontal_flip(p))
#define ct_tf_compose(...) CT_AT(ct_tf_compose(__VA_ARGS__))

/* A dataset applying tf to sample tensor `field` of ds (transform= / target_transform=). */
ct_dataset *ct_dataset_transform(ct_dataset *ds, int field, ct_transform *tf);
#define ct_dataset_transform(ds, field, tf) CT_AT(ct_dataset_transform(ds, field, tf))

/* ---- files ----------------------------------------------------------------- */

/* An IDX file (MNIST's format; plain or gzip'd) as one tensor: uint8, int8, int16,
 * int32, float32 or float64 with the file's dims.  Damaged files give an error. */
ct_tensor *ct_read_idx(const char *path);
#define ct_read_idx(path) CT_AT(ct_read_idx(path))

/* Options of ct_mnist and ct_fashion_mnist. */
typedef struct {
    const char *root; /* default: Debian's /usr/share/datasets/{mnist,fashion-mnist} */
    bool train;       /* the 60000 training samples (default) or the 10000 test ones */
    ct_transform *transform;        /* applied to the image (uint8 [1, 28, 28]) */
    ct_transform *target_transform; /* applied to the label (int64, 0-d) */
} ct_mnist_options;
/* MNIST / FashionMNIST: samples (image uint8 [1, 28, 28], label int64) read from
 * root's {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (or root/<Name>/raw/). */
ct_dataset *ct_mnist_with(ct_mnist_options o);
ct_dataset *ct_fashion_mnist_with(ct_mnist_options o);
#define ct_mnist(...) CT_AT(ct_mnist_with(CT_DEFAULTS(ct_mnist_options, .train = true, __VA_ARGS__)))
#define ct_fashion_mnist(...) \
    CT_AT(ct_fashion_mnist_with(CT_DEFAULTS(ct_mnist_options, .train = true, __VA_ARGS__)))

/* Whether a CSV file's first row is a header: decided from its fields, yes or no. */
typedef enum { CT_CSV_HEADER_AUTO = 0, CT_CSV_HEADER_YES, CT_CSV_HEADER_NO } ct_csv_header;
/* Options of ct_csv_dataset. */
typedef struct {
    ct_csv_header header;   /* auto: the first row is a header when a field is not a number */
    ct_opt_f64 label_column; /* default -1 (the last); negative counts from the end; CT_SOME(0) */
    const char *label_name; /* the label column by header name instead */
    bool no_label;          /* every column is a feature: one-tensor samples */
    char delimiter;         /* default ',' */
    ct_dtype label_dtype;   /* default int64 (labels must be integers); CT_F32 for regression */
} ct_csv_options;
/* A CSV file of numbers (plain or gzip'd) as samples (features float32 [F], label).
 * The file is read as RFC 4180 says: a field in double quotes may hold delimiters,
 * newlines and doubled quotes, in the header too; whitespace around fields and blank
 * lines are ignored.  Errors name the file, line and column.
 *
 *     FILE *f = fopen("/tmp/ct_doc_iris.csv", "w");
 *     fputs("\"sepal length\",petal,\"species\"\n5.1,1.4,0\n7.0,4.7,1\n", f);
 *     fclose(f);
 *     ct_dataset *iris = ct_csv_dataset("/tmp/ct_doc_iris.csv", .label_name = "species");
 *     total = ct_dataset_len(iris);                    // 2 samples: [2] features, label
 *     remove("/tmp/ct_doc_iris.csv");
 */
ct_dataset *ct_csv_dataset_with(const char *path, ct_csv_options o);
#define ct_csv_dataset(path, ...) \
    CT_AT(ct_csv_dataset_with(path, CT_OPTIONS(ct_csv_options, __VA_ARGS__)))

/* ---- samplers ---------------------------------------------------------------- */

typedef struct ct_sampler ct_sampler; /* a sampler: its class and state */

/* A sampler class: indices writes the len() dataset indices of epoch `epoch` (the
 * same epoch must give the same indices: draw from a generator seeded by it). */
typedef struct ct_sampler_class {
    const char *name; /* "RandomSampler" */
    int64_t (*len)(const ct_sampler *s); /* indices per epoch */
    int (*indices)(ct_sampler *s, uint64_t epoch, int64_t *out); /* writes len() indices; 0 or -1 */
    void (*destroy)(ct_sampler *s); /* frees what the class allocated (may be NULL) */
} ct_sampler_class;
/* A new sampler of class cls with state_size zeroed bytes of state. */
ct_sampler *ct_sampler_new(const ct_sampler_class *cls, size_t state_size);
#define ct_sampler_new(cls, state_size) CT_AT(ct_sampler_new(cls, state_size))
void *ct_sampler_state(const ct_sampler *s); /* the class's state */
#define ct_sampler_state(s) CT_AT(ct_sampler_state(s))
int64_t ct_sampler_len(const ct_sampler *s);  /* indices per epoch; -1 when s is NULL */
#define ct_sampler_len(s) CT_AT(ct_sampler_len(s))
/* sampler.set_epoch(e): the epoch ct_sampler_indices uses.  A loader passes its own
 * epoch to its sampler instead: call ct_loader_set_epoch there. */
void ct_sampler_set_epoch(ct_sampler *s, uint64_t epoch);
#define ct_sampler_set_epoch(s, epoch) CT_AT(ct_sampler_set_epoch(s, epoch))
/* The indices of the current epoch: writes min(len, max) of them, returns len or -1. */
int64_t ct_sampler_indices(ct_sampler *s, int64_t *out, int64_t max);
#define ct_sampler_indices(s, out, max) CT_AT(ct_sampler_indices(s, out, max))

/* SequentialSampler: 0, 1, ..., n - 1. */
ct_sampler *ct_sequential_sampler(int64_t n);
#define ct_sequential_sampler(n) CT_AT(ct_sequential_sampler(n))
/* Options of ct_random_sampler (RandomSampler). */
typedef struct {
    bool replacement;        /* draw with replacement */
    int64_t num_samples;     /* default n */
    ct_generator *generator; /* the base seed is drawn from it (NULL: the default one) */
} ct_random_sampler_options;
/* RandomSampler: a permutation per epoch (several when num_samples > n), or draws with
 * replacement. */
ct_sampler *ct_random_sampler_with(int64_t n, ct_random_sampler_options o);
#define ct_random_sampler(n, ...) \
    CT_AT(ct_random_sampler_with(n, CT_OPTIONS(ct_random_sampler_options, __VA_ARGS__)))
/* Options of ct_weighted_random_sampler (WeightedRandomSampler). */
typedef struct {
    bool replacement;        /* default true */
    ct_generator *generator; /* the base seed is drawn from it (NULL: the default one) */
} ct_weighted_sampler_options;
/* WeightedRandomSampler(weights, num_samples, replacement): index i with probability
 * proportional to weights[i] (a 1-D tensor, copied). */
ct_sampler *ct_weighted_random_sampler_with(ct_tensor *weights, int64_t num_samples,
                                            ct_weighted_sampler_options o);
#define ct_weighted_random_sampler(weights, num_samples, ...)                         \
    CT_AT(ct_weighted_random_sampler_with(                                             \
        weights, num_samples, CT_DEFAULTS(ct_weighted_sampler_options, .replacement = true, __VA_ARGS__)))
/* Options of ct_distributed_sampler (DistributedSampler). */
typedef struct {
    int num_replicas; /* the world size; not given (0): the process group's when it is
                       * initialised (ct_dist_init), with its rank, else 1 */
    int rank;         /* this process's rank, in [0, num_replicas); taken from the
                       * process group with num_replicas when that is not given */
    bool shuffle;     /* default true: permutation seeded by seed + epoch */
    uint64_t seed;    /* the shuffle's seed, the same on every rank */
    bool drop_last;   /* drop the tail instead of padding by repeating indices */
} ct_distributed_sampler_options;
/* DistributedSampler: rank's share (every num_replicas-th index) of the epoch's order,
 * padded to equal length on every rank. */
ct_sampler *ct_distributed_sampler_with(int64_t n, ct_distributed_sampler_options o);
#define ct_distributed_sampler(n, ...)                                                \
    CT_AT(ct_distributed_sampler_with(                                                 \
        n, CT_DEFAULTS(ct_distributed_sampler_options, .shuffle = true, __VA_ARGS__)))

/* ---- batch samplers ---------------------------------------------------------- */

typedef struct ct_batch_sampler ct_batch_sampler; /* a batch sampler: its class and state */
typedef struct ct_batch_plan ct_batch_plan;       /* an epoch's batches, as a plan() lists them */
/* A batch sampler class: plan lists the epoch's batches with ct_batch_plan_add. */
typedef struct ct_batch_sampler_class {
    const char *name; /* "BatchSampler" */
    int64_t (*len)(const ct_batch_sampler *bs); /* the number of batches */
    int (*plan)(ct_batch_sampler *bs, uint64_t epoch, ct_batch_plan *out); /* 0 or -1 */
    void (*destroy)(ct_batch_sampler *bs); /* frees what the class allocated (may be NULL) */
} ct_batch_sampler_class;
/* A new batch sampler of class cls with state_size zeroed bytes of state. */
ct_batch_sampler *ct_batch_sampler_new(const ct_batch_sampler_class *cls, size_t state_size);
#define ct_batch_sampler_new(cls, state_size) CT_AT(ct_batch_sampler_new(cls, state_size))
void *ct_batch_sampler_state(const ct_batch_sampler *bs); /* the class's state */
#define ct_batch_sampler_state(bs) CT_AT(ct_batch_sampler_state(bs))
int64_t ct_batch_sampler_len(const ct_batch_sampler *bs);  /* batches per epoch; -1 when NULL */
#define ct_batch_sampler_len(bs) CT_AT(ct_batch_sampler_len(bs))
/* Appends a batch of n dataset indices to the plan; 0 or -1. */
int ct_batch_plan_add(ct_batch_plan *plan, int64_t n, const int64_t *indices);
#define ct_batch_plan_add(plan, n, indices) CT_AT(ct_batch_plan_add(plan, n, indices))
/* BatchSampler(sampler, batch_size, drop_last): the sampler's indices in batches. */
ct_batch_sampler *ct_batch_sampler_from(ct_sampler *s, int64_t batch_size, bool drop_last);
#define ct_batch_sampler_from(s, batch_size, drop_last) \
    CT_AT(ct_batch_sampler_from(s, batch_size, drop_last))

/* ---- the loader --------------------------------------------------------------- */

/* One thread calls ct_loader_next; worker threads each run their ops on one intra-op
 * thread (as PyTorch's workers do) and keep up to prefetch_factor * num_workers
 * finished batches ready, so the caller only waits when they fall behind. */

typedef struct ct_loader ct_loader; /* a DataLoader */

/* Stacks n samples into out (in a worker thread, inside a scope: run ops as usual);
 * 0 or -1 with an error. */
typedef int (*ct_collate_fn)(int n, const ct_sample *samples, ct_batch *out, void *ctx);
/* default_collate: out->t[k] = stack(samples[*].t[k]) ([B, ...]; labels [B]). */
int ct_default_collate(int n, const ct_sample *samples, ct_batch *out, void *ctx);
#define ct_default_collate(n, samples, out, ctx) CT_AT(ct_default_collate(n, samples, out, ctx))

/* Options of ct_dataloader (DataLoader). */
typedef struct {
    int64_t batch_size;   /* default 1 */
    bool shuffle;         /* a new order every epoch */
    ct_sampler *sampler;  /* instead of shuffle */
    ct_batch_sampler *batch_sampler; /* instead of batch_size, shuffle, sampler, drop_last */
    int num_workers;      /* loader threads; 0 loads in the calling thread */
    int prefetch_factor;  /* batches in flight per worker (default 2) */
    bool persistent_workers; /* keep the worker threads between epochs (num_workers > 0);
                                the batches are the same either way */
    bool drop_last;       /* drop the last incomplete batch */
    bool pin_memory;      /* accepted; nothing to do without CUDA */
    double timeout;       /* seconds to wait for a batch (0: forever; workers only) */
    ct_collate_fn collate; /* default ct_default_collate */
    void *collate_ctx;     /* passed to collate */
    ct_generator *generator; /* the base seed is drawn from it (NULL: the default one) */
} ct_loader_options;
/* DataLoader(ds, ...): reference counted; releasing it mid-epoch stops its threads. */
ct_loader *ct_dataloader_with(ct_dataset *ds, ct_loader_options o);
#define ct_dataloader(ds, ...) CT_AT(ct_dataloader_with(ds, CT_OPTIONS(ct_loader_options, __VA_ARGS__)))
/* The next batch of the epoch (its tensors registered with the innermost scope): true,
 * or false at the end of the epoch (the next call starts the next one) or on an error
 * (ct_last_error(); the epoch is abandoned).  Batches come in the sampler's order. */
bool ct_loader_next(ct_loader *l, ct_batch *out);
#define ct_loader_next(l, out) CT_AT(ct_loader_next(l, out))
/* len(loader): batches per epoch. */
int64_t ct_loader_len(const ct_loader *l);
#define ct_loader_len(l) CT_AT(ct_loader_len(l))
/* The number of the epoch in progress, or of the next one (counts from 0). */
uint64_t ct_loader_epoch(const ct_loader *l);
#define ct_loader_epoch(l) CT_AT(ct_loader_epoch(l))
/* Makes the next epoch number `epoch` (abandons an epoch in progress). */
void ct_loader_set_epoch(ct_loader *l, uint64_t epoch);
#define ct_loader_set_epoch(l, epoch) CT_AT(ct_loader_set_epoch(l, epoch))
/* Abandons the epoch in progress: the next ct_loader_next starts it again. */
void ct_loader_reset(ct_loader *l);
#define ct_loader_reset(l) CT_AT(ct_loader_reset(l))
/* torch.utils.data.get_worker_info().id: the loader worker running this code, or -1. */
int ct_loader_worker_id(void);
#define ct_loader_worker_id(...) CT_AT(ct_loader_worker_id(__VA_ARGS__))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
