/* Fuzzes ct_checkpoint_load: the input is a whole checkpoint file; what loads is
 * trained on for a step, and its epoch counted on. */
#include "fuzz_train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_run r = fuzz_run_get();
    ct_training_state st = {.model = r.model, .optim = r.opt, .sched = r.sched};
    char *config = NULL;
    if (ct_checkpoint_load(fuzz_file("input.safetensors", data, size), &st, &config) == 0) {
        fuzz_train_step(r);
        int next_epoch = (int)st.epoch + 1; /* as a training loop does: must not overflow */
        (void)next_epoch;
    }
    free(config);
    ct_clear_error();
    return 0;
}
