/* Training checkpoints: model, optimizer, scheduler, scaler and generator state in one
 * safetensors file, with the epoch, step, metric and config as metadata. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctorch.h"
#include "ctorch/random.h"
#include "ctorch/serialize.h"
#include "core/error.h"
#include "core/mem.h"
#include "nn/module_impl.h"
#include "optim/optim_impl.h"
#include "amp/grad_scaler_impl.h"

#define FORMAT "ctorch-checkpoint-1"

static void add_prefixed(ct_state_dict *dst, const char *prefix, const ct_state_dict *src) {
    char key[1024];
    for (int i = 0; i < ct_state_dict_len(src); i++) {
        snprintf(key, sizeof key, "%s%s", prefix, ct_state_dict_key(src, i));
        ct_state_dict_set(dst, key, ct_state_dict_value(src, i));
    }
}

/* The entries of src under prefix, with the prefix removed (registered). */
static ct_state_dict *sub_dict(const ct_state_dict *src, const char *prefix) {
    ct_state_dict *d = ct_state_dict_new();
    size_t n = strlen(prefix);
    for (int i = 0; d && i < ct_state_dict_len(src); i++)
        if (!strncmp(ct_state_dict_key(src, i), prefix, n))
            ct_state_dict_set(d, ct_state_dict_key(src, i) + n, ct_state_dict_value(src, i));
    return d;
}

/* The objects of a training state are alive (core/object.h). */
static bool state_alive(const char *fn, const ct_training_state *st) {
    return !st || (ct_option_alive(fn, "model", st->model) && ct_option_alive(fn, "optim", st->optim) &&
                   ct_option_alive(fn, "sched", st->sched));
}

int ct_checkpoint_save(const char *path, const ct_training_state *st) {
    if (!state_alive("ct_checkpoint_save", st)) return -1;
    if (!path || !st || !st->model) {
        ct_error("ct_checkpoint_save: a path and a model are required");
        return -1;
    }
    int rc = -1;
    CT_SCOPE {
        ct_state_dict *sd = ct_state_dict_new();
        add_prefixed(sd, "model.", ct_module_state_dict(st->model));
        if (st->optim) add_prefixed(sd, "optim.", ct_optim_state_dict(st->optim));
        if (st->sched) add_prefixed(sd, "sched.", ct_sched_state_dict(st->sched));
        if (st->scaler) add_prefixed(sd, "scaler.", ct_grad_scaler_state_dict(st->scaler));
        ct_state_dict_set(sd, "rng.default", ct_generator_get_state(ct_default_generator()));
        char epoch[32], step[32], metric[40];
        snprintf(epoch, sizeof epoch, "%lld", (long long)st->epoch);
        snprintf(step, sizeof step, "%lld", (long long)st->step);
        snprintf(metric, sizeof metric, "%.17g", st->metric);
        ct_metadata m = {.n = 4,
                         .keys = {"format", "epoch", "step", "metric"},
                         .values = {FORMAT, epoch, step, metric}};
        if (st->config) {
            m.keys[m.n] = "config";
            m.values[m.n++] = st->config;
        }
        if (ct_last_error() && !sd) break;
        rc = ct_save_safetensors(sd, path, &m);
    }
    return rc;
}

static const char *meta_get(const ct_metadata *m, const char *key) {
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->keys[i], key)) return m->values[i];
    return NULL;
}

/* A metadata integer: all of v a decimal number from 0 to max. */
static bool meta_integer(const char *path, const char *key, const char *v, long long max, int64_t *out) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno || x < 0 || x > max) {
        ct_error("ct_checkpoint_load: %s: metadata '%s' is \"%.40s\", not an integer from 0 to %lld",
                 path, key, v, max);
        return false;
    }
    *out = x;
    return true;
}

/* Weights and optimizer state that are NaN or infinite would train on garbage. */
static bool all_finite(const char *path, const ct_state_dict *sd) {
    bool ok = true;
    for (int i = 0; ok && i < ct_state_dict_len(sd); i++) {
        const char *key = ct_state_dict_key(sd, i);
        ct_tensor *t = ct_state_dict_value(sd, i);
        if (strncmp(key, "model.", 6) && strncmp(key, "optim.", 6)) continue;
        if (!ct_dtype_is_floating(ct_dtype_of(t))) continue;
        CT_SCOPE {
            double bad = ct_item(ct_sum(ct_logical_not(ct_isfinite(t)), .dtype = CT_F64));
            if (bad != 0) {
                ct_error("ct_checkpoint_load: %s: '%s' has %.0f NaN or infinite values", path, key, bad);
                ok = false;
            }
        }
    }
    return ok;
}

/* Note [All or nothing]: a checkpoint is checked whole (metadata, model, optimizer,
 * scheduler, generator) before anything is changed, so that a failed load leaves the
 * training state as it was. */
int ct_checkpoint_load(const char *path, ct_training_state *st, char **config_out) {
    if (!state_alive("ct_checkpoint_load", st)) return -1;
    if (!path || !st || !st->model) {
        ct_error("ct_checkpoint_load: a path and a model are required");
        return -1;
    }
    if (config_out) *config_out = NULL;
    int rc = -1;
    ct_metadata m = {0};
    CT_SCOPE {
        ct_state_dict *sd = ct_load_safetensors(path, .metadata = &m);
        if (!sd) break;
        const char *format = meta_get(&m, "format");
        if (!format || strcmp(format, FORMAT)) {
            ct_error("ct_checkpoint_load: %s is not a ctorch training checkpoint (format %s)", path,
                     format ? format : "missing");
            break;
        }
        int64_t epoch = st->epoch, step = st->step;
        double metric = st->metric;
        const char *v;
        /* epoch + 1 must fit an int, the type loops count epochs in */
        if ((v = meta_get(&m, "epoch")) && !meta_integer(path, "epoch", v, INT32_MAX - 1, &epoch)) break;
        if ((v = meta_get(&m, "step")) && !meta_integer(path, "step", v, 1ll << 53, &step)) break;
        if ((v = meta_get(&m, "metric"))) {
            char *end;
            metric = strtod(v, &end);
            if (end == v || *end) {
                ct_error("ct_checkpoint_load: %s: metadata 'metric' is \"%.40s\", not a number", path, v);
                break;
            }
        }
        ct_state_dict *model = sub_dict(sd, "model."), *optim = sub_dict(sd, "optim."),
                      *sched = sub_dict(sd, "sched."), *scaler = sub_dict(sd, "scaler.");
        ct_tensor *rng = ct_state_dict_get(sd, "rng.default");
        ct_generator *scratch = rng ? ct_generator_new(0) : NULL; /* the scope's */
        bool valid = all_finite(path, sd) && ct_module_check_state_dict(st->model, model) == 0 &&
                     (!st->optim || ct_optim_check_state_dict(st->optim, optim) == 0) &&
                     (!st->sched || ct_sched_check_state_dict(st->sched, sched) == 0) &&
                     (!st->scaler || ct_grad_scaler_check_state_dict(st->scaler, scaler, "scaler.") == 0) &&
                     (!rng || (scratch && ct_generator_set_state(scratch, rng) == 0));
        if (!valid) break;
        char *config = NULL;
        if (config_out && (v = meta_get(&m, "config")) && !(config = ct_strdup(v))) {
            ct_error("ct_checkpoint_load: out of memory");
            break;
        }
        /* Checked: what is left can only fail for want of memory. */
        bool loaded = ct_load_state_dict(st->model, model) == 0 &&
                      (!st->optim || ct_optim_load_state_dict(st->optim, optim) == 0) &&
                      (!st->sched || ct_sched_load_state_dict(st->sched, sched) == 0) &&
                      (!st->scaler || ct_grad_scaler_load_state_dict(st->scaler, scaler) == 0) &&
                      (!rng || ct_generator_set_state(ct_default_generator(), rng) == 0);
        if (!loaded) {
            free(config);
            break;
        }
        st->epoch = epoch;
        st->step = step;
        st->metric = metric;
        if (config) *config_out = config;
        rc = 0;
    }
    ct_metadata_free(&m);
    return rc;
}

/* ---- keeping the last N and the best ------------------------------------------------ */

/* Epochs of dir/ckpt-<epoch>.safetensors files, ascending; returns the count. */
static int list_epochs(const char *dir, long long *out, int max) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long long epoch;
        char tail[32];
        if (sscanf(e->d_name, "ckpt-%lld%31s", &epoch, tail) == 2 && !strcmp(tail, ".safetensors") && n < max)
            out[n++] = epoch;
    }
    closedir(d);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            long long t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

static void ckpt_path(char *buf, size_t size, const char *dir, long long epoch) {
    snprintf(buf, size, "%s/ckpt-%06lld.safetensors", dir, epoch);
}

int ct_checkpoint_keep(const char *dir, const ct_training_state *st, ct_checkpoint_policy p) {
    if (!dir || !st) return -1;
    int keep = p.keep_last > 0 ? p.keep_last : 3;
    char path[4096];
    ckpt_path(path, sizeof path, dir, (long long)st->epoch);
    if (ct_checkpoint_save(path, st) != 0) return -1;
    long long epochs[4096];
    int n = list_epochs(dir, epochs, 4096);
    for (int i = 0; i < n - keep; i++) {
        ckpt_path(path, sizeof path, dir, epochs[i]);
        unlink(path);
    }
    /* The best so far, judged by the metric saved in best.safetensors. */
    double prev;
    bool better = true;
    if (ct_checkpoint_best_metric(dir, &prev) == 0)
        better = p.lower_is_better ? st->metric < prev : st->metric > prev;
    else
        ct_clear_error(); /* an unreadable best file is simply replaced */
    if (!better) return 0;
    snprintf(path, sizeof path, "%s/best.safetensors", dir);
    return ct_checkpoint_save(path, st) == 0 ? 1 : -1;
}

int ct_checkpoint_best_metric(const char *dir, double *metric) {
    char path[4096];
    if (!dir || !metric) {
        ct_error("ct_checkpoint_best_metric: a directory and a place for the metric are required");
        return -1;
    }
    if (snprintf(path, sizeof path, "%s/best.safetensors", dir) >= (int)sizeof path) {
        ct_error("ct_checkpoint_best_metric: path too long");
        return -1;
    }
    if (access(path, F_OK) != 0) return -1; /* no best yet: not an error */
    int rc = -1;
    ct_metadata m = {0};
    CT_SCOPE {
        ct_state_dict *best = ct_load_safetensors(path, .metadata = &m);
        const char *v = best ? meta_get(&m, "metric") : NULL;
        if (v) {
            *metric = strtod(v, NULL);
            rc = 0;
        } else if (best) {
            ct_error("ct_checkpoint_best_metric: %s has no metric", path);
        }
    }
    ct_metadata_free(&m);
    return rc;
}

int ct_checkpoint_latest(const char *dir, char *path_out, size_t size) {
    long long epochs[4096];
    int n = dir ? list_epochs(dir, epochs, 4096) : -1;
    if (n <= 0) return -1;
    ckpt_path(path_out, size, dir, epochs[n - 1]);
    return 0;
}
