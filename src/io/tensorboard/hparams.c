/* add_hparams (SummaryWriter.add_hparams): the hparams plugin's three summaries in a
 * writer of their own, as torch.utils.tensorboard.summary.hparams makes them. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "tensorboard/hparams_plugin_data.pb-c.h"
#include "io/tensorboard/writer.h"
#include "tensorboard/summary.pb-c.h"

/* Writes one summary: tag, metadata {plugin "hparams", content data (version 0)}. */
static int write_plugin_summary(ct_summary_writer *w, const char *op, const char *tag,
                                Tensorboard__Hparams__HParamsPluginData *data) {
    size_t n = tensorboard__hparams__hparams_plugin_data__get_packed_size(data);
    uint8_t *content = ct_malloc(n ? n : 1);
    if (!content) {
        ct_error("%s: out of memory", op);
        return -1;
    }
    tensorboard__hparams__hparams_plugin_data__pack(data, content);
    Tensorboard__SummaryMetadata__PluginData plugin = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
    plugin.plugin_name = "hparams";
    plugin.content = (ProtobufCBinaryData){n, content};
    Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
    md.plugin_data = &plugin;
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = (char *)tag;
    v.metadata = &md;
    int rc = tb_write_value(w, op, &v, 0, 0);
    free(content);
    return rc;
}

static int write_hparams(ct_summary_writer *hw, const char *op, const ct_tb_hparam *hp, int n_hp,
                         const char *const *metric_tags, const double *metric_values, int n_metrics) {
    int rc = -1;
    size_t n_all = (size_t)(n_hp + n_metrics) + 1;
    Google__Protobuf__Value *vals = ct_calloc(n_all, sizeof *vals);
    Tensorboard__Hparams__SessionStartInfo__HparamsEntry *entries = ct_calloc(n_all, sizeof *entries);
    Tensorboard__Hparams__SessionStartInfo__HparamsEntry **entry_ptrs = ct_calloc(n_all, sizeof *entry_ptrs);
    Tensorboard__Hparams__HParamInfo *infos = ct_calloc(n_all, sizeof *infos);
    Tensorboard__Hparams__HParamInfo **info_ptrs = ct_calloc(n_all, sizeof *info_ptrs);
    Tensorboard__Hparams__MetricName *names = ct_calloc(n_all, sizeof *names);
    Tensorboard__Hparams__MetricInfo *metrics = ct_calloc(n_all, sizeof *metrics);
    Tensorboard__Hparams__MetricInfo **metric_ptrs = ct_calloc(n_all, sizeof *metric_ptrs);
    if (!vals || !entries || !entry_ptrs || !infos || !info_ptrs || !names || !metrics || !metric_ptrs) {
        ct_error("%s: out of memory", op);
        goto done;
    }
    for (int i = 0; i < n_hp; i++) {
        google__protobuf__value__init(&vals[i]);
        tensorboard__hparams__session_start_info__hparams_entry__init(&entries[i]);
        tensorboard__hparams__hparam_info__init(&infos[i]);
        entries[i].key = (char *)hp[i].name;
        entries[i].value = &vals[i];
        entry_ptrs[i] = &entries[i];
        infos[i].name = (char *)hp[i].name;
        info_ptrs[i] = &infos[i];
        switch (hp[i].kind) {
        case CT_TB_HPARAM_NUMBER:
            vals[i].kind_case = GOOGLE__PROTOBUF__VALUE__KIND_NUMBER_VALUE;
            vals[i].number_value = hp[i].number;
            infos[i].type = TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_FLOAT64;
            break;
        case CT_TB_HPARAM_STRING:
            vals[i].kind_case = GOOGLE__PROTOBUF__VALUE__KIND_STRING_VALUE;
            vals[i].string_value = (char *)hp[i].string;
            infos[i].type = TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_STRING;
            break;
        case CT_TB_HPARAM_BOOL:
            vals[i].kind_case = GOOGLE__PROTOBUF__VALUE__KIND_BOOL_VALUE;
            vals[i].bool_value = hp[i].boolean;
            infos[i].type = TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_BOOL;
            break;
        }
    }
    for (int i = 0; i < n_metrics; i++) {
        tensorboard__hparams__metric_name__init(&names[i]);
        tensorboard__hparams__metric_info__init(&metrics[i]);
        names[i].tag = (char *)metric_tags[i];
        metrics[i].name = &names[i];
        metric_ptrs[i] = &metrics[i];
    }
    /* the order PyTorch writes them: experiment, session start, session end */
    Tensorboard__Hparams__Experiment exp = TENSORBOARD__HPARAMS__EXPERIMENT__INIT;
    exp.n_hparam_infos = (size_t)n_hp;
    exp.hparam_infos = info_ptrs;
    exp.n_metric_infos = (size_t)n_metrics;
    exp.metric_infos = metric_ptrs;
    Tensorboard__Hparams__HParamsPluginData d = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__INIT;
    d.data_case = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_EXPERIMENT;
    d.experiment = &exp;
    if (write_plugin_summary(hw, op, "_hparams_/experiment", &d) != 0) goto done;
    Tensorboard__Hparams__SessionStartInfo ssi = TENSORBOARD__HPARAMS__SESSION_START_INFO__INIT;
    ssi.n_hparams = (size_t)n_hp;
    ssi.hparams = entry_ptrs;
    d.data_case = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_SESSION_START_INFO;
    d.session_start_info = &ssi;
    if (write_plugin_summary(hw, op, "_hparams_/session_start_info", &d) != 0) goto done;
    Tensorboard__Hparams__SessionEndInfo sei = TENSORBOARD__HPARAMS__SESSION_END_INFO__INIT;
    sei.status = TENSORBOARD__HPARAMS__STATUS__STATUS_SUCCESS;
    d.data_case = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_SESSION_END_INFO;
    d.session_end_info = &sei;
    if (write_plugin_summary(hw, op, "_hparams_/session_end_info", &d) != 0) goto done;
    for (int i = 0; i < n_metrics; i++)
        if (ct_tb_add_scalar_with(hw, metric_tags[i], metric_values[i], 0, (ct_tb_options){0}) != 0)
            goto done;
    rc = 0;
done:
    free(vals);
    free(entries);
    free(entry_ptrs);
    free(infos);
    free(info_ptrs);
    free(names);
    free(metrics);
    free(metric_ptrs);
    return rc;
}

int ct_tb_add_hparams_with(ct_summary_writer *w, const ct_tb_hparam *hparams, int n_hparams,
                        const char *const *metric_tags, const double *metric_values, int n_metrics,
                        ct_tb_hparams_options o) {
    static const char *op = "ct_tb_add_hparams";
    if (!tb_check_writer(op, w)) return -1;
    if (n_hparams < 0 || n_metrics < 0 || (n_hparams > 0 && !hparams) ||
        (n_metrics > 0 && (!metric_tags || !metric_values))) {
        ct_error("%s: hparams (%d) and metrics (%d) must be given as arrays", op, n_hparams, n_metrics);
        return -1;
    }
    for (int i = 0; i < n_hparams; i++) {
        const ct_tb_hparam *h = &hparams[i];
        if (!h->name || (unsigned)h->kind > CT_TB_HPARAM_BOOL || (h->kind == CT_TB_HPARAM_STRING && !h->string)) {
            ct_error("%s: hparams[%d] must have a name and a number, string or bool value", op, i);
            return -1;
        }
    }
    for (int i = 0; i < n_metrics; i++)
        if (!metric_tags[i]) {
            ct_error("%s: metric_tags[%d] is NULL", op, i);
            return -1;
        }
    char *dir;
    int ok = o.run_name ? asprintf(&dir, "%s/%s", w->log_dir, o.run_name)
                        : asprintf(&dir, "%s/%.7f", w->log_dir, tb_wall_time());
    if (ok < 0) {
        ct_error("%s: out of memory", op);
        return -1;
    }
    ct_summary_writer *hw = tb_writer_open(op, dir, (ct_summary_writer_options){
        .flush_secs = w->flush_secs, .filename_suffix = w->filename_suffix});
    free(dir);
    if (!hw) return -1;
    int rc = write_hparams(hw, op, hparams, n_hparams, metric_tags, metric_values, n_metrics);
    if (ct_summary_writer_close(hw) != 0) rc = -1;
    return rc;
}
