/* ctorch/serialize.h — safetensors files and training checkpoints.
 *
 * State dicts are saved in the safetensors format (an 8-byte little-endian header
 * length, a JSON header naming each tensor's dtype, shape and byte range, then the
 * raw little-endian data), so the files open with the safetensors ecosystem, and
 * PyTorch's `safetensors.torch.load_file` reads back the same keys.
 *
 * A training checkpoint is one such file holding the model ("model.*"), optimizer
 * ("optim.*"), scheduler ("sched.*") and gradient scaler ("scaler.*") state, the
 * default generator's state, and
 * the epoch, step and run configuration as metadata.  Files are written atomically:
 * a temporary file is written, flushed to disk and renamed over the target, so a
 * crash mid-write leaves the previous file intact.  The temporary is named
 * <target>.tmp-<pid>-<n>; each save removes the temporaries in its directory whose
 * writer process no longer exists (a writer killed mid-write leaves its temporary).
 */
#ifndef CTORCH_SERIALIZE_H
#define CTORCH_SERIALIZE_H

#include "grad_scaler.h"
#include "lr_scheduler.h"
#include "state_dict.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* ---- safetensors -------------------------------------------------------- */

/* Up to 32 string pairs stored in the header's "__metadata__". */
#define CT_METADATA_MAX 32
/* String pairs of a safetensors header's "__metadata__". */
typedef struct {
    int n;                               /* how many pairs */
    const char *keys[CT_METADATA_MAX];   /* the names */
    const char *values[CT_METADATA_MAX]; /* their values */
} ct_metadata;

/* Writes sd (tensors in any dtype; non-contiguous ones are copied) atomically, with
 * ctorch's checksum extension: "__metadata__" holds "ctorch.crc32", the CRC-32
 * (zlib's crc32) of each tensor's data bytes as 8 hex digits, space-separated, in the
 * order of the data offsets; other readers ignore it.  Returns 0 or -1 with an error
 * naming the path and what failed. */
int ct_save_safetensors(const ct_state_dict *sd, const char *path, const ct_metadata *metadata);
#define ct_save_safetensors(sd, path, metadata) CT_AT(ct_save_safetensors(sd, path, metadata))

/* Options of ct_load_safetensors and ct_safetensors_from_buffer. */
typedef struct {
    ct_device map_location;  /* load onto this device (default: cpu) */
    ct_metadata *metadata;   /* filled when given; strings live until ct_metadata_free */
} ct_load_file_options;
/* Reads a safetensors file into a new state dict.  A malformed, truncated or hostile
 * file (header length beyond the file, offsets out of range or overlapping, unknown
 * dtypes, invalid UTF-8 or JSON, a tensor whose data fails its "ctorch.crc32"
 * checksum, a PyTorch zip archive, ...) gives NULL and an error naming the file, never
 * a crash.  Files without checksums load as before; the checksum key is not copied
 * into the returned metadata. */
ct_state_dict *ct_load_safetensors_with(const char *path, ct_load_file_options o);
#define ct_load_safetensors(path, ...) \
    CT_AT(ct_load_safetensors_with(path, CT_OPTIONS(ct_load_file_options, __VA_ARGS__)))
/* The same from a buffer in memory (for embedding and fuzzing). */
ct_state_dict *ct_safetensors_from_buffer(const void *data, size_t size, ct_load_file_options o);
#define ct_safetensors_from_buffer(...) CT_AT(ct_safetensors_from_buffer(__VA_ARGS__))
void ct_metadata_free(ct_metadata *m); /* frees the strings a load filled m with */
#define ct_metadata_free(m) CT_AT(ct_metadata_free(m))

/* ---- training checkpoints ---------------------------------------------- */

/* What a training checkpoint holds. */
typedef struct {
    ct_module *model;     /* required */
    ct_optim *optim;      /* optional */
    ct_scheduler *sched;  /* optional */
    int64_t epoch;        /* the epoch completed */
    int64_t step;         /* the optimizer steps taken */
    double metric;        /* e.g. the validation accuracy, for keeping the best */
    const char *config;   /* the run's configuration (JSON text), optional */
    ct_grad_scaler *scaler; /* optional: the loss scaler of mixed-precision training */
} ct_training_state;

/* Saves everything in st, plus the default generator's state, into path. */
int ct_checkpoint_save(const char *path, const ct_training_state *st);
#define ct_checkpoint_save(path, st) CT_AT(ct_checkpoint_save(path, st))
/* Restores into st's model/optim/sched (which must be built like the saved ones), the
 * default generator, and st->epoch / step / metric.  If config_out is given it
 * receives a malloc'd copy of the saved config (or NULL).  Returns 0 or -1.
 * All or nothing: every part is checked before any is changed.  A damaged file is an
 * error naming the key: NaN or infinite weights or optimizer state, an optimizer step
 * or scheduler counter that is not an integer in range, an epoch that is not a
 * decimal integer from 0 to 2^31 - 2 (so that epoch + 1 fits an int), a step not one
 * from 0 to 2^53, a tensor failing its checksum, a scaler entry out of range (a NaN
 * or negative scale: ct_grad_scaler_load_state_dict's checks), or no scaler state
 * when st->scaler is given and enabled. */
int ct_checkpoint_load(const char *path, ct_training_state *st, char **config_out);
#define ct_checkpoint_load(path, st, config_out) CT_AT(ct_checkpoint_load(path, st, config_out))

/* Keeps the last `keep_last` checkpoints of a run in dir (ckpt-<epoch>.safetensors)
 * plus best.safetensors, the one with the highest (or lowest) metric so far. */
typedef struct {
    int keep_last;   /* default 3 */
    bool lower_is_better; /* the best metric is the lowest (a loss), not the highest */
} ct_checkpoint_policy;
/* Saves st as dir/ckpt-<epoch>.safetensors, deletes checkpoints older than the last
 * keep_last, and updates dir/best.safetensors when st->metric is the best yet
 * (judged against the best file's saved metric).  Returns 1 when it became the
 * best, 0 when not, -1 on error. */
int ct_checkpoint_keep(const char *dir, const ct_training_state *st, ct_checkpoint_policy p);
#define ct_checkpoint_keep(...) CT_AT(ct_checkpoint_keep(__VA_ARGS__))
/* The metric saved in dir/best.safetensors into *metric (to resume a run's notion of
 * its best); 0, or -1: with no error when there is no best file yet, with one when it
 * cannot be read or has no metric. */
int ct_checkpoint_best_metric(const char *dir, double *metric);
#define ct_checkpoint_best_metric(dir, metric) CT_AT(ct_checkpoint_best_metric(dir, metric))
/* The newest dir/ckpt-*.safetensors written by ct_checkpoint_keep, into path_out
 * (size bytes); 0, or -1 when there is none. */
int ct_checkpoint_latest(const char *dir, char *path_out, size_t size);
#define ct_checkpoint_latest(dir, path_out, size) CT_AT(ct_checkpoint_latest(dir, path_out, size))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
