/* The main job: a CNN trained on Fashion-MNIST (Debian's dataset-fashion-mnist), as a
 * PyTorch tutorial would write it.  `fashion_mnist --help` lists the flags.
 *
 * Each epoch trains with Adam, shows a progress bar on stderr (plain lines when stderr
 * is not a terminal), evaluates on the test set in eval mode under no_grad, and keeps
 * the last checkpoints and the best one in --out, with the run's configuration as
 * config.json beside them (written with the first checkpoint, so a run that fails
 * before one leaves nothing behind).  A new run refuses an --out that holds an earlier
 * run's checkpoints unless --overwrite says to delete them (mixing runs would judge
 * the new best against the old one).
 *
 * --resume continues a run exactly where its checkpoint left it: the checkpoint fixes
 * the hyper-parameters that decide the numbers (lr, batch size, seed, limit), and the
 * program says which flags it overrides.  Ctrl-C finishes the current batch, saves
 * the partial epoch as interrupted.safetensors (--resume latest picks it) and exits
 * with status 130; a resumed run skips the epoch's batches already trained, so it ends
 * with the same weights as a run never interrupted.  A second Ctrl-C quits at once.
 *
 * --ddp trains data-parallel on the processes mpirun started (torchrun's job):
 *
 *     mpirun -np 2 -x OMP_NUM_THREADS=1 fashion_mnist --ddp --batch-size 32
 *
 * Every rank trains the DDP-wrapped model on its DistributedSampler share of each
 * epoch (--batch-size is per rank: the global batch is world size times it), and
 * evaluates its share of the test set, the counts summed over the ranks.  Rank 0 alone
 * prints, shows the progress bar and writes --out; every rank loads the checkpoint it
 * saved on --resume, which needs the world size the run was trained with (config.json
 * records it).  mpirun answers Ctrl-C by sending SIGTERM to every rank a second later
 * (SIGKILL one more second after): the ranks take it, or SIGUSR1 (`kill -USR1` to
 * mpirun, which forwards it), as Ctrl-C, and agree on the batch after which they stop.
 *
 * --amp bf16 (or f16) trains in mixed precision: the forward and the loss run in an
 * autocast region (torch.autocast), evaluation too; float16 adds the gradient scaler
 * (GradScaler: scale(loss), backward, step, update), whose state the checkpoints keep.
 * bfloat16 has float32's range and needs no scaler.  The mode decides the numbers, so
 * config.json records it and a resumed run takes it from the checkpoint. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli_options.h"
#include "common/interrupt.h"
#include "common/progress.h"
#include "common/tensorboard_log.h"
#include "ctorch.h"

typedef struct {
    int epochs, workers, threads;
    int64_t batch_size, limit, test_limit;
    double lr, min_accuracy;
    uint64_t seed;
    const char *out, *resume, *data, *amp, *tensorboard;
    int profile;
    bool overwrite, ddp;
} config;

static const char SUMMARY[] =
    "Trains a CNN on Fashion-MNIST with Adam, keeping checkpoints and config.json in --out.\n"
    "Ctrl-C saves the partial epoch (exit status 130); --resume latest continues it.\n"
    "--ddp trains data-parallel under mpirun: mpirun -np 2 -x OMP_NUM_THREADS=1 fashion_mnist --ddp\n"
    "(--batch-size per process; rank 0 prints and saves; --resume needs the same -np).\n"
    "--amp bf16 trains in mixed precision (autocast); --amp f16 adds the gradient scaler.";

/* The flags whose values decide the numbers a run computes: a resumed run takes them
 * from its checkpoint's config (the others, like --epochs, may change on resume). */
static const char *const FIXED_BY_CHECKPOINT[] = {"lr", "batch-size", "seed", "limit"};
#define N_FIXED (int)(sizeof FIXED_BY_CHECKPOINT / sizeof *FIXED_BY_CHECKPOINT)

#define INTERRUPTED_NAME "interrupted.safetensors"

/* ---- the run's configuration as JSON ----------------------------------------- */

/* The flags recorded in config.json: every number, keyed by the flag's name with '_'
 * for '-' ("batch_size"). */
static void json_key(char *buf, size_t size, const char *flag) {
    snprintf(buf, size, "%s", flag);
    for (char *p = buf; *p; p++)
        if (*p == '-') *p = '_';
}

static void config_json(const cli_option *opts, int n, char *json, size_t size) {
    size_t len = (size_t)snprintf(
        json, size,
        "{\"model\": \"conv(1,32,3,p1)-relu-maxpool2-conv(32,64,3,p1)-relu-maxpool2-flatten-"
        "linear(3136,128)-relu-linear(128,10)\", \"optimizer\": \"Adam\", "
        "\"dataset\": \"Fashion-MNIST\"");
    for (int i = 0; i < n && len < size; i++) {
        if (opts[i].kind == CLI_FLAG || opts[i].kind == CLI_STRING) continue;
        if (!strcmp(opts[i].name, "profile")) continue; /* watching decides no number */
        char key[64], value[64];
        json_key(key, sizeof key, opts[i].name);
        cli_format_value(&opts[i], value, sizeof value);
        len += (size_t)snprintf(json + len, size - len, ", \"%s\": %s", key, value);
    }
    if (len < size) snprintf(json + len, size - len, "}");
}

/* The text of key's value (a number) in a flat JSON object written by config_json, or
 * false when the key is not there. */
static bool config_value(const char *json, const char *key, char *out, size_t size) {
    char pattern[80];
    snprintf(pattern, sizeof pattern, "\"%s\": ", key);
    const char *at = json ? strstr(json, pattern) : NULL;
    if (!at) return false;
    at += strlen(pattern);
    size_t n = strcspn(at, ",}");
    if (n == 0 || n >= size) return false;
    memcpy(out, at, n);
    out[n] = 0;
    return true;
}

static bool config_int64(const char *json, const char *key, int64_t *v) {
    char text[64], *end;
    if (!config_value(json, key, text, sizeof text)) return false;
    *v = strtoll(text, &end, 10);
    return *end == 0;
}

/* ---- mixed precision (--amp) ------------------------------------------------------ */

/* Whether mode is one --amp takes. */
static bool amp_valid(const char *mode) {
    return !strcmp(mode, "off") || !strcmp(mode, "bf16") || !strcmp(mode, "f16");
}

static bool amp_on(const char *mode) { return strcmp(mode, "off") != 0; }

/* The autocast dtype of an --amp mode that is on. */
static ct_dtype amp_dtype(const char *mode) { return strcmp(mode, "f16") ? CT_BF16 : CT_F16; }

/* float16's narrow range needs loss scaling; bfloat16 has float32's. */
static bool amp_scales(const char *mode) { return !strcmp(mode, "f16"); }

/* The --amp mode a checkpoint's config records ("off" when it records none: runs
 * without --amp leave their config as it always was). */
static const char *saved_amp(const char *saved) {
    char text[16];
    if (!config_value(saved, "amp", text, sizeof text)) return "off";
    return !strcmp(text, "\"bf16\"") ? "bf16" : !strcmp(text, "\"f16\"") ? "f16" : "?";
}

/* The loss scaler an --amp mode trains with (NULL: none). */
static ct_grad_scaler *make_scaler(const char *mode) {
    return amp_scales(mode) ? ct_grad_scaler() : NULL;
}

/* Takes the hyper-parameters the checkpoint fixes from its config, saying which flags
 * it overrides.  0, or -1 when the config holds a value the flag would refuse. */
static int apply_checkpoint_config(const char *prog, const char *saved, cli_option *opts, int n) {
    for (int i = 0; i < N_FIXED; i++) {
        cli_option *o = cli_find(opts, n, FIXED_BY_CHECKPOINT[i]);
        char key[64], text[64], was[64], now[64];
        json_key(key, sizeof key, o->name);
        if (!config_value(saved, key, text, sizeof text)) continue;
        cli_format_value(o, was, sizeof was);
        if (cli_parse_value(prog, o, text) != 0) {
            fprintf(stderr, "%s: the checkpoint's config holds %s %s\n", prog, key, text);
            return -1;
        }
        cli_format_value(o, now, sizeof now);
        if (strcmp(was, now) && o->given)
            printf("resume: --%s %s is overridden by the checkpoint's %s\n", o->name, was, text);
        else if (strcmp(was, now))
            printf("resume: --%s %s from the checkpoint\n", o->name, text);
    }
    return 0;
}

/* ---- files -------------------------------------------------------------------- */

/* mkdir -p */
static int mkdir_p(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0755);
            *p = '/';
        }
    return mkdir(buf, 0755) == 0 || access(buf, W_OK) == 0 ? 0 : -1;
}

/* Counts dir's checkpoint files (ckpt-*.safetensors, best.safetensors and
 * interrupted.safetensors), deleting them when remove is set. */
static int checkpoint_files(const char *dir, bool remove) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    char path[4352];
    while ((e = readdir(d))) {
        const char *name = e->d_name, *ext = strrchr(name, '.');
        if (!ext || strcmp(ext, ".safetensors") ||
            (strncmp(name, "ckpt-", 5) && strcmp(name, "best.safetensors") &&
             strcmp(name, INTERRUPTED_NAME)))
            continue;
        n++;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (remove) unlink(path);
    }
    closedir(d);
    return n;
}

/* path gets text plus a newline, or keeps its old contents if anything fails.  The
 * temporary's name follows the library's (<path>.tmp-<pid>-<n>), so the next
 * checkpoint saved in the directory removes it if this process is killed meanwhile. */
static int write_text_atomically(const char *path, const char *text) {
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld-0", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    bool ok = fprintf(f, "%s\n", text) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) == 0) return 0;
    unlink(tmp);
    return -1;
}

/* ---- data parallelism (--ddp) ---------------------------------------------------- */

/* Whether this process is one rank of several (--ddp under mpirun -np N, N > 1). */
static bool distributed(void) { return ct_dist_is_initialized() && ct_dist_world_size() > 1; }

/* v[0..n) becomes its sum over the ranks, the same bits on every rank (nothing to do
 * in a single process).  0, or -1 with ct_last_error(). */
static int sum_over_ranks(double *v, int n) {
    if (!distributed()) return 0;
    int rc = -1;
    CT_SCOPE {
        ct_tensor *t = ct_tensor_f64(v, CT_SHAPE(n));
        if (!t || ct_dist_all_reduce(t) != 0) break;
        memcpy(v, ct_data_ptr(t), sizeof *v * (size_t)n);
        rc = 0;
    }
    return rc;
}

/* Whether ok holds on every rank: the ranks of a run take each decision that may fail
 * on one of them together (one leaving alone would hang the others' next collective). */
static bool all_ranks(bool ok) {
    double failed = !ok;
    return sum_over_ranks(&failed, 1) == 0 && failed == 0;
}

/* Whether Ctrl-C came to any rank. */
static bool any_rank_interrupted(void) { return !all_ranks(!interrupt_requested()); }

/* The world size a checkpoint's config records ("world_size", written by --ddp runs
 * only: 0 for a run without --ddp). */
static int64_t saved_world_size(const char *saved) {
    int64_t world = 0;
    return config_int64(saved, "world_size", &world) ? world : 0;
}

/* Rank r's share of ds for evaluation: samples r, r + world, ...  (every sample once,
 * unlike DistributedSampler, which pads). */
static ct_dataset *shard(ct_dataset *ds, int rank, int world) {
    int64_t n = ct_dataset_len(ds), k = (n - rank + world - 1) / world;
    int64_t *idx = malloc(sizeof *idx * (size_t)(k > 0 ? k : 1));
    if (!idx) return NULL;
    for (int64_t i = 0; i < k; i++) idx[i] = rank + i * world;
    ds = ct_subset(ds, idx, k);
    free(idx);
    return ds;
}

/* ---- the model and the data ------------------------------------------------------ */

static ct_module *make_model(void) {
    return ct_sequential(CT_MODULES(ct_nn_conv2d(1, 32, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)),
                                    ct_nn_conv2d(32, 64, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_flatten(),
                                    ct_nn_linear(3136, 128), ct_nn_relu(), ct_nn_linear(128, 10)));
}

/* Fashion-MNIST as floats normalised with the training set's mean and std (NULL with
 * ct_last_error() when the files cannot be read). */
#define DATA_MEAN 0.2860 /* the training images' mean and std */
#define DATA_STD 0.3530

static ct_dataset *make_dataset(const config *c, bool train, int64_t limit) {
    const double mean = DATA_MEAN, std = DATA_STD;
    ct_transform *tf =
        ct_tf_compose(2, (ct_transform *[]){ct_tf_to_float(), ct_tf_normalize(1, &mean, &std)});
    ct_dataset *ds = ct_fashion_mnist(.root = c->data, .train = train, .transform = tf);
    if (ds && limit > 0 && limit < ct_dataset_len(ds)) {
        int64_t *idx = malloc(sizeof *idx * (size_t)limit);
        if (!idx) return NULL;
        for (int64_t i = 0; i < limit; i++) idx[i] = i;
        ds = ct_subset(ds, idx, limit);
        free(idx);
    }
    return ds;
}

/* Misclassified test images kept for TensorBoard (--tensorboard): buf NULL when off. */
typedef struct {
    ct_tensor *buf;
    int64_t count;
} misclassified;

static double evaluate(ct_module *model, ct_loader *test, const char *amp, double *loss_out,
                       misclassified *mis) {
    int64_t correct = 0, seen = 0;
    double loss = 0;
    ct_module_eval(model);
    CT_NO_GRAD {
        ct_batch b;
        while (true) {
            CT_SCOPE_HERE;
            if (!ct_loader_next(test, &b)) break;
            ct_tensor *logits = NULL;
            CT_AUTOCAST(.dtype = amp_dtype(amp), .enabled = amp_on(amp)) {
                logits = ct_forward(model, b.t[0]);
            }
            loss += ct_item(ct_cross_entropy(logits, b.t[1], .reduction = CT_REDUCTION_SUM));
            if (mis->buf) tb_collect_misclassified(mis->buf, &mis->count, b.t[0], logits, b.t[1]);
            correct += ct_item_int(ct_sum(ct_eq(ct_argmax(logits, .dims = CT_DIMS(1)), b.t[1])));
            seen += b.size;
        }
    }
    ct_module_train(model, true);
    if (distributed()) {
        double sums[3] = {loss, (double)correct, (double)seen};
        if (sum_over_ranks(sums, 3) != 0) sums[2] = 0; /* the error is ct_last_error() */
        loss = sums[0];
        correct = (int64_t)sums[1];
        seen = (int64_t)sums[2];
    }
    *loss_out = seen ? loss / (double)seen : NAN;
    return seen ? (double)correct / (double)seen : 0;
}

/* ---- the run --------------------------------------------------------------------- */

/* Where an epoch stands: batches and samples trained, and their summed loss. */
typedef struct {
    int epoch;
    int64_t batches, samples, loss_n;
    double loss_sum;
    int64_t correct, seen; /* with --tensorboard: the batches this process trained now */
} epoch_progress;

typedef struct {
    const config *c;
    const char *json;     /* the configuration, as config.json records it */
    bool saved_before;    /* config.json is written (and --overwrite applied) */
} run_files;

/* Before the run's first checkpoint: --overwrite's deletions and config.json. */
static int prepare_first_save(run_files *rf) {
    if (rf->saved_before) return 0;
    if (rf->c->overwrite && !rf->c->resume) checkpoint_files(rf->c->out, true);
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", rf->c->out);
    if (write_text_atomically(path, rf->json) != 0) {
        fprintf(stderr, "fashion_mnist: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    rf->saved_before = true;
    return 0;
}

/* Saves the partial epoch ep as --out/interrupted.safetensors: st.epoch stays the last
 * complete epoch, and the config gets where epoch ep stands. */
static int save_interrupted(run_files *rf, ct_training_state st, const epoch_progress *ep,
                            char *path, size_t size) {
    if (prepare_first_save(rf) != 0) return -1;
    char json[2048];
    size_t len = strlen(rf->json) - 1; /* without its closing brace */
    snprintf(json, sizeof json,
             "%.*s, \"interrupted_epoch\": %d, \"interrupted_batches\": %lld, "
             "\"interrupted_samples\": %lld, \"interrupted_loss_n\": %lld, "
             "\"interrupted_loss_sum\": %.17g}",
             (int)len, rf->json, ep->epoch, (long long)ep->batches, (long long)ep->samples,
             (long long)ep->loss_n, ep->loss_sum);
    st.config = json;
    snprintf(path, size, "%s/%s", rf->c->out, INTERRUPTED_NAME);
    return ct_checkpoint_save(path, &st);
}

/* The epoch a checkpoint's config says was interrupted (ep->epoch 0 when none). */
static void interrupted_progress(const char *saved, epoch_progress *ep) {
    int64_t epoch = 0;
    *ep = (epoch_progress){0};
    if (!config_int64(saved, "interrupted_epoch", &epoch) || epoch < 1 || epoch > 1000000) return;
    char text[64];
    if (!config_int64(saved, "interrupted_batches", &ep->batches) ||
        !config_int64(saved, "interrupted_samples", &ep->samples) ||
        !config_int64(saved, "interrupted_loss_n", &ep->loss_n) ||
        !config_value(saved, "interrupted_loss_sum", text, sizeof text))
        return;
    ep->loss_sum = strtod(text, NULL);
    ep->epoch = (int)epoch;
}

/* Trains epoch ep->epoch on from where ep stands: an interrupted epoch's first
 * ep->batches batches were trained before, so they are only drawn from the loader (the
 * shuffle depends on the epoch alone).  Shows the progress; stops after the batch
 * during which Ctrl-C came.  Returns 1 at the end of the epoch, 0 when interrupted
 * before it, -1 on an error (ct_last_error()).  Data-parallel, ep counts the samples
 * of every rank and the losses averaged over the ranks (the global batch's), and the
 * ranks stop after the same batch. */
/* ---- watching the run (--tensorboard, --profile) ---------------------------------- */

#define PROFILE_SKIP 5 /* --profile: steps left alone first (caches, allocations warm up) */

/* What watches the training steps. */
typedef struct {
    bool count_correct;  /* --tensorboard: train accuracy */
    ct_profiler *prof;   /* --profile: stepped after every batch; NULL when off or done */
    const char *out;     /* where the profile goes (--out/profile) */
    bool profile_ready;  /* the trace is written: the profiler can stop */
} watchers;

/* --profile's on_trace_ready: the Chrome trace and the key_averages table in
 * --out/profile, and the table on stdout. */
static void write_profile(ct_profiler *prof, void *ctx) {
    watchers *w = ctx;
    char dir[4000], path[4100];
    snprintf(dir, sizeof dir, "%s/profile", w->out);
    w->profile_ready = true;
    char *table = ct_profiler_table(prof, .sort_by = "self_cpu_time_total", .row_limit = 20);
    snprintf(path, sizeof path, "%s/trace.json", dir);
    if (!table || mkdir_p(dir) != 0 || ct_profiler_export_chrome_trace(prof, path) != 0) {
        fprintf(stderr, "fashion_mnist: cannot write the profile in %s: %s\n", dir,
                ct_last_error() ? ct_last_error() : strerror(errno));
        ct_clear_error();
        free(table);
        return;
    }
    snprintf(path, sizeof path, "%s/key_averages.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f || fputs(table, f) < 0 || fclose(f) != 0)
        fprintf(stderr, "fashion_mnist: cannot write %s: %s\n", path, strerror(errno));
    printf("profile of the training steps after the first %d: %s/trace.json (open it in Perfetto or "
           "chrome://tracing) and %s/key_averages.txt\n%s", PROFILE_SKIP + 1, dir, dir, table);
    free(table);
}

static int train_epoch(ct_module *model, ct_optim *opt, ct_loader *train, int64_t samples,
                       int epochs, const char *amp, ct_training_state *st, epoch_progress *ep,
                       watchers *watch) {
    ct_loader_set_epoch(train, (uint64_t)ep->epoch); /* and its sampler's: set_epoch */
    ct_batch b;
    for (int64_t k = 0; k < ep->batches; k++) {
        CT_SCOPE_HERE;
        if (!ct_loader_next(train, &b)) break;
    }
    char desc[64], postfix[64];
    snprintf(desc, sizeof desc, "epoch %d/%d", ep->epoch, epochs);
    progress_bar bar;
    bool show = ct_dist_is_main();
    int world = ct_dist_world_size();
    if (show) progress_start(&bar, desc, samples, ep->samples, "samples");
    int64_t n_batches = ct_loader_len(train);
    bool interrupted = false;
    while (!interrupted) {
        CT_SCOPE_HERE;
        if (!ct_loader_next(train, &b)) break;
        ct_tensor *loss = NULL, *logits = NULL;
        CT_AUTOCAST(.dtype = amp_dtype(amp), .enabled = amp_on(amp)) {
            logits = ct_forward(model, b.t[0]);
            loss = ct_cross_entropy(logits, b.t[1]);
        }
        if (watch->count_correct) {
            ep->correct += ct_item_int(ct_sum(ct_eq(ct_argmax(logits, .dims = CT_DIMS(1)), b.t[1])));
            ep->seen += b.size;
        }
        ct_zero_grad(opt);
        if (st->scaler) { /* the step is skipped when a gradient overflowed */
            ct_backward(ct_grad_scaler_scale(st->scaler, loss));
            ct_grad_scaler_step(st->scaler, opt);
            ct_grad_scaler_update(st->scaler);
        } else {
            ct_backward(loss);
            ct_step(opt);
        }
        double l = ct_item(loss);
        if (ct_last_error()) break;
        bool stop = false;
        if (distributed()) { /* one all-reduce: the global loss, and whether to stop */
            double v[2] = {l, interrupt_requested()};
            if (sum_over_ranks(v, 2) != 0) break;
            l = v[0] / world;
            stop = v[1] > 0;
        }
        if (watch->prof) {
            ct_profiler_step(watch->prof);
            if (watch->profile_ready) { /* the one window is recorded: stop paying for it */
                ct_profiler_stop(watch->prof);
                watch->prof = NULL;
            }
        }
        st->step++;
        ep->batches++;
        ep->samples += b.size * world;
        ep->loss_sum += l;
        ep->loss_n++;
        snprintf(postfix, sizeof postfix, "loss=%.4f", ep->loss_sum / (double)ep->loss_n);
        if (show) progress_update(&bar, b.size * world, postfix);
        if (!distributed()) stop = interrupt_requested();
        interrupted = stop && ep->batches < n_batches;
    }
    if (show) progress_close(&bar);
    return ct_last_error() ? -1 : interrupted ? 0 : 1;
}

static int fail(const char *what) {
    fprintf(stderr, "fashion_mnist: %s%s%s\n", what, ct_last_error() ? ": " : "",
            ct_last_error() ? ct_last_error() : "");
    return 1;
}

/* Takes the --amp mode of the checkpoint at path, saying when it overrides the flag,
 * and makes st's scaler for it: read before loading the checkpoint, which restores the
 * scaler's state into the scaler it is given.  0, or 1 after saying why not. */
static int apply_checkpoint_amp(config *c, cli_option *opts, int n_opts, const char *path,
                                ct_training_state *st) {
    ct_metadata m = {0};
    const char *amp = NULL;
    CT_SCOPE {
        if (!ct_load_safetensors(path, .metadata = &m)) break;
        const char *saved = NULL;
        for (int i = 0; i < m.n; i++)
            if (!strcmp(m.keys[i], "config")) saved = m.values[i];
        amp = saved_amp(saved);
    }
    ct_metadata_free(&m);
    if (!amp) return fail("cannot resume");
    if (!amp_valid(amp)) {
        fprintf(stderr, "fashion_mnist: the checkpoint's config holds an unknown amp mode\n");
        return 1;
    }
    if (strcmp(amp, c->amp)) {
        if (cli_find(opts, n_opts, "amp")->given)
            printf("resume: --amp %s is overridden by the checkpoint's %s\n", c->amp, amp);
        else
            printf("resume: --amp %s from the checkpoint\n", amp);
        c->amp = amp; /* a string literal of saved_amp's */
        st->scaler = make_scaler(c->amp);
        if (amp_scales(c->amp) && !st->scaler) return fail("cannot make the gradient scaler");
    }
    return 0;
}

/* --resume: loads the checkpoint into st (every rank reads the file rank 0 saved) and
 * takes the hyper-parameters it fixes.  0, or 1 after saying why not. */
static int resume_run(config *c, cli_option *opts, int n_opts, ct_training_state *st,
                      epoch_progress *resumed, char *path, size_t size) {
    snprintf(path, size, "%s/%s", c->out, INTERRUPTED_NAME);
    if (strcmp(c->resume, "latest"))
        snprintf(path, size, "%s", c->resume);
    else if (access(path, F_OK) != 0 && ct_checkpoint_latest(c->out, path, size) != 0) {
        fprintf(stderr, "fashion_mnist: no checkpoint to resume in %s\n", c->out);
        return 1;
    }
    if (apply_checkpoint_amp(c, opts, n_opts, path, st) != 0) return 1;
    char *saved = NULL;
    if (ct_checkpoint_load(path, st, &saved) != 0) return fail("cannot resume");
    /* Another world size would split the epochs differently (and --ddp or not draws
     * another order): the run would not continue, it would become another one. */
    int64_t world = c->ddp ? ct_dist_world_size() : 0, saved_world = saved_world_size(saved);
    int rc = 0;
    if (saved_world != world && saved_world > 0) {
        fprintf(stderr,
                "fashion_mnist: %s was trained with --ddp on %lld processes: resume it with "
                "--ddp under mpirun -np %lld\n",
                path, (long long)saved_world, (long long)saved_world);
        rc = 1;
    } else if (saved_world != world) {
        fprintf(stderr, "fashion_mnist: %s was trained without --ddp: resume it without\n", path);
        rc = 1;
    }
    if (rc == 0) rc = apply_checkpoint_config("fashion_mnist", saved, opts, n_opts) != 0;
    interrupted_progress(saved, resumed);
    free(saved);
    if (rc) return rc;
    printf("resumed from %s (epoch %lld complete, step %lld", path, (long long)st->epoch,
           (long long)st->step);
    if (resumed->epoch)
        printf("; epoch %d interrupted after batch %lld", resumed->epoch,
               (long long)resumed->batches);
    printf(")\n");
    return 0;
}

/* --out exists and holds no earlier run unless --resume or --overwrite say what to do
 * with it: 0, or 1 after saying why not. */
static int check_out(const config *c) {
    if (mkdir_p(c->out) != 0) {
        fprintf(stderr, "fashion_mnist: cannot create the output directory %s: %s\n", c->out,
                strerror(errno));
        return 1;
    }
    if (!c->resume && !c->overwrite && checkpoint_files(c->out, false) > 0) {
        fprintf(stderr,
                "fashion_mnist: %s holds the checkpoints of an earlier run: continue it with "
                "--resume latest, or pass --overwrite to delete them, or choose another --out\n",
                c->out);
        return 1;
    }
    return 0;
}

/* The run, on every rank of a data-parallel one: the exit status.  Rank 0 alone
 * writes --out; any step that may fail on one rank is decided by all (all_ranks). */
static int run(config *c, cli_option *opts, int n_opts) {
    const bool main_rank = ct_dist_is_main();
    const int rank = ct_dist_rank(), world = ct_dist_world_size();
    bool out_existed = access(c->out, F_OK) == 0;
    if (!all_ranks(!main_rank || check_out(c) == 0)) return 1;

    int rc = 0;
    char json[1536], path[4200];
    run_files rf = {.c = c, .json = json};
    ct_summary_writer *tb = NULL; /* --tensorboard, on rank 0 */
    CT_SCOPE { /* everything below is freed when the run ends */
        ct_module *model = make_model();
        if (c->ddp) model = ct_ddp(model); /* rank 0's initial weights on every rank */
        ct_module *net = c->ddp ? ct_ddp_module(model) : model; /* what checkpoints hold */
        ct_tensor *params[16];
        int n_params = ct_parameters(net, params, 16);
        ct_optim *opt = ct_adam(params, n_params, .lr = c->lr);
        ct_training_state st = {.model = net, .optim = opt, .scaler = make_scaler(c->amp)};
        epoch_progress resumed = {0};
        int first_epoch = 1;
        if (!all_ranks(model != NULL && (st.scaler || !amp_scales(c->amp)))) {
            rc = fail("cannot make the data-parallel model");
            break;
        }
        if (c->resume) {
            rc = resume_run(c, opts, n_opts, &st, &resumed, path, sizeof path);
            if (!all_ranks(rc == 0)) {
                rc = 1;
                break;
            }
            first_epoch = resumed.epoch ? resumed.epoch : (int)st.epoch + 1;
        }
        config_json(opts, n_opts, json, sizeof json);
        if (c->ddp) /* the world the numbers depend on (--batch-size is per rank) */
            snprintf(json + strlen(json) - 1, sizeof json - strlen(json) + 1,
                     ", \"world_size\": %d}", world);
        if (amp_on(c->amp)) /* the mode decides the numbers (off: the config as before) */
            snprintf(json + strlen(json) - 1, sizeof json - strlen(json) + 1, ", \"amp\": \"%s\"}",
                     c->amp);
        if (amp_on(c->amp)) printf("mixed precision: autocast to %s%s\n", c->amp,
                                   st.scaler ? ", gradient scaler" : "");
        st.config = json;

        ct_dataset *train_set = make_dataset(c, true, c->limit);
        ct_dataset *test_set = train_set ? make_dataset(c, false, c->test_limit) : NULL;
        if (test_set && distributed()) test_set = shard(test_set, rank, world);
        if (!all_ranks(test_set != NULL)) {
            rc = fail("cannot read the dataset");
            break;
        }
        ct_sampler *sampler = NULL;
        ct_loader *train;
        if (c->ddp) { /* DistributedSampler: this rank's share (the process group's rank and
                       * world size), shuffled by seed + epoch */
            sampler = ct_distributed_sampler(ct_dataset_len(train_set), .seed = c->seed);
            train = ct_dataloader(train_set, .batch_size = c->batch_size, .sampler = sampler,
                                  .num_workers = c->workers, .generator = ct_generator_new(c->seed));
        } else {
            train = ct_dataloader(train_set, .batch_size = c->batch_size, .shuffle = true,
                                  .num_workers = c->workers, .generator = ct_generator_new(c->seed));
        }
        /* Each loader draws its base seed from its own generator, never from the default
         * one, whose state the checkpoint restores: a resumed run then holds exactly the
         * state of a run never stopped. */
        ct_loader *test = ct_dataloader(test_set, .batch_size = 256, .num_workers = c->workers,
                                        .generator = ct_generator_new(c->seed));
        if (!all_ranks(train && test)) {
            rc = fail("cannot make the data loaders");
            break;
        }
        ct_module_print(model);
        if (c->ddp)
            printf("data-parallel: %d processes, batch %lld per process (%lld in all)\n", world,
                   (long long)c->batch_size, (long long)c->batch_size * world);
        int64_t epoch_samples = sampler ? ct_sampler_len(sampler) * world : ct_dataset_len(train_set);

        /* A run resumed from --out's latest checkpoint keeps that run's best; one resumed
         * from a file elsewhere starts from that checkpoint's metric. */
        double best = -1, t_start = progress_clock();
        if (c->resume && (strcmp(c->resume, "latest") || ct_checkpoint_best_metric(c->out, &best) != 0))
            best = st.metric;
        int64_t trained = 0, n_batches = ct_loader_len(train);
        if (c->tensorboard && main_rank) {
            tb = ct_summary_writer(c->tensorboard);
            if (!tb) {
                rc = fail("cannot open the TensorBoard log");
                break;
            }
            printf("TensorBoard: logging to %s (tensorboard --logdir %s)\n", c->tensorboard, c->tensorboard);
        }
        watchers watch = {.count_correct = tb != NULL, .out = c->out};
        if (c->profile > 0 && main_rank) {
            watch.prof = ct_profiler_start(.record_shapes = true, .profile_memory = true, .with_stack = true,
                                           .schedule = {.skip_first = PROFILE_SKIP, .warmup = 1,
                                                        .active = c->profile, .repeat = 1},
                                           .on_trace_ready = write_profile, .on_trace_ready_ctx = &watch);
            if (!watch.prof) {
                rc = fail("cannot start the profiler");
                break;
            }
        }
        int epochs_done = 0;
        for (int epoch = first_epoch; epoch <= c->epochs && rc == 0; epoch++) {
            epoch_progress ep = {.epoch = epoch};
            if (resumed.epoch == epoch) ep = resumed;
            int ended = train_epoch(model, opt, train, epoch_samples, c->epochs, c->amp, &st, &ep, &watch);
            if (ended < 0) {
                rc = fail("training failed");
                break;
            }
            trained += ep.samples - (resumed.epoch == epoch ? resumed.samples : 0);
            if (!ended) {
                bool saved = !main_rank || save_interrupted(&rf, st, &ep, path, sizeof path) == 0;
                if (!all_ranks(saved)) {
                    rc = fail("cannot save the interrupted epoch");
                    break;
                }
                printf("interrupted in epoch %d after batch %lld/%lld (step %lld): saved %s; "
                       "continue with --resume latest\n",
                       epoch, (long long)ep.batches, (long long)n_batches, (long long)st.step, path);
                rc = INTERRUPT_EXIT_STATUS;
                break;
            }
            misclassified mis = {.buf = tb ? ct_zeros(CT_SHAPE(32, 1, 28, 28)) : NULL};
            double test_loss, acc = evaluate(net, test, c->amp, &test_loss, &mis);
            if (ct_last_error()) {
                rc = fail("evaluation failed");
                break;
            }
            if (tb) {
                epoch_metrics m = {ep.loss_sum / (double)ep.loss_n, ep.seen ? (double)ep.correct / (double)ep.seen : 0,
                                   test_loss, acc, ct_optim_get_lr(opt, 0)};
                if (tb_log_epoch(tb, epoch, &m, net) != 0 ||
                    tb_log_misclassified(tb, epoch, mis.buf, mis.count, DATA_MEAN, DATA_STD) != 0 ||
                    ct_summary_writer_flush(tb) != 0) {
                    rc = fail("cannot write the TensorBoard log");
                    break;
                }
            }
            printf("epoch %d: train loss %.4f, test loss %.4f, test accuracy %.2f%%\n", epoch,
                   ep.loss_sum / (double)ep.loss_n, test_loss, 100 * acc);
            st.epoch = epoch;
            st.metric = acc;
            int kept = 0;
            if (main_rank)
                kept = prepare_first_save(&rf) == 0
                           ? ct_checkpoint_keep(c->out, &st, (ct_checkpoint_policy){.keep_last = 2})
                           : -1;
            if (!all_ranks(kept >= 0)) {
                rc = fail("cannot save the checkpoint");
                break;
            }
            if (kept == 1) printf("  new best: saved %s/best.safetensors\n", c->out);
            snprintf(path, sizeof path, "%s/%s", c->out, INTERRUPTED_NAME);
            if (main_rank) unlink(path); /* a complete epoch supersedes a partial one */
            if (acc > best) best = acc;
            epochs_done++;
            if (epoch < c->epochs && any_rank_interrupted()) {
                printf("interrupted after epoch %d: saved its checkpoint; continue with "
                       "--resume latest\n", epoch);
                rc = INTERRUPT_EXIT_STATUS;
            }
        }
        if (watch.prof) { /* the run ended before the window did: what it recorded */
            ct_profiler_stop(watch.prof);
            watch.prof = NULL;
        }
        if (tb && ct_summary_writer_close(tb) != 0 && rc == 0) rc = fail("cannot close the TensorBoard log");
        tb = NULL;
        if (rc) break;
        double t = progress_clock() - t_start;
        printf("done: %d epochs, best test accuracy %.2f%%, %.1f s, %.0f samples/s; checkpoints in "
               "%s\n",
               epochs_done, 100 * best, t, t > 0 ? (double)trained / t : 0, c->out);
        if (c->min_accuracy > 0 && best < c->min_accuracy) {
            if (main_rank)
                fprintf(stderr, "accuracy %.4f is below the required %.4f\n", best, c->min_accuracy);
            rc = 1;
        }
    }
    if (tb) ct_summary_writer_close(tb); /* a run that failed keeps what it logged */
    /* A failed first run leaves nothing. */
    if (main_rank && !rf.saved_before && !out_existed) rmdir(c->out);
    return rc;
}

int main(int argc, char **argv) {
    interrupt_install();
    config c = {.epochs = 3, .workers = 2, .batch_size = 64, .lr = 1e-3, .out = "runs/fashion_mnist",
                .amp = "off"};
    cli_option opts[] = {
        CLI_OPT_INT("epochs", &c.epochs, 1, 1000000, "N", "train until this epoch"),
        CLI_OPT_INT64("batch-size", &c.batch_size, 1, 1 << 20, "N", "samples per training batch (per process with --ddp)"),
        CLI_OPT_DOUBLE("lr", &c.lr, 1e-12, 1e6, "X", "Adam's learning rate"),
        CLI_OPT_INT("workers", &c.workers, 0, 256, "N", "DataLoader worker threads (0: load in the main thread)"),
        CLI_OPT_UINT64("seed", &c.seed, "N", "seed of the initial weights and the shuffle"),
        CLI_OPT_INT64("limit", &c.limit, 0, 1e9, "N", "train on the first N samples only (0: all)"),
        CLI_OPT_INT64("test-limit", &c.test_limit, 0, 1e9, "N", "evaluate on the first N test samples only (0: all)"),
        CLI_OPT_INT("threads", &c.threads, 0, 1024, "N", "intra-op threads (0: OpenMP's default)"),
        CLI_OPT_DOUBLE("min-accuracy", &c.min_accuracy, 0, 1, "A", "exit 1 unless the best test accuracy reaches A"),
        CLI_OPT_STRING("out", &c.out, "DIR", "where checkpoints and config.json go"),
        CLI_OPT_STRING("resume", &c.resume, "latest|PATH", "continue from --out's latest checkpoint, or from a file"),
        CLI_OPT_STRING("data", &c.data, "DIR", "the dataset's directory (default Debian's /usr/share/datasets/fashion-mnist)"),
        CLI_OPT_FLAG("overwrite", &c.overwrite, "delete an earlier run's checkpoints in --out"),
        CLI_OPT_STRING("amp", &c.amp, "off|bf16|f16", "mixed precision: autocast to bfloat16, or to float16 with the gradient scaler"),
        CLI_OPT_FLAG("ddp", &c.ddp, "data-parallel over the processes mpirun started (DistributedDataParallel)"),
        CLI_OPT_STRING("tensorboard", &c.tensorboard, "DIR", "log losses, accuracies, lr, histograms and misclassified images for TensorBoard"),
        CLI_OPT_INT("profile", &c.profile, 0, 1000000, "N", "profile N training steps after 5: a Chrome trace and the op table in --out/profile"),
    };
    const int n_opts = (int)(sizeof opts / sizeof *opts);
    int status;
    if (!cli_parse(argc, argv, SUMMARY, opts, n_opts, &status)) return status;
    if (!amp_valid(c.amp)) {
        fprintf(stderr, "%s: --amp takes off, bf16 or f16, not '%s'\n", argv[0], c.amp);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* result lines appear as they happen in logs too */
    if (c.ddp) {
        if (ct_dist_init() != 0) return fail("--ddp cannot join the process group");
        interrupt_install_launcher_signals(!ct_dist_is_main());
        /* Rank 0 speaks for the run; the others' errors still go to stderr. */
        if (!ct_dist_is_main() && !freopen("/dev/null", "w", stdout)) return fail("cannot silence stdout");
    }
    if (c.threads > 0) ct_set_num_threads(c.threads);
    ct_manual_seed(c.seed);
    int rc = run(&c, opts, n_opts);
    if (c.ddp && ct_dist_destroy() != 0 && rc == 0) rc = fail("cannot leave the process group");
    return rc;
}
