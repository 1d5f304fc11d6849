/* add_scalar and add_scalars (SummaryWriter.add_scalar, .add_scalars). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "io/tensorboard/writer.h"

static int add_scalar(ct_summary_writer *w, const char *op, const char *tag, double value, int64_t step,
                      double walltime) {
    if (!tag) {
        ct_error("%s: tag is NULL", op);
        return -1;
    }
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = (char *)tag;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
    v.simple_value = (float)value;
    return tb_write_value(w, op, &v, step, walltime);
}

int ct_tb_add_scalar_with(ct_summary_writer *w, const char *tag, double value, int64_t step,
                       ct_tb_options o) {
    static const char *op = "ct_tb_add_scalar";
    if (!tb_check_writer(op, w)) return -1;
    return add_scalar(w, op, tag, value, step, o.walltime);
}

/* The writer of w for the directory dir, made at its first use. */
static ct_summary_writer *child_writer(ct_summary_writer *w, const char *op, const char *dir) {
    for (int i = 0; i < w->n_children; i++)
        if (strcmp(w->children[i].dir, dir) == 0) return w->children[i].w;
    if (w->n_children == w->cap_children) {
        int cap = w->cap_children ? 2 * w->cap_children : 4;
        tb_child *c = ct_realloc(w->children, sizeof *c * (size_t)cap);
        if (!c) {
            ct_error("%s: out of memory", op);
            return NULL;
        }
        w->children = c;
        w->cap_children = cap;
    }
    char *copy = ct_strdup(dir);
    if (!copy) {
        ct_error("%s: out of memory", op);
        return NULL;
    }
    ct_summary_writer *c = tb_writer_open(op, dir, (ct_summary_writer_options){
        .flush_secs = w->flush_secs, .filename_suffix = w->filename_suffix});
    if (!c) {
        free(copy);
        return NULL;
    }
    w->children[w->n_children++] = (tb_child){copy, c};
    return c;
}

int ct_tb_add_scalars_with(ct_summary_writer *w, const char *main_tag, const char *const *tags,
                        const double *values, int n, int64_t step, ct_tb_options o) {
    static const char *op = "ct_tb_add_scalars";
    if (!tb_check_writer(op, w)) return -1;
    if (!main_tag || n < 0 || (n > 0 && (!tags || !values))) {
        ct_error("%s: main_tag, tags and values must be given (got main_tag %s, n = %d)", op,
                 main_tag ? main_tag : "NULL", n);
        return -1;
    }
    double walltime = o.walltime != 0 ? o.walltime : tb_wall_time(); /* one time for all */
    for (int i = 0; i < n; i++) {
        if (!tags[i]) {
            ct_error("%s: tags[%d] is NULL", op, i);
            return -1;
        }
        char *dir;
        if (asprintf(&dir, "%s/%s_%s", w->log_dir, main_tag, tags[i]) < 0) {
            ct_error("%s: out of memory", op);
            return -1;
        }
        /* main_tag's '/' become '_' in the directory's name, as PyTorch */
        for (char *p = dir + strlen(w->log_dir) + 1, *end = p + strlen(main_tag); p < end; p++)
            if (*p == '/') *p = '_';
        ct_summary_writer *c = child_writer(w, op, dir);
        free(dir);
        if (!c || add_scalar(c, op, main_tag, values[i], step, walltime) != 0) return -1;
    }
    return 0;
}
