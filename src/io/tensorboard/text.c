/* add_text (SummaryWriter.add_text): the text plugin's summary. */
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "io/tensorboard/writer.h"
#include "tensorboard/summary.pb-c.h"
#include "tensorboard/text_plugin_data.pb-c.h"

int ct_tb_add_text_with(ct_summary_writer *w, const char *tag, const char *text, int64_t step,
                     ct_tb_options o) {
    static const char *op = "ct_tb_add_text";
    if (!tb_check_writer(op, w)) return -1;
    if (!tag || !text) {
        ct_error("%s: %s is NULL", op, tag ? "text" : "tag");
        return -1;
    }
    /* metadata: plugin "text", content TextPluginData{version: 0} (empty bytes) */
    Tensorboard__TextPluginData pd = TENSORBOARD__TEXT_PLUGIN_DATA__INIT;
    uint8_t content[16];
    size_t n_content = tensorboard__text_plugin_data__pack(&pd, content);
    Tensorboard__SummaryMetadata__PluginData plugin = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
    plugin.plugin_name = "text";
    plugin.content = (ProtobufCBinaryData){n_content, content};
    Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
    md.plugin_data = &plugin;
    /* tensor: DT_STRING, shape [1], string_val [text] */
    Tensorboard__TensorShapeProto__Dim dim = TENSORBOARD__TENSOR_SHAPE_PROTO__DIM__INIT, *dims = &dim;
    dim.size = 1;
    Tensorboard__TensorShapeProto shape = TENSORBOARD__TENSOR_SHAPE_PROTO__INIT;
    shape.n_dim = 1;
    shape.dim = &dims;
    ProtobufCBinaryData s = {strlen(text), (uint8_t *)text};
    Tensorboard__TensorProto t = TENSORBOARD__TENSOR_PROTO__INIT;
    t.dtype = TENSORBOARD__DATA_TYPE__DT_STRING;
    t.tensor_shape = &shape;
    t.n_string_val = 1;
    t.string_val = &s;
    size_t n_tag = strlen(tag);
    char *full = ct_malloc(n_tag + sizeof "/text_summary");
    if (!full) {
        ct_error("%s: out of memory", op);
        return -1;
    }
    memcpy(full, tag, n_tag);
    memcpy(full + n_tag, "/text_summary", sizeof "/text_summary");
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = full;
    v.metadata = &md;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
    v.tensor = &t;
    int rc = tb_write_value(w, op, &v, step, o.walltime);
    free(full);
    return rc;
}
