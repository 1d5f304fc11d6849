/* ctorch/tensorboard.h — TensorBoard event files (torch.utils.tensorboard.SummaryWriter).
 *
 * A writer logs scalars, histograms, images, text, hyperparameters and a traced graph
 * into one new file events.out.tfevents.<time>.<host>.<pid>.<n><suffix> in its log
 * directory, which TensorBoard reads (`tensorboard --logdir runs`):
 *
 *     ct_summary_writer *w = ct_summary_writer("/tmp/ct_tb_doc/exp1");
 *     for (int step = 0; step < 3; step++)
 *         ct_tb_add_scalar(w, "loss/train", 1.0 / (step + 1), step);
 *     ct_tensor *weights = ct_randn(CT_SHAPE(100));
 *     ct_tb_add_histogram(w, "fc1.weight", weights, 2);
 *     ct_tensor *img = ct_rand(CT_SHAPE(3, 8, 8));       // CHW, floats in [0, 1]
 *     ct_tb_add_image(w, "sample", img, 2);
 *     ct_tb_add_text(w, "notes", "lr *0.1*", 0);
 *     ct_summary_writer_close(w);                        // flushes, frees
 *
 * The file is TensorBoard's TFRecord framing of Event protobufs (each record: its
 * length as uint64 little-endian, the masked CRC-32C of those 8 bytes, the Event, the
 * masked CRC-32C of the Event); the first record holds file_version "brain.Event:2".
 * Each method writes the Event fields PyTorch 1.13's writer writes for the same call:
 * the same tags ("notes/text_summary"), plugin names and metadata, histogram buckets
 * and PNG pixels.  Records are buffered in memory and written at ct_summary_writer_flush,
 * at close, and by the first add after flush_secs since the last write (no thread), so
 * logging every step costs no system call.  Every add returns 0, or -1 with an error
 * (a bad tensor, or a failed write: an I/O error surfaces at the call that hit it).
 * A writer is used by one thread at a time.
 */
#ifndef CTORCH_TENSORBOARD_H
#define CTORCH_TENSORBOARD_H

#include <stdbool.h>
#include <stdint.h>

#include "jit.h"
#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* An event file writer (SummaryWriter); ct_summary_writer_close frees it. */
typedef struct ct_summary_writer ct_summary_writer;

/* Options of ct_summary_writer (SummaryWriter's keyword arguments). */
typedef struct {
    double flush_secs;           /* write the buffer at the first add this long after the last write; 0: 5 (PyTorch: 120) */
    const char *filename_suffix; /* appended to the file's name; NULL: none */
    const char *comment;         /* with no log_dir: appended to the default name */
} ct_summary_writer_options;

/* Creates log_dir (and its parents, as mkdir -p) and a new event file in it, holding
 * the file_version record already written.  log_dir NULL: "runs/<Mon><DD>_<HH>-<MM>-<SS>_<host><comment>",
 * as PyTorch.  NULL with an error when the directory or file cannot be made. */
ct_summary_writer *ct_summary_writer_with(const char *log_dir, ct_summary_writer_options o);
#define ct_summary_writer(log_dir, ...) \
    CT_AT(ct_summary_writer_with(log_dir, CT_OPTIONS(ct_summary_writer_options, __VA_ARGS__)))

/* The writer's log directory, and the path of its event file. */
const char *ct_summary_writer_log_dir(const ct_summary_writer *w);
#define ct_summary_writer_log_dir(w) CT_AT(ct_summary_writer_log_dir(w))
const char *ct_summary_writer_file(const ct_summary_writer *w);
#define ct_summary_writer_file(w) CT_AT(ct_summary_writer_file(w))

/* Writes the buffered records of w (and of the writers add_scalars made) to disk.
 * 0, or -1 with an error. */
int ct_summary_writer_flush(ct_summary_writer *w);
#define ct_summary_writer_flush(w) CT_AT(ct_summary_writer_flush(w))
/* Flushes, closes the files and frees w (NULL: nothing).  0, or -1 with an error when
 * the last write failed; w is freed either way. */
int ct_summary_writer_close(ct_summary_writer *w);
#define ct_summary_writer_close(w) CT_AT(ct_summary_writer_close(w))

/* Options of the add functions. */
typedef struct {
    double walltime; /* the event's wall time, seconds since the epoch; 0: now */
} ct_tb_options;

/* add_scalar(tag, value, global_step): Summary.Value{tag, simple_value (float32)}. */
int ct_tb_add_scalar_with(ct_summary_writer *w, const char *tag, double value, int64_t step,
                       ct_tb_options o);
#define ct_tb_add_scalar(w, tag, value, step, ...) \
    CT_AT(ct_tb_add_scalar_with(w, tag, value, step, CT_OPTIONS(ct_tb_options, __VA_ARGS__)))

/* add_scalars(main_tag, {tags[i]: values[i]}, global_step): as PyTorch, each value goes
 * to a writer of its own in <log_dir>/<main_tag with '/' as '_'>_<tags[i]>, under the
 * tag main_tag, so TensorBoard draws the n curves in one chart. */
int ct_tb_add_scalars_with(ct_summary_writer *w, const char *main_tag, const char *const *tags,
                        const double *values, int n, int64_t step, ct_tb_options o);
#define ct_tb_add_scalars(w, main_tag, tags, values, n, step, ...)             \
    CT_AT(ct_tb_add_scalars_with(w, main_tag, tags, values, n, step,           \
                              CT_OPTIONS(ct_tb_options, __VA_ARGS__)))

/* add_histogram(tag, values, global_step) with bins='tensorflow': the tensor's values
 * (any shape, dtype and device; at least one, all finite) counted into TensorBoard's
 * buckets (edges ±1e-12 * 1.1^k up to 1e20, and 0), trimmed to the values' support
 * with one empty bucket on the left, with min, max, num, sum and sum_squares. */
int ct_tb_add_histogram_with(ct_summary_writer *w, const char *tag, ct_tensor *values, int64_t step,
                          ct_tb_options o);
#define ct_tb_add_histogram(w, tag, values, step, ...) \
    CT_AT(ct_tb_add_histogram_with(w, tag, values, step, CT_OPTIONS(ct_tb_options, __VA_ARGS__)))

/* Options of ct_tb_add_image and ct_tb_add_images. */
typedef struct {
    double walltime;         /* the event's wall time; 0: now */
    const char *dataformats; /* "CHW", "HWC" or "HW" for add_image (NULL: "CHW"); "NCHW" or "NHWC" for add_images (NULL: "NCHW") */
} ct_tb_image_options;

/* add_image(tag, img, global_step, dataformats): a uint8 tensor as it is, any other
 * dtype as floats in [0, 1] scaled by 255 (and truncated, as PyTorch; values outside
 * [0, 1] are clipped), with 1 (grey, written as RGB like PyTorch), 3 (RGB) or 4 (RGBA)
 * channels, encoded as PNG (libpng) in Summary.Image. */
int ct_tb_add_image_with(ct_summary_writer *w, const char *tag, ct_tensor *img, int64_t step,
                      ct_tb_image_options o);
#define ct_tb_add_image(w, tag, img, step, ...) \
    CT_AT(ct_tb_add_image_with(w, tag, img, step, CT_OPTIONS(ct_tb_image_options, __VA_ARGS__)))

/* add_images(tag, imgs, global_step): a batch of N images with 1 or 3 channels laid
 * out as PyTorch's grid, 8 per row (fewer when N < 8), no padding, as one image. */
int ct_tb_add_images_with(ct_summary_writer *w, const char *tag, ct_tensor *imgs, int64_t step,
                       ct_tb_image_options o);
#define ct_tb_add_images(w, tag, imgs, step, ...) \
    CT_AT(ct_tb_add_images_with(w, tag, imgs, step, CT_OPTIONS(ct_tb_image_options, __VA_ARGS__)))

/* add_text(tag, text, global_step): the text plugin's string tensor under the tag
 * "<tag>/text_summary" (TensorBoard renders it as markdown). */
int ct_tb_add_text_with(ct_summary_writer *w, const char *tag, const char *text, int64_t step,
                     ct_tb_options o);
#define ct_tb_add_text(w, tag, text, step, ...) \
    CT_AT(ct_tb_add_text_with(w, tag, text, step, CT_OPTIONS(ct_tb_options, __VA_ARGS__)))

/* Which value a ct_tb_hparam holds. */
typedef enum { CT_TB_HPARAM_NUMBER, CT_TB_HPARAM_STRING, CT_TB_HPARAM_BOOL } ct_tb_hparam_kind;
/* One hyperparameter of ct_tb_add_hparams: a number, a string or a bool. */
typedef struct {
    const char *name;    /* the hyperparameter's name */
    ct_tb_hparam_kind kind; /* which of the values below it is */
    double number;       /* CT_TB_HPARAM_NUMBER */
    const char *string;  /* CT_TB_HPARAM_STRING */
    bool boolean;        /* CT_TB_HPARAM_BOOL */
} ct_tb_hparam;
/* Initializers of ct_tb_hparam entries: {CT_TB_HPARAM_NUM("lr", 0.1), CT_TB_HPARAM_STR("opt", "sgd")}.
 * A bool is written as a bool (PyTorch's add_hparams turns Python's True into 1.0). */
#define CT_TB_HPARAM_NUM(name, v) {(name), CT_TB_HPARAM_NUMBER, (v), NULL, false}
/* A string hyperparameter (see CT_TB_HPARAM_NUM). */
#define CT_TB_HPARAM_STR(name, v) {(name), CT_TB_HPARAM_STRING, 0, (v), false}
/* A bool hyperparameter (see CT_TB_HPARAM_NUM). */
#define CT_TB_HPARAM_BOOL(name, v) {(name), CT_TB_HPARAM_BOOL, 0, NULL, (v)}

/* Options of ct_tb_add_hparams. */
typedef struct {
    const char *run_name; /* the run's directory under log_dir; NULL: the current time, as PyTorch */
} ct_tb_hparams_options;

/* add_hparams(hparam_dict, metric_dict): in a new writer in <log_dir>/<run_name>, the
 * hparams plugin's three summaries (experiment with the hyperparameters' names and
 * types and the metrics' tags, session start info with the values, session end info
 * with STATUS_SUCCESS), then each metric as a scalar at step 0. */
int ct_tb_add_hparams_with(ct_summary_writer *w, const ct_tb_hparam *hparams, int n_hparams,
                        const char *const *metric_tags, const double *metric_values, int n_metrics,
                        ct_tb_hparams_options o);
#define ct_tb_add_hparams(w, hparams, n_hparams, metric_tags, metric_values, n_metrics, ...)  \
    CT_AT(ct_tb_add_hparams_with(w, hparams, n_hparams, metric_tags, metric_values, n_metrics, \
                              CT_OPTIONS(ct_tb_hparams_options, __VA_ARGS__)))

/* add_graph: the traced graph g (ct_trace, ctorch/jit.h) as a GraphDef in Event.graph_def:
 * one NodeDef per input ("input/<name>", op "IO Node"), parameter and constant, and one
 * per op ("<op>_<n>", op "aten::<op>") reading its inputs' nodes, each with its output
 * shape in the attr "_output_shapes". */
int ct_tb_add_graph(ct_summary_writer *w, const ct_graph *g);
#define ct_tb_add_graph(w, g) CT_AT(ct_tb_add_graph(w, g))

#ifdef __cplusplus
}
#endif

CT_API_END
#endif
