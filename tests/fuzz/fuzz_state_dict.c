/* Fuzzes state-dict loading into a model, an optimizer and a scheduler: the input is
 * a safetensors file whose "model.", "optim." and "sched." entries (prefix removed)
 * are loaded into each; then a training step uses what loaded. */
#include "fuzz_train.h"

static ct_state_dict *part(const ct_state_dict *sd, const char *prefix) {
    ct_state_dict *d = ct_state_dict_new();
    size_t n = strlen(prefix);
    for (int i = 0; d && i < ct_state_dict_len(sd); i++)
        if (!strncmp(ct_state_dict_key(sd, i), prefix, n))
            ct_state_dict_set(d, ct_state_dict_key(sd, i) + n, ct_state_dict_value(sd, i));
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_run r = fuzz_run_get();
    CT_SCOPE {
        ct_state_dict *sd = ct_safetensors_from_buffer(data, size, (ct_load_file_options){0});
        if (sd) {
            ct_load_state_dict(r.model, part(sd, "model."), .non_strict = true);
            ct_optim_load_state_dict(r.opt, part(sd, "optim."));
            ct_sched_load_state_dict(r.sched, part(sd, "sched."));
            fuzz_train_step(r);
        }
    }
    ct_clear_error();
    return 0;
}
