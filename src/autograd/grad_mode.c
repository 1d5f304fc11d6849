#include "ctorch/autograd.h"

static _Thread_local bool grad_disabled; /* zero-initialised: grad mode on */

bool ct_is_grad_enabled(void) { return !grad_disabled; }

bool ct_set_grad_enabled(bool enabled) {
    bool prev = !grad_disabled;
    grad_disabled = !enabled;
    return prev;
}

ct_grad_mode_guard ct_grad_mode_begin(bool enabled) {
    return (ct_grad_mode_guard){.prev = ct_set_grad_enabled(enabled), .once = 1};
}

void ct_grad_mode_end(ct_grad_mode_guard *g) { ct_set_grad_enabled(g->prev); }
