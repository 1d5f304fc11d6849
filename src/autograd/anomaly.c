/* Anomaly mode: the public switch of the flag the engine reads (engine.c,
 * check_anomaly).  Forward call sites are recorded on every node regardless, so
 * turning it on only adds the nan/inf checks. */
#include <stdatomic.h>

#include "ctorch/autograd.h"
#include "autograd/node.h"

bool ct_set_detect_anomaly(bool enabled) { return atomic_exchange(&ct_anomaly_enabled, enabled); }

bool ct_is_anomaly_enabled(void) { return ct_anomaly_enabled; }

ct_anomaly_guard ct_anomaly_begin(bool enabled) {
    return (ct_anomaly_guard){.prev = ct_set_detect_anomaly(enabled), .once = 1};
}

void ct_anomaly_end(ct_anomaly_guard *g) { ct_set_detect_anomaly(g->prev); }
